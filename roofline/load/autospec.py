"""`--spec auto` for the commands that need no GPU (analyze, plot, the API's analyze): the GPU's own spec when one
is visible, otherwise the stated default (DEFAULT_SPEC), with the reason, so the output can say which and why.

The commands that run on a GPU (measure, sweep, calibrate) match the device they opened instead
(roofline.measurement.session.choose_machine); this module must stay cheap enough for `analyze`, which answers in
well under half a second and imports neither CuPy nor the CUDA runtime. So the GPU is found where the NVIDIA driver
publishes it on Linux, /proc/driver/nvidia/gpus/*/information (its "Model:" line, the name CUDA reports), read as
text: no process started, no CUDA context made. Where that is absent (no driver, another OS, a container without it)
or CUDA_VISIBLE_DEVICES hides every GPU, the stated default is used, and the reason says so.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path

from roofline.model.types import MachineSpec
from roofline.load.specs import DEFAULT_SPEC, SpecCatalog

AUTO = "auto"
GPU_INFO_DIR = Path("/proc/driver/nvidia/gpus")  # one folder per GPU, by PCI address


@dataclass(frozen=True)
class AutoSpec:
    machine: MachineSpec
    reason: str  # "matched GPU NVIDIA H200" or why the default was taken

    def line(self) -> str:
        """The header line a command prints: which spec `auto` became and why."""
        return f"spec: {self.machine.id} (--spec auto: {self.reason})"


def visible_gpu_models(info_dir: Path | None = None) -> list[str]:
    """The model names of the GPUs the driver lists (none when CUDA_VISIBLE_DEVICES is '' or -1), read cheaply."""
    if os.environ.get("CUDA_VISIBLE_DEVICES", "0").strip() in ("", "-1"):
        return []
    folder = GPU_INFO_DIR if info_dir is None else info_dir
    try:
        entries = sorted(folder.iterdir())
    except OSError:
        return []
    models = []
    for entry in entries:
        try:
            text = (entry / "information").read_text(encoding="utf-8", errors="replace")
        except OSError:
            continue
        for line in text.splitlines():
            key, _, value = line.partition(":")
            if key.strip() == "Model" and value.strip():
                models.append(value.strip())
                break
    return models


def auto_spec(catalog: SpecCatalog) -> AutoSpec:
    """The spec `--spec auto` means here: the visible GPU's bundled spec, else DEFAULT_SPEC with the reason."""
    models = visible_gpu_models()
    default = catalog.resolve(DEFAULT_SPEC)
    if not models:
        return AutoSpec(default, f"no GPU seen, so the default {DEFAULT_SPEC}; name one with --spec")
    distinct = sorted(set(models))
    if len(distinct) > 1:
        return AutoSpec(default, f"GPUs of several models ({', '.join(distinct)}), so the default {DEFAULT_SPEC}; "
                                 "name one with --spec")
    matched = catalog.match_device(distinct[0])
    if matched is None:
        return AutoSpec(default, f"GPU {distinct[0]} has no bundled spec, so the default {DEFAULT_SPEC}; name one "
                                 "with --spec (or measure one: roofline calibrate -o FILE)")
    return AutoSpec(matched, f"matched GPU {distinct[0]}")
