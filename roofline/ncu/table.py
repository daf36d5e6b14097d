"""`ncu --csv --page raw` text -> kernel launches with their metrics in SI base units. Pure: text in, numbers out.

What ncu writes (to standard output, usually redirected together with the program's own output):

  ==PROF== Connected to process 4242 (/usr/bin/python3.12)       <- ncu's progress lines, the program's output ...
  "ID","Process ID","Process Name","Host Name","Kernel Name","Context","Stream","Block Size","Grid Size",
      "Device","CC","dram__bytes_read.sum",...                    <- the header: fixed columns, then metric names
  "","","","","","","","","","","","byte",...                     <- the units row
  "0","4242","python3.12","127.0.0.1","add_f32","1","7","(128, 1, 1)","(16384, 1, 1)","0","9.0","201,342,976",...
                                                                   <- one row per kernel launch

Numbers may carry thousands separators; units are whatever ncu chose ('byte', 'Kbyte', 'nsecond', 'usecond',
'inst', '%'...) unless `--print-units base` was given. Everything is scaled to SI base units (B, s, counts).
A count, byte total or duration that roofline reads and that is negative or not finite is refused with its line
and column: such a file was not written by ncu.
"""

from __future__ import annotations

import csv
import io
import math
import re
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Iterable, Iterator, Sequence

from roofline.ncu.metrics import CYCLES_PER_SECOND, DEVICE_NAME, NON_NEGATIVE
from roofline.load.inputs import input_lines

_PREFIX = {"": 1.0, "K": 1e3, "M": 1e6, "G": 1e9, "T": 1e12, "P": 1e15, "m": 1e-3, "u": 1e-6, "n": 1e-9,
           "p": 1e-12, "Ki": 2.0**10, "Mi": 2.0**20, "Gi": 2.0**30, "Ti": 2.0**40}
_BASE_UNITS = ("byte", "second", "inst", "cycle", "sector", "warp", "request", "thread", "block", "register",
               "hz", "Hz", "wavefront", "transaction", "instruction", "flop", "op")
_ALIASES = {"ns": 1e-9, "us": 1e-6, "µs": 1e-6, "ms": 1e-3, "s": 1.0, "B": 1.0, "KB": 1e3, "MB": 1e6,
            "GB": 1e9, "TB": 1e12, "%": 1.0, "": 1.0}
_MISSING_TEXT = {"", "n/a", "N/A", "-", "nan", "NaN"}
_COUNTED = ("sm__sass_thread_inst_executed_op_", "smsp__sass_thread_inst_executed_op_", "sm__ops_path_tensor_")
_ID = "ID"
_KERNEL = "Kernel Name"


class NcuParseError(ValueError):
    """The text holds no ncu raw-page table, or one with values ncu cannot have written."""


class TooManyLaunches(NcuParseError):
    """More launches than one results file holds (MAX_LAUNCHES): refused while reading, before memory grows."""


class ImpossibleValue(NcuParseError):
    """A count, byte total or duration that is negative or not finite: the file was not written by ncu as is."""


def unit_scale(unit: str) -> float | None:
    """The factor from `unit` to its base unit: 'Kbyte' -> 1e3, 'usecond' -> 1e-6, 'byte/second' -> 1; None when
    the unit is not one this module knows (the value is then kept as written)."""
    unit = unit.strip()
    if unit in _ALIASES:
        return _ALIASES[unit]
    if "/" in unit:
        top, _, bottom = unit.partition("/")
        a, b = unit_scale(top), unit_scale(bottom)
        return None if a is None or b is None or b == 0 else a / b
    for base in _BASE_UNITS:
        if unit.endswith(base):
            prefix = unit[: -len(base)]
            if prefix in _PREFIX:
                return _PREFIX[prefix]
            if prefix.upper() in ("K",):
                return 1e3
    return None


def parse_number(text: str) -> float | None:
    """'201,342,976' -> 201342976.0; '1.5' -> 1.5; '' or 'n/a' -> None; 'inf' -> inf (the caller judges it).
    Raises ValueError on text that is not a number."""
    t = text.strip().replace("\u202f", "").replace("\u00a0", "")
    if t in _MISSING_TEXT:
        return None
    if re.fullmatch(r"[+-]?\d{1,3}(,\d{3})+(\.\d*)?([eE][+-]?\d+)?", t):
        t = t.replace(",", "")
    if not t.isascii():
        raise ValueError(f"not an ASCII number: {t!r}")
    return float(t)  # ValueError for text


