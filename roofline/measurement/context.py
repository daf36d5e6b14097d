"""What an implementation's cupy(p, ctx) / numpy(p, ctx) receives: compiled modules, device facts, temporaries."""

from __future__ import annotations

from pathlib import Path
from typing import Any, Callable, Mapping, Sequence

from roofline.errors import BackendUnavailable


class KernelContext:
    def __init__(
        self,
        folder: Path,
        device: Mapping[str, Any],
        xp: Any,
        compile_module: Callable[[Path, Sequence[str]], Any] | None = None,
    ):
        self.folder = folder
        self.device = dict(device)
        self.xp = xp
        self._compile = compile_module
        self._modules: dict[tuple[Path, tuple[str, ...]], Any] = {}
        self.temporaries: list[Any] = []

    @property
    def cupy(self) -> Any:
        return self.xp

    def module(self, path: str, options: Sequence[str] = ()) -> Any:
        """A RawModule compiled from a .cu file next to the descriptor (compiled once per process)."""
        if self._compile is None:
            raise BackendUnavailable("this backend cannot compile CUDA modules; use --backend cupy on a GPU")
        file = (self.folder / path).resolve()
        key = (file, tuple(options))
        if key not in self._modules:
            self._modules[key] = self._compile(file, tuple(options))
        return self._modules[key]

    def temp(self, shape: Any, dtype: Any) -> Any:
        """A scratch array for pipelines, allocated here, outside the timed region."""
        array = self.xp.empty(shape, dtype=dtype)
        self.temporaries.append(array)
        return array
