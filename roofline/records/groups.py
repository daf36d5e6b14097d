"""A grouped results document's figures (roofline profile, import ncu --group-by), computed from its launches:
one definition for the code that writes them (roofline.ncu.group) and for the check that reads them back.

A group's figures come from its member launches (`kernels`, their params.launch):
  time, sol_time, flops, bytes   sums over the members
  fraction_of_ceiling            sol_time / time (the time-weighted mean of the members' fractions)
  recoverable_time               time - sol_time
  share                          time / ALL the GPU time: every launch in the file and, for an imported trace,
                                 the work no model covers (its `unmodelled` list); files written before issue 38
                                 hold the share of the launches alone, which reads back too (Group.all_of
                                 recomputes it for the renderers)
  roof, dtype                    those of the members holding most of the group's time; roofs: all of theirs
The `program` block is the same over all groups. `report` gates on these, so a file whose stored figures disagree
with its launches is refused (exit 2, naming the field): the figures could be recomputed, but a file that says two
things is edited or corrupt, and a gate must not pick one of them quietly. Pure.
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any, Mapping, Sequence

from roofline.errors import at
from roofline.records.fields import MAX_FRACTION, check_fields, kind_of
from roofline.model.counts import counted

WRITTEN_ELSEWHERE = ("module",)  # groupings only `import torch` writes (its nn.Module ranges)
TOP = 5  # the program block says how much of the recoverable time the first TOP groups hold
_GROUP = {"name": "string", "by": "string", "launches": "number", "time": "number", "share": "number",
          "flops": "number", "bytes": "number", "roof": "string", "fraction_of_ceiling": "number",
          "sol_time": "number", "recoverable_time": "number", "achieved_flops": "number",
          "achieved_bandwidth": "number", "kernels": "list"}
_GROUP_OPTIONAL = {"intensity": "number or null", "roofs": "list", "dtype": "string", "model_flops": "number or null",
                   "model_bytes": "number or null", "model_calls": "number", "model_itemsize": "number",
                   "flops_ratio": "number", "bytes_ratio": "number", "flag": "string"}
_PROGRAM = {"time": "number", "sol_time": "number", "fraction_of_ceiling": "number", "recoverable_time": "number",
            "groups": "number", "top": "number"}
_PROGRAM_OPTIONAL = {"top_share_of_recoverable": "number or null"}
_TIMES = ("time", "sol_time", "recoverable_time")  # compared to within a billionth of the group's time
_SHARES = ("share", "fraction_of_ceiling", "top_share_of_recoverable")  # compared to within 1e-9


def parse_group_by(value: str) -> tuple[str, int]:
    """'op' -> ('op', 0); 'range:2' -> ('range', 2). ValueError for anything else."""
    if value in ("op", "kernel", "none"):
        return value, 0
    m = re.fullmatch(r"range:(\d+)", value)
    if m and int(m.group(1)) >= 1:
        return "range", int(m.group(1))
    raise ValueError(f"'{value:.40}' is not one of op, kernel, range:N (N >= 1), none")


def _dominant(entries: Sequence[Mapping[str, Any]], key: str) -> str:
    """The value of `key` of the entries holding most of the time (the first such in file order)."""
    by: dict[str, float] = {}
    for e in entries:
        by[e[key]] = by.get(e[key], 0.0) + e["time_median"]
    return max(by, key=lambda v: by[v])


def group_figures(items: Sequence[Mapping[str, Any]], total_time: float) -> dict[str, Any]:
    """The figures of one group from its launches (each with time_median, sol_time, flops, bytes, roof, dtype)."""
    time = sum(e["time_median"] for e in items)
    sol = sum(e["sol_time"] for e in items)
    flops = sum(e["flops"] for e in items)
    bytes_ = sum(e["bytes"] for e in items)
    out = {"launches": len(items), "time": time, "share": time / (total_time or 1.0), "flops": flops,
           "bytes": bytes_, "intensity": flops / bytes_ if bytes_ else None, "achieved_flops": flops / time,
           "achieved_bandwidth": bytes_ / time, "roof": _dominant(items, "roof"),
           "roofs": sorted({e["roof"] for e in items}), "fraction_of_ceiling": sol / time, "sol_time": sol,
           "recoverable_time": time - sol}
    typed = [e for e in items if isinstance(e.get("dtype"), str)]
    if typed:
        out["dtype"] = _dominant(typed, "dtype")
    return out


def program_totals(groups: Sequence[Mapping[str, Any]], top: int = TOP) -> dict[str, Any]:
    """The footer: GPU time, speed-of-light time, the time-weighted fraction, recoverable time and how much of it
    the `top` groups hold."""
    return _totals([g["time"] for g in groups], [g["sol_time"] for g in groups],
                   [g["recoverable_time"] for g in groups], top)


def _totals(times: Sequence[float], sols: Sequence[float], recoverables: Sequence[float], top: int) -> dict[str, Any]:
    """program_totals from the groups' figures in order: the one definition for dict and typed groups."""
    time = sum(times)
    sol = sum(sols)
    recoverable = sum(recoverables)
    held = sum(recoverables[:top])
    return {"time": time, "sol_time": sol, "fraction_of_ceiling": sol / time if time else None,
            "recoverable_time": recoverable, "groups": len(times), "top": min(top, len(times)),
            "top_share_of_recoverable": held / recoverable if recoverable > 0 else None}


