"""`#include "file"` of a kernel's own folder, expanded into the source before NVRTC sees it.

CuPy caches compiled modules by their source text and options; a header that NVRTC reads through -I is not part of
that key, so an edited header would leave a stale cubin in the cache. Expanding our own headers into the text makes
the cache key cover them. System and CUDA headers (`#include <...>`) are left to NVRTC.
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Callable

_LOCAL = re.compile(r'^[ \t]*#[ \t]*include[ \t]+"([^"\n]+)"[ \t]*(//.*)?$', re.M)
MAX_DEPTH = 8  # headers including headers; deeper is a cycle or a mistake


def expand_includes(code: str, folder: Path, read: Callable[[Path], str]) -> str:
    """`code` with every `#include "name"` whose file exists in `folder` replaced by that file's text (recursively;
    each header once, as with #pragma once). A quoted include that is not in `folder` is left for NVRTC."""
    return _expand(code, folder, read, 0, set())


def _expand(code: str, folder: Path, read: Callable[[Path], str], depth: int, seen: set[Path]) -> str:
    if depth > MAX_DEPTH:
        raise ValueError(f"#include nested more than {MAX_DEPTH} deep under {folder}")

    def one(m: re.Match[str]) -> str:
        path = (folder / m.group(1)).resolve()
        if path.parent != folder.resolve() or not path.is_file():
            return m.group(0)
        if path in seen:
            return f"// {m.group(1)}: already included"
        seen.add(path)
        body = _expand(read(path), folder, read, depth + 1, seen)
        return f"// ---- {m.group(1)} ----\n{body}\n// ---- end of {m.group(1)} ----"

    return _LOCAL.sub(one, code)
