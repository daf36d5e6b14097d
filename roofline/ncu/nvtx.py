"""The NVTX push/pop stack ncu records for each launch (`ncu --nvtx`), and what PyTorch writes into it.

ncu adds one column for the push/pop stack of the launching thread; its header names the fields of each entry
(domain, range name, payload, colour, message) and each cell lists the stack outermost first, every entry in
quotes. The range name is what a person pushed; with `torch.autograd.profiler.emit_nvtx(record_shapes=True)`
it is the aten op with its input shapes:

    aten::addmm, seq = 12, op_id = 40, sizes = [[2304], [4096, 768], [768, 2304]], input_op_ids = [...]

Pure: text in, names and shapes out.
"""

from __future__ import annotations

import json
import re
from typing import Mapping

_COLUMN = re.compile(r"nvtx|push.?pop", re.IGNORECASE)
_QUOTED = re.compile(r'"((?:[^"]|"")*)"')
_SIZES = re.compile(r"\bsizes = (\[(?:[^\[\]]|\[[^\[\]]*\])*\])")
_DEFAULT_DOMAIN = "<default domain>"


def nvtx_columns(info: Mapping[str, str]) -> list[str]:
    """The descriptive columns that hold NVTX stacks."""
    return [k for k in info if _COLUMN.search(k)]


def _trailing_fields(header: str) -> int:
    """How many ':'-separated payload fields follow the range name in each entry, from the column's header
    ('...:Push/Pop_Range:PL_Type:PL_Value:CLR_Type:Color:Msg_Type:Msg' -> 6); 0 when the header does not say."""
    parts = header.split(":")
    for i, part in enumerate(parts):
        if re.fullmatch(r"push.?pop.?ranges?", part.strip(), re.IGNORECASE):
            return len(parts) - i - 1
    return 0


def _range_name(entry: str, trailing: int) -> str:
    """One stack entry -> its range name: the domain in front and the payload fields behind taken off."""
    text = entry.strip()
    if text.startswith("<"):  # '<default domain>:name:...' or '<domain 3>:name'
        close = text.find(">:")
        if close >= 0:
            text = text[close + 2:]
    if trailing:
        parts = text.rsplit(":", trailing)
        if len(parts) == trailing + 1:
            text = parts[0]
    return text.strip()


def parse_stack(cell: str, header: str = "") -> list[str]:
    """A cell of ncu's NVTX column -> the range names, outermost first; [] when the launch was in no range."""
    cell = cell.strip()
    if not cell or cell.lower() in ("n/a", "none", "-"):
        return []
    entries = [m.replace('""', '"') for m in _QUOTED.findall(cell)]
    if not entries:
        entries = [cell]
    trailing = _trailing_fields(header)
    return [name for name in (_range_name(e, trailing) for e in entries) if name]


def launch_stack(info: Mapping[str, str]) -> list[str] | None:
    """The NVTX stack of one launch from its descriptive columns; None when the capture has no NVTX column."""
    columns = nvtx_columns(info)
    if not columns:
        return None
    stack: list[str] = []
    for column in columns:
        stack += parse_stack(info[column], column)
    return stack


def op_name(range_name: str) -> str:
    """'aten::addmm, seq = 12, sizes = [[2304], ...]' -> 'aten::addmm'; other names as they are."""
    return range_name.split(", ", 1)[0].strip() or range_name


def shapes(range_name: str) -> list[list[int]] | None:
    """The input shapes emit_nvtx(record_shapes=True) wrote into a range name; None when there are none."""
    m = _SIZES.search(range_name)
    if not m:
        return None
    try:
        value = json.loads(m.group(1))
    except ValueError:
        return None
    if not isinstance(value, list) or not all(isinstance(s, list) and all(isinstance(d, int) and not
                                                                        isinstance(d, bool) and d >= 0 for d in s)
                                              for s in value):
        return None
    return value
