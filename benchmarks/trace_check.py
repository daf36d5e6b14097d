"""Issue 24, "Checked against the counters": the trace model of `roofline import torch` against Nsight Compute's
counters for the same program, launch by launch and op by op. No GPU: it reads what
benchmarks/trace_check_capture.sh wrote on the GPU machine.

    python3 benchmarks/trace_check.py DIR [NAME ...] [--markdown FILE] [--triton-source DIR ...]

DIR holds NAME/NAME.trace.json.gz (the Kineto trace) and NAME/NAME.ncu.csv (ncu's raw CSV of the same range; when
absent, NAME/NAME.ncu.json, `roofline profile`'s document). Both are imported again with the current code: the trace
by roofline.kineto.document.build_document (the op models as they are now, not the NAME.torch.json of the capture
day), Inductor's generated kernels from NAME/kernels where the capture copied them (or --triton-source: the
trace's own paths are the GPU machine's), the CSV by roofline.ncu.importer.import_csv with the ncu path's own op
grouping (roofline.ncu.group).

Launches are matched one to one: both cover the same range in the same order, so the trace's kernels (copies and
fills are not ncu launches) and ncu's launches are aligned in order on the kernel's base name (the last `::` part
of its short name: ncu and Kineto spell namespaces differently); whatever the alignment leaves over is listed as
unmatched. Then, grouped by the trace's op, the table gives each group's share of GPU time (the trace's kernel
durations), the model's FLOPs against the FLOPs ncu counted (CUDA cores + tensor cores) and the model's bytes
against the DRAM bytes ncu counted (read + write), each as model / counted.

Verdicts, with the issue's targets:
  GEMM FLOPs       every gemm-class group within 2 % of the counted FLOPs
  attention FLOPs  every attention-class group within 15 %
  memory-bound     of the time of the launches ncu places memory-bound (by its counters), the share whose op call's
                   model bytes are within 0.5-2x of the call's counted DRAM bytes: at least 70 %. Beside it, the
                   share the ncu path (`profile --group-by op`, NVTX shapes) has a model for, and has one in band.
A call whose model is more than 2x its counted bytes while its whole working set (the model's bytes) fits in the
L2 is marked L2: its inputs were still in the L2 from the kernel that wrote them (or its outputs stay there), which
no shape model can know. Exit status 0 when every target is met, 1 otherwise, 2 on bad input.
"""

from __future__ import annotations

import argparse
import difflib
import re
import sys
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Iterable, Mapping, Sequence

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from roofline.errors import InputError  # noqa: E402
from roofline.ncu.importer import short_name  # noqa: E402
from roofline.model.units import format_bytes, format_count, format_time  # noqa: E402

GEMM_TOLERANCE = 0.02
ATTENTION_TOLERANCE = 0.15
BAND = (0.5, 2.0)  # model bytes / counted DRAM bytes
MEMORY_TARGET = 0.70  # of memory-bound time in band
JUDGED = 0.01  # a GEMM or attention group with less of its class's model FLOPs is shown but not judged
# ops of a class with a target, by name, so that one without a model fails its class rather than going unseen
CLASS_BY_NAME = {"gemm": re.compile(r"::(mm|addmm|bmm|baddbmm|matmul|linear|_scaled_mm|_int_mm)$"),
                 "attention": re.compile(r"attention")}
PROGRAMS = ("gpt2", "resnet50", "train")


@dataclass
class Matched:
    """One kernel launch seen both ways."""
    index: int  # its place among the trace's kernels
    kernel: str  # short name
    op: str  # the trace's op (innermost ATen op around the launch)
    call: int  # which call of that op (launches of one call share it)
    op_class: str | None  # the model's class; None without a model
    why: str | None  # why the trace has no model for it
    model_flops: float | None
    model_bytes: float | None
    model_roof: str | None  # the roof the trace document placed it under (None without a model)
    over_roof: bool  # the trace document warns l2-reuse: the model's bytes moved faster than DRAM allows
    time: float  # s, the trace's kernel duration
    ncu_time: float
    ncu_flops: float | None
    ncu_bytes: float | None
    ncu_written: float | None  # of ncu_bytes, DRAM writes
    ncu_roof: str
    memory_bound: bool  # ncu places it memory-bound by its own counters
    ncu_group: str  # the ncu path's op group
    ncu_modelled: bool  # the ncu path has a byte model for its group
    ncu_in_band: bool  # ... within BAND of the group's counted DRAM bytes
    ncu_index: int = -1  # its place among ncu's launches (the CSV's rows in order)


