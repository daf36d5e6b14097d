"""roofline: GPU roofline analysis from YAML machine specs and kernel descriptors.

The Python API (roofline.measure, roofline.analyze, roofline.results) lives in roofline.api and is imported on
first use, so `import roofline` and the CLI's start stay fast.
"""

from typing import Any

from roofline.version import __version__
__all__ = ["analyze", "measure", "results", "__version__"]


def __getattr__(name: str) -> Any:
    if name in ("analyze", "measure", "results"):
        from roofline import api  # lazy: not needed by `import roofline`, which imports this module (start-up)

        return getattr(api, name)
    raise AttributeError(f"module 'roofline' has no attribute {name!r}")
