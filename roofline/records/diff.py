"""Two programs side by side (issue 40): the results of `profile`, `import torch` or `import ncu` of program A and
of program B, group by group. Pure: checked results documents in, typed frozen figures out; renderers format them
(roofline.render.tables.diff) and `report --baseline` gates on them (roofline.gates.baseline).

What is compared:
  the program   GPU time (every GPU event, modelled or not; an ncu profile's: every launch), wall time, idle share,
                MFU and HFU (an imported trace's timeline step), launches, time-weighted fraction of ceiling
  each group    A time, B time, the change (B - A) and its share of A's time, each side's share of its own GPU time
                (of ALL of it: unmodelled work included), fraction of ceiling and recoverable time
  unmodelled    each side's time no model covers, as its own row, so the groups and it add up to the GPU time:
                the program's change is the sum of the rows' changes
Groups are matched by name (the same --group-by on both sides: an op, a kernel, an nn.Module, an NVTX range); a
group on one side only is said so, and an ATen op of one side whose work went into the other side's Inductor
kernels (torch.compile fuses aten::add, aten::mul and aten::pow into triton_poi_fused_add_mul_pow) names the fused
kernels it went into, from the fused-op words of their names (roofline.model.ops.triton.fused_ops). Rows are ranked
by how far they moved (the size of the change), the unmodelled row last.

Steps: a trace of a torch.profiler schedule marks each step (ProfilerStep#N), and each launch carries the step it
was launched in (kernels[].step, written by import torch). Where both sides hold steps, every time is per step (the
mean over the side's steps: its launches inside steps over their number), so a capture of 5 steps compares with
one of 3, and each group has one sample per step, which the noise-aware regression gate reads. Wall time and idle
share are the timeline's, over the whole captured window. Otherwise the times are the whole capture's.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Mapping, Sequence

from roofline.errors import InputError, at
from roofline.model.counts import counted
from roofline.model.ops.triton import fused_ops
from roofline.records.files import ResultsFile

DIFF_SCHEMA = "roofline/diff/v1"
VERSION = 1
UNMODELLED = "(unmodelled)"  # the row of each side's time no model covers: no group is named so (names are ops,
# kernels, modules or ranges)
_ATEN = re.compile(r"^aten::(?P<op>\w+?)_?$")  # aten::add_ -> add (the in-place form fuses as its op)


# ---- one side ---------------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Side:
    """One program's figures, per step where `steps` says so (SI units)."""

    source: str
    device: str
    by: str  # how its groups were made (--group-by)
    gpu_time: float  # every GPU event's time: the groups' and the unmodelled
    modelled_time: float
    unmodelled_time: float
    launches: int  # GPU events, modelled or not (per step where per-step)
    steps: int  # ProfilerStep ranges the launches fall in (0: the capture holds none)
    fraction_of_ceiling: float | None  # time-weighted over the modelled kernel time
    recoverable_time: float
    wall_time: float | None = None  # the timeline step's, over the whole window (an imported trace)
    idle_share: float | None = None
    mfu: float | None = None
    hfu: float | None = None
    fraction_of_ceiling_wall: float | None = None

    def to_json(self) -> dict[str, Any]:
        return dict(self.__dict__)

    @classmethod
    def from_json(cls, block: Mapping[str, Any]) -> "Side":
        return cls(**{k: block.get(k) for k in cls.__dataclass_fields__})


@dataclass(frozen=True)
class GroupSide:
    """One group on one side (per step where the diff is): its time, its share of that side's GPU time, its
    fraction of ceiling, its recoverable time, and one time per step where the side holds steps."""

    time: float
    share: float  # of the side's GPU time, every GPU event
    fraction_of_ceiling: float | None
    recoverable_time: float | None
    launches: float
    samples: tuple[float, ...] = ()  # the group's time in each step, in step order
    intensity: float | None = None  # FLOP/B and FLOP/s: where the group sits on its side's roofline (the chart)
    achieved_flops: float | None = None
    roof: str | None = None

    def to_json(self) -> dict[str, Any]:
        return {"time": self.time, "share": self.share, "fraction_of_ceiling": self.fraction_of_ceiling,
                "recoverable_time": self.recoverable_time, "launches": self.launches, "samples": list(self.samples),
                "intensity": self.intensity, "achieved_flops": self.achieved_flops, "roof": self.roof}

    @classmethod
    def from_json(cls, block: Mapping[str, Any] | None) -> "GroupSide | None":
        if block is None:
            return None
        return cls(block["time"], block["share"], block.get("fraction_of_ceiling"), block.get("recoverable_time"),
                   block.get("launches", 0), tuple(block.get("samples") or ()), block.get("intensity"),
                   block.get("achieved_flops"), block.get("roof"))