@dataclass
class Check:
    """One program's comparison."""
    name: str
    launches: list[Matched]
    trace_kernels: int
    ncu_launches: int
    unmatched_trace: list[str]
    unmatched_ncu: list[str]
    other_time: float  # copies and fills in the trace (not ncu launches)
    unmodelled_share: float  # the trace document's program line
    l2_size: float
    calls: dict[int, str] = field(default_factory=dict)  # call -> its band verdict (see call_verdicts)


def base_name(kernel: str) -> str:
    """The part of a kernel's name ncu and Kineto spell alike: the last `::` component of the short name."""
    return short_name(kernel, limit=10_000).split("::")[-1].strip()


def align(trace_names: Sequence[str], ncu_names: Sequence[str]) -> list[tuple[int, int]]:
    """(trace index, ncu index) pairs of the same launch: the longest order-preserving matching on base names."""
    a = [base_name(n) for n in trace_names]
    b = [base_name(n) for n in ncu_names]
    matcher = difflib.SequenceMatcher(None, a, b, autojunk=False)
    pairs = []
    for block in matcher.get_matching_blocks():
        pairs += [(block.a + k, block.b + k) for k in range(block.size)]
    return pairs


def _trace_side(trace_path: Path, machine: Any, gpu: str, sources: Sequence[Path] = ()
                ) -> tuple[list[dict[str, Any]], float, float]:
    """The trace's kernels in GPU order, each with its op, call, class and model figures (None without a model);
    the time of its copies and fills; the document's unmodelled share. `sources`: folders holding Inductor's
    generated kernels (`import torch --triton-source`), for a trace whose recorded kernel paths were on the GPU
    machine; without them the Triton kernels are modelled from their names alone."""
    from roofline.kineto.attribution import attribute
    from roofline.kineto.document import build_document
    from roofline.kineto.reader import read_trace
    from roofline.kineto.sources import KernelSources

    trace = read_trace(trace_path)
    doc, _ = build_document([trace], machine, gpu, group_by="op", sources=KernelSources(sources))
    timed = [a for a in attribute(trace) if a.event.dur > 0]  # what the document numbers, from 1
    entries: dict[int, Mapping[str, Any]] = {e["params"]["launch"]: e for e in doc["kernels"]}
    lost: dict[int, Mapping[str, Any]] = {u["params"]["launch"]: u for u in doc["unmodelled"]}
    calls: dict[int, int] = {}
    out, other = [], 0.0
    for number, a in enumerate(timed, start=1):
        entry, gone = entries.get(number), lost.get(number)
        shown = (entry or gone or {}).get("name")
        if shown != short_name(a.event.name):
            raise InputError(f"{trace_path}: launch {number} of the document is {shown!r}, the trace's is "
                             f"{short_name(a.event.name)!r}: the document numbers launches differently now")
        if a.event.kind != "kernel":
            other += a.event.dur * 1e-6
            continue
        call = calls.setdefault(id(a.op), len(calls)) if a.op is not None else -1 - number
        modelled = entry is not None and entry.get("model", {}).get("from") == "op model"
        out.append({"name": a.event.name, "op": a.op_name, "call": call, "time": a.event.dur * 1e-6,
                    "op_class": entry["model"]["op_class"] if modelled else None,
                    "why": None if modelled else (gone or {}).get("why", "not an op-model entry"),
                    "flops": entry["flops"] if modelled else None, "bytes": entry["bytes"] if modelled else None,
                    "roof": entry["roof"] if modelled else None,
                    "over_roof": modelled and any(w.get("code") == "l2-reuse" for w in entry.get("warnings", []))})
    return out, other, doc["program"]["unmodelled_share"]


