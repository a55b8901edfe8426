"""What the ``ik_control`` command writes: progress lines on stderr, results as JSON files."""

import json
import os
import sys

import numpy as np


def output_dir(args):
    out = args.output_dir
    os.makedirs(out, exist_ok=True)
    return out


def progress(message):
    print(f'  .. {message}', file=sys.stderr, flush=True)


def plain(value):
    """Return numpy scalars and arrays as Python values (``json`` ``default`` hook)."""
    if isinstance(value, (np.generic, np.ndarray)):
        return value.tolist()
    raise TypeError(f'{type(value).__name__} is not JSON serializable')


def save(args, name, results):
    """Write ``results`` to ``<output-dir>/<name>.json`` unless ``--no-save``."""
    if not getattr(args, 'save', True):
        return None
    path = os.path.join(output_dir(args), f'{name}.json')
    text = json.dumps(results, indent=2, default=plain)   # fails before the file is touched
    with open(path, 'w', encoding='utf-8') as stream:
        stream.write(text + '\n')
    return path


def emit(args, name, results, text):
    """Save ``results`` as ``<name>.json``, then print them: JSON with --json, else ``text``."""
    save(args, name, results)
    print(json.dumps(results, indent=2) if args.json else text)
