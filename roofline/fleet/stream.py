"""Rank 0's streaming writer for a fleet's results: memory bounded by what the verdict needs, not by the file.

As each rank's document arrives, its kernel entries (each named by its rank and host, exactly as the merge names
them) are turned into their JSON text and appended to a spool file, and rank 0 keeps only a slim copy: the
document without the heavy fields of each entry (SLIM keeps what the fleet table, the notes and the verdict read).
At the end the merge of the slim documents (roofline.fleet.merge.fleet_document, unchanged) gives everything
around the `kernels` array, and the file is assembled from it and the spooled texts, in the merge's order, through
the one atomic writer (temporary file beside -o, then rename: never half written). The text is byte for byte what
`dumps(fleet_document(...))` of the full documents gives (tests/test_fleet_stream.py checks it).

A small fleet (up to `full_up_to` ranks) keeps its full documents too: its terminal table shows every entry.
A rank's full entries can be read back from the spool (`entries`), for a table that shows one rank in full.
"""

from __future__ import annotations

import json
import os
import tempfile
from pathlib import Path
from typing import Any, Iterator, Mapping

from roofline.load import handoff
from roofline.load.jsonio import dump_bytes, encode

# What rank 0 keeps of each entry: the verdict (status, verified, error), the fleet table and outliers (name,
# params, time_median, time_ci, fraction_of_ceiling) and the notes (warnings). Who measured it (host, rank, ...)
# the merge adds again from the rank's identity.
SLIM = ("name", "params", "status", "verified", "error", "warnings", "time_median", "time_ci", "fraction_of_ceiling")
INDENT = "    "  # an entry of the top-level `kernels` array, as json.dumps(indent=2) places it
PLACEHOLDER = '\n  "kernels": []'


def entry_key(entry: Mapping[str, Any]) -> tuple[str, str]:
    """The merge's identity of a kernel entry (roofline.records.devices.merge_documents orders by it)."""
    return (entry["name"], json.dumps(entry.get("params", {}), sort_keys=True, default=str))


def entry_text(entry: Mapping[str, Any]) -> bytes:
    """One entry as it stands in the file's `kernels` array (roofline.load.jsonio.dumps, indented one level)."""
    text = dump_bytes(entry).rstrip(b"\n")
    return b"\n".join(INDENT.encode() + line for line in text.split(b"\n"))  # JSON escapes newlines in strings


class Spool:
    """The kernel entries of every rank, as JSON text in an unnamed temporary file (in `folder`: beside -o, so a
    small /tmp on a cluster node is not filled), with an index of where each one lies."""

    def __init__(self, folder: str | Path | None = None, full_up_to: int = 0):
        self.folder, self._file = folder, None  # made at the first entry: only rank 0 ever writes one
        self.full_up_to = full_up_to
        self.index: list[tuple[int, int, int, int, int]] = []  # (rank, position, key id, offset, length)
        self.keys: dict[tuple[str, str], int] = {}
        self.shared: dict[tuple[str, str], Any] = {}  # one object per distinct top-level block (the machine, the
        # policy, ...), shared by the ranks that sent the same: 10,000 copies of one spec are one
        self.bytes = 0

    @property
    def file(self) -> Any:
        if self._file is None:
            self._file = tempfile.TemporaryFile(dir=self.folder)
        return self._file

    def add(self, rank: int, part: Mapping[str, Any], size: int) -> dict[str, Any]:
        """Spool the entries of one rank's part (its document as the merge names it: roofline.fleet.merge.part);
        return what rank 0 keeps of it: the whole part in a fleet of at most `full_up_to` ranks, else the slim one."""
        for position, entry in enumerate(part["kernels"]):
            key = self.keys.setdefault(entry_key(entry), len(self.keys))
            text = entry_text({**entry, "device": rank})
            self.file.write(text)
            self.index.append((rank, position, key, self.bytes, len(text)))
            self.bytes += len(text)
        kept = {k: v if k in ("device", "sweep") else
                self.shared.setdefault((k, json.dumps(v, sort_keys=True, default=str)), v)
                for k, v in part.items() if k != "kernels"}
        if size <= self.full_up_to:
            kept["kernels"] = list(part["kernels"])
        else:
            kept["kernels"] = [{k: _shared(e[k], self.shared) for k in SLIM if k in e} for e in part["kernels"]]
        return kept

    def order(self, ranks: set[int] | None = None) -> list[tuple[int, int, int, int, int]]:
        """The entries (of `ranks`, default all) in the merge's order: kernel by kernel in order of first
        appearance over the ranks in rank order, each rank in turn."""
        chosen = [e for e in self.index if ranks is None or e[0] in ranks]
        first: dict[int, int] = {}
        for rank, position, key, _, _ in sorted(chosen, key=lambda e: (e[0], e[1])):
            first.setdefault(key, len(first))
        return sorted(chosen, key=lambda e: (first[e[2]], e[0], e[1]))

    def _read(self, offset: int, length: int) -> bytes:
        self.file.seek(offset)
        return self.file.read(length)

    def entries(self, rank: int) -> list[dict[str, Any]]:
        """One rank's full entries read back from the spool, in its own order."""
        mine = sorted((e for e in self.index if e[0] == rank), key=lambda e: e[1])
        return [handoff.loads(self._read(offset, length)) for *_, offset, length in mine]

    def document(self, head: Mapping[str, Any]) -> tuple[int, Iterator[bytes]]:
        """(its size in bytes, its text in chunks): the JSON of `head` (the merged slim document) with the spooled
        entries of the ranks in head's `devices` as its `kernels` array."""
        ranks = {int(d["index"]) for d in head.get("devices") or ()}
        entries = self.order(ranks)
        text = dump_bytes({**head, "kernels": []})
        at = text.index(encode(PLACEHOLDER)) + len(PLACEHOLDER) - 1  # just past the array's '['
        before, after = text[:at], text[at:]  # after starts with ']'
        size = len(before) + len(after) + sum(e[4] for e in entries)
        if entries:
            size += 1 + 2 * (len(entries) - 1) + 3  # '\n' first, ',\n' between, '\n  ' before ']'

        def chunks() -> Iterator[bytes]:
            yield before
            if entries:
                yield b"\n"
                for i, (*_, offset, length) in enumerate(entries):
                    yield (b",\n" if i else b"") + self._read(offset, length)
                yield b"\n  "
            yield after

        return size, chunks()

    def close(self) -> None:
        if self._file is not None:
            self._file.close()


def _shared(value: Any, seen: dict[tuple[str, str], Any]) -> Any:
    """A short string (a kernel's name, a host, a status) as one object for every rank that has it."""
    if isinstance(value, str) and len(value) <= 64:
        return seen.setdefault(("", value), value)
    return value


def spool_folder(output: Path | str | None) -> str | None:
    """Where the spool goes: beside a regular -o file (the disk the result goes to), else the system's temp."""
    if output is None or str(output) == "-":
        return None
    folder = Path(os.path.realpath(output)).parent
    return str(folder) if folder.is_dir() and os.access(folder, os.W_OK | os.X_OK) else None