ROW_KINDS = ("both", "a-only", "b-only", "unmodelled")


@dataclass(frozen=True)
class GroupDiff:
    """One row: a group on both sides, on one only, or the unmodelled time."""

    name: str
    kind: str  # one of ROW_KINDS
    a: GroupSide | None
    b: GroupSide | None
    fused: tuple[str, ...] = ()  # one-sided: the other side's groups its work went into, or came from
    role: str = ""  # 'fused into' (an op whose work the other side's Triton kernels do) or 'fuses' (such a kernel)

    @property
    def a_time(self) -> float:
        return self.a.time if self.a is not None else 0.0

    @property
    def b_time(self) -> float:
        return self.b.time if self.b is not None else 0.0

    @property
    def delta(self) -> float:
        """B's time less A's (a group missing on a side has none there)."""
        return difference(self.b_time, self.a_time)

    @property
    def change(self) -> float | None:
        """The change as a share of A's time; None for a group A does not have."""
        return self.delta / self.a_time if self.a_time > 0 else None

    @property
    def where(self) -> str:
        """What a one-sided row says of itself."""
        if self.kind in ("a-only", "b-only"):
            return f"{self.role} " + ", ".join(self.fused) if self.fused else f"only in {self.kind[0].upper()}"
        return ""

    def to_json(self) -> dict[str, Any]:
        return {"name": self.name, "kind": self.kind, "a": None if self.a is None else self.a.to_json(),
                "b": None if self.b is None else self.b.to_json(), "delta": self.delta, "change": self.change,
                "fused": list(self.fused), "role": self.role, "where": self.where}

    @classmethod
    def from_json(cls, block: Mapping[str, Any]) -> "GroupDiff":
        return cls(block["name"], block["kind"], GroupSide.from_json(block.get("a")),
                   GroupSide.from_json(block.get("b")), tuple(block.get("fused") or ()), block.get("role") or "")


@dataclass(frozen=True)
class Diff:
    """The diff of two programs: both sides' figures and the rows, most moved first, the unmodelled row last."""

    a: Side
    b: Side
    rows: tuple[GroupDiff, ...]
    per_step: bool  # every time is per step (both sides hold ProfilerStep ranges)
    notes: tuple[str, ...] = ()

    @property
    def delta(self) -> float:
        """B's GPU time less A's: the sum of the rows' changes."""
        return difference(self.b.gpu_time, self.a.gpu_time)

    @property
    def change(self) -> float | None:
        return self.delta / self.a.gpu_time if self.a.gpu_time > 0 else None

    def to_json(self) -> dict[str, Any]:
        return {"schema": DIFF_SCHEMA, "per_step": self.per_step, "a": self.a.to_json(), "b": self.b.to_json(),
                "program": {"delta": self.delta, "change": self.change,
                            "wall_delta": _minus(self.b.wall_time, self.a.wall_time)},
                "rows": [r.to_json() for r in self.rows], "notes": list(self.notes)}

    @classmethod
    def from_json(cls, doc: Any, path: Path | str = "<diff>") -> "Diff":
        """A diff file read back; InputError naming the file and field when it is not one this roofline reads."""
        path = Path(path)
        if not isinstance(doc, dict):
            raise at(path, None, "expected a JSON object (a diff from 'roofline diff --format json')")
        schema = doc.get("schema")
        if schema != DIFF_SCHEMA:
            match = re.fullmatch(r"roofline/diff/v(\d{1,6})", str(schema))
            newer = match is not None and int(match.group(1)) > VERSION
            raise at(path, "schema", f"is {str(schema)!r:.60}; " + ("newer than this roofline reads: upgrade "
                                                                     "roofline" if newer else f"expected '{DIFF_SCHEMA}'"))
        try:
            return cls(Side.from_json(doc["a"]), Side.from_json(doc["b"]),
                       tuple(GroupDiff.from_json(r) for r in doc["rows"]), bool(doc["per_step"]),
                       tuple(doc.get("notes") or ()))
        except (KeyError, TypeError, AttributeError) as exc:
            raise at(path, None, f"is not a complete {DIFF_SCHEMA} document ({exc!r:.80})") from None


