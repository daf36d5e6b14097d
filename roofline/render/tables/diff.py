"""`roofline diff A B` as a page: the two programs' figures with their changes, then one row per group, most moved
first, the unmodelled time last (roofline.records.diff computes them). Table (80 columns: a long group name wraps
at its underscores, whole; numbers are never cut), Markdown (a PR comment, a CI job summary) and CSV. No physics."""

from __future__ import annotations

import csv
import io
from typing import Any

from rich.table import Table

from roofline.model.units import format_fraction, format_time
from roofline.records.diff import Diff, GroupDiff, difference
from roofline.render.tables.fit import droppable
from roofline.render.text import csv_cell, literal, md
from roofline.model.counts import counted

NAME_WIDTH = 30  # a group name longer than this wraps in the table, at its underscores where it can
_LISTED = 3  # fused kernels or ops a Markdown row names before 'and N more'


def signed_time(seconds: float | None) -> str:
    """'+1.2 ms', '−9.3 µs', '0 s'."""
    if seconds is None:
        return "–"
    if seconds == 0:
        return "0 s"
    return ("+" if seconds > 0 else "−") + format_time(abs(seconds))


def signed_share(value: float | None) -> str:
    if value is None:
        return "–"
    return ("+" if value > 0 else "−" if value < 0 else "") + f"{abs(value):.1%}"


def _signed_count(value: float) -> str:
    return ("+" if value > 0 else "−" if value < 0 else "") + f"{abs(value):g}"


def _points(value: float | None, base: float | None) -> str:
    """A change of a share in percentage points: '+12.5 pp'."""
    if value is None or base is None:
        return "–"
    d = (value - base) * 100
    return ("+" if d > 0 else "−" if d < 0 else "") + f"{abs(d):.1f} pp"


def wrap_name(name: str, width: int = NAME_WIDTH) -> str:
    """The whole name over lines of at most `width`, broken after an underscore or '::' where one is near the end
    of a line (else at the width): a table cell that wraps without cutting the part that tells kernels apart."""
    lines: list[str] = []
    rest = name
    while len(rest) > width:
        cut = max(rest.rfind("_", 0, width), rest.rfind(":", 0, width))
        cut = cut + 1 if cut >= width // 2 else width
        lines.append(rest[:cut])
        rest = rest[cut:]
    return "\n".join([*lines, rest])


def _unit(d: Diff) -> str:
    return (f"per step (A: mean of {counted(d.a.steps, 'step')}, B: of {d.b.steps})" if d.per_step
            else "over the whole capture")


def program_rows(d: Diff) -> list[tuple[str, str, str, str]]:
    """(figure, A, B, change) for the program block of every format."""
    a, b = d.a, d.b
    rows = [("GPU time", format_time(a.gpu_time), format_time(b.gpu_time),
             f"{signed_time(d.delta)} ({signed_share(d.change)})"),
            ("wall time", format_time(a.wall_time) if a.wall_time is not None else "–",
             format_time(b.wall_time) if b.wall_time is not None else "–",
             signed_time(difference(b.wall_time, a.wall_time))
             if a.wall_time is not None and b.wall_time is not None else "–"),
            ("GPU idle", format_fraction(a.idle_share), format_fraction(b.idle_share),
             _points(b.idle_share, a.idle_share)),
            ("MFU", format_fraction(a.mfu), format_fraction(b.mfu), _points(b.mfu, a.mfu)),
            ("HFU", format_fraction(a.hfu), format_fraction(b.hfu), _points(b.hfu, a.hfu)),
            ("of ceiling", format_fraction(a.fraction_of_ceiling), format_fraction(b.fraction_of_ceiling),
             _points(b.fraction_of_ceiling, a.fraction_of_ceiling)),
            ("launches", f"{a.launches:g}", f"{b.launches:g}", _signed_count(b.launches - a.launches)),
            ("unmodelled", format_time(a.unmodelled_time), format_time(b.unmodelled_time),
             signed_time(difference(b.unmodelled_time, a.unmodelled_time)))]
    return rows


def _short_where(r: GroupDiff) -> str:
    """The table's note: how many groups of the other side an op went into, or a kernel fused."""
    n = len(r.fused)
    if r.fused and r.role == "fused into":
        return f"fused: {n} kernel{'s' if n > 1 else ''}"
    if r.fused:
        return f"fuses {n} group{'s' if n > 1 else ''}"
    return r.where


def _long_where(r: GroupDiff) -> str:
    if not r.fused:
        return r.where
    more = f" and {len(r.fused) - _LISTED} more" if len(r.fused) > _LISTED else ""
    return f"{r.role} " + ", ".join(r.fused[:_LISTED]) + more


def _side(value: Any, present: bool, fmt: Any) -> str:
    return fmt(value) if present else "–"


def group_cells(r: GroupDiff) -> list[str]:
    """group, A, B, Δ, Δ %, A share, B share, A of ceiling, B of ceiling, B recoverable."""
    a, b = r.a, r.b
    return [r.name, _side(r.a_time, a is not None, format_time), _side(r.b_time, b is not None, format_time),
            signed_time(r.delta), signed_share(r.change),
            format_fraction(a.share) if a is not None else "–", format_fraction(b.share) if b is not None else "–",
            format_fraction(a.fraction_of_ceiling) if a is not None else "–",
            format_fraction(b.fraction_of_ceiling) if b is not None else "–",
            format_time(b.recoverable_time) if b is not None and b.recoverable_time is not None else "–"]


