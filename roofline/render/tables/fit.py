"""Tables that read at 80 columns: numbers and ids whole, names wrapped, the least important columns left out.

rich squeezes a table wider than the terminal by cutting every cell to `…`, numbers included (`0.08…`). Each
renderer instead says which of its columns may be left out, least important first (`droppable`). Before printing,
`fit` makes every right-aligned (numeric) column and every column marked `whole` unbreakable at its widest cell,
lets the other text (names, notes) wrap, and removes droppable columns until the table's narrowest rendering fits.
It then says under the table what it left out and that `--wide` shows everything. `--wide` (or a wide terminal)
prints every column.
"""

from __future__ import annotations

from typing import Any, Sequence

_DROP = "roofline_drop_order"
_WHOLE = "roofline_whole_columns"
WIDE_HINT = "--wide shows them"


def droppable(table: Any, *headers: str, whole: Sequence[str] = ()) -> Any:
    """Mark `headers` as columns `fit` may leave out on a narrow terminal, least important first, and `whole`
    (left-aligned columns such as ids one types back) as never broken. Returns the table."""
    setattr(table, _DROP, tuple(headers))
    setattr(table, _WHOLE, tuple(whole))
    return table


def _header(column: Any) -> str:
    h = column.header
    return h.plain if hasattr(h, "plain") else str(h)


def _cell_width(cell: Any) -> int:
    from rich.cells import cell_len

    text = cell.plain if hasattr(cell, "plain") else str(cell) if isinstance(cell, (str, int, float)) else None
    if text is None:
        return 0
    return max((cell_len(line) for line in text.split("\n")), default=0)


def _prepare(table: Any, width: int | None) -> None:
    """Numbers unbreakable at their widest cell; `whole` text too unless a cell would take over 40 % of the width
    (a hostile 200-character name then wraps rather than pushing every number off the screen); other text wraps."""
    whole = set(getattr(table, _WHOLE, ()))
    for column in table.columns:
        column.overflow = "fold"  # never an ellipsis: what does not fit goes on the next line
        widest = max((_cell_width(c) for c in (column.header, *column._cells)), default=0)  # headers stay whole too
        keep = column.justify == "right" or (_header(column) in whole and (width is None or widest <= 0.4 * width))
        column.no_wrap = keep
        if keep:
            column.min_width = max(column.min_width or 0, widest)


def _empty(table: Any, header: str) -> bool:
    """A column with nothing in it (every cell '–' or blank, e.g. 'vs baseline' without a baseline) goes first."""
    for column in table.columns:
        if _header(column) == header:
            return all((c.plain if hasattr(c, "plain") else str(c)).strip() in ("", "–", "-") for c in column._cells)
    return False


def minimum_width(table: Any) -> int:
    """The narrowest this table renders without breaking a number, an id or a word."""
    from rich.console import Console

    console = Console(width=10_000, file=_Null(), markup=False, emoji=False)
    return console.measure(table).minimum


def natural_width(table: Any) -> int:
    from rich.console import Console

    console = Console(width=10_000, file=_Null(), markup=False, emoji=False)
    return console.measure(table).maximum


class _Null:
    def write(self, _: str) -> int:
        return 0

    def flush(self) -> None:
        pass


def fit(table: Any, width: int | None) -> list[str]:
    """Make `table` render within `width` columns (None: as wide as it needs); returns the headers it left out.

    Only rich Tables are touched; anything else is printed as it is."""
    from rich.table import Table
    from rich.text import Text

    if not isinstance(table, Table):
        return []
    _prepare(table, width)
    if width is None:
        return []
    declared = list(getattr(table, _DROP, ()))
    order = [h for h in declared if _empty(table, h)] + [h for h in declared if not _empty(table, h)]
    dropped: list[str] = []
    while order and minimum_width(table) > width:
        name = order.pop(0)
        for i, column in enumerate(table.columns):
            if _header(column) == name:
                del table.columns[i]
                dropped.append(name)
                break
    if dropped:
        for i, column in enumerate(table.columns):
            column._index = i
        note = Text(f"Left out at {width} columns: {', '.join(dropped)} ({WIDE_HINT}).", style="dim")
        if table.caption:
            caption = table.caption if isinstance(table.caption, Text) else Text(str(table.caption))
            table.caption = Text.assemble(caption, "\n", note)
        else:
            table.caption = note
        table.caption_justify = "left"
    return dropped
