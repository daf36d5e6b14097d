"""Where the generated source of a torch.compile kernel is found: at the path the trace recorded (Inductor's cache
on the machine that ran the program) or, for a trace carried elsewhere, under directories the user names
(`import torch --triton-source DIR`), by the file's name. I/O at the edge: each file is read once, only a regular
file of at most MAX_SOURCE_CHARS, and parsed by roofline.model.ops.triton.read_source."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Sequence

from roofline.model.ops.triton import MAX_SOURCE_CHARS, KernelSource, read_source

MAX_FILES = 200_000  # the most files indexed under the directories given (an Inductor cache holds thousands)


class KernelSources:
    """The kernel sources at hand, read on demand and kept."""

    def __init__(self, dirs: Sequence[Path] = ()):
        self.dirs = tuple(Path(d) for d in dirs)
        self._by_name: dict[str, Path] | None = None
        self._read: dict[str, KernelSource | None] = {}

    def _index(self) -> dict[str, Path]:
        if self._by_name is None:
            self._by_name = {}
            seen = 0
            for d in self.dirs:
                for root, _, files in os.walk(d):
                    for f in files:
                        seen += 1
                        if f.endswith(".py"):
                            self._by_name.setdefault(f, Path(root) / f)
                    if seen > MAX_FILES:
                        break
        return self._by_name

    def read(self, recorded: str | None) -> KernelSource | None:
        if not recorded:
            return None
        if recorded in self._read:
            return self._read[recorded]
        source = None
        for path in (Path(recorded), self._index().get(Path(recorded).name) if self.dirs else None):
            if path is None:
                continue
            try:
                if path.is_file() and path.stat().st_size <= MAX_SOURCE_CHARS:
                    source = read_source(path.read_text(encoding="utf-8", errors="replace"))
            except OSError:
                source = None
            if source is not None:
                break
        self._read[recorded] = source
        return source