_ROUNDING = 1e-9  # relative: far below any profiler's clock (ns on µs kernels), far above a float sum's error


def difference(b: float, a: float) -> float:
    """B less A, 0 where they differ by the rounding of summing the same times in another order (a mean over 10
    steps against one step of the same kernels is 1e-16 off, and would read '+0.0000000542 ps', '+0.0%' and sort
    an unchanged group first)."""
    d = b - a
    return 0.0 if abs(d) <= _ROUNDING * max(abs(a), abs(b)) else d


def _minus(b: float | None, a: float | None) -> float | None:
    return None if a is None or b is None else difference(b, a)


# ---- reading a side out of a results document --------------------------------------------------------------------


@dataclass(frozen=True)
class _Launch:
    time: float
    step: int | None
    op: str | None = None  # the op the launch ran in (import torch: an ATen op, or a Triton kernel named after it)


def _launches(results: ResultsFile, key: str) -> list[tuple[int | None, _Launch]]:
    """(params.launch, launch) of the document's `kernels` or `unmodelled`, each launch's step checked."""
    out = []
    entries = results.doc.get(key) or []
    if not isinstance(entries, list):
        raise at(results.path or Path("<results>"), key, "expected a list")
    for i, e in enumerate(entries):
        if not isinstance(e, dict):
            raise at(results.path or Path("<results>"), f"{key}[{i}]", "expected a mapping")
        step = e.get("step")
        if step is not None and (isinstance(step, bool) or not isinstance(step, int) or step < 0):
            raise at(results.path or Path("<results>"), f"{key}[{i}].step",
                     f"is {step!r:.30}; expected the whole number of a ProfilerStep")
        time = e.get("time_median") if key == "kernels" else e.get("time")
        if isinstance(time, bool) or not isinstance(time, (int, float)) or time < 0:
            raise at(results.path or Path("<results>"), f"{key}[{i}].{'time_median' if key == 'kernels' else 'time'}",
                     f"is {time!r:.30}; expected seconds")
        launch = (e.get("params") or {}).get("launch") if isinstance(e.get("params"), dict) else None
        op = e.get("op") if isinstance(e.get("op"), str) else None
        out.append((launch if isinstance(launch, int) else None, _Launch(float(time), step, op)))
    return out


def replay_mismatch(a: ResultsFile, b: ResultsFile, names: tuple[str, str] = ("A", "B")) -> str:
    """'' where both sides' kernel times were measured alike, else why not: ncu replays each launch alone (caches
    flushed, clocks locked: --cache-control all, --clock-control base by default; Nsight Compute's Kernel Profiling
    Guide, 'Replay'), a trace times the launches as the program ran them, so the same program reads differently."""
    if (a.typed.backend == "ncu") == (b.typed.backend == "ncu"):
        return ""
    ncu, trace = names if a.typed.backend == "ncu" else names[::-1]
    return (f"{ncu}'s times are ncu's (each launch replayed alone, caches flushed, clocks locked) and {trace}'s a "
            "trace's (launches as the program ran them)")


def ranks(results: ResultsFile) -> int:
    """How many ranks (processes, one GPU each) the document's launches came from: its GPU time sums theirs, so two
    documents of different rank counts compare the number of GPUs as much as the program."""
    seen = {e.get("rank") for key in ("kernels", "unmodelled") for e in results.doc.get(key) or ()
            if isinstance(e, dict) and isinstance(e.get("rank"), int) and not isinstance(e.get("rank"), bool)}
    return max(1, len(seen))


