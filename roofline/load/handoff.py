"""The one reader of JSON that roofline hands to itself: files and messages one roofline process wrote for another
(or for a later run of the same code), never a user's input.

- the memo of what the bundled YAML parses to (roofline.load.yamlmemo, roofline/load/bundled_yaml.json);
- the plan `profile` gives the program Nsight Compute runs, and the report that program leaves
  (roofline.ncu.profile, roofline.ncu.target);
- the outcome a program profiled under torch.profiler leaves (roofline.kineto.program);
- the per-rank entries spooled while a fleet's results are merged (roofline.fleet.stream);
- the results a pytest-xdist worker sends its controller (roofline.pytest_plugin).

Each was written moments ago by roofline's own writer, so none goes through the bounds of a user's file
(roofline.load.inputs: size, time, depth and number limits with messages naming the file and field); each caller
decides what a missing or broken one means (an empty memo, a failed run), so these raise OSError and ValueError
(json.JSONDecodeError and UnicodeDecodeError are ValueErrors) as the standard library does.

JSON elsewhere is read by one module per family: documents a user gives (results, analyses, sweeps, baselines,
calibrations: roofline.load.inputs), Kineto traces (roofline.kineto.reader and roofline.kineto.chunks), and the JSON
inside NVTX range names (roofline.ncu.nvtx); tests/test_json_readers.py keeps it so.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any


def loads(data: str | bytes) -> Any:
    """The value of JSON text roofline wrote (str, or UTF-8 bytes)."""
    return json.loads(data)


def read(path: Path | str) -> Any:
    """The value of the UTF-8 JSON file at `path`, which roofline wrote."""
    return json.loads(Path(path).read_text(encoding="utf-8"))
