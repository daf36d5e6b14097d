"""Issue 31: a trace event whose ts or dur cannot be used (NaN, infinite, text, null, or a duration far past the
trace window such as 1e308 µs) is counted and named, on the summary line and in the results file, never dropped
while the line says 'imported N of N'; a trace mostly made of such events is refused; and a trace too big to
import is refused before it is parsed, not after minutes of work."""

from __future__ import annotations

import json
import time
from pathlib import Path

import pytest

STEP = Path(__file__).resolve().parent / "data" / "kineto" / "step.json"


def _step(pad: int = 40) -> dict:
    """step.json with `pad` more kernels (copies of its last one, later, with their own correlation ids), so one
    bad event is well under the share that refuses a trace."""
    doc = json.loads(STEP.read_text())
    last = _kernels(doc)[-1]
    for i in range(pad):
        doc["traceEvents"].append({**last, "ts": last["ts"] + 10 * (i + 1),
                                   "args": {**last["args"], "correlation": 900_000 + i}})
    return doc


def _gpu_events(doc: dict) -> int:
    return sum(1 for e in doc["traceEvents"] if e.get("ph") == "X" and e.get("cat") in ("kernel", "gpu_memcpy",
                                                                                         "gpu_memset"))


def _summary(err: str) -> str:
    return next(line for line in err.splitlines() if line.startswith("imported "))


def _kernels(doc: dict) -> list[dict]:
    return [e for e in doc["traceEvents"] if e.get("ph") == "X" and e.get("cat") == "kernel"]


def _write(path: Path, doc: dict) -> Path:
    path.write_text(json.dumps(doc))  # allow_nan: NaN and Infinity written as Python's json writes them
    return path


def _import(run_cli, trace: Path, out: Path):
    return run_cli("import", "torch", trace, "--spec", "h200", "-o", out)


def test_a_clean_trace_says_nothing_of_unusable_events(run_cli, tmp_path):
    r = _import(run_cli, STEP, tmp_path / "r.json")
    assert r.code == 0, r.err
    assert "unusable" not in r.err
    assert "unusable" not in json.loads((tmp_path / "r.json").read_text())["source"]  # the file as before


@pytest.mark.parametrize("key, value, why", [
    ("dur", float("nan"), "dur is NaN"),
    ("dur", float("inf"), "dur is infinite"),
    ("ts", float("-inf"), "ts is infinite"),
    ("dur", "12.5", "dur is text"),
    ("ts", None, "ts is null"),
    ("dur", 1e308, "outside the trace window"),
    ("ts", 1e300, "outside the trace window"),
])
def test_an_unusable_time_is_counted_and_named(run_cli, tmp_path, key, value, why):
    doc = _step()
    kernels = _kernels(doc)
    kernels[0][key] = value
    total = _gpu_events(doc)
    r = _import(run_cli, _write(tmp_path / "t.json", doc), tmp_path / "r.json")
    assert r.code == 0, r.err
    summary = _summary(r.err)
    assert f"imported {total} GPU events" in summary, summary  # the bad one is in the total, not silently gone
    assert f"1 unusable event left out (1 {why})" in summary, summary
    result = json.loads((tmp_path / "r.json").read_text())
    assert result["source"]["unusable"] == {"events": 1, "gpu_events": 1, "why": {why: 1}}
    assert result["source"]["launches"] == total - 1
    assert all(len(str(k["time_median"])) < 30 for k in result["kernels"])  # no 300-digit duration anywhere
    assert "0" * 50 not in r.err + r.out


def test_a_missing_dur_and_a_name_that_is_not_text_are_counted(run_cli, tmp_path):
    doc = _step()
    ops = [e for e in doc["traceEvents"] if e.get("cat") == "cpu_op"]
    ops.append({**ops[-1]})  # the op the bad name is given to
    doc["traceEvents"].append(ops[-1])
    del ops[0]["dur"]
    ops[1]["name"] = 7
    r = _import(run_cli, _write(tmp_path / "t.json", doc), tmp_path / "r.json")
    assert r.code == 0, r.err
    why = json.loads((tmp_path / "r.json").read_text())["source"]["unusable"]["why"]
    assert why == {"dur is missing": 1, "name is not text": 1}