def is_counted(metric: str) -> bool:
    """Whether `metric` is a count, byte total or duration roofline reads (never negative, always finite)."""
    return metric in NON_NEGATIVE or metric == CYCLES_PER_SECOND or metric.startswith(_COUNTED)


@dataclass
class Launch:
    """One kernel launch: its descriptive columns as text and its metrics in base units (None = not reported)."""

    index: int  # position in the file (0-based), for messages
    id: str
    kernel: str
    info: dict[str, str]
    metrics: dict[str, float | None]
    units: dict[str, str]
    raw: dict[str, str] = field(default_factory=dict)  # metric cells ncu wrote that are not numbers
    line: int = 0  # 1-based line of the file, for messages

    @property
    def device(self) -> str:
        """The device name when the CSV has it (device__attribute_display_name, or a non-numeric Device)."""
        name = self.raw.get(DEVICE_NAME) or ""
        if name:
            return name
        device = self.info.get("Device", "")
        return "" if re.fullmatch(r"\d*", device.strip()) else device.strip()


@dataclass(frozen=True)
class DroppedRow:
    """A row of the table that reads as a launch but cannot be one: said in the import's notes, never silent."""

    line: int  # 1-based line of the file
    id: str  # the first cell as written (shortened)
    why: str  # the reason, one of a few, so that a note can count rows by it
    detail: str = ""  # this row's particulars ("5 of 17 cells")


@dataclass
class NcuTable:
    launches: list[Launch]
    columns: list[str]  # metric columns, in file order
    units: dict[str, str]
    noise_lines: int  # lines around the table that were not part of it (program output, ==PROF== lines)
    prof_lines: list[str]  # ==PROF== / ==ERROR== / ==WARNING== lines, for messages
    dropped: list[DroppedRow] = field(default_factory=list)  # rows in ncu's form that are not launches


def _is_metric(column: str) -> bool:
    return "__" in column


_QUOTED_START = re.compile(r'\s*"[^"]*"\s*,')  # a record in ncu's form: a quoted first cell, then a comma
MAX_ID_DIGITS = 18  # ncu numbers launches from 0; an ID longer than this is not one of its IDs
MAX_JOINED_LINES = 256  # a quoted cell may span lines (an NVTX name with a newline): this many at most


MAX_PROF_LINES = 200  # ncu's ==PROF==/==ERROR==/==WARNING== lines kept for messages (a capture has one per launch)


def _lines(text: str) -> list[str]:
    """The file's lines, split at \\n (and \\r\\n) only: a kernel or NVTX name may hold U+2028, \\x0b, \\x1c..., at
    which str.splitlines would also split, cutting its row in two."""
    return text.replace("\r\n", "\n").split("\n")


def _cells(record: str) -> list[str] | None:
    try:
        return next(csv.reader(io.StringIO(record)))
    except (csv.Error, StopIteration):
        return None


def _records(lines: Iterable[str]) -> Iterator[tuple[int, str, list[str] | None]]:
    """(line number, text, cells or None when it is not CSV) for each non-blank line, one line read ahead at most.
    Lines are parsed one by one so that a program's stray quote cannot swallow the table; only a row in ncu's form
    whose quote is still open at the end of its line is joined with the lines that close it (at most
    MAX_JOINED_LINES, never across the start of another such row); when they do not close it, the row stands alone
    and the lines after it are read again as lines of their own."""
    source = iter(lines)
    pending: list[tuple[int, str]] = []  # lines read ahead and not used
    number = 0

    def take() -> tuple[int, str] | None:
        nonlocal number
        if pending:
            return pending.pop(0)
        line = next(source, None)
        if line is None:
            return None
        number += 1
        return number, line

    while True:
        item = take()
        if item is None:
            return
        start, text = item
        if not text.strip():
            continue
        if text.count('"') % 2 and _QUOTED_START.match(text):
            parts, quotes, extra = [text], text.count('"'), []
            while quotes % 2 and len(extra) < MAX_JOINED_LINES:
                following = take()
                if following is None:
                    break
                if _QUOTED_START.match(following[1]):
                    pending.insert(0, following)
                    break
                extra.append(following)
                parts.append(following[1])
                quotes += following[1].count('"')
            if not quotes % 2:
                text = "\n".join(parts)
            else:
                pending[:0] = extra
        yield start, text, _cells(text)


@contextmanager
def _field_limit(size: int) -> Iterator[None]:
    """The csv module refuses a cell over 131,072 characters (a long C++ template name can be): raise its limit
    for the longest line of this file, and put it back."""
    old = csv.field_size_limit()
    csv.field_size_limit(max(old, size + 1))
    try:
        yield
    finally:
        csv.field_size_limit(old)