# ---- the typed form a gate reads -------------------------------------------------------------------------------


@dataclass(frozen=True)
class Group:
    """One group of a checked grouped document (check_groups): the figures a gate reads, and the block as written
    (key order kept) for the report row that shows every one of them. Built only when a gate asks (Group.all_of):
    a grouped document has tens to hundreds of groups, however many launches."""

    name: str
    by: str
    launches: int
    time: float
    sol_time: float
    recoverable_time: float
    fraction_of_ceiling: float  # time-weighted: sol_time / time
    written: Mapping[str, Any]  # the block as the file holds it
    # what a grouped table's row shows beside them (roofline.render.tables.grouped): read here, so it indexes no dict
    share: float = 0.0
    flops: float = 0.0
    bytes: float = 0.0
    intensity: float | None = None
    achieved_flops: float = 0.0
    achieved_bandwidth: float = 0.0
    roof: str = ""
    dtype: str | None = None
    roofs: tuple[str, ...] = ()
    flops_ratio: float | None = None
    bytes_ratio: float | None = None
    flag: str | None = None

    @property
    def mixed(self) -> bool:
        """Work on more than one roof (the roof shown holds most of it)."""
        return len(self.roofs) > 1

    @classmethod
    def from_checked(cls, block: Mapping[str, Any]) -> "Group":
        """The typed group of a checked block; a report row (roofline.gates.groups), which carries a group's figures
        as written, reads the same way."""
        return cls(block["name"], block["by"], block["launches"], block["time"], block["sol_time"],
                   block["recoverable_time"], block["fraction_of_ceiling"], block, share=block["share"],
                   flops=block["flops"], bytes=block["bytes"], intensity=block.get("intensity"),
                   achieved_flops=block["achieved_flops"], achieved_bandwidth=block["achieved_bandwidth"],
                   roof=block["roof"], dtype=block.get("dtype"), roofs=tuple(block.get("roofs") or ()),
                   flops_ratio=block.get("flops_ratio"), bytes_ratio=block.get("bytes_ratio"),
                   flag=block.get("flag"))

    @classmethod
    def all_of(cls, blocks: Sequence[Mapping[str, Any]] | None, gpu_time: float | None = None
               ) -> tuple["Group", ...]:
        """The typed groups of a document's `groups` list (checked), in the document's order. With `gpu_time` (all
        the GPU time, modelled or not) each share is of it, whatever the file stored (issue 38: a file written
        before it stored the share of the modelled time)."""
        groups = tuple(cls.from_checked(b) for b in blocks or ())
        if gpu_time is None or gpu_time <= 0:
            return groups
        return tuple(replace(g, share=g.time / gpu_time) for g in groups)

    def shown(self) -> dict[str, Any]:
        """Every figure the block holds but its launch list, in the file's order: what a report row carries."""
        return {k: v for k, v in self.written.items() if k != "kernels"}


PROGRAM_SHOWN = ("gpu_time", "unmodelled_time", "unmodelled_share")  # written by import torch: shown, not gated


