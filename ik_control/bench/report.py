"""
Write ``docs/performance.md`` from the benchmarks' saved results, so it can be regenerated.

Every ``ik_control bench ...`` saves ``<output-dir>/<name>.json`` (and its plot); this
module reads whichever of ``ik.json``, ``step.json``, ``buss.json`` and ``loop.json`` are
there, copies their PNG plots next to the page and writes one Markdown page: the machine
and library versions, then one section per benchmark with its table and plot. A result
file that is missing keeps its section of the existing page (marked as kept), or else
gets a line saying which command makes it. ``loop.json`` (the
control-loop benchmark) is shown through its ``table`` text when it has one, else through
``ik_control.ros.harness.bench_loop.table`` when that exists, else as its JSON; its plot is
``plot`` or ``loop.png``.
"""

from importlib import metadata
import json
import os
import platform
import shutil
import time

from ik_control import __version__

SECTIONS = (('ik', 'Position IK: solve rate and time', 'ik_control bench ik'),
            ('step', 'One control update', 'ik_control bench step'),
            ('loop', 'Control loop', 'ik_control bench loop'),
            ('buss', "Buss's tracking experiment", 'ik_control bench buss'))
PACKAGES = (('numpy', 'numpy'), ('pinocchio', 'pin'), ('numba', 'numba'),
            ('pink', 'pin-pink'), ('daqp', 'daqp'), ('ikpy', 'ikpy'), ('scipy', 'scipy'),
            ('matplotlib', 'matplotlib'), ('pytracik', 'pytracik'),
            ('roboticstoolbox', 'roboticstoolbox-python'))