def _ncu_side(directory: Path, name: str) -> list[dict[str, Any]]:
    """ncu's launches in order, grouped by the ncu path's op groups (its own NVTX shape model beside them)."""
    csv, saved = directory / f"{name}.ncu.csv", directory / f"{name}.ncu.json"
    if csv.is_file():
        from roofline.ncu.group import add_groups
        from roofline.ncu.importer import import_csv

        doc, _ = import_csv(csv)
        add_groups(doc, "op")
    elif saved.is_file():
        from roofline.records.files import load_results

        doc = load_results(saved).doc
    else:
        raise InputError(f"{directory}: holds neither {csv.name} nor {saved.name}")
    group_of = {n: g for g in doc.get("groups", []) for n in g["kernels"]}
    out = []
    for k in doc["kernels"]:
        g = group_of.get(k["params"]["launch"], {})
        ratio = g.get("bytes_ratio")  # counted / model
        counted = k.get("counters") or {}
        out.append({"name": k.get("kernel_name") or k["name"], "time": k["time_median"],
                    "flops": counted.get("flops"), "bytes": counted.get("dram_bytes"),
                    "written": counted.get("dram_write"), "roof": k.get("roof", "?"), "bound": k.get("bound"),
                    "group": g.get("name", "?"), "modelled": g.get("model_bytes") is not None,
                    "in_band": ratio is not None and BAND[0] <= 1 / ratio <= BAND[1]})
    return out


def captured_sources(directory: Path) -> list[Path]:
    """The kernels/ folder a capture copied Inductor's generated sources into, where it exists."""
    return [directory / "kernels"] if (directory / "kernels").is_dir() else []


def check_program(directory: Path, name: str, machine: Any, gpu: str, sources: Sequence[Path] = (),
                  trace_path: Path | None = None) -> Check:
    """Read, re-import and match one program's two captures (`sources`: see _trace_side; `trace_path`: another
    one-step trace of the same program than NAME.trace.json.gz, e.g. the one `profile --with torch` kept)."""
    trace_path = trace_path or directory / f"{name}.trace.json.gz"
    if not trace_path.is_file():
        raise InputError(f"{directory}: {trace_path.name} is missing")
    trace, other, unmodelled_share = _trace_side(trace_path, machine, gpu, sources)
    ncu = _ncu_side(directory, name)
    pairs = align([t["name"] for t in trace], [n["name"] for n in ncu])
    launches = []
    for i, j in pairs:
        t, n = trace[i], ncu[j]
        launches.append(Matched(
            index=i, kernel=short_name(t["name"]), op=t["op"], call=t["call"], op_class=t["op_class"],
            why=t["why"], model_flops=t["flops"], model_bytes=t["bytes"], model_roof=t["roof"],
            over_roof=t["over_roof"], time=t["time"], ncu_time=n["time"], ncu_flops=n["flops"],
            ncu_bytes=n["bytes"], ncu_written=n["written"], ncu_roof=n["roof"],
            memory_bound=n["bound"] == "memory", ncu_group=n["group"],
            ncu_modelled=n["modelled"], ncu_in_band=n["in_band"], ncu_index=j))
    done_t, done_n = {i for i, _ in pairs}, {j for _, j in pairs}
    check = Check(name, launches, len(trace), len(ncu),
                  [f"{i}: {short_name(t['name'])} ({t['op']})" for i, t in enumerate(trace) if i not in done_t],
                  [f"{j}: {short_name(n['name'])}" for j, n in enumerate(ncu) if j not in done_n], other,
                  unmodelled_share, float(machine.caches["l2"].size) if "l2" in machine.caches else 0.0)
    check.calls = call_verdicts(launches, check.l2_size)
    return check


def _sum(values: Iterable[float | None]) -> float | None:
    total = 0.0
    for v in values:
        if v is None:
            return None
        total += v
    return total


def ratio(model: float | None, counted: float | None) -> float | None:
    """model / counted; None when either is unknown or the counted figure is 0."""
    if model is None or not counted:
        return None
    return model / counted


def call_verdicts(launches: Sequence[Matched], l2_size: float) -> dict[int, str]:
    """Each op call's bytes verdict: 'in band', 'L2' (model > 2x counted while the call's working set fits in the
    L2), 'model high', 'model low' or 'no model'."""
    by_call: dict[int, list[Matched]] = {}
    for m in launches:
        by_call.setdefault(m.call, []).append(m)
    out = {}
    for call, items in by_call.items():
        model, counted = _sum(m.model_bytes for m in items), _sum(m.ncu_bytes for m in items)
        r = ratio(model, counted)
        if model is None:
            out[call] = "no model"
        elif r is None:
            out[call] = "model high" if model > 0 else "in band"
        elif BAND[0] <= r <= BAND[1]:
            out[call] = "in band"
        elif r > BAND[1]:
            out[call] = "L2" if model <= l2_size else "model high"
        else:
            out[call] = "model low"
    return out