@dataclass(frozen=True)
class _Program:
    """What the diff reads of one results file: its side, its groups, and per-step samples."""

    side: Side
    groups: dict[str, GroupSide]
    unmodelled: GroupSide
    step_numbers: tuple[int, ...]
    ops: dict[str, tuple[str, ...]]  # each group's members' ops, for where an op went


def _stepped(launches: Sequence[_Launch], steps: Sequence[int]) -> tuple[float, ...]:
    by: dict[int, float] = {s: 0.0 for s in steps}
    for la in launches:
        if la.step is not None and la.step in by:
            by[la.step] += la.time
    return tuple(by[s] for s in steps)


def read_program(results: ResultsFile, per_step: bool | None = None) -> _Program:
    """One side of a diff from a checked grouped results document. `per_step`: divide by the steps (None: where the
    document holds any)."""
    doc = results.typed
    path = results.path or Path("<results>")
    groups = doc.grouped()
    if not groups:
        raise at(path, "groups", "is missing: diff compares grouped profiles ('roofline profile', 'import torch', "
                                 "'import ncu --group-by op'); import again without --group-by none")
    kernels = _launches(results, "kernels")
    unmodelled = _launches(results, "unmodelled")
    by_launch = {n: la for n, la in kernels if n is not None}
    steps = tuple(sorted({la.step for _, la in kernels + unmodelled if la.step is not None}))
    stepped = bool(steps) if per_step is None else per_step and bool(steps)
    n = len(steps) if stepped else 1
    program = doc.program()
    unmodelled_all = sum(la.time for _, la in unmodelled)
    if stepped:
        modelled = sum(la.time for _, la in kernels if la.step is not None) / n
        lost = sum(la.time for _, la in unmodelled if la.step is not None) / n
        launches = sum(1 for _, la in kernels + unmodelled if la.step is not None) / n
    else:
        modelled, lost, launches = program.time, unmodelled_all, len(kernels) + len(unmodelled)
    gpu = modelled + lost
    timeline = doc.timeline
    step = timeline.step if timeline is not None else {}
    side = Side(source=results.name, device=doc.device_name, by=groups[0].by, gpu_time=gpu, modelled_time=modelled,
                unmodelled_time=lost, launches=round(launches, 3), steps=len(steps) if stepped else 0,
                fraction_of_ceiling=program.fraction_of_ceiling,
                recoverable_time=program.recoverable_time / n,
                wall_time=None if step.get("wall_time") is None else step["wall_time"] / n,
                idle_share=step.get("idle_share"), mfu=step.get("mfu"), hfu=step.get("hfu"),
                fraction_of_ceiling_wall=step.get("fraction_of_ceiling_wall"))
    out: dict[str, GroupSide] = {}
    ops: dict[str, tuple[str, ...]] = {}
    for g in groups:
        members = [by_launch[m] for m in g.written.get("kernels") or () if m in by_launch]
        ops[g.name] = tuple(sorted({la.op for la in members if la.op}))
        samples = _stepped(members, steps) if stepped else ()
        time = sum(samples) / n if stepped else g.time
        out[g.name] = GroupSide(time, time / gpu if gpu > 0 else 0.0, g.fraction_of_ceiling,
                                time * (1.0 - g.fraction_of_ceiling), round(len(members) / n, 3) if stepped
                                else g.launches, samples, g.intensity, g.achieved_flops, g.roof)
    lost_samples = _stepped([la for _, la in unmodelled], steps) if stepped else ()
    lost_side = GroupSide(lost, lost / gpu if gpu > 0 else 0.0, None, None,
                          round(len(unmodelled) / n, 3) if stepped else len(unmodelled), lost_samples)
    return _Program(side, out, lost_side, steps if stepped else (), ops)


def program_samples(p: _Program) -> tuple[float, ...]:
    """The program's GPU time in each step (empty without steps)."""
    if not p.step_numbers:
        return ()
    totals = [0.0] * len(p.step_numbers)
    for g in (*p.groups.values(), p.unmodelled):
        for i, t in enumerate(g.samples):
            totals[i] += t
    return tuple(totals)


# ---- where an op went ----------------------------------------------------------------------------------------------


def _aten_word(name: str) -> str | None:
    m = _ATEN.match(name)
    return m.group("op") if m else None


