"""A long trace's traceEvents parsed a few megabytes at a time, so the parsed events of the whole file never sit in
memory together (a 115 MB trace parses into ~800 MB of Python objects; its reduced events need a fraction).

Kineto writes one JSON object with a "traceEvents" array of flat event objects. The array is cut after an event's
closing brace followed by a comma: a cut inside a string or a nested value leaves text that is not JSON, which the
parser refuses, and the cut moves to the next candidate; so every batch is a run of whole events or nothing. The
array's end is found in the last, small stretch: the first ']' before which the last events parse whole. The rest
of the document (deviceProperties, distributedInfo) is parsed with the array emptied.

The text may come in pieces (a file read, or a .json.gz inflated, as it goes): what the batches consumed is
dropped, so a trace of any length holds at most about MAX_BATCH of its text at once.

When the text is not laid out so, or a stretch will not parse, ValueError (raised lazily, mid-iteration): the
caller then parses the whole file as before, with its own messages (DuplicateEvents, a ValueError too, when the
document names "traceEvents" twice: refused, as the whole parse refuses it). Pure: bytes in, objects out.
"""

from __future__ import annotations

import json
import re
from typing import Any, Callable, Iterable, Iterator

BATCH = 4 << 20  # bytes of events parsed at once
MAX_BATCH = 64 << 20  # a stretch that will not cut within this is not a Kineto layout
MAX_TRIES = 256  # cuts tried for one batch, and ']' tried as the array's end (a broken text fails fast, not in hours)
_KEY = re.compile(rb'"traceEvents"\s*:\s*\[')
_CUT = re.compile(rb"\}\s*,")
_WS = b" \t\r\n"


class DuplicateEvents(ValueError):
    """The document names "traceEvents" twice: one array would be read and the other silently lost."""


class EventStream:
    """Iterate for the events in batches; `head` is the document without its events once iteration ended.

    `data` is the whole text, or its pieces in order (a file read or inflated as it goes): the text is pulled as
    the batches need it and what they consumed is dropped, so at most about MAX_BATCH of it is held at once."""

    def __init__(self, data: bytes | Iterable[bytes], loads: Callable[[bytes], Any]):
        self.pieces: Iterator[bytes] = iter([data] if isinstance(data, (bytes, bytearray)) else data)
        self.loads = loads
        self.buf = b""  # the text from `self.offset` on, not yet consumed
        self.offset = 0
        self.ended = False
        self.head: dict[str, Any] | None = None
        while (m := _KEY.search(self.buf)) is None:
            if len(self.buf) > MAX_BATCH or not self._more():
                raise ValueError("no traceEvents array")
        self.prefix = self.buf[:m.end()]  # the document up to the array's '['
        self.buf = self.buf[m.end():]
        self.offset = m.end()
        self.position = self.offset  # bytes of the text parsed so far, for a progress report

    def _more(self) -> bool:
        """Append the next piece to the buffer; False at the end of the text."""
        for piece in self.pieces:
            if piece:
                self.buf += piece
                return True
        self.ended = True
        return False

    def _fill(self, upto: int) -> None:
        while len(self.buf) < upto and not self.ended and self._more():
            pass

    def __iter__(self) -> Iterator[list[Any]]:
        while True:
            self._fill(BATCH + (1 << 20))
            cut = _CUT.search(self.buf, BATCH)
            while cut is None and not self.ended and len(self.buf) <= MAX_BATCH:
                self._fill(len(self.buf) * 2)  # a long event: read on until a cut or MAX_BATCH
                cut = _CUT.search(self.buf, BATCH)
            batch: list[Any] = []
            tries = 0
            while cut is not None:
                tries += 1
                if cut.start() > MAX_BATCH or tries > MAX_TRIES:  # each try parses the stretch again: bounded
                    raise ValueError("no cut between events")
                try:
                    batch = self._list(self.buf[:cut.start() + 1])
                except ValueError:
                    nxt = _CUT.search(self.buf, cut.end())
                    while nxt is None and not self.ended and len(self.buf) <= MAX_BATCH:
                        self._fill(len(self.buf) * 2)
                        nxt = _CUT.search(self.buf, cut.end())
                    cut = nxt
                    continue
                break
            if cut is None:
                if not self.ended:
                    raise ValueError("no cut between events")
                yield from self._last()
                return
            self.buf = self.buf[cut.end():]
            self.offset += cut.end()
            self.position = self.offset
            yield batch

    def _last(self) -> Iterator[list[Any]]:
        """The last stretch: whole events up to the last cut, then the final event, ']' and the rest."""
        data = self.buf
        pos = 0
        events: list[Any] = []
        cut = None
        for cut in _CUT.finditer(data):
            pass
        if cut is not None:
            try:
                events = self._list(data[:cut.start() + 1])
                pos = cut.end()
            except ValueError:
                cut = None  # the last cut was not between events: try the whole stretch below, if short
        if cut is None and len(data) - pos > 1 << 20:
            raise ValueError("no cut between the last events")
        close = pos
        tries = 0
        while (close := data.find(b"]", close)) >= 0 and tries < MAX_TRIES:
            tries += 1
            body = data[pos:close].strip(_WS)
            try:
                tail = self._list(body) if body else []
                rest = self.prefix + b"]" + data[close + 1:]
                head = self.loads(rest)
            except ValueError:
                close += 1
                continue
            if isinstance(head, dict) and head.get("traceEvents") == []:
                if names_events_twice(rest):
                    raise DuplicateEvents("traceEvents is given twice")
                self.head = head
                self.position = self.offset + len(data)
                yield events + tail
                return
            close += 1
        raise ValueError("the events array does not end where expected")

    def _list(self, text: bytes) -> list[Any]:
        out = self.loads(b"[" + text + b"]")
        if not isinstance(out, list):
            raise ValueError("not a list of events")
        return out


_NAMED = re.compile(rb'"traceEvents"\s*:')


def names_events_twice(text: bytes) -> bool:
    """Whether an object of the document (its top, in practice) has the key "traceEvents" twice (JSON parsers keep
    one of them without a word). The standard parser, which is slow, runs only where the raw text holds the key
    more than once."""
    if len(_NAMED.findall(text)) < 2:
        return False
    twice = False

    def pairs(items: list[tuple[str, Any]]) -> dict[str, Any]:
        nonlocal twice
        twice = twice or sum(1 for k, _ in items if k == "traceEvents") > 1
        return dict(items)

    try:
        json.loads(text, object_pairs_hook=pairs)
    except (ValueError, RecursionError):
        return False
    return twice