def test_a_trace_with_a_large_share_of_unusable_events_is_refused(run_cli, tmp_path):
    from roofline.kineto.reader import UNUSABLE_LIMIT

    doc = _step()
    kernels, total = _kernels(doc), _gpu_events(doc)
    bad = int(total * UNUSABLE_LIMIT) + 1  # just over the limit
    for k in kernels[:bad]:
        k["dur"] = float("nan")
    trace = _write(tmp_path / "t.json", doc)
    r = _import(run_cli, trace, tmp_path / "r.json")
    assert r.code == 2 and "Traceback" not in r.err
    assert f"{bad} of {total} GPU events are unusable ({bad} dur is NaN)" in r.err, r.err
    assert str(trace) in r.err and "nothing was imported" in r.err
    assert not (tmp_path / "r.json").exists()


def test_durations_are_bounded_by_kinetos_own_window(tmp_path):
    """With Kineto's 'Trace' span in the file, an event past its end is outside, whatever the other events."""
    from roofline.kineto.reader import read_trace

    doc = _step()
    starts = [e["ts"] for e in doc["traceEvents"] if e.get("ph") == "X"]
    lo, hi = min(starts), max(e["ts"] + e["dur"] for e in doc["traceEvents"] if e.get("ph") == "X")
    doc["traceEvents"].append({"ph": "X", "cat": "Trace", "name": "PyTorch Profiler (0)", "ts": lo, "dur": hi - lo})
    kernels = _kernels(doc)
    kernels[0]["dur"] = 10 * (hi - lo)  # ten times the whole window
    trace = read_trace(_write(tmp_path / "t.json", doc))
    assert trace.unusable == {"outside the trace window": 1} and trace.unusable_gpu == 1
    assert trace.window is not None and trace.window[1] < hi + (hi - lo)


# ---- limits before the work -----------------------------------------------------------------------------------


def _big_trace(path: Path, events: int) -> Path:
    """A trace of `events` kernels, written as bytes from one template: cheap to make (well under a second)."""
    head = b'{"traceEvents": ['
    one = b'{"ph": "X", "cat": "kernel", "name": "k", "ts": %d, "dur": 1, "args": {"correlation": %d}}'
    body = b",".join(one % (1000 + i, i) for i in range(events))
    path.write_bytes(head + body + b"]}")
    return path


def test_a_trace_too_big_to_import_is_refused_before_it_is_parsed(run_cli, tmp_path, monkeypatch):
    import roofline.kineto.reader as reader

    trace = _big_trace(tmp_path / "big.json", reader.MAX_GPU_EVENTS + 1)

    def no_parse(*_a, **_k):
        raise AssertionError("the trace was parsed before its size was checked")

    monkeypatch.setattr(reader.json, "loads", no_parse)
    started = time.monotonic()
    r = run_cli("import", "torch", trace, "--spec", "h200", "-o", tmp_path / "r.json")
    took = time.monotonic() - started
    assert r.code == 2 and "Traceback" not in r.err, r.err
    assert f"holds at least {reader.MAX_GPU_EVENTS + 1:,} GPU events" in r.err  # counted as the text is read
    assert f"more than the {reader.MAX_GPU_EVENTS:,} one import takes" in r.err and "nothing was imported" in r.err
    assert "--launch-count" in r.err  # the way out
    assert not (tmp_path / "r.json").exists()
    assert took < 30, took  # a byte count of ~10 MB: well under a second here; minutes before the fix