@dataclass
class Row:
    op: str
    op_class: str
    launches: int
    time: float
    share: float
    model_flops: float | None
    ncu_flops: float | None
    model_bytes: float | None
    ncu_bytes: float | None
    ncu_written: float | None
    verdicts: dict[str, float]  # the time of its launches by their call's bytes verdict
    memory_time: float  # of its launches ncu places memory-bound
    why: str | None
    judged: bool = True  # a GEMM or attention group with enough of its class's FLOPs to be judged

    @property
    def flops_ratio(self) -> float | None:
        return ratio(self.model_flops, self.ncu_flops)

    @property
    def bytes_ratio(self) -> float | None:
        return ratio(self.model_bytes, self.ncu_bytes)

    @property
    def target(self) -> float | None:
        return {"gemm": GEMM_TOLERANCE, "attention": ATTENTION_TOLERANCE}.get(self.op_class)

    @property
    def flops_ok(self) -> bool | None:
        if self.target is None:
            return None
        r = self.flops_ratio
        return r is not None and abs(r - 1) <= self.target


def rows(check: Check) -> list[Row]:
    """One row per trace op, by GPU time (largest first). Its FLOPs and bytes are those of its launches with a
    model, against the counters of the same launches (all of its launches when none has a model)."""
    total = sum(m.time for m in check.launches) or 1.0
    by_op: dict[str, list[Matched]] = {}
    for m in check.launches:
        by_op.setdefault(m.op, []).append(m)
    out = []
    for op, items in by_op.items():
        modelled = [m for m in items if m.op_class is not None]
        counted = modelled or items
        verdicts: dict[str, float] = {}
        for m in items:
            verdicts[check.calls[m.call]] = verdicts.get(check.calls[m.call], 0.0) + m.time
        whys = sorted({m.why for m in items if m.why})
        out.append(Row(
            op=op, op_class="/".join(sorted({m.op_class for m in modelled})) or "-",  # type: ignore[arg-type]
            launches=len(items), time=sum(m.time for m in items), share=sum(m.time for m in items) / total,
            model_flops=_sum(m.model_flops for m in modelled) if modelled else None,
            ncu_flops=_sum(m.ncu_flops for m in counted),
            model_bytes=_sum(m.model_bytes for m in modelled) if modelled else None,
            ncu_bytes=_sum(m.ncu_bytes for m in counted), ncu_written=_sum(m.ncu_written for m in counted),
            verdicts=verdicts, memory_time=sum(m.time for m in items if m.memory_bound),
            why="; ".join(whys) if whys else None))
    for cls in ("gemm", "attention"):
        members = [r for r in out if r.op_class == cls]
        flops = sum(r.model_flops or 0.0 for r in members)
        for r in members:
            r.judged = (r.model_flops or 0.0) >= JUDGED * flops
    out.sort(key=lambda r: (-r.time, r.op))
    return out


@dataclass
class ClassCheck:
    """The FLOPs of one class with a target (gemm, attention), all launches together and group by group."""
    name: str
    tolerance: float
    rows: list[Row]
    model_flops: float
    ncu_flops: float
    unmodelled: dict[str, float]  # op -> time of its launches that are of this class by name but have no model

    @property
    def ratio(self) -> float | None:
        return ratio(self.model_flops, self.ncu_flops)

    @property
    def ok(self) -> bool:
        r = self.ratio
        return (r is not None and abs(r - 1) <= self.tolerance and not self.unmodelled
                and all(row.flops_ok for row in self.rows if row.judged))


@dataclass
class Summary:
    classes: list[ClassCheck]
    memory_time: float
    band: dict[str, float]  # memory-bound time by verdict
    ncu_modelled: float  # memory-bound time the ncu path has a byte model for
    ncu_in_band: float
    roof_time: float  # time of the launches with FLOPs both ways
    roof_same: float  # ... that the model and ncu put under the same roof
    roof_differ: dict[tuple[str, str, str], float]  # (op, model roof, ncu roof) -> time
    over_roof: tuple[int, float]  # launches the trace document warns l2-reuse about, and their time
    total_time: float

    def share(self, verdict: str) -> float:
        return self.band.get(verdict, 0.0) / self.memory_time if self.memory_time else 0.0

    @property
    def memory_ok(self) -> bool:
        return self.share("in band") >= MEMORY_TARGET

    @property
    def ok(self) -> bool:
        return all(c.ok for c in self.classes) and self.memory_ok