def _is_header(cells: Sequence[str]) -> bool:
    return len(cells) >= 3 and cells[0].strip() == _ID and _KERNEL in cells


def _metric_values(header: list[str], cells: list[str], units: dict[str, str],
                   lineno: int) -> tuple[dict[str, float | None], dict[str, str]]:
    """One row's metrics in base units, and its text cells. Raises NcuParseError at an impossible count."""
    metrics: dict[str, float | None] = {}
    raw: dict[str, str] = {}
    for column, (h, cell) in enumerate(zip(header, cells), 1):
        if not _is_metric(h):
            continue
        try:
            value = parse_number(cell)
        except ValueError:
            raw[h] = cell.strip()  # a text metric (a device name, say)
            metrics[h] = None
            continue
        if value is not None and is_counted(h) and (not math.isfinite(value) or value < 0):
            raise ImpossibleValue(f"line {lineno}, column {column} ({h}): {cell.strip()!r} is impossible: a count, "
                                "byte total or duration is finite and never negative")
        if value is not None and not math.isfinite(value):
            value = None
        scale = unit_scale(units.get(h, ""))
        if value is not None and scale is not None:
            value *= scale
            if is_counted(h) and not math.isfinite(value):
                raise ImpossibleValue(f"line {lineno}, column {column} ({h}): {cell.strip()!r} {units.get(h)} is "
                                      "impossible: it overflows a 64-bit float")
        metrics[h] = value
    return metrics, raw


def _why_dropped(first: str, cells: Sequence[str] | None, header: Sequence[str]) -> tuple[str, str] | None:
    """(why, detail) for a row in ncu's form after a header that is not a launch; None when it is one."""
    if cells is None:
        return "not readable as CSV", ""
    if not first:
        return "an empty ID", ""
    if not re.fullmatch(r"\d+", first):
        return "an ID that is not a launch number", ""
    if len(first) > MAX_ID_DIGITS:
        return "an ID too long to be a launch number", f"{len(first)} digits"
    if len(cells) != len(header):
        return ("too few cells" if len(cells) < len(header) else "too many cells"), f"{len(cells)} of {len(header)}"
    return None


def parse_csv(text: str) -> NcuTable:
    """Every launch in an `ncu --csv --page raw` capture held as text (see parse_lines)."""
    if text.startswith("\ufeff"):
        text = text[1:]
    return parse_lines(_lines(text), len(text))


MAX_CSV_BYTES = 512 << 20  # the largest capture read (`import ncu`, `profile`'s read-back)
# The most launches one import takes: a launch's results entry is about 3 KB of JSON, so this many stay under the
# 256 MiB a results file may be for `report` and `plot` (roofline.records.files.MAX_RESULTS_BYTES), and what is held
# while they are made stays bounded (a 200 MB capture is ~300,000 launches: 11 GB when it was taken whole).
MAX_LAUNCHES = 50_000


def parse_csv_file(path: Path | str, max_bytes: int = MAX_CSV_BYTES) -> NcuTable:
    """Every launch in an `ncu --csv --page raw` file, read line by line: the file is never held whole, and a
    launch keeps only its numbers and descriptive cells. InputError (naming the file) when it cannot be read."""
    return parse_lines(input_lines(path, max_bytes, "the CSV that 'ncu --csv --page raw' writes"), max_bytes)


