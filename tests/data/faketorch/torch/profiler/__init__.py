"""torch.profiler, faked: a profile that records the program's torch.mark labels while it runs."""

import enum
import json
import os
from pathlib import Path

TRACE = Path(__file__).resolve().parents[3] / "kineto" / "step.json"
_ACTIVE = []  # the profiles recording now
_EXPORTS = {"count": 0}  # exports so far: the k-th writes the k-th of $FAKE_TORCH_TRACES when that is set
LEGACY = {"on": False}  # emit_nvtx's legacy profiler is running


class ProfilerActivity(enum.Enum):
    CPU = "cpu"
    CUDA = "cuda"


class profile:
    def __init__(self, activities=None, record_shapes=False, with_stack=False, with_modules=False, **_kwargs):
        self.options = {"activities": [a.value for a in activities or []], "record_shapes": record_shapes,
                        "with_stack": with_stack, "with_modules": with_modules}
        self.marks, self.starts, self.recording = [], 0, False

    def start(self):
        if self.recording:
            raise RuntimeError("fake torch: the profiler is already recording")
        if LEGACY["on"]:
            raise RuntimeError("fake torch: the Kineto profiler cannot start inside emit_nvtx")
        self.recording, self.starts = True, self.starts + 1
        _ACTIVE.append(self)

    def stop(self):
        if not self.recording:
            raise RuntimeError("fake torch: the profiler is not recording")
        self.recording = False
        _ACTIVE.remove(self)

    def export_chrome_trace(self, path):
        if self.recording or not self.starts:
            raise RuntimeError("fake torch: export_chrome_trace before the profiler ran and stopped")
        listed = [p for p in os.environ.get("FAKE_TORCH_TRACES", "").split(os.pathsep) if p]
        _EXPORTS["count"] += 1
        source = listed[min(_EXPORTS["count"], len(listed)) - 1] if listed else None
        doc = json.loads(Path(source or os.environ.get("FAKE_TORCH_TRACE") or TRACE).read_text(encoding="utf-8"))
        doc["fakeTorch"] = {"marks": self.marks, "options": self.options, "starts": self.starts}
        Path(path).write_text(json.dumps(doc), encoding="utf-8")

    def __enter__(self):
        self.start()
        return self

    def __exit__(self, *_exc):
        self.stop()


def _mark(label):
    for p in _ACTIVE:
        p.marks.append(label)


class record_function:
    """A user annotation: marks '<name> begins' and '<name> ends' where the real one writes a range."""

    def __init__(self, name):
        self.name = name

    def __enter__(self):
        _mark(f"{self.name} begins")
        return self

    def __exit__(self, *_exc):
        _mark(f"{self.name} ends")