def summarise(check: Check, table: Sequence[Row]) -> Summary:
    classes = []
    for cls, tolerance in (("gemm", GEMM_TOLERANCE), ("attention", ATTENTION_TOLERANCE)):
        members = [m for m in check.launches if m.op_class == cls]
        missing: dict[str, float] = {}
        for m in check.launches:
            if m.op_class is None and CLASS_BY_NAME[cls].search(m.op):
                missing[m.op] = missing.get(m.op, 0.0) + m.time
        if members or missing:
            classes.append(ClassCheck(cls, tolerance, [r for r in table if r.op_class == cls],
                                      sum(m.model_flops or 0.0 for m in members),
                                      sum(m.ncu_flops or 0.0 for m in members), missing))
    memory = [m for m in check.launches if m.memory_bound]
    band: dict[str, float] = {}
    for m in memory:
        band[check.calls[m.call]] = band.get(check.calls[m.call], 0.0) + m.time
    both = [m for m in check.launches if m.model_flops and m.ncu_flops and m.model_roof]
    differ: dict[tuple[str, str, str], float] = {}
    for m in both:
        if m.model_roof != m.ncu_roof:
            key = (m.op, str(m.model_roof), m.ncu_roof)
            differ[key] = differ.get(key, 0.0) + m.time
    over = [m for m in check.launches if m.over_roof]
    return Summary(classes=classes, memory_time=sum(m.time for m in memory), band=band,
                   ncu_modelled=sum(m.time for m in memory if m.ncu_modelled),
                   ncu_in_band=sum(m.time for m in memory if m.ncu_in_band),
                   roof_time=sum(m.time for m in both),
                   roof_same=sum(m.time for m in both if m.model_roof == m.ncu_roof), roof_differ=differ,
                   over_roof=(len(over), sum(m.time for m in over)), total_time=sum(m.time for m in check.launches))


# ------------------------------------------------------------------------------------------------------- render

VERDICT_ORDER = ("in band", "L2", "model high", "model low", "no model")


def _x(value: float | None) -> str:
    return "-" if value is None else f"{value:.3f}x" if 0.98 <= value <= 1.02 else f"{value:.2f}x"


def _note(r: Row) -> str:
    notes = []
    if r.target is not None:
        if not r.judged:
            notes.append(f"FLOPs not judged (under {JUDGED:.0%} of the class's)")
        else:
            notes.append(f"FLOPs {'within' if r.flops_ok else 'OUTSIDE'} {r.target:.0%}")
    if r.time and set(r.verdicts) != {"in band"}:
        notes.append("bytes: " + ", ".join(f"{v} {r.verdicts[v] / r.time:.0%}" for v in VERDICT_ORDER
                                           if r.verdicts.get(v)))
    if r.memory_time:
        notes.append(f"memory-bound {r.memory_time / r.time:.0%}")
    if r.why:
        notes.append(f"no model: {r.why}")
    return "; ".join(notes)


def _written(r: Row) -> str:
    if r.ncu_written is None or not r.ncu_bytes:
        return "-"
    return f"{r.ncu_written / r.ncu_bytes:.0%}"


def markdown(check: Check, table: Sequence[Row], s: Summary) -> str:
    """One program's table and verdict lines, as Markdown."""
    lines = [f"### {check.name}", "",
             f"{len(check.launches)} of {check.trace_kernels} trace kernels matched one to one with "
             f"{check.ncu_launches} ncu launches (copies and fills, {format_time(check.other_time)}, are no ncu "
             f"launches); the trace's program line: {check.unmodelled_share:.1%} of GPU time has no model.", ""]
    for side, left in (("trace", check.unmatched_trace), ("ncu", check.unmatched_ncu)):
        if left:
            lines += [f"Unmatched {side} launches: " + ", ".join(left[:10]) + (" ..." if len(left) > 10 else ""), ""]
    lines += ["| op | class | launches | time | share | model FLOPs | ncu FLOPs | model/ncu | model bytes | "
              "ncu DRAM bytes | written | model/ncu | notes |",
              "|---|---|--:|--:|--:|--:|--:|--:|--:|--:|--:|--:|---|"]
    for r in table:
        lines.append(f"| {r.op} | {r.op_class} | {r.launches} | {format_time(r.time)} | {r.share:.1%} | "
                     f"{format_count(r.model_flops)} | {format_count(r.ncu_flops)} | {_x(r.flops_ratio)} | "
                     f"{format_bytes(r.model_bytes)} | {format_bytes(r.ncu_bytes)} | {_written(r)} | "
                     f"{_x(r.bytes_ratio)} | {_note(r)} |")
    lines += [""] + summary_lines(check, s) + [""]
    return "\n".join(lines)