@dataclass(frozen=True)
class Program:
    """The program of a grouped document as its groups give it (never the stored copy, which check_groups found
    equal), with the figures an importer stored beside it that a report shows but no gate reads."""

    time: float
    sol_time: float
    fraction_of_ceiling: float | None
    recoverable_time: float
    groups: int
    top: int
    top_share_of_recoverable: float | None
    shown_extra: Mapping[str, Any]  # PROGRAM_SHOWN, where stored

    @classmethod
    def of(cls, groups: Sequence[Group], stored: Mapping[str, Any] | None) -> "Program":
        stored = stored or {}
        totals = _totals([g.time for g in groups], [g.sol_time for g in groups],
                         [g.recoverable_time for g in groups], int(stored.get("top") or TOP))
        return cls(**totals, shown_extra={k: stored[k] for k in PROGRAM_SHOWN if k in stored})

    @classmethod
    def as_written(cls, block: Mapping[str, Any]) -> "Program":
        """The figures as a block holds them, not recomputed: a document's stored `program` (check_groups found it
        equal to its groups') or a report's program row, for a table that shows what the file says."""
        return cls(block["time"], block["sol_time"], block.get("fraction_of_ceiling"), block["recoverable_time"],
                   block.get("groups", 0), block["top"], block.get("top_share_of_recoverable"),
                   {k: block[k] for k in PROGRAM_SHOWN if k in block})

    @property
    def gpu_time(self) -> float | None:
        """An imported trace's GPU time of every event, modelled or not (None for an ncu profile)."""
        return self.shown_extra.get("gpu_time")

    @property
    def unmodelled_time(self) -> float | None:
        return self.shown_extra.get("unmodelled_time")

    @property
    def unmodelled_share(self) -> float | None:
        return self.shown_extra.get("unmodelled_share")

    def totals(self) -> dict[str, Any]:
        """The totals in program_totals' order and spelling (the report's program row starts with them)."""
        return {"time": self.time, "sol_time": self.sol_time, "fraction_of_ceiling": self.fraction_of_ceiling,
                "recoverable_time": self.recoverable_time, "groups": self.groups, "top": self.top,
                "top_share_of_recoverable": self.top_share_of_recoverable}


# ---- reading a grouped document back ---------------------------------------------------------------------------


def _same(stored: Any, computed: Any, key: str, scale: float) -> bool:
    if computed is None or stored is None or isinstance(computed, (str, list)):
        return stored == computed
    if key in _TIMES:
        return abs(stored - computed) <= 1e-9 * scale + 1e-9 * abs(computed)
    if key in _SHARES:
        return abs(stored - computed) <= 1e-9
    return math.isclose(stored, computed, rel_tol=1e-9, abs_tol=1e-300)


def _disagrees(path: Path, field: str, stored: Any, computed: Any, what: str) -> Exception:
    shown = f"{computed:.6g}" if isinstance(computed, float) else repr(computed)
    return at(path, field, f"is {stored!r:.40} but {what} give {shown}: the file was edited or is corrupt, and "
                           "report gates on this figure; import or profile again")


def _member_index(path: Path, kernels: Sequence[Mapping[str, Any]]) -> dict[int, int]:
    """params.launch -> position in kernels, for the launches a group names. Every launch of a grouped file has one,
    and it is timed (the group's figures are sums of their times)."""
    index: dict[int, int] = {}
    for i, k in enumerate(kernels):
        launch = (k.get("params") or {}).get("launch")
        if isinstance(launch, bool) or not isinstance(launch, int):
            raise at(path, f"kernels[{i}].params.launch", f"expected the launch number every launch of a grouped "
                                                          f"file has, got {kind_of(launch)} {launch!r:.30}")
        if k.get("time_median") is None or k.get("time_median") <= 0:
            raise at(path, f"kernels[{i}].time_median", "is missing: a launch of a grouped file is timed")
        index[int(launch)] = i
    return index


def _members(path: Path, label: str, group: Mapping[str, Any], index: Mapping[int, int],
             owner: dict[int, str]) -> list[int]:
    out = []
    for j, launch in enumerate(group["kernels"]):
        if isinstance(launch, bool) or not isinstance(launch, int) or launch not in index:
            raise at(path, f"{label}.kernels[{j}]", f"is {launch!r:.30}; expected the params.launch of one of the "
                                                     "file's kernels")
        if launch in owner:
            raise at(path, f"{label}.kernels[{j}]", f"launch {launch} is in {owner[launch]} too: a launch belongs to "
                                                     "one group")
        owner[launch] = label
        out.append(index[launch])
    if not out:
        raise at(path, f"{label}.kernels", "is empty: a group holds at least one launch")
    return out


