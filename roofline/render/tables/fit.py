"""Tables that read at 80 columns: numbers and ids whole, names wrapped, the least important columns left out.

rich squeezes a table wider than the terminal by cutting every cell to `…`, numbers included (`0.08…`). Each
renderer instead says which of its columns may be left out, least important first (`droppable`). Before printing,
`fit` makes every right-aligned (numeric) column and every column marked `whole` unbreakable at its widest cell.
A table wider than the terminal then gives up, in this order, only what it must:
1. headers of those columns wrap at their spaces (`DRAM bytes` over two lines above `67.1 MB`);
2. other text (names, notes) wraps at its spaces, the widest column first; a long identifier (a Triton kernel's
   name) wraps after a `_` or `/`, never inside a part, so its fused ops and numeric suffix stay legible;
3. the box loses its vertical rules and edges (two spaces between columns instead of three characters);
4. droppable columns are left out, least important first, until the table fits.
It then says under the table what it left out and that `--wide` shows everything. `--wide` (or a wide terminal)
prints every column.

The widths are computed here, once, from the cells' text (rich measures every cell again for each trial layout,
which made an 80-column `analyze` spend most of its time measuring), and given to rich as fixed column widths, so
rich never has to squeeze a column below what it holds.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any, Callable, Sequence

_DROP = "roofline_drop_order"
_WHOLE = "roofline_whole_columns"
_WIDEST = "roofline_widest_cell"  # set on a column by _prepare: its widest cell, measured once
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


def _text(cell: Any) -> str | None:
    if hasattr(cell, "plain"):
        return cell.plain
    return str(cell) if isinstance(cell, (str, int, float)) else None


def _cell_width(cell: Any) -> int:
    # lazy: not needed by `roofline analyze --format csv`, which imports this module (start-up)
    from rich.cells import cell_len

    text = _text(cell)
    if text is None:
        return 0
    return max((cell_len(line) for line in text.split("\n")), default=0)


def _word_width(cell: Any) -> int:
    """The longest word: the narrowest the cell wraps to without breaking one."""
    # lazy: not needed by `roofline analyze --format csv`, which imports this module (start-up)
    from rich.cells import cell_len

    text = _text(cell)
    if text is None:
        return 0
    return max((cell_len(word) for word in text.split()), default=0)


# A long identifier (a Triton kernel `triton_per_fused__to_copy_add_mean_mul_pow_rsqrt_7`, a module path
# `model/layers/attn`) breaks only after one of these, never inside a part: the fused ops and the numeric suffix
# that tell two kernels apart stay whole, where rich's own folding cut at the column's edge (`..._rsq` / `rt_7`).
_BREAK_AFTER = re.compile(r"(?<=[_/])(?=[^_/])")
NAME_FLOOR = 24  # a wrapped name column is no narrower than this (or its widest cell): a few parts a line


def _parts(word: str) -> list[str]:
    return _BREAK_AFTER.split(word)


def _name_width(cell: Any) -> int:
    """The narrowest a text cell wraps to: its longest word, where a word made of `_`/`/` parts may break between
    them down to NAME_FLOOR (or its longest part): a Triton name wraps over a few lines of several parts each."""
    # lazy: not needed by `roofline analyze --format csv`, which imports this module (start-up)
    from rich.cells import cell_len

    text = _text(cell)
    if text is None:
        return 0
    least = 0
    for word in text.split():
        whole = cell_len(word)
        parts = _parts(word)
        if len(parts) > 1 and whole > NAME_FLOOR:
            whole = max(NAME_FLOOR, max(cell_len(p) for p in parts))
        least = max(least, whole)
    return least


def _break_words(text: str, width: int) -> list[int]:
    """Offsets in `text` where a line break goes so that no word wider than `width` is cut inside a part: each
    long word is filled greedily with whole parts. A part wider than `width` alone is left for rich to fold."""
    cuts: list[int] = []
    for match in re.finditer(r"\S+", text):
        word = match.group()
        if len(word) <= width:
            continue
        line, at = 0, match.start()
        for part in _parts(word):
            if line and line + len(part) > width:
                cuts.append(at)
                line = 0
            line += len(part)
            at += len(part)
    return cuts


def _wrap_names(column: Any, width: int) -> None:
    """Break the column's long words at their `_`/`/` boundaries to fit `width` (a str cell stays a str, a rich
    Text keeps its styles): rich then never has to fold an identifier mid-part."""
    # lazy: not needed by `roofline analyze --format csv`, which imports this module (start-up)
    from rich.text import Text

    for i, cell in enumerate(column._cells):
        text = _text(cell)
        if text is None or isinstance(cell, (int, float)):
            continue
        cuts = _break_words(text, width)
        if not cuts:
            continue
        bounds = [0, *cuts, len(text)]
        if isinstance(cell, Text):
            pieces = [cell[a:b] for a, b in zip(bounds, bounds[1:])]
            column._cells[i] = Text("\n").join(pieces)
        else:
            column._cells[i] = "\n".join(text[a:b] for a, b in zip(bounds, bounds[1:]))


@dataclass
class _Span:
    """A column's content width (no padding): `least` with nothing broken, `most` on one line each; `fixed`
    columns (numbers, ids) never go below their widest cell."""

    least: int
    most: int
    fixed: bool


def _measure(column: Any, console: Callable[[], Any]) -> _Span:
    """One pass over the column's cells, from their text (rich asked only for cells that are not text). The widest
    text cell comes from _prepare, which measured every cell once; here a wrapping column adds its longest word."""
    least = most = 0
    widest = getattr(column, _WIDEST, None)
    for cell in column._cells:
        if _text(cell) is None:  # some other renderable: ask rich
            # lazy: not needed by `roofline analyze --format csv`, which imports this module (start-up)
            from rich.measure import Measurement

            m = Measurement.get(console(), console().options, cell)
            least, most = max(least, m.minimum), max(most, m.maximum)
        elif widest is None:  # not prepared (natural_width of a table fit never saw)
            w = _cell_width(cell)
            least, most = max(least, w if column.no_wrap else _name_width(cell)), max(most, w)
        elif not column.no_wrap:
            least = max(least, _name_width(cell))
    if widest is not None:
        most = max(most, widest)
        least = max(least, widest) if column.no_wrap else least
    header_least, header_most = _word_width(column.header), _cell_width(column.header)
    least, most = max(least, header_least, column.min_width or 0), max(most, header_most, column.min_width or 0)
    if column.max_width is not None:
        most = max(least, min(most, column.max_width))
    return _Span(least, most, bool(column.no_wrap))


def _prepare(table: Any, width: int | None) -> None:
    """Numbers unbreakable at their widest cell; `whole` text too unless a cell would take over 40 % of the width
    (a hostile 200-character name then wraps rather than pushing every number off the screen); other text wraps.
    Headers wrap at their spaces: a header wider than its numbers goes over two lines rather than taking room."""
    # lazy: not needed by `roofline analyze --format csv`, which imports this module (start-up)
    from rich.text import Text

    whole = set(getattr(table, _WHOLE, ()))
    for column in table.columns:
        column.overflow = "fold"  # never an ellipsis: what does not fit goes on the next line
        widest = max((_cell_width(c) for c in column._cells), default=0)
        setattr(column, _WIDEST, widest)
        keep = column.justify == "right" or (_header(column) in whole and (width is None or widest <= 0.4 * width))
        column.no_wrap = keep
        if keep:
            column.min_width = max(column.min_width or 0, widest)
            header = column.header.copy() if isinstance(column.header, Text) else Text(str(column.header))
            header.no_wrap, header.overflow = False, "fold"  # the column is no_wrap; its header may still wrap
            column.header = header


def _empty(table: Any, header: str) -> bool:
    """A column with nothing in it (every cell '–' or blank, e.g. 'vs baseline' without a baseline) goes first."""
    for column in table.columns:
        if _header(column) == header:
            return all((c.plain if hasattr(c, "plain") else str(c)).strip() in ("", "–", "-") for c in column._cells)
    return False


def _overhead(table: Any, n: int) -> int:
    """Characters a table of `n` columns adds to its cells: borders, separators and padding (rich's own rules)."""
    if n == 0:
        return 0
    extra = (2 if table.box and table.show_edge else 0) + (n - 1 if table.box else 0)
    _, right, _, left = table.padding
    if table.collapse_padding:
        left, right = 0, right
    pads = (left + right) * n
    if not table.pad_edge:
        pads -= left + right
    return extra + pads


def _compact(table: Any) -> None:
    """The same table without vertical rules or edges: two spaces between columns."""
    # lazy: not needed by `roofline analyze --format csv`, which imports this module (start-up)
    from rich import box

    table.box, table.show_edge, table.pad_edge, table.collapse_padding = box.SIMPLE_HEAD, False, False, True


def _widths(spans: list[_Span], room: int) -> list[int] | None:
    """Each column's width within `room` (None when even the narrowest rendering is wider): every column at its
    `most`; over the room, the headers of fixed columns give way first (a header over two lines costs one line),
    then wrappable text, the widest column first."""
    if sum(s.least for s in spans) > room:
        return None
    widths = [s.most for s in spans]
    for flexible in (lambda s: s.fixed, lambda s: not s.fixed):
        while sum(widths) > room:
            give = [i for i, s in enumerate(spans) if flexible(s) and widths[i] > s.least]
            if not give:
                break
            widest = max(give, key=lambda i: widths[i])
            widths[widest] -= 1
    return widths


def natural_width(table: Any) -> int:
    """The width this table takes with every cell on one line (what --wide prints at)."""
    # lazy: not needed by `roofline analyze --format csv`, which imports this module (start-up)
    from rich.table import Table

    if not isinstance(table, Table):
        # lazy: not needed by `roofline analyze --format csv`, which imports this module (start-up)
        from rich.console import Console

        return Console(width=10_000, file=_Null(), markup=False, emoji=False).measure(table).maximum
    console = _lazy_console()
    return sum(_measure(c, console).most for c in table.columns) + _overhead(table, len(table.columns))


class _Null:
    def write(self, _: str) -> int:
        return 0

    def flush(self) -> None:
        pass


def _lazy_console() -> Callable[[], Any]:
    """A Console made on first use: most tables are all text and never need one."""
    made: list[Any] = []

    def get() -> Any:
        if not made:
            # lazy: not needed by `roofline analyze --format csv`, which imports this module (start-up)
            from rich.console import Console

            made.append(Console(width=10_000, file=_Null(), markup=False, emoji=False))
        return made[0]

    return get


def fit(table: Any, width: int | None) -> list[str]:
    """Make `table` render within `width` columns (None: as wide as it needs); returns the headers it left out.

    Only rich Tables are touched; anything else is printed as it is."""
    # lazy: not needed by `roofline analyze --format csv`, which imports this module (start-up)
    from rich.table import Table
    # lazy: not needed by `roofline analyze --format csv`, which imports this module (start-up)
    from rich.text import Text

    if not isinstance(table, Table):
        return []
    _prepare(table, width)
    console = _lazy_console()
    spans = {id(c): _measure(c, console) for c in table.columns}
    if width is None or sum(s.most for s in spans.values()) + _overhead(table, len(table.columns)) <= width:
        for column in table.columns:  # fits as it is: each column at its natural width, as rich would lay it out,
            column.width = spans[id(column)].most  # given so that rich need not measure every cell again
        return []
    declared = list(getattr(table, _DROP, ()))
    order = [h for h in declared if _empty(table, h)] + [h for h in declared if not _empty(table, h)]
    dropped: list[str] = []
    while True:
        current = [spans[id(c)] for c in table.columns]
        widths = _widths(current, width - _overhead(table, len(current)))
        if widths is None and table.box is not None and table.show_edge:
            _compact(table)
            widths = _widths(current, width - _overhead(table, len(current)))
        if widths is None and not order and any(c.no_wrap and c.justify != "right" for c in table.columns):
            for column in table.columns:  # last resort: ids wrap too; numbers never
                if column.justify != "right":
                    column.no_wrap = False
                    spans[id(column)] = _measure(column, console)
            continue
        if widths is not None or not order:
            break
        name = order.pop(0)
        for i, column in enumerate(table.columns):
            if _header(column) == name:
                del table.columns[i]
                dropped.append(name)
                break
    for i, column in enumerate(table.columns):
        column._index = i
    if widths is not None:
        for column, w in zip(table.columns, widths):
            column.width = w
            if not column.no_wrap:
                _wrap_names(column, w)
    if dropped:
        note = Text(f"Left out at {width} columns: {', '.join(dropped)} ({WIDE_HINT}).", style="dim")
        if table.caption:  # a line that explains a column left out ('roof +: ...') goes with it
            lines = str(table.caption).split("\n")
            kept = [line for line in lines if not any(line.startswith(f"{name} +:") for name in dropped)]
            if len(kept) != len(lines):
                table.caption = Text("\n".join(kept)) if any(kept) else None  # Text: no markup read into it
        if table.caption:
            caption = table.caption if isinstance(table.caption, Text) else Text(str(table.caption))
            table.caption = Text.assemble(caption, "\n", note)
        else:
            table.caption = note
        table.caption_justify = "left"
    return dropped
