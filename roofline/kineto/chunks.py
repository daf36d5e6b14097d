"""A long trace's traceEvents parsed a few megabytes at a time, so the parsed events of the whole file never sit in
memory together (a 115 MB trace parses into ~800 MB of Python objects; its reduced events need a fraction).

Kineto writes one JSON object with a "traceEvents" array of flat event objects. The array is cut after an event's
closing brace followed by a comma: a cut inside a string or a nested value leaves text that is not JSON, which the
parser refuses, and the cut moves to the next candidate; so every batch is a run of whole events or nothing. The
array's end is found in the last, small stretch: the first ']' before which the last events parse whole. The rest
of the document (deviceProperties, distributedInfo) is parsed with the array emptied.

When the text is not laid out so, or a stretch will not parse, ValueError (raised lazily, mid-iteration): the
caller then parses the whole file as before, with its own messages. Pure: bytes in, objects out.
"""

from __future__ import annotations

import re
from typing import Any, Callable, Iterator

BATCH = 4 << 20  # bytes of events parsed at once
MAX_BATCH = 64 << 20  # a stretch that will not cut within this is not a Kineto layout
MAX_TRIES = 256  # ']' tried as the array's end in the last event and the keys after it
_KEY = re.compile(rb'"traceEvents"\s*:\s*\[')
_CUT = re.compile(rb"\}\s*,")
_WS = b" \t\r\n"


class EventStream:
    """Iterate for the events in batches; `head` is the document without its events once iteration ended."""

    def __init__(self, data: bytes, loads: Callable[[bytes], Any]):
        m = _KEY.search(data)
        if m is None:
            raise ValueError("no traceEvents array")
        self.data, self.loads, self.start = data, loads, m.end()
        self.head: dict[str, Any] | None = None
        self.position = self.start  # bytes of the text parsed so far, for a progress report

    def __iter__(self) -> Iterator[list[Any]]:
        data, pos = self.data, self.start
        while True:
            cut = _CUT.search(data, pos + BATCH)
            while cut is not None:
                if cut.start() - pos > MAX_BATCH:
                    raise ValueError("no cut between events")
                try:
                    batch = self._list(data[pos:cut.start() + 1])
                except ValueError:
                    cut = _CUT.search(data, cut.end())
                    continue
                break
            if cut is None:
                yield from self._last(pos)
                return
            pos = cut.end()
            self.position = pos
            yield batch

    def _last(self, pos: int) -> Iterator[list[Any]]:
        """The last stretch: whole events up to the last cut, then the final event, ']' and the rest."""
        data = self.data
        events: list[Any] = []
        cut = None
        for cut in _CUT.finditer(data, pos):
            pass
        if cut is not None:
            try:
                events = self._list(data[pos:cut.start() + 1])
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
                head = self.loads(data[:self.start] + b"]" + data[close + 1:])
            except ValueError:
                close += 1
                continue
            if isinstance(head, dict) and head.get("traceEvents") == []:
                self.head = head
                yield events + tail
                return
            close += 1
        raise ValueError("the events array does not end where expected")

    def _list(self, text: bytes) -> list[Any]:
        out = self.loads(b"[" + text + b"]")
        if not isinstance(out, list):
            raise ValueError("not a list of events")
        return out
