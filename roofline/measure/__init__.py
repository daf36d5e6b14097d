"""Measurement: run a kernel's implementation, verify it against its NumPy reference, time it honestly.

Only backend_cupy imports cupy; everything else runs on any machine.

`roofline.measure` is also the public API's function (`roofline.measure(fn, flops=..., bytes=...)`, in
roofline.api): once this package is imported, Python binds the name `measure` of the `roofline` package to it, so
the package itself must be the callable. Calling it calls roofline.api.measure; its modules import as before.
"""

import sys
import types
from typing import Any


class _MeasurePackage(types.ModuleType):
    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        from roofline.api import measure

        return measure(*args, **kwargs)


sys.modules[__name__].__class__ = _MeasurePackage