def _fused_words(name: str) -> set[str]:
    """The ATen ops an Inductor kernel (or its group, named after it) fused, as words: {'add', 'mul', 'pow'}."""
    kind, ops = fused_ops(name)
    return {o.lstrip("_") for o in ops} | set(ops) if kind is not None else set()


@dataclass(frozen=True)
class _Words:
    """What a group is made of, as words: the ATen ops it ran ({'add', 'pow'}) and the ops its Inductor kernels
    fused (empty for a group of no Triton kernel)."""

    aten: frozenset[str]
    fused: frozenset[str]

    @classmethod
    def of(cls, name: str, ops: Sequence[str]) -> "_Words":
        names = (name, *ops)
        aten = {w for w in (_aten_word(n) for n in names) if w}
        fused: set[str] = set()
        for n in names:
            fused |= _fused_words(n)
        return cls(frozenset(aten | {w.lstrip("_") for w in aten}), frozenset(fused))


def _where(name: str, mine: Mapping[str, _Words], theirs: Mapping[str, _Words]) -> tuple[tuple[str, ...], str]:
    """(the other side's one-sided groups, role) for a group on one side only: an op 'fused into' the other side's
    Triton kernels whose names hold its word, or a Triton kernel that 'fuses' the other side's ops."""
    w = mine[name]
    if w.fused:
        return tuple(n for n, o in theirs.items() if o.aten & w.fused and not o.fused), "fuses"
    return tuple(n for n, o in theirs.items() if w.aten & o.fused), "fused into"


# ---- the diff ---------------------------------------------------------------------------------------------------------


def diff(a: ResultsFile, b: ResultsFile) -> Diff:
    """A and B side by side. InputError when they cannot be compared (ungrouped, grouped differently)."""
    probe_a, probe_b = read_program(a), read_program(b)
    per_step = bool(probe_a.step_numbers) and bool(probe_b.step_numbers)
    pa, pb = (read_program(a, per_step), read_program(b, per_step)) if not per_step else (probe_a, probe_b)
    notes: list[str] = []
    if pa.side.by != pb.side.by:
        raise InputError(f"{a.name} is grouped by {pa.side.by} and {b.name} by {pb.side.by}: groups of different "
                         "kinds cannot be matched; import both with the same --group-by")
    if not per_step and (probe_a.step_numbers or probe_b.step_numbers):
        which = a.name if probe_a.step_numbers else b.name
        notes.append(f"only {which} marks its steps (ProfilerStep#N): both are compared over the whole capture, so "
                     "capture the same number of steps on each side")
    if pa.side.device != pb.side.device:
        notes.append(f"A ran on {pa.side.device} and B on {pb.side.device}: each side's fraction of ceiling is of "
                     "its own GPU's ceilings")
    elif a.typed.spec_id != b.typed.spec_id:
        # The same GPU name judged against different specs (an import with another --spec): the times compare,
        # the fractions of ceiling, MFU and recoverable times do not.
        notes.append(f"A was judged against spec {a.typed.spec_id or 'unnamed'} and B against "
                     f"{b.typed.spec_id or 'unnamed'}: fraction of ceiling, MFU, HFU and recoverable time are of "
                     "different ceilings, so their changes are not the program's; import both with the same --spec")
    if per_step and len(pa.step_numbers) != len(pb.step_numbers) and (
            pa.side.wall_time is not None or pb.side.wall_time is not None):
        # The timeline's window runs from the first GPU event to the last: a capture of n steps holds n-1 of the
        # gaps between steps, so its wall time per step (and idle share, MFU, HFU) moves with n alone.
        notes.append(f"A holds {counted(len(pa.step_numbers), 'step')} and B {len(pb.step_numbers)}: wall time, "
                     "GPU idle, MFU and HFU are over each capture's window from its first GPU event to its last, "
                     "which holds the gaps between its steps, so they change with the number of steps alone; "
                     "capture the same number of steps on each side to compare them")
    replay = replay_mismatch(a, b)
    if replay:
        notes.append(f"{replay}: the changes are of the measurement as much as of the program")
    ranks_a, ranks_b = ranks(a), ranks(b)
    if ranks_a != ranks_b:
        notes.append(f"A holds {counted(ranks_a, 'rank')} and B {ranks_b}: each side's GPU time sums its ranks', "
                     "so the changes are of the number of GPUs as much as of the program; compare the same ranks "
                     "(import each rank's trace alone)")
    words_a = {n: _Words.of(n, pa.ops.get(n, ())) for n in pa.groups if n not in pb.groups}
    words_b = {n: _Words.of(n, pb.ops.get(n, ())) for n in pb.groups if n not in pa.groups}
    rows: list[GroupDiff] = []
    for name, ga in pa.groups.items():
        if name in pb.groups:
            rows.append(GroupDiff(name, "both", ga, pb.groups[name]))
        else:
            fused, role = _where(name, words_a, words_b)
            rows.append(GroupDiff(name, "a-only", ga, None, fused, role if fused else ""))
    for name in words_b:
        fused, role = _where(name, words_b, words_a)
        rows.append(GroupDiff(name, "b-only", None, pb.groups[name], fused, role if fused else ""))
    rows.sort(key=lambda r: (-abs(r.delta), r.name))
    rows.append(GroupDiff(UNMODELLED, "unmodelled", pa.unmodelled, pb.unmodelled))
    return Diff(pa.side, pb.side, tuple(rows), per_step, tuple(notes))