COLUMNS = ("group", "A", "B", "Δ", "Δ %", "A share", "B share", "A ceil", "B ceil", "B recov", "note")
_DROP = ("B recov", "A ceil", "A share", "B ceil", "B share", "note")


def _title(d: Diff) -> str:
    """One line a side, so a path breaks nowhere when the line fits the terminal."""
    return f"A: {d.a.source} ({d.a.device})\nB: {d.b.source} ({d.b.device})\n{_unit(d)}"


def diff_tables(d: Diff) -> list[Any]:
    """The program block, then the groups: rich tables the CLI fits to the terminal."""
    title = _title(d)
    # as wide as its title's longest line (up to 80 columns), so the sides' paths are not broken mid-name
    program = Table(title=literal(title), title_justify="left", min_width=min(max(map(len, title.splitlines())), 80))
    for col in ("program", "A", "B", "change"):
        program.add_column(col, justify="left" if col == "program" else "right")
    for row in program_rows(d):
        program.add_row(*[literal(c) for c in row])
    notes = [*d.notes, "shares are of each side's GPU time, every GPU event (unmodelled included); ceil: fraction of "
             "ceiling (time-weighted); recov: recoverable time; --format markdown names the kernels an op was fused "
             "into"]
    groups = Table(title=literal(f"groups by {d.a.by}, most moved first"), title_justify="left",
                   caption=literal("\n".join(notes)), caption_justify="left")
    for col in COLUMNS:
        groups.add_column(col, justify="left" if col in ("group", "note") else "right")
    for r in d.rows:
        cells = group_cells(r)
        cells[0] = wrap_name(cells[0])
        groups.add_row(*[literal(c) for c in cells], literal(_short_where(r)))
    return [program, droppable(groups, *_DROP)]


def diff_markdown(d: Diff, limit: int | None = None) -> str:
    """The page as Markdown: the program block, the groups (the first `limit`, most moved first; the unmodelled
    row always), the notes."""
    out = [f"### roofline diff: {md(d.a.source)} → {md(d.b.source)}", "",
           f"A: {md(d.a.source)} ({md(d.a.device)}); B: {md(d.b.source)} ({md(d.b.device)}); times {md(_unit(d))}.",
           "", "| program | A | B | change |", "|---|---:|---:|---:|"]
    out += ["| " + " | ".join(md(c) for c in row) + " |" for row in program_rows(d)]
    head = ("group", "A", "B", "Δ", "Δ %", "A share", "B share", "A of ceiling", "B of ceiling", "B recoverable",
            "note")
    out += ["", "| " + " | ".join(head) + " |", "|---|" + "---:|" * 9 + "---|"]
    rows = list(d.rows)
    shown = rows if limit is None or len(rows) <= limit + 1 else [*rows[:limit], rows[-1]]
    for r in shown:
        out.append("| " + " | ".join(md(c) for c in group_cells(r)) + f" | {md(_long_where(r))} |")
    if len(shown) < len(rows):
        out.append(f"\n{counted(len(rows) - len(shown), 'more group')} moved less; --format json lists every one.")
    out += ["", "Shares are of each side's GPU time, every GPU event (unmodelled work included)."]
    out += [f"- {md(n)}" for n in d.notes]
    return "\n".join(out) + "\n"


CSV_COLUMNS = ("group", "kind", "a_time", "b_time", "delta", "change", "a_share", "b_share",
               "a_fraction_of_ceiling", "b_fraction_of_ceiling", "a_recoverable_time", "b_recoverable_time",
               "where")


def _number(value: float | None) -> str:
    return "" if value is None else repr(float(value))


def diff_csv(d: Diff) -> str:
    """One line per row in SI units (seconds, shares 0..1), the program first as the row named '(program)'."""
    buffer = io.StringIO()
    writer = csv.writer(buffer, lineterminator="\n")
    writer.writerow(CSV_COLUMNS)
    writer.writerow(["(program)", "program", _number(d.a.gpu_time), _number(d.b.gpu_time), _number(d.delta),
                     _number(d.change), "", "", _number(d.a.fraction_of_ceiling),
                     _number(d.b.fraction_of_ceiling), _number(d.a.recoverable_time), _number(d.b.recoverable_time),
                     ""])
    for r in d.rows:
        a, b = r.a, r.b
        writer.writerow([csv_cell(r.name), r.kind, _number(a.time if a else None), _number(b.time if b else None),
                         _number(r.delta), _number(r.change), _number(a.share if a else None),
                         _number(b.share if b else None), _number(a.fraction_of_ceiling if a else None),
                         _number(b.fraction_of_ceiling if b else None), _number(a.recoverable_time if a else None),
                         _number(b.recoverable_time if b else None),
                         csv_cell("; ".join(r.fused) if r.fused else r.where)])
    return buffer.getvalue()
