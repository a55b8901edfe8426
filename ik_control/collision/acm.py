"""
The allowed-collision matrix, computed by sampling as MoveIt's setup assistant does.

A pair of links is left out of the checks (written as ``<disable_collisions>`` in an
SRDF, with MoveIt's reason names) when

* ``Adjacent``: a URDF joint joins them (they touch by construction);
* ``Default``: their shapes are in contact at the default pose (the robot's ready pose
  where the package knows one, else every joint at 0 clipped into its limits): a robot
  modelled with overlapping shells there would otherwise never be allowed to move;
* ``Always``: in contact in every sampled configuration (uniform in the joint limits);

"In contact" means nearer than ``padding`` (default 0.01 m, the controller's shipped
``collision.security_distance``; MoveIt uses 0): a pair the robot's own design holds
closer than the distance the controller keeps (SIMON's shoulder sphere and upper arm, 10
mm apart in every pose) could otherwise never move towards each other at all.
* ``Never`` (only with ``never=True``, MoveIt's speed option, off by default): never in
  contact in any sample. A pose rare enough to be missed by the samples is still a real
  collision, so the package does not drop these by default.

Pairs no controlled joint moves relative to each other are never checked and need no
entry. :func:`srdf_text` writes the result; the controller, the planner and the tests read
it back (:func:`~ik_control.collision.model.disabled_pairs_from_srdf`).
"""

from dataclasses import dataclass
import xml.sax.saxutils as saxutils

from ik_control.collision.model import CollisionModel
import numpy as np

__all__ = ['AllowedCollisions', 'compute', 'srdf_text']

DEFAULT_SAMPLES = 1000


@dataclass
class AllowedCollisions:
    """The disabled link pairs (``(link1, link2, reason)`` sorted) and what was sampled."""

    robot: str
    disabled: list
    samples: int
    checked_pairs: int


def default_pose(model):
    """Every controlled joint at 0, clipped into its limits [rad or m]."""
    return np.clip(np.zeros(model.nq), model.lower, model.upper)


DEFAULT_PADDING = 0.01  # [m] nearer than this counts as contact (module docstring)


def compute(model, samples=DEFAULT_SAMPLES, seed=0, pose=None, never=False,
            progress=None, padding=DEFAULT_PADDING, convex=False):
    """
    Compute the allowed-collision matrix of ``model`` (module docstring).

    ``pose``: the default pose (controlled joints; default :func:`default_pose`);
    ``progress(done, total)`` is called every 100 samples; ``convex``: meshes measured as
    their convex hulls, as the controller measures them with ``collision.convex_meshes``.
    """
    cm = CollisionModel(model, convex=convex)
    links = cm.links
    pairs = cm.relevant_self_pairs()
    by_links = {}
    for k, (a, b) in enumerate(pairs):
        by_links.setdefault(tuple(sorted((links[a], links[b]))), []).append(k)
    cm.pairs = np.array(pairs, dtype=np.int64).reshape(-1, 2)  # every relevant pair
    reason = {}
    for a, b in sorted(cm.adjacent, key=sorted):
        if a in links and b in links and a != b:
            reason[tuple(sorted((a, b)))] = 'Adjacent'

    def contacts(q):
        rows, _ = cm.distances(q, within=padding)
        found = set()
        for k in rows:
            a, b = cm.pairs[k]
            found.add(tuple(sorted((links[a], links[b]))))
        return found

    q0 = default_pose(model) if pose is None else np.asarray(pose, dtype=float)
    for key in contacts(q0):
        reason.setdefault(key, 'Default')
    rng = np.random.default_rng(seed)
    count = {key: 0 for key in by_links}
    for i, q in enumerate(model.random_configurations(samples, rng)):
        for key in contacts(q):
            count[key] += 1
        if progress is not None and (i + 1) % 100 == 0:
            progress(i + 1, samples)
    for key, n in count.items():
        if samples and n == samples:
            reason.setdefault(key, 'Always')
        elif never and n == 0:
            reason.setdefault(key, 'Never')
    disabled = sorted((a, b, why) for (a, b), why in reason.items())
    return AllowedCollisions(model.name, disabled, samples, len(by_links))


def srdf_text(acm, comment=''):
    """Return an SRDF holding the ``<disable_collisions>`` entries of ``acm`` (MoveIt's)."""
    q = saxutils.quoteattr
    lines = ['<?xml version="1.0"?>']
    if comment:
        lines.append(f'<!-- {comment} -->')
    lines.append(f'<robot name={q(acm.robot)}>')
    for a, b, why in acm.disabled:
        lines.append(f'  <disable_collisions link1={q(a)} link2={q(b)} reason={q(why)}/>')
    lines.append('</robot>')
    return '\n'.join(lines) + '\n'
