"""Where the bundled specs and kernels are: inside the installed wheel, or at the top of a source checkout."""

from __future__ import annotations

from pathlib import Path

_PACKAGE = Path(__file__).resolve().parents[1]  # roofline/, which holds load/


def bundled_dir(kind: str) -> Path:
    """kind is 'specs' or 'kernels'."""
    installed = _PACKAGE / "_bundled" / kind
    if installed.is_dir():
        return installed
    return _PACKAGE.parent / kind
