"""`roofline doctor` as text: one row per check (status, figure, bound) and, under the table, what a WARN or FAIL
means and its fix. Narrow terminals get the same rows with the long columns wrapped, never cut."""

from __future__ import annotations

from typing import Any, Sequence

from rich.table import Table

from roofline.gates.doctor import FAIL, PASS, SKIP, WARN, Check, Verdict
from roofline.render.text import literal, styled

_STYLE = {PASS: "green", WARN: "yellow", FAIL: "bold red", SKIP: "dim"}


def doctor_table(verdict: Verdict) -> Any:
    dev = verdict.device
    title = (f"roofline doctor: {dev.get('name') or 'GPU'} (device {dev.get('device_id')}, "
             f"{dev.get('pci_bus_id') or 'bus id unknown'}) against {verdict.spec_id or 'no datasheet spec'}")
    table = Table(title=literal(title), title_justify="left", show_lines=False)
    table.add_column("check", overflow="fold", ratio=3)
    table.add_column("", no_wrap=True)
    table.add_column("figure", overflow="fold", ratio=4)
    table.add_column("bound", overflow="fold", ratio=3)
    for c in verdict.checks:
        table.add_row(literal(c.name), styled(c.status, _STYLE[c.status]), literal(c.figure or c.note),
                      literal(c.bound))
    counts = verdict.to_dict()["counts"]
    took = f" in {verdict.elapsed:.0f} s" if verdict.elapsed is not None else ""
    table.caption = literal(f"{verdict.status}: {counts[PASS]} passed, {counts[WARN]} warned, {counts[FAIL]} failed, "
                            f"{counts[SKIP]} skipped{took}")
    table.caption_justify = "left"
    return table


def doctor_notes(checks: Sequence[Check]) -> list[str]:
    """One line per WARN/FAIL (what it means, then the fix) and per SKIP (why)."""
    lines = []
    for c in checks:
        if c.status in (WARN, FAIL):
            fix = f" Fix: {c.fix}" if c.fix else ""
            lines.append(f"{c.status.lower()}: {c.name}: {c.note or c.figure}.{fix}")
        elif c.status == SKIP:
            lines.append(f"skipped: {c.name}: {c.note}")
        elif c.note and c.status == PASS and c.group in ("hierarchy", "timers"):
            lines.append(f"note: {c.name}: {c.note}")
    return lines