def _check_group(path: Path, label: str, group: Any, by: str) -> None:
    """Types, and the values a reader divides by and gates on."""
    if not isinstance(group, dict):
        raise at(path, label, f"expected a mapping, got {kind_of(group)}")
    check_fields(path, f"{label}.", group, _GROUP, _GROUP_OPTIONAL)
    if group["by"] != by:
        raise at(path, f"{label}.by", f"is {group['by']!r:.30} but groups[0] is grouped by {by!r:.30}")
    try:
        if group["by"] not in WRITTEN_ELSEWHERE:
            parse_group_by(group["by"])
    except ValueError as exc:
        raise at(path, f"{label}.by", str(exc)) from None
    if not all(isinstance(r, str) for r in group.get("roofs", [])):
        raise at(path, f"{label}.roofs", "expected a list of roof names")
    if not 0 <= group["fraction_of_ceiling"] <= MAX_FRACTION:
        raise at(path, f"{label}.fraction_of_ceiling", f"is {group['fraction_of_ceiling']!r}; expected 0 to "
                                                        f"{MAX_FRACTION:g}")
    for key in ("model_flops", "model_bytes", "flops_ratio", "bytes_ratio"):
        if group.get(key) is not None and group[key] < 0:
            raise at(path, f"{label}.{key}", f"is {group[key]!r}; it cannot be negative")


def unmodelled_time(doc: Mapping[str, Any]) -> float:
    """The GPU time of the document's `unmodelled` list (an imported trace's work no model covers); 0 without one."""
    entries = doc.get("unmodelled")
    if not isinstance(entries, list):
        return 0.0
    return sum(float(e["time"]) for e in entries if isinstance(e, dict) and isinstance(e.get("time"), (int, float))
               and not isinstance(e.get("time"), bool))


def check_groups(path: Path, doc: Mapping[str, Any]) -> None:
    """The `groups` and `program` blocks of a results document: every field a renderer reads, each launch in
    exactly one group, and every figure equal to what the launches give."""
    groups = doc.get("groups") or []
    if "program" in doc and not groups:
        raise at(path, "program", "is present but the file has no groups: a program block sums a grouped profile")
    if not groups:
        return
    if doc.get("machine") is None:
        raise at(path, "machine", "is null but the file has groups: a profile's groups are judged against a spec's "
                                  "ceilings")
    by = groups[0].get("by") if isinstance(groups[0], dict) else None
    for i, group in enumerate(groups):
        _check_group(path, f"groups[{i}]", group, str(by))
    kernels = doc["kernels"]
    index = _member_index(path, kernels)
    modelled = sum(k["time_median"] for k in kernels)
    total = modelled + unmodelled_time(doc)
    owner: dict[int, str] = {}
    for i, group in enumerate(groups):
        label = f"groups[{i}]"
        members = [kernels[m] for m in _members(path, label, group, index, owner)]
        figures = group_figures(members, total)
        legacy = figures["time"] / (modelled or 1.0)  # the share of the launches alone, as written before issue 38
        for key, computed in figures.items():
            if key == "share" and key in group and _same(group[key], legacy, key, 1.0):
                continue
            if key in group and not _same(group[key], computed, key, figures["time"]):
                raise _disagrees(path, f"{label}.{key}", group[key], computed, f"its {counted(len(members), 'launch')}")
        for ratio, model, figure in (("flops_ratio", "model_flops", "flops"), ("bytes_ratio", "model_bytes", "bytes")):
            if ratio in group:
                if not group.get(model):
                    raise at(path, f"{label}.{ratio}", f"is given but {model} is {group.get(model)!r}")
                if not _same(group[ratio], figures[figure] / group[model], ratio, 1.0):
                    raise _disagrees(path, f"{label}.{ratio}", group[ratio], figures[figure] / group[model],
                                     f"its {figure} over {model}")
    lost = [i for i, k in enumerate(kernels) if int(k["params"]["launch"]) not in owner]
    if lost:
        raise at(path, f"kernels[{lost[0]}]", f"launch {kernels[lost[0]]['params']['launch']} is in no group "
                                              f"({counted(len(lost), 'launch')} {'is' if len(lost) == 1 else 'are'} not): the program's totals would leave "
                                              "them out")
    _check_program(path, doc, groups)


def _check_program(path: Path, doc: Mapping[str, Any], groups: Sequence[Mapping[str, Any]]) -> None:
    if "program" not in doc:
        return
    program = doc["program"]
    if not isinstance(program, dict):
        raise at(path, "program", f"expected a mapping, got {kind_of(program)}")
    check_fields(path, "program.", program, _PROGRAM, _PROGRAM_OPTIONAL)
    top = program["top"]
    if top != int(top) or not 0 <= top <= len(groups):
        raise at(path, "program.top", f"is {top!r}; expected a whole number of groups from 0 to {len(groups)}")
    computed = program_totals(groups, int(top) or TOP)
    for key, value in computed.items():
        if key in program and not _same(program[key], value, key, computed["time"]):
            raise _disagrees(path, f"program.{key}", program[key], value, "the groups")
