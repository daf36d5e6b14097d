"""Where the generated source of a torch.compile kernel is found: at the path the trace recorded (Inductor's cache
on the machine that ran the program) or, for a trace carried elsewhere, under directories the user names
(`import torch --triton-source DIR`), by the file's name. I/O at the edge, and none of it trusted (the path comes
from the trace): each file is read once through the one bounded reader (roofline.load.inputs.input_chunks: a
regular file only, at most MAX_SOURCE_CHARS, no read waited on longer than READ_STALL), and parsed by
roofline.model.ops.triton.read_source. The folders are walked without recursion, at most MAX_DEPTH levels and
MAX_FILES files deep (a folder 1000 levels deep overflowed os.walk's recursion on Python 3.11). A template's launch
records no path (torch 2.11): its source is the file under the directories, or else under the Inductor cache the
other launches' recorded paths are in, that defines the kernel of its name."""

from __future__ import annotations

import os
import re
from pathlib import Path
from typing import Iterable, Iterator, Sequence

from roofline.errors import InputError
from roofline.load.inputs import read_input_bytes
from roofline.model.ops.triton import MAX_SOURCE_CHARS, KernelSource, read_source

MAX_FILES = 200_000  # the most files indexed under the directories given (an Inductor cache holds thousands)
MAX_CACHES = 4  # Inductor caches searched for templates' sources without --triton-source
MAX_CACHE_FILES = 50_000  # files walked in each
_INDUCTOR_FILE = re.compile(r"^c[a-z0-9]{51}\.py$")  # Inductor's code cache: CACHE/xy/c + 51 base32 chars .py
MAX_DEPTH = 32  # folder levels walked below each directory given (Inductor's cache is three or four deep)
_KERNEL_NAME = re.compile(r"'kernel_name':\s*'(triton_\w+)'")
SOURCE_KIND = "a Triton kernel source (a .py file torch.compile generated)"


def walk_files(top: Path, max_depth: int = MAX_DEPTH, max_files: int = MAX_FILES) -> Iterator[Path]:
    """The regular files under `top` (symbolic links not followed), breadth first, at most `max_depth` folder
    levels down and `max_files` files: an explicit queue, so no depth of folders can overflow a stack."""
    queue: list[tuple[Path, int]] = [(top, 0)]
    seen = 0
    while queue:
        folder, depth = queue.pop(0)
        try:
            with os.scandir(folder) as entries:
                listed = list(entries)
        except OSError:
            continue  # unreadable or gone: nothing of it is indexed
        for entry in sorted(listed, key=lambda e: e.name):
            try:
                if entry.is_dir(follow_symlinks=False):
                    if depth < max_depth:
                        queue.append((Path(entry.path), depth + 1))
                elif entry.is_file(follow_symlinks=False):
                    seen += 1
                    if seen > max_files:
                        return
                    yield Path(entry.path)
            except OSError:
                continue


class KernelSources:
    """The kernel sources at hand, read on demand and kept; `unreadable` says which recorded paths were there but
    could not be read, and why (the import's notes name them: the kernel is then modelled from its launch)."""

    def __init__(self, dirs: Sequence[Path] = ()):
        self.dirs = tuple(Path(d) for d in dirs)
        self._by_name: dict[str, Path] | None = None
        self._by_kernel: dict[str, Path] | None = None
        self._caches: list[Path] = []  # Inductor caches the recorded paths are in (CACHE/xy/cHASH.py)
        self._read: dict[str, KernelSource | None] = {}
        self.unreadable: dict[str, str] = {}  # path -> the reader's message

    def _index(self) -> dict[str, Path]:
        if self._by_name is None:
            self._by_name = {}
            for d in self.dirs:
                for path in walk_files(d):
                    if path.name.endswith(".py"):
                        self._by_name.setdefault(path.name, path)
        return self._by_name

    def remember(self, recorded: Iterable[str | None]) -> None:
        """Note the Inductor caches the launches' recorded kernel paths are in (a path's grandparent: Inductor
        writes CACHE/xy/cHASH.py, torch/_inductor/codecache.py), where it exists: a template launch, which
        records no path, is then looked up there by its kernel name as under --triton-source."""
        if self.dirs:
            return  # the directories given are where the sources are
        for r in recorded:
            if not r or len(self._caches) >= MAX_CACHES:
                continue
            path = Path(r)
            cache = path.parent.parent
            if (_INDUCTOR_FILE.match(path.name) and len(path.parent.name) == 2 and cache not in self._caches
                    and _exists(path)):
                self._caches.append(cache)
                self._by_kernel = None

    def _kernel_index(self) -> dict[str, Path]:
        """The files under the directories by the one kernel each defines ('kernel_name' in its inductor_meta and
        `def` of that name), read once on the first launch that needs it: the profiler records no kernel_file for
        a template's launch (torch 2.11: the cpu_op of a triton_tem_* launch has kernel_backend but no path)."""
        if self._by_kernel is None:
            self._by_kernel = {}
            files = list(self._index().values()) if self.dirs else [
                p for cache in self._caches for p in walk_files(cache, 2, MAX_CACHE_FILES) if _INDUCTOR_FILE.match(p.name)]
            for path in files:
                try:
                    text = read_input_bytes(path, MAX_SOURCE_CHARS, SOURCE_KIND).decode("utf-8", errors="replace")
                except InputError:
                    continue
                names = _KERNEL_NAME.findall(text)
                # one kernel's file, not a compiled graph's module that holds many (read_source reads the first)
                if len(names) == 1 and f"def {names[0]}(" in text:
                    self._by_kernel.setdefault(names[0], path)
        return self._by_kernel

    def read(self, recorded: str | None, kernel: str | None = None) -> KernelSource | None:
        """The source at the recorded path, else by its file name under the directories, else (no path recorded)
        the file under them that defines `kernel`."""
        if not recorded:
            if not kernel or not (self.dirs or self._caches):
                return None
            path = self._kernel_index().get(kernel)
            if path is None:
                return None
            recorded = str(path)
        if recorded in self._read:
            return self._read[recorded]
        source = None
        for path in (Path(recorded), self._index().get(Path(recorded).name) if self.dirs else None):
            if path is None or not _exists(path):
                continue  # the usual case for a trace read on another machine: looked up under --triton-source
            try:
                data = read_input_bytes(path, MAX_SOURCE_CHARS, SOURCE_KIND)
            except InputError as exc:
                self.unreadable[str(path)] = exc.message
                continue
            source = read_source(data.decode("utf-8", errors="replace"))
            if source is not None:
                break
        self._read[recorded] = source
        return source


def _exists(path: Path) -> bool:
    try:
        os.stat(path)
    except (OSError, ValueError):  # ValueError: a NUL byte in the recorded path
        return False
    return True