# ---- the published JSON schema ----------------------------------------------------------------------------------


def diff_json_schema() -> dict[str, Any]:
    """docs/diff-v1.schema.json: the shape `roofline diff --format json` writes (docs/schema.py publishes it)."""
    num = {"type": "number"}
    opt = {"type": ["number", "null"]}
    side = {"type": "object", "required": list(Side.__dataclass_fields__), "properties": {
        "source": {"type": "string"}, "device": {"type": "string"}, "by": {"type": "string"},
        "gpu_time": {**num, "minimum": 0}, "modelled_time": {**num, "minimum": 0},
        "unmodelled_time": {**num, "minimum": 0}, "launches": {**num, "minimum": 0},
        "steps": {"type": "integer", "minimum": 0}, "fraction_of_ceiling": opt, "recoverable_time": num,
        "wall_time": opt, "idle_share": opt, "mfu": opt, "hfu": opt, "fraction_of_ceiling_wall": opt}}
    group_side = {"type": ["object", "null"], "required": ["time", "share", "fraction_of_ceiling",
                                                           "recoverable_time", "launches", "samples"],
                  "properties": {"time": {**num, "minimum": 0}, "share": {**num, "minimum": 0, "maximum": 1},
                                 "fraction_of_ceiling": opt, "recoverable_time": opt, "launches": num,
                                 "samples": {"type": "array", "items": num}, "intensity": opt,
                                 "achieved_flops": opt, "roof": {"type": ["string", "null"]}}}
    row = {"type": "object", "required": ["name", "kind", "a", "b", "delta", "change", "fused", "role", "where"],
           "properties": {"name": {"type": "string"}, "kind": {"enum": list(ROW_KINDS)}, "a": group_side,
                          "b": group_side, "delta": num, "change": opt,
                          "fused": {"type": "array", "items": {"type": "string"}},
                          "role": {"enum": ["", "fused into", "fuses"]}, "where": {"type": "string"}}}
    return {"$schema": "https://json-schema.org/draft/2020-12/schema",
            "$id": "urn:roofline:diff:v1",
            "title": "roofline diff (roofline/diff/v1)",
            "description": "Two grouped profiles side by side, as 'roofline diff A B --format json' writes them "
                           "(roofline.records.diff). Times in seconds, per step where per_step is true; shares and "
                           "fractions 0..1.",
            "type": "object", "required": ["schema", "per_step", "a", "b", "program", "rows", "notes"],
            "properties": {"schema": {"const": DIFF_SCHEMA}, "per_step": {"type": "boolean"}, "a": side, "b": side,
                           "program": {"type": "object", "required": ["delta", "change", "wall_delta"],
                                       "properties": {"delta": num, "change": opt, "wall_delta": opt}},
                           "rows": {"type": "array", "items": row},
                           "notes": {"type": "array", "items": {"type": "string"}}}}