def _verdict(ok: bool) -> str:
    return "PASS" if ok else "FAIL"


def summary_lines(check: Check, s: Summary) -> list[str]:
    out = []
    for c in s.classes:
        judged = [r for r in c.rows if r.judged]
        skipped = [f"{r.op} {_x(r.flops_ratio)}" for r in c.rows if not r.judged]
        line = f"- {c.name} FLOPs (target within {c.tolerance:.0%}): {_verdict(c.ok)}"
        if judged:
            worst = max(judged, key=lambda r: abs((r.flops_ratio or 0) - 1))
            line += (f"; all launches {_x(c.ratio)}, furthest of {len(judged)} judged group(s) {worst.op} at "
                     f"{_x(worst.flops_ratio)}")
        if skipped:
            line += f"; not judged (under {JUDGED:.0%} of the class's FLOPs): {', '.join(skipped)}"
        if c.unmodelled:
            line += "; no model for " + ", ".join(f"{op} ({format_time(t)})" for op, t in c.unmodelled.items())
        out.append(line)
    if s.memory_time:
        rest = ", ".join(f"{v} {s.share(v):.1%}" for v in VERDICT_ORDER[1:] if s.share(v))
        out.append(f"- memory-bound launches (by ncu's counters): {format_time(s.memory_time)} "
                   f"({s.memory_time / s.total_time:.0%} of GPU time); the trace model is within {BAND[0]:g}-"
                   f"{BAND[1]:g}x of the counted DRAM bytes for {s.share('in band'):.1%} of it (target "
                   f"{MEMORY_TARGET:.0%}): {_verdict(s.memory_ok)}" + (f"; the rest: {rest}" if rest else ""))
        out.append(f"- the ncu path (`profile --group-by op`, NVTX shapes) has a byte model for "
                   f"{s.ncu_modelled / s.memory_time:.1%} of that time, within {BAND[0]:g}-{BAND[1]:g}x for "
                   f"{s.ncu_in_band / s.memory_time:.1%}")
    if s.roof_time:
        top = sorted(s.roof_differ.items(), key=lambda kv: -kv[1])[:4]
        out.append(f"- roofs: of the launches with FLOPs both ways, the model and ncu name the same roof for "
                   f"{s.roof_same / s.roof_time:.1%} of their time" + (
                       "; differing: " + ", ".join(f"{op} {mine} vs ncu {theirs} ({format_time(t)})"
                                                   for (op, mine, theirs), t in top) if top else ""))
    if s.over_roof[0]:
        out.append(f"- over the DRAM roof in the trace (warned l2-reuse): {s.over_roof[0]} launch(es), "
                   f"{format_time(s.over_roof[1])} ({s.over_roof[1] / s.total_time:.1%} of GPU time): their inputs "
                   "came from the L2, where the kernel before left them")
    if any(s.band.get("L2") or r.verdicts.get("L2") for r in rows(check)):
        out.append(f"- L2: calls whose model is over {BAND[1]:g}x the counted DRAM bytes while their working set fits "
                   f"in the {format_bytes(check.l2_size)} L2. ncu flushes the caches before each kernel, so every "
                   "input is counted from DRAM; an output that fits in the L2 is still there, dirty, when the kernel "
                   "ends, and its write-back is counted in no kernel (see the 'written' column)")
    return out


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("directory", type=Path)
    parser.add_argument("names", nargs="*", default=list(PROGRAMS))
    parser.add_argument("--spec", default="h200-sxm")
    parser.add_argument("--markdown", type=Path, help="write the tables and the summary to this file too")
    parser.add_argument("--triton-source", type=Path, action="append", default=[], metavar="DIR",
                        help="folders of Inductor's generated kernels (default: NAME/kernels where it exists)")
    args = parser.parse_args(argv)
    from roofline.load.specs import SpecCatalog

    try:
        machine = SpecCatalog.bundled().resolve(args.spec)
        parts, ok = [], True
        for name in args.names:
            check = check_program(args.directory / name, name, machine, machine.name,
                                  args.triton_source or captured_sources(args.directory / name))
            table = rows(check)
            s = summarise(check, table)
            ok = ok and s.ok
            parts.append(markdown(check, table, s))
    except InputError as exc:
        print(f"trace_check: {exc}", file=sys.stderr)
        return 2
    text = "\n".join(parts)
    print(text)
    if args.markdown:
        args.markdown.write_text(text, encoding="utf-8")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