def test_a_trace_at_the_limit_is_not_refused_by_the_count(tmp_path):
    import roofline.kineto.reader as reader

    trace = _big_trace(tmp_path / "ok.json", 1000)
    assert reader.gpu_events_in(trace.read_bytes()) == 1000
    read = reader.read_trace(trace, max_gpu_events=1000)
    assert len(read.gpu) == 1000 and read.unusable == {}
    with pytest.raises(Exception, match="holds at least 1,000 GPU events"):
        reader.read_trace(trace, max_gpu_events=999)


@pytest.mark.parametrize("field,value", [("grid", [0, 1, 1]), ("grid", [-256, 1, 1]), ("grid", [2**31, 1, 1]),
                                         ("grid", [1, 1, 1, 1]), ("block", [2**62, 1, 1]), ("block", [64, 64, 1])])
def test_a_launch_outside_cudas_limits_is_refused_naming_the_field(run_cli, tmp_path, field, value):
    """A block of 2^62 threads put every Triton reduction at 10^14x its ceiling ('the model or the spec is wrong'
    in unmodelled) and a zero grid priced a launch that cannot run: the trace is refused, naming the field."""
    doc = _step()
    _kernels(doc)[0]["args"][field] = value
    r = _import(run_cli, _write(tmp_path / "t.json", doc), tmp_path / "r.json")
    assert r.code == 2, r.err
    assert f"args.{field}: is [" in r.err and "CUDA's limits" in r.err and "Traceback" not in r.err


def test_a_grid_that_is_not_whole_numbers_is_taken_as_not_recorded(run_cli, tmp_path):
    doc = _step()
    _kernels(doc)[0]["args"]["grid"] = [256.0, 1, 1]
    _kernels(doc)[1]["args"]["block"] = "256"
    assert _import(run_cli, _write(tmp_path / "t.json", doc), tmp_path / "r.json").code == 0


def _with_steps(doc: dict, *ranges: tuple[int, float, float]) -> dict:
    """`doc` with ProfilerStep#N ranges (number, start and end as fractions of the trace's span) on the CPU, in
    place of its own."""
    doc["traceEvents"] = [e for e in doc["traceEvents"] if not str(e.get("name", "")).startswith("ProfilerStep#")]
    timed = [e for e in doc["traceEvents"] if e.get("ph") == "X" and isinstance(e.get("ts"), (int, float))]
    t0, t1 = min(e["ts"] for e in timed), max(e["ts"] + e.get("dur", 0) for e in timed)
    for n, a, b in ranges:
        doc["traceEvents"].append({"ph": "X", "cat": "user_annotation", "name": f"ProfilerStep#{n}", "pid": 1,
                                   "tid": 1, "ts": t0 + a * (t1 - t0), "dur": (b - a) * (t1 - t0), "args": {}})
    return doc


def test_a_step_range_inside_another_is_left_out_and_counted(run_cli, tmp_path):
    """ProfilerStep#2 inside #1 (not as torch.profiler writes them): steps were looked up by start, so the launches
    after #2 ended, inside #1, had no step; now #2 is left out, said among the unusable events."""
    doc = _with_steps(_step(), (1, 0.0, 1.0), (2, 0.01, 0.02))
    r = _import(run_cli, _write(tmp_path / "t.json", doc), tmp_path / "r.json")
    assert r.code == 0, r.err
    assert "1 ProfilerStep inside or across the step before it" in _summary(r.err)
    assert {k.get("step") for k in json.loads((tmp_path / "r.json").read_text())["kernels"]} == {1}


def test_steps_that_meet_within_kinetos_rounding_are_both_kept(run_cli, tmp_path):
    doc = _with_steps(_step(), (1, 0.0, 0.5 + 1e-9), (2, 0.5, 1.0))
    r = _import(run_cli, _write(tmp_path / "t.json", doc), tmp_path / "r.json")
    assert r.code == 0 and "ProfilerStep" not in _summary(r.err), r.err
    assert {k.get("step") for k in json.loads((tmp_path / "r.json").read_text())["kernels"]} <= {1, 2}