def cpu_model():
    """Return the CPU model name (``/proc/cpuinfo`` on Linux, else ``platform``)."""
    try:
        with open('/proc/cpuinfo', encoding='utf-8') as stream:
            for line in stream:
                if line.lower().startswith('model name'):
                    return line.split(':', 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or platform.machine()


def machine_info():
    """Return (label, value) pairs: CPU, cores, OS, Python and library versions."""
    rows = [('CPU', cpu_model()), ('logical cores', str(os.cpu_count())),
            ('OS', platform.platform()),
            ('Python', f'{platform.python_version()} ({platform.python_implementation()})'),
            ('ik_control', __version__)]
    for label, dist in PACKAGES:
        try:
            rows.append((label, metadata.version(dist)))
        except metadata.PackageNotFoundError:
            rows.append((label, 'not installed'))
    try:
        from ik_control.bench.peers import load_pykdl
        rows.append(('PyKDL', getattr(load_pykdl(), '__version__', 'unknown version')))
    except Exception as exc:  # noqa: B902 - any reason is reported, not fatal
        rows.append(('PyKDL', f'not available: {exc}'))
    try:
        load = ', '.join(f'{v:.2f}' for v in os.getloadavg())
        rows.append(('load average when the report was written (1, 5, 15 min)', load))
    except OSError:
        pass
    return rows


def load_results(output_dir):
    """Return ``{name: results}`` for every known ``<name>.json`` in ``output_dir``."""
    found = {}
    for name, _, _ in SECTIONS:
        path = os.path.join(output_dir, f'{name}.json')
        if os.path.exists(path):
            with open(path, encoding='utf-8') as stream:
                found[name] = json.load(stream)
    return found


def _copy_plot(name, data, output_dir, docs_dir):
    """Copy the PNG of benchmark ``name`` into ``docs_dir``; return its file name or None."""
    candidates = [os.path.join(output_dir, f'{name}.png')]
    if isinstance(data, dict) and isinstance(data.get('plot'), str):
        candidates.insert(0, data['plot'])
        candidates.insert(1, os.path.join(output_dir, os.path.basename(data['plot'])))
    for path in candidates:
        if os.path.isfile(path):
            target = f'{name}.png'
            if os.path.abspath(path) != os.path.abspath(os.path.join(docs_dir, target)):
                shutil.copyfile(path, os.path.join(docs_dir, target))
            return target
    return None


def _md_table(header, rows):
    lines = ['| ' + ' | '.join(header) + ' |', '|' + '|'.join('---' for _ in header) + '|']
    lines += ['| ' + ' | '.join(str(c) for c in row) + ' |' for row in rows]
    return lines


def ik_section(data):
    """Return Markdown lines for ``ik.json``: method, table and notes."""
    clock = 'process CPU time' if data.get('clock') == 'cpu' else 'wall-clock time'
    lines = [f"Method (TRAC-IK's): {data['samples']} random joint configurations per robot, "
             'uniform inside the limits (seed '
             f"{data.get('seed', 0)}) -> forward kinematics -> the full 6-D pose solved to "
             f"{data['tolerance']:g} (position m, rotation rad) within "
             f"{data['timeout_ms']:g} ms, seeded from the middle of the joint limits. "
             'Success is checked on pinocchio forward kinematics of the returned joints, '
             f'the same way for every solver. Times: {clock}; the mean includes failures. '
             "'Any time' counts answers after the timeout too (ikpy has no time limit).", '']
    rows = []
    unavailable = []
    for robot, entry in data['robots'].items():
        for solver, r in entry['solvers'].items():
            if not r.get('available'):
                unavailable.append(f"- {solver} on {robot}: not available: {r['reason']}")
                continue
            name = f'**{solver}**' if solver == 'ik_control' else solver
            rows.append((f"{robot} ({entry['base']} -> {entry['tip']})", name, r['samples'],
                         f"{r['rate']:.2f} %", f"{r['mean_ms']:.3f}", f"{r['median_ms']:.3f}",
                         f"{r['p99_ms']:.3f}", f"{r['rate_any_time']:.2f} %",
                         '' if r.get('own_rate') is None else f"{r['own_rate']:.2f} %",
                         '' if r.get('mean_wall_ms') is None else f"{r['mean_wall_ms']:.3f}"))
    lines += _md_table(('robot (base -> tip)', 'solver', 'samples', 'solved', 'mean ms',
                        'median ms', 'p99 ms', 'any time', 'own flag', 'wall ms'), rows)
    lines.append('')
    lines.append("'Own flag': the solver's own success flag (TRAC-IK's return code >= 0, "
                 "Robotics Toolbox's success), next to 'solved', the common check; 'wall ms': "
                 'mean wall-clock time (TRAC-IK runs two threads, so its CPU time can exceed '
                 'it).')
    lines.append('')
    from ik_control.bench.ik import goal_lines
    lines += [f'- {line}' for line in goal_lines(data)]
    lines += unavailable
    for robot, published in data.get('trac_ik_published', {}).items():
        if robot in data['robots']:
            text = ', '.join(f'{k} {rate:.2f} % in {ms:.2f} ms' for k, (rate, ms)
                             in published.items())
            lines.append(f'- {robot}, published by TRAC-IK v1.4.6 (C++, its machine): {text}.')
    counts = {}
    for entry in data['robots'].values():
        for solver, r in entry['solvers'].items():
            if r.get('available') and r['samples'] < data['samples']:
                counts[solver] = r['samples']
    if counts:
        lines.append('- Slow peers ran on the first samples only (same targets): '
                     + ', '.join(f'{s} {n}' for s, n in sorted(counts.items())) + '.')
    if 'table' in data:
        lines += ['', 'As printed by the command:', '', '```', data['table'], '```']
    return lines


def step_section(data):
    """Return Markdown lines for ``step.json``: microseconds per control update."""
    rows = []
    for robot, entry in data['robots'].items():
        for label, r in entry['implementations'].items():
            rows.append((f"{robot} ({entry['joints']} joints, {entry['task_rows']} rows)",
                         label, f"{r['median_us']:.2f}", f"{r['p99_us']:.2f}",
                         f"{r['speedup_of_ik_control']:.1f}x"))
    return ([f"Each implementation timed {data['samples']} times (peers fewer) on the same "
             'configuration and targets: forward kinematics, Jacobians, pose error, DLS with '
             'adaptive damping and joint centering.', '']
            + _md_table(('robot', 'implementation', 'median us', 'p99 us',
                         'ik_control faster by'), rows))


def buss_section(data):
    """Return Markdown lines for ``buss.json``: the laws' tracking figures and findings."""
    lines = []
    head = ('law', 'lambda m', 'mean error m', 'RMS error m', 'worst error m',
            'mean in reach m', 'joint jumps', 'oscillation out of reach rad', 'us/update',
            'Buss us (published)')
    for shape, entry in data['shapes'].items():
        lines.append(f"{shape}: {entry['joints']} joints, {entry['effectors']} effectors, "
                     f"D_max {entry.get('d_max', 0):.2f} m, targets out of reach "
                     f"{100 * entry['out_of_reach_fraction']:.0f} % of steps")
        lines.append('')
        published = data.get('published_us', {}).get(shape, {})
        groups = [('', entry['laws'])]
        if entry.get('jumping'):
            groups.append(('jumping targets: ', entry['jumping']['laws']))
        rows = []
        for prefix, laws in groups:
            for law, r in laws.items():
                lam = '' if r['damping'] is None else f"{r['damping']:.2f}"
                in_reach = r.get('mean_error_in_reach')
                buss = published.get(law) if not prefix else None
                rows.append((prefix + law, lam, f"{r['mean_error']:.4f}",
                             f"{r.get('rms_error', float('nan')):.4f}",
                             f"{r.get('worst_error', float('nan')):.3f}",
                             '' if in_reach is None else f'{in_reach:.4f}',
                             str(r.get('jumps', '')), f"{r['oscillation_out_of_reach']:.5f}",
                             f"{r['us_per_update']:.2f}", '' if buss is None else f'{buss:.1f}'))
        lines += _md_table(head, rows)
        lines.append('')
    for check in data.get('checks', []):
        lines.append(f"- [{'x' if check['holds'] else ' '}] "
                     f"{'reproduced' if check['holds'] else 'NOT reproduced'}: {check['claim']}")
    if data.get('alternate_jacobian'):
        from ik_control.bench.buss_alternate import table
        lines += ['', 'The alternate Jacobian (Buss sec. 4; '
                  '`ik_control/bench/buss_alternate.py`):', '', '```',
                  *table(data['alternate_jacobian']), '```']
    return lines


def generic_section(data):
    """Return Markdown lines for a result file without a dedicated renderer."""
    if isinstance(data, dict) and isinstance(data.get('table'), str):
        return ['```', data['table'], '```']
    return ['```json', json.dumps(data, indent=2)[:20000], '```']


def loop_section(data):
    """Return Markdown lines for ``loop.json``: its own table if the module gives one."""
    if isinstance(data, dict) and isinstance(data.get('table'), str):
        return generic_section(data)
    try:
        from ik_control.ros.harness import bench_loop
        text = bench_loop.table(data)
    except Exception:  # noqa: B902 - no such module or another layout: show the JSON
        return generic_section(data)
    return ['```', text, '```', '',
            'What holds the tick back, the floor of rclpy on this machine and what a spare '
            'core or a real-time kernel would change: [control_loop.md](control_loop.md).']


RENDERERS = {'ik': ik_section, 'step': step_section, 'loop': loop_section,
             'buss': buss_section}


def page_sections(text):
    """Return ``{title: body lines}`` of the ``## title`` sections of a Markdown page."""
    sections, title = {}, None
    for line in text.splitlines():
        if line.startswith('## '):
            title = line[3:].strip()
            sections[title] = []
        elif title is not None:
            sections[title].append(line)
    return sections


def _kept_body(body):
    """Return a previous section's lines without its kept-note, or [] if it had no figures."""
    body = list(body)
    for _ in range(2):
        while body and not body[0].strip():
            body.pop(0)
        if body and body[0].startswith('(Kept from the previous report'):
            body.pop(0)
    while body and not body[-1].strip():
        body.pop()
    if not body or body[0].startswith('No `'):
        return []
    return body


def render(results, plots, machine, kept=None):
    """
    Return the Markdown page for ``results`` (``{name: data}``) and ``plots``.

    ``kept`` (``{title: body lines}``, from the previous page) supplies the sections of
    benchmarks without a result file, marked as kept.
    """
    kept = kept or {}
    lines = ['# Performance', '',
             '<!-- Generated by `ik_control bench report`; edit the benchmarks, not this '
             'file. -->', '',
             'Written by `ik_control bench report` from the JSON files the benchmarks save in '
             '`bench_results/`. To regenerate:', '',
             '```sh',
             'ik_control bench ik && ik_control bench step && ik_control bench loop',
             'ik_control bench buss',
             'ik_control bench report',
             '```', '', '## Machine', '']
    lines += _md_table(('', ''), machine)
    lines += ['', f"Report written {time.strftime('%Y-%m-%d %H:%M:%S')}.", '']
    for name, title, command in SECTIONS:
        lines += [f'## {title}', '']
        data = results.get(name)
        body = _kept_body(kept.get(title, []))
        if data is None and body:
            lines += [f'(Kept from the previous report: no `{name}.json` this time.)', '']
            lines += body + ['']
            continue
        if data is None:
            lines += [f'No `{name}.json` yet: run `{command}`.', '']
            continue
        created = data.get('created') if isinstance(data, dict) else None
        lines.append(f'From `{name}.json`' + (f' (measured {created})' if created else '')
                     + f', made by `{command}`.')
        lines.append('')
        try:
            lines += RENDERERS.get(name, generic_section)(data)
        except (KeyError, TypeError, ValueError) as exc:
            lines += [f'(unexpected layout of {name}.json: {exc}; shown as JSON)', '']
            lines += generic_section(data)
        if plots.get(name):
            png = plots[name]
            lines += ['', f'![{title}]({png})', '', f'Plot: [{png}]({png})']
        lines.append('')
    return '\n'.join(lines).rstrip() + '\n'


def write(output_dir='bench_results', docs_dir='docs'):
    """
    Write ``<docs_dir>/performance.md`` (and copy the plots); return its path.

    A benchmark without a result file keeps its section of the existing page, if any.
    """
    os.makedirs(docs_dir, exist_ok=True)
    results = load_results(output_dir)
    plots = {name: _copy_plot(name, data, output_dir, docs_dir) for name, data in results.items()}
    path = os.path.join(docs_dir, 'performance.md')
    kept = {}
    if os.path.exists(path):
        with open(path, encoding='utf-8') as stream:
            kept = page_sections(stream.read())
    page = render(results, plots, machine_info(), kept)
    with open(path, 'w', encoding='utf-8') as stream:
        stream.write(page)
    return path