def parse_lines(lines: Iterable[str], longest: int, max_launches: int | None = None) -> NcuTable:
    """Every launch in a capture's lines (`longest`: the most characters a cell may hold). Header(s) are found
    wherever they are; a second header (two captures concatenated) starts a new column set. A row after a header
    that is in ncu's form (a quoted first cell) but cannot be a launch (an empty or impossible ID, too few or too
    many cells) is kept in `dropped` with the reason. Raises NcuParseError when there is no table at all, or when a
    value roofline reads is one ncu cannot have written; TooManyLaunches past `max_launches` (as soon as it is
    passed, not after reading the rest; default MAX_LAUNCHES)."""
    max_launches = MAX_LAUNCHES if max_launches is None else max_launches
    prof: list[str] = []
    header: list[str] | None = None
    units: dict[str, str] = {}
    launch_units: dict[str, str] | None = None  # one dict shared by the launches under one header and units row
    launches: list[Launch] = []
    dropped: list[DroppedRow] = []
    metric_columns: list[str] = []
    used = 0
    nonblank = [0]
    expect_units = False
    with _field_limit(longest):
        for lineno, record, cells in _records(_counted(lines, prof, nonblank)):
            if cells is not None and _is_header(cells):
                header = [c.strip() for c in cells]
                metric_columns += [c for c in header if _is_metric(c) and c not in metric_columns]
                units, expect_units, launch_units = {}, True, None
                used += 1
                continue
            if header is None:
                continue
            first = cells[0].strip() if cells else ""
            if expect_units and cells is not None and first == "" and len(cells) == len(header):
                units.update({h: u.strip() for h, u in zip(header, cells) if _is_metric(h)})
                expect_units, launch_units = False, None
                used += 1
                continue
            expect_units = False
            ncu_form = bool(_QUOTED_START.match(record))
            if not ncu_form and (cells is None or len(cells) != len(header) or not re.fullmatch(r"\d+", first)):
                continue  # the program's own output, or ncu's ==PROF== lines
            used += 1
            why = _why_dropped(first, cells, header)
            if why is not None or cells is None:
                reason, detail = why or ("not readable as CSV", "")
                dropped.append(DroppedRow(lineno, first[:24] + ("…" if len(first) > 24 else ""), reason, detail))
                continue
            metrics, raw = _metric_values(header, cells, units, lineno)
            info = {h: c.strip() for h, c in zip(header, cells) if not _is_metric(h)}
            if len(launches) >= max_launches:
                raise TooManyLaunches(f"more than {max_launches:,} kernel launches (line {lineno}): more than one "
                                      "results file holds for 'report' and 'plot'")
            if launch_units is None:
                launch_units = {h: units.get(h, "") for h in header if _is_metric(h)}
            launches.append(Launch(len(launches), first, info.get(_KERNEL, "?"), info, metrics, launch_units, raw,
                                   lineno))
    if header is None:
        hint = next((f" (ncu said: {line[:200]})" for line in prof
                     if "ERR_NVGPUCTRPERM" in line or "==ERROR==" in line), "")
        error = NcuParseError("no 'ncu --csv --page raw' table found: expected a header line starting with "
                              f"\"ID\" and naming \"Kernel Name\"{hint}")
        error.prof_lines = prof  # type: ignore[attr-defined]  # for diagnose(): what ncu said instead
        raise error
    return NcuTable(launches, metric_columns, units, nonblank[0] - used, prof, dropped)


def _counted(lines: Iterable[str], prof: list[str], nonblank: list[int]) -> Iterator[str]:
    """The lines, passing by, the non-blank ones counted in nonblank[0]; ncu's own lines (==PROF==, ==ERROR==,
    ==WARNING==) noted in `prof`: its errors and warnings all (up to MAX_PROF_LINES), its ==PROF== lines up to a
    quarter of that (one per launch)."""
    shown = 0
    for line in lines:
        stripped = line.lstrip()
        if stripped:
            nonblank[0] += 1
        if stripped.startswith("=="):
            if stripped.startswith(("==ERROR==", "==WARNING==")) and len(prof) < MAX_PROF_LINES:
                prof.append(line.strip())
            elif stripped.startswith("==PROF==") and shown < MAX_PROF_LINES // 4:
                prof.append(line.strip())
                shown += 1
        yield line


def diagnose(output: str) -> str | None:
    """A plain sentence when ncu's output says it could not profile (no counter access, driver library not
    loaded, unsupported GPU); None when nothing of the sort is there."""
    if "ERR_NVGPUCTRPERM" in output:
        return ("ncu cannot read the GPU performance counters here (ERR_NVGPUCTRPERM: the driver allows them to "
                "admin users only; see https://developer.nvidia.com/ERR_NVGPUCTRPERM)")
    if "LibraryNotLoaded" in output or "libnvperf" in output.lower():
        return "ncu could not load its profiling library on this machine (LibraryNotLoaded)"
    for pattern, why in (
        ("not supported", "ncu does not support profiling this GPU (common on virtualised GPUs)"),
        ("Failed to find metric", "this ncu or GPU does not know one of the metrics asked for"),
        ("No kernels were profiled", "ncu profiled no kernels"),
    ):
        for line in output.splitlines():
            if pattern in line and line.lstrip().startswith(("==ERROR==", "==WARNING==", "==PROF==")):
                return f"{why} ({line.strip()[:200]})"
    for line in output.splitlines():
        if line.lstrip().startswith("==ERROR=="):
            return f"ncu reported an error: {line.strip()[:200]}"
    return None

