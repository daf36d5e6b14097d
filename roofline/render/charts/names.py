"""Kernel and group names short enough for a chart's side panel, and still told apart.

Cutting `triton_poi_fused__to_copy_add_bmm_cat_cos_mul_neg_sin_...` to its first 26 characters made two different
Triton kernels read alike (they differ in their fused ops and their numeric suffix, at the end). A name here is cut
from the middle: its head says what kind of kernel it is, its tail the suffix. Names that still read alike drop the
part they share and show where they differ."""

from __future__ import annotations

from collections import defaultdict
from typing import Sequence

ELLIPSIS = "…"


def middle_cut(name: str, width: int) -> str:
    """`name` in at most `width` characters: its head and its tail around an ellipsis (the tail a little longer,
    it holds the numeric suffix)."""
    if len(name) <= width:
        return name
    room = max(width - 1, 2)
    head = room // 2 - 1 if room > 6 else room // 2
    return name[:head] + ELLIPSIS + name[len(name) - (room - head):]


def _from_difference(name: str, shared: int, width: int) -> str:
    """The name from a little before where it first differs from its look-alikes (at an `_` boundary)."""
    start = name.rfind("_", 0, max(shared, 1)) + 1 if shared else 0
    return ELLIPSIS + middle_cut(name[start:], width - 1)


def short_names(names: Sequence[str], width: int) -> list[str]:
    """Each name cut to `width` (middle_cut); names that still collide show the part where they differ; any left
    equal (the same name twice) are as they are: the chart numbers every point."""
    out = [middle_cut(n, width) for n in names]
    alike: dict[str, list[int]] = defaultdict(list)
    for i, short in enumerate(out):
        alike[short].append(i)
    for members in alike.values():
        full = {names[i] for i in members}
        if len(full) < 2:
            continue
        ordered = sorted(full)
        shared = len(_common_prefix(ordered[0], ordered[-1]))
        for i in members:
            out[i] = _from_difference(names[i], shared, width)
    return out


def _common_prefix(a: str, b: str) -> str:
    n = 0
    while n < min(len(a), len(b)) and a[n] == b[n]:
        n += 1
    return a[:n]
