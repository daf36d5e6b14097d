"""Hostile inputs and outputs against the CLI (issue 39: input files, output files and figures no GPU can have):
no GPU needed. The 'report' class attacks `diff` and `report --baseline` (mismatched sides, hostile group names
in JUnit and Markdown, a diff read as results).

Each case makes its files in a scratch folder, runs `python -m roofline ...` in a subprocess under a 2 GiB
address-space limit (resource.setrlimit(RLIMIT_AS), the memory budget roofline.kineto.reader states) and a 30 s
timeout, and checks that it ends as a user needs: exit 2 with one message naming the file or field and no
traceback, or a correct answer that flags what is wrong (exit 0 with a warning). It prints a table and exits 1 when
any case fails.

    python benchmarks/adversarial_inputs.py            # every case (the 1 GB inflate ones take a minute)
    python benchmarks/adversarial_inputs.py --fast     # the cheap ones (benchmarks/tests runs these)
    python benchmarks/adversarial_inputs.py --only dup-events-12mb,gz-inflates-past-cap

Run it from the repository root (the subprocesses import roofline from PYTHONPATH or the installed package).
"""

from __future__ import annotations

import argparse
import gzip
import json
import os
import resource
import shutil
import signal
import subprocess
import sys
import tempfile
import time
import zlib
from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable

ROOT = Path(__file__).resolve().parent.parent
DATA = ROOT / "tests" / "data"
STEP = DATA / "kineto" / "step.json"  # a small real-shaped trace: 9 GPU events
COMPILED = DATA / "kineto" / "compiled" / "llama-train-compiled.json.gz"  # Triton kernels with their kernel_file
COMPILED_SOURCES = DATA / "kineto" / "compiled" / "llama-train-compiled-kernels.tar.gz"  # and their sources
MEMORY = 2 << 30  # bytes of address space each run gets
TIMEOUT = 30.0  # seconds each run gets


@dataclass
class Case:
    name: str
    kind: str  # "input", "output", "figure", "trace-model" or "report" (diff and report --baseline)
    make: Callable[[Path], list[str]]  # builds the files in the folder, returns the roofline arguments
    code: int  # the exit status expected
    says: tuple[str, ...] = ()  # what stderr must hold (the file, the field, the words of the rule)
    fast: bool = True
    check: Callable[[Path], str | None] | None = None  # after the run: what is wrong with the folder, or None
    run: Callable[[Path, list[str]], "Outcome"] | None = None  # a run other than the plain CLI (signals)


@dataclass
class Outcome:
    code: int | None
    err: str
    seconds: float
    notes: list[str] = field(default_factory=list)


def _limits() -> None:
    resource.setrlimit(resource.RLIMIT_AS, (MEMORY, MEMORY))


def _env() -> dict[str, str]:
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join(p for p in (str(ROOT), env.get("PYTHONPATH", "")) if p)
    env.pop("COLUMNS", None)
    return env


def run_cli(folder: Path, argv: list[str]) -> Outcome:
    started = time.monotonic()
    try:
        p = subprocess.run([sys.executable, "-m", "roofline", *argv], cwd=folder, env=_env(), preexec_fn=_limits,
                           capture_output=True, text=True, timeout=TIMEOUT, stdin=subprocess.DEVNULL)
    except subprocess.TimeoutExpired as exc:
        err = exc.stderr.decode("utf-8", "replace") if isinstance(exc.stderr, bytes) else (exc.stderr or "")
        return Outcome(None, err + f"\n(timed out after {TIMEOUT:g} s)", time.monotonic() - started)
    return Outcome(p.returncode, p.stderr, time.monotonic() - started)


# ---- trace builders ---------------------------------------------------------------------------------------------


def _step() -> dict:
    return json.loads(STEP.read_text(encoding="utf-8"))


def _write_json(path: Path, doc: object) -> Path:
    path.write_text(json.dumps(doc), encoding="utf-8")
    return path


def _kernel(name: str, ts: float, dur: float, corr: int, stream: object = 7, device: object = 0) -> dict:
    return {"ph": "X", "cat": "kernel", "name": name, "pid": 0, "tid": 7, "ts": ts, "dur": dur,
            "args": {"device": device, "stream": stream, "correlation": corr, "grid": [1, 1, 1],
                     "block": [128, 1, 1]}}


def _padded_gz(path: Path, text_bytes: int, keep_step: bool) -> Path:
    """A .json.gz whose text is `text_bytes` long: the step trace's events (when asked) and padding events an
    import drops (python_function events that are not module ranges), 4 KiB each: ~1 MB compressed per GB."""
    doc = _step() if keep_step else {"traceEvents": []}
    events = doc.pop("traceEvents")
    head = json.dumps(doc)[:-1].encode() + (b', "traceEvents": [' if doc else b'"traceEvents": [')
    body = b",".join(json.dumps(e).encode() for e in events)
    pad = b'{"ph": "X", "cat": "python_function", "name": "pad", "ts": 1, "dur": 1, "args": {"p": "' + \
          b"a" * 4000 + b'"}}'
    packer = zlib.compressobj(9, zlib.DEFLATED, 31)
    with path.open("wb") as out:
        out.write(packer.compress(head + body))
        written = len(head) + len(body)
        if not events:
            out.write(packer.compress(pad))
            written += len(pad)
        block = b"," + b",".join([pad] * 256)
        while written < text_bytes:
            out.write(packer.compress(block))
            written += len(block)
        out.write(packer.compress(b"]}"))
        out.write(packer.flush())
    return path


def gz_inflates_past_cap(d: Path) -> list[str]:
    return ["import", "torch", str(_padded_gz(d / "bomb.json.gz", (1 << 30) + (64 << 20), False)), "--spec", "h200"]


def gz_inflates_to_1gb(d: Path) -> list[str]:
    """The tester's case: ~1 MB of gzip that inflates to 1 GB (under the cap): imported within the budget."""
    return ["import", "torch", str(_padded_gz(d / "big.json.gz", 10 ** 9, True)), "--spec", "h200",
            "-o", str(d / "r.json")]


def _same_answer_as_the_step(d: Path) -> str | None:
    """The padded trace's results are the step's own: the padding changed nothing but the size."""
    ref = run_cli(d, ["import", "torch", str(STEP), "--spec", "h200", "-o", str(d / "ref.json")])
    if ref.code != 0:
        return f"the step alone did not import: {ref.err.strip()[-200:]}"
    def entries(name: str) -> list[tuple[str, float]]:
        doc = json.loads((d / name).read_text(encoding="utf-8"))
        return [(k["name"], k["time_median"]) for k in doc["kernels"]]
    return None if entries("r.json") == entries("ref.json") else "its results differ from the step's own"


def too_many_kept(d: Path) -> list[str]:
    from roofline.kineto.reader import MAX_KEPT_EVENTS

    one = '{"ph":"X","cat":"cpu_op","name":"aten::add","ts":%d,"dur":1,"tid":1},'
    path = d / "ops.json.gz"
    with gzip.open(path, "wt", compresslevel=1) as f:
        f.write('{"traceEvents":[')
        for start in range(0, MAX_KEPT_EVENTS + 10, 100_000):
            f.write("".join(one % (1000 + i) for i in range(start, min(start + 100_000, MAX_KEPT_EVENTS + 10))))
        f.write('{"ph":"X","cat":"kernel","name":"k","ts":1000,"dur":1,"args":{"correlation":1}}]}')
    return ["import", "torch", str(path), "--spec", "h200"]


def broken_80mb(d: Path) -> list[str]:
    """80 MB whose first event is broken: every cut between events fails to parse; bounded, not hours."""
    pad = b'{"ph": "X", "cat": "python_function", "name": "pad", "ts": 1, "dur": 1, "args": {"p": "' + \
          b"a" * 4000 + b'"}}'
    (d / "broken.json").write_bytes(b'{"traceEvents": [,' + b",".join([pad] * 20000) + b"]}")
    return ["import", "torch", str(d / "broken.json"), "--spec", "h200"]


def truncated_gz(d: Path) -> list[str]:
    data = gzip.compress(STEP.read_bytes())
    (d / "cut.json.gz").write_bytes(data[: len(data) // 2])
    return ["import", "torch", str(d / "cut.json.gz"), "--spec", "h200"]


def _with_kernel_file(d: Path, target: str) -> Path:
    doc = json.loads(gzip.decompress(COMPILED.read_bytes()))
    for e in doc["traceEvents"]:
        if isinstance(e.get("args"), dict) and "kernel_file" in e["args"]:
            e["args"]["kernel_file"] = target
    return _write_json(d / "compiled.json", doc)


def _same_as_without_sources(d: Path) -> str | None:
    """The kernels whose source could not be used are modelled from their launches: the results are those of the
    trace whose kernel_file paths are gone."""
    ref = d / "ref"
    ref.mkdir()
    trace = _with_kernel_file(ref, "/gone/cnothing.py")
    out = run_cli(ref, ["import", "torch", str(trace), "--spec", "h200", "-o", str(ref / "r.json")])
    if out.code != 0:
        return f"the reference did not import: {out.err.strip()[-200:]}"
    def entries(path: Path) -> list[tuple[str, float, float]]:
        doc = json.loads(path.read_text(encoding="utf-8"))
        return [(k["name"], k["flops"], k["bytes"]) for k in doc["kernels"]]
    return None if entries(d / "r.json") == entries(ref / "r.json") else "its results differ from the launch model's"


def kernel_file_fifo(d: Path) -> list[str]:
    fifo = d / "cabc123.py"  # a FIFO under a kernel's name: opening it for reading would wait for a writer
    os.mkfifo(fifo)
    return ["import", "torch", str(_with_kernel_file(d, str(fifo))), "--spec", "h200", "-o", str(d / "r.json")]


def kernel_file_kmsg(d: Path) -> list[str]:
    return ["import", "torch", str(_with_kernel_file(d, "/proc/kmsg")), "--spec", "h200", "-o", str(d / "r.json")]


def kernel_file_huge_numel(d: Path) -> list[str]:
    import re
    import tarfile

    with tarfile.open(COMPILED_SOURCES) as tar:  # a real generated kernel, its size fixed in the body
        text = next(t for t in (tar.extractfile(m).read().decode() for m in tar.getmembers() if m.isfile())
                    if re.search(r"^\s+xnumel = \d+$", t, re.MULTILINE))
    source = d / "huge.py"
    source.write_text(re.sub(r"^(\s+)xnumel = \d+$", lambda m: f"{m.group(1)}xnumel = {'9' * 5000}", text,
                             flags=re.MULTILINE), encoding="utf-8")
    return ["import", "torch", str(_with_kernel_file(d, str(source))), "--spec", "h200", "-o", str(d / "r.json")]


def deep_triton_source(d: Path) -> list[str]:
    folder = d / "cache"
    folder.mkdir()
    fd = os.open(folder, os.O_RDONLY)
    for _ in range(1000):  # one level at a time, relative to the last (os.makedirs recurses as deep)
        os.mkdir("a", dir_fd=fd)
        deeper = os.open("a", os.O_RDONLY, dir_fd=fd)
        os.close(fd)
        fd = deeper
    os.close(os.open("x.py", os.O_WRONLY | os.O_CREAT, 0o644, dir_fd=fd))
    os.close(fd)
    return ["import", "torch", str(_with_kernel_file(d, "/gone/cxyz.py")), "--spec", "h200",
            "--triton-source", str(folder)]


def _dup_events(d: Path, pad_to: int) -> Path:
    doc = _step()
    events = doc.pop("traceEvents")
    pad = [{"ph": "X", "cat": "python_function", "name": "pad", "ts": 1, "dur": 1, "args": {"p": "a" * 1000}}]
    pad *= max(0, pad_to // 1100)
    text = json.dumps(doc)[:-1] + ', "traceEvents": ' + json.dumps(events + pad) + ', "traceEvents": []}'
    path = d / "dup.json"
    path.write_text(text, encoding="utf-8")
    return path


def dup_events_small(d: Path) -> list[str]:
    return ["import", "torch", str(_dup_events(d, 0)), "--spec", "h200"]


def dup_events_12mb(d: Path) -> list[str]:
    return ["import", "torch", str(_dup_events(d, 12 << 20)), "--spec", "h200"]


def same_trace_twice(d: Path) -> list[str]:
    (d / "b.json.gz").write_bytes(gzip.compress(STEP.read_bytes()))
    return ["import", "torch", str(STEP), str(d / "b.json.gz"), "--spec", "h200"]


def overlapping_kernels(d: Path) -> list[str]:
    doc = _step()
    ts = min(e["ts"] for e in doc["traceEvents"] if e.get("cat") == "kernel")
    doc["traceEvents"] += [_kernel(f"overlap{i}", ts + 100 * i, 1000.0, 90000 + i) for i in range(5)]
    return ["import", "torch", str(_write_json(d / "overlap.json", doc)), "--spec", "h200"]


def _huge_id(d: Path, where: str) -> list[str]:
    doc = _step()
    if where == "rank":
        doc["distributedInfo"] = {"rank": 10 ** 40, "world_size": 2}
    else:
        for e in doc["traceEvents"]:
            if e.get("cat") == "kernel":
                e["args"][where] = 10 ** 40
                break
    return ["import", "torch", str(_write_json(d / f"{where}.json", doc)), "--spec", "h200", "-o", str(d / "r.json")]


def script_as_fifo(d: Path) -> list[str]:
    os.mkfifo(d / "train.py")  # its '#!' line was read with open(): blocked for a writer
    return ["profile", "--with", "torch", str(d / "train.py")]


def results_as_fifo(d: Path) -> list[str]:
    os.mkfifo(d / "results.json")
    return ["report", str(d / "results.json")]


def spec_alias_bomb(d: Path) -> list[str]:
    lines = ["a0: &a0 [x, x, x, x, x, x, x, x, x, x]"]
    lines += [f"a{i}: &a{i} [*a{i - 1}, *a{i - 1}, *a{i - 1}, *a{i - 1}, *a{i - 1}]" for i in range(1, 30)]
    (d / "bomb.yaml").write_text("\n".join(lines) + "\n", encoding="utf-8")
    return ["analyze", "vector_add", "--spec", str(d / "bomb.yaml")]


def deep_results(d: Path) -> list[str]:
    (d / "deep.json").write_text("[" * 100_000 + "]" * 100_000, encoding="utf-8")
    return ["report", str(d / "deep.json")]


def gz_ncu_csv(d: Path) -> list[str]:
    (d / "ncu.csv.gz").write_bytes(gzip.compress(b'"ID","Kernel Name"\n'))
    return ["import", "ncu", str(d / "ncu.csv.gz"), "--spec", "h200"]


# ---- output files -------------------------------------------------------------------------------------------


MEASURED = {"schema": "roofline/results/v1", "created": "2026-12-01T00:00:00+00:00", "tool_version": "0.1.0",
            "backend": "cupy"}


def import_over_measurement(d: Path) -> list[str]:
    measured = DATA / "h200" / "results-2026-12-01.json"
    shutil.copy(measured, d / "m.json")
    return ["import", "torch", str(STEP), "--spec", "h200", "-o", str(d / "m.json")]


def _measurement_kept(d: Path) -> str | None:
    if (d / "m.json").read_bytes() != (DATA / "h200" / "results-2026-12-01.json").read_bytes():
        return "m.json (a GPU measurement) was replaced"
    return None


_WRITER = """
import sys, time
from roofline.load.jsonio import write_text_atomic
def chunks():
    for i in range(2000):
        yield b" " * (1 << 16)
        if i == 20:
            print("writing", flush=True)
        time.sleep(0.005)
write_text_atomic(sys.argv[1], chunks())
"""


def _signal_during_write(sig: int) -> Callable[[Path, list[str]], Outcome]:
    def run(d: Path, _argv: list[str]) -> Outcome:
        started = time.monotonic()
        p = subprocess.Popen([sys.executable, "-c", _WRITER, str(d / "out.json")], env=_env(), cwd=d,
                             stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, preexec_fn=_limits,
                             start_new_session=True)
        assert p.stdout is not None
        p.stdout.readline()  # "writing": the temporary file is half written
        p.send_signal(sig)
        try:
            _, err = p.communicate(timeout=TIMEOUT)
        except subprocess.TimeoutExpired:
            p.kill()
            return Outcome(None, "(timed out)", time.monotonic() - started)
        return Outcome(p.returncode, err, time.monotonic() - started)

    return run


def _nothing_left(d: Path) -> str | None:
    left = [p.name for p in d.iterdir() if p.name.endswith(".tmp")]
    if left:
        return f"temporary file left: {', '.join(left)}"
    if (d / "out.json").exists():
        return "out.json was written although the write was cut short"
    return None


_INTERRUPT_AFTER_RENAME = """
import sys
import roofline.cli.common as common
said = common.note
def note(message):
    if message.startswith("wrote "):
        raise KeyboardInterrupt  # Ctrl-C landing just after the rename
    said(message)
common.note = note
from roofline.cli import main
main(["analyze", "vector_add", "--spec", "h200", "--format", "json", "-o", sys.argv[1]])
"""


def interrupt_after_rename(d: Path, _argv: list[str]) -> Outcome:
    started = time.monotonic()
    p = subprocess.run([sys.executable, "-c", _INTERRUPT_AFTER_RENAME, str(d / "a.json")], env=_env(), cwd=d,
                       capture_output=True, text=True, timeout=TIMEOUT, preexec_fn=_limits)
    return Outcome(p.returncode, p.stderr, time.monotonic() - started)


def _written(d: Path) -> str | None:
    return None if (d / "a.json").exists() else "a.json was not written"


# ---- figures no GPU can have (issue 39: descriptors, specs, results, predictions) ---------------------------------


def _descriptor(d: Path, name: str, extra: str) -> Path:
    path = d / f"{name}.yaml"
    path.write_text(f"name: {name}\ndtype: float32\nparams: {{n: 2**20}}\nflops: n\nbytes: 8 * n\n{extra}\n",
                    encoding="utf-8")
    return path


def threads_1e300(d: Path) -> list[str]:
    return ["analyze", "--kernels", str(_descriptor(d, "k", "threads: 1e300")), "k", "--predict", "--spec", "h100"]


def stages_20000(d: Path) -> list[str]:
    stages = "\n".join(f"  - {{name: s{i}, flops: n, bytes: 8 * n}}" for i in range(20_000))
    path = d / "many.yaml"
    path.write_text(f"name: many\ndtype: float32\nparams: {{n: 2**20}}\nstages:\n{stages}\n", encoding="utf-8")
    return ["sweep", "--kernels", str(path), "many", "--over", "n", "--spec", "h100", "--predict"]


def idle_over_limit(d: Path) -> list[str]:
    text = (ROOT / "specs" / "h200-sxm.yaml").read_text(encoding="utf-8")
    path = d / "hot.yaml"
    path.write_text(text.replace("idle_power: 125.7 W", "idle_power: 4900 W"), encoding="utf-8")
    return ["specs", "show", str(path)]


def fraction_contradicts_times(d: Path) -> list[str]:
    doc = json.loads((DATA / "results" / "h100.json").read_text(encoding="utf-8"))
    doc["kernels"][1]["fraction_of_ceiling"] = 0.95 if doc["kernels"][1]["fraction_of_ceiling"] < 0.5 else 0.0007
    return ["report", str(_write_json(d / "edited.json", doc))]


def _rows_fit(d: Path) -> str | None:
    """A predicted sweep keeps only the sizes whose data fits the card, and says which it left out."""
    doc = json.loads((d / "rows.json").read_text(encoding="utf-8"))
    capacity = 80e9
    too_big = [k["params"]["rows"] for k in doc["kernels"] if k["params"]["rows"] * 8192 * 4 > capacity]
    said = json.dumps(doc.get("sweep", {}))
    if too_big:
        return f"predicted rows={too_big[0]}, whose data is larger than the card"
    return None if "memory.capacity" in said else "the sweep does not say which sizes it left out"


def calibrated_datasheet(d: Path) -> list[str]:
    return ["analyze", "vector_add", "--spec", "h100", "--predict", "--calibrated",
            str(ROOT / "specs" / "a100-sxm4-80gb.yaml")]



# trace-model: the models of the torch trace importer (launch dimensions, ProfilerStep ranges, the captures record
# at the trace's head, multi-tensor kernel names, Triton and flex_attention template sources) fed what no real
# program writes; each case failed (a traceback, a hang or a figure 10^14x its ceiling) before its fix
PROGRAM_KINDS = DATA / "kineto" / "compiled" / "program-kinds-h100-2026-12-06.tar.gz"
TRAIN = DATA / "kineto" / "h200-train.json.gz"  # fused AdamW and _foreach_add_ launches


def _launch_dim(d: Path, field: str, value: list[int]) -> list[str]:
    doc = _step()
    next(e for e in doc["traceEvents"] if e.get("cat") == "kernel")["args"][field] = value
    return ["import", "torch", str(_write_json(d / "dims.json", doc)), "--spec", "h200", "-o", str(d / "r.json")]


def nested_profiler_steps(d: Path) -> list[str]:
    doc = _step()
    doc["traceEvents"] = [e for e in doc["traceEvents"] if not str(e.get("name", "")).startswith("ProfilerStep#")]
    timed = [e for e in doc["traceEvents"] if e.get("ph") == "X" and isinstance(e.get("ts"), (int, float))]
    t0, t1 = min(e["ts"] for e in timed), max(e["ts"] + e.get("dur", 0) for e in timed)
    for n, a, b in ((1, t0, t1), (2, t0 + 1, t0 + 2)):
        doc["traceEvents"].append({"ph": "X", "cat": "user_annotation", "name": f"ProfilerStep#{n}", "pid": 1,
                                   "tid": 1, "ts": a, "dur": b - a, "args": {}})
    return ["import", "torch", str(_write_json(d / "steps.json", doc)), "--spec", "h200", "-o", str(d / "r.json")]


def _every_kernel_in_step_1(d: Path) -> str | None:
    steps = {k.get("step") for k in json.loads((d / "r.json").read_text())["kernels"]}
    return None if steps == {1} else f"the kernels' steps are {steps}, expected {{1}} (the outer step)"


def captures_head_past_batch(d: Path) -> list[str]:
    op = {"name": "aten::mm", "dims": [[64, 64], [64, 64]], "types": ["float", "float"]}
    head = {"version": 1, "captures": [{"key": "1", "launches": [{"call": "cudaLaunchKernel", "op": op}] * 1_100_000}]}
    path = d / "head.json"
    path.write_text(json.dumps({"roofline_graph_captures": head, **_step()}), encoding="utf-8")  # ~90 MB
    return ["import", "torch", str(path), "--spec", "h200", "-o", str(d / "r.json")]


def _foreach_reads_1e20(d: Path) -> list[str]:
    import re

    with gzip.open(TRAIN, "rt", encoding="utf-8") as f:
        doc = json.load(f)
    for e in doc["traceEvents"]:
        if e.get("cat") == "cpu_op" and "_foreach" in str(e.get("name")):  # a list of 30+: no shapes recorded
            e.setdefault("args", {})["Input Dims"] = [[] if isinstance(x, list) and x and isinstance(x[0], list)
                                                      else x for x in e["args"].get("Input Dims", [])]
        if e.get("cat") == "kernel" and "BinaryOpScalarFunctor" in str(e.get("name")):
            e["name"] = re.sub(r"(BinaryOpScalarFunctor<float, )(\d+), (\d+)", r"\g<1>\2, 99999999999999999999",
                               e["name"])
    return ["import", "torch", str(_write_json(d / "mta.json", doc)), "--spec", "h200", "-o", str(d / "r.json")]


def _no_op_above_its_ceiling(d: Path) -> str | None:
    bad = [u.get("op") for u in json.loads((d / "r.json").read_text())["unmodelled"] if "ceiling" in u.get("why", "")]
    return f"{bad} in unmodelled as above their ceiling" if bad else None


def _kinds_kernels(d: Path, kind: str) -> Path:
    import tarfile

    with tarfile.open(PROGRAM_KINDS) as tar:
        members = [m for m in tar.getmembers() if m.isfile() and (m.name.startswith(f"{kind}/kernels/")
                                                                   or m.name == f"{kind}/{kind}.trace.json.gz")]
        tar.extractall(d, members=members, filter="data")
    return d / kind


def flex_mask_beyond_int64(d: Path) -> list[str]:
    folder = _kinds_kernels(d, "flex")
    squares = "".join(f"        tmp{i + 11} = tmp{i + 10} * tmp{i + 10}\n" for i in range(30))
    mask = "        tmp10 = 99999999999999999999999\n" + squares + "        tmp3 = (tmp1 + tmp40) >= tmp2\n"
    for path in (folder / "kernels").glob("*.py"):  # every rendering of the causal mask_mod: 30 squarings of 10^22
        text = path.read_text(encoding="utf-8")
        if "        tmp3 = tmp1 >= tmp2\n" in text and "mask_mod_output" in text:
            path.write_text(text.replace("        tmp3 = tmp1 >= tmp2\n", mask), encoding="utf-8")
    return ["import", "torch", str(folder / "flex.trace.json.gz"), "--spec", "h100", "--triton-source",
            str(folder / "kernels"), "-o", str(d / "r.json")]


def triton_source_parser_overflow(d: Path) -> list[str]:
    folder = _kinds_kernels(d, "mix")
    for path in sorted((folder / "kernels").glob("*.py")):
        text = path.read_text(encoding="utf-8")
        if "tl.store(" in text and "'kernel_name'" in text:
            at = text.index("    tl.store(")
            path.write_text(text[:at] + "    tmp999 = " + "-" * 200_000 + "tmp0\n" + text[at:], encoding="utf-8")
    return ["import", "torch", str(folder / "mix.trace.json.gz"), "--spec", "h100", "--triton-source",
            str(folder / "kernels"), "-o", str(d / "r.json")]


# ---- report: diff and report --baseline on grouped profiles --------------------------------------------------------

_GEMM = "sm90_xmma_gemm_bf16bf16_bf16f32_f32_tn_n_tilesize128x128x64_warpgroupsize1x1x1_execute_kernel__5x_cublas"
_ADD = "void at::native::vectorized_elementwise_kernel<4, at::native::CUDAFunctor_add<c10::BFloat16> >(int)"


def _stepped_trace(path: Path, steps: int, add_factor: float = 1.0, module: str | None = None) -> Path:
    """`steps` ProfilerStep ranges of a 4096^3 BF16 aten::mm (200 µs) and a 4096^2 aten::add (40 µs x
    add_factor), each step inside a module range named `module` where given (a hostile name)."""
    n, bf16 = 4096, "c10::BFloat16"
    events: list[dict] = []
    t, corr = 1000.0, 0
    for step in range(1, steps + 1):
        start, gpu = t, t + 50.0
        for op, kernel, dur in (("aten::mm", _GEMM, 200.0), ("aten::add", _ADD, 40.0 * add_factor)):
            corr += 1
            add = op == "aten::add"
            args = {"External id": corr, "Input Dims": [[n, n], [n, n]] + ([[]] if add else []),
                    "Input type": [bf16, bf16] + (["Scalar"] if add else []),
                    "Input Strides": [[n, 1], [n, 1]] + ([[]] if add else []),
                    "Concrete Inputs": ["", ""] + (["1"] if add else [])}
            events += [{"ph": "X", "cat": "cpu_op", "name": op, "pid": 1, "tid": 1, "ts": t, "dur": 20.0,
                        "args": args},
                       {"ph": "X", "cat": "cuda_runtime", "name": "cudaLaunchKernel", "pid": 1, "tid": 1,
                        "ts": t + 5.0, "dur": 5.0, "args": {"correlation": corr}},
                       {"ph": "X", "cat": "kernel", "name": kernel, "pid": 0, "tid": 7, "ts": gpu, "dur": dur,
                        "args": {"correlation": corr, "device": 0, "stream": 7, "grid": [132, 1, 1],
                                 "block": [256, 1, 1]}}]
            gpu, t = gpu + dur + 2.0, t + 25.0
        t = max(t, gpu) + 10.0
        events.append({"ph": "X", "cat": "user_annotation", "name": f"ProfilerStep#{step}", "pid": 1, "tid": 1,
                       "ts": start, "dur": t - start, "args": {}})
        if module is not None:
            events.append({"ph": "X", "cat": "python_function", "name": f"nn.Module: {module}", "pid": 1,
                           "tid": 1, "ts": start + 1, "dur": t - start - 2, "args": {}})
    doc = {"schemaVersion": 1, "deviceProperties": [{"id": 0, "name": "NVIDIA H200"}], "traceEvents": events}
    return _write_json(path, doc)


def _imported(d: Path, name: str, trace: Path, *extra: str) -> Path:
    """`import torch` of the trace into d/name.json (the case's own subprocess, under the same limits)."""
    out = d / f"{name}.json"
    outcome = run_cli(d, ["import", "torch", str(trace), "--spec", "h200", "-o", str(out), *extra])
    if outcome.code != 0:
        raise OSError(f"import of {trace.name} failed: {outcome.err.strip()[-200:]}")
    return out


def _diff_json(d: Path) -> dict:
    return json.loads((d / "d.json").read_text(encoding="utf-8"))


def diff_one_step_vs_ten(d: Path) -> list[str]:
    """The same kernels, 1 step against 10: nothing moved (a float sum's rounding once read '+0.0000000542 ps')."""
    return ["diff", str(_stepped_trace(d / "one.trace.json", 1)), str(_stepped_trace(d / "ten.trace.json", 10)),
            "--spec", "h200", "--format", "json", "-o", str(d / "d.json")]


def _nothing_moved(d: Path) -> str | None:
    doc = _diff_json(d)
    moved = [r["name"] for r in doc["rows"] if r["delta"] != 0]
    if moved or doc["program"]["delta"] != 0:
        return f"moved with no change: {moved or 'the program'}"
    if not any("A holds 1 step and B 10" in n for n in doc["notes"]):
        return f"no note that the wall figures move with the step count: {doc['notes']}"
    return None


def diff_other_spec(d: Path) -> list[str]:
    """One trace imported against the H200 and against the H100's spec: the device name is the trace's on both."""
    trace = _stepped_trace(d / "t.trace.json", 2)
    a = _imported(d, "a", trace)
    b = d / "b.json"
    outcome = run_cli(d, ["import", "torch", str(trace), "--spec", "h100", "-o", str(b)])
    if outcome.code != 0:
        raise OSError(outcome.err)
    return ["diff", str(a), str(b), "--format", "json", "-o", str(d / "d.json")]


def _spec_said(d: Path) -> str | None:
    notes = _diff_json(d)["notes"]
    return None if any("h200-sxm" in n and "h100-sxm" in n for n in notes) else f"specs not named: {notes}"


def baseline_two_ranks_vs_one(d: Path) -> list[str]:
    one = d / "one.json"
    both = d / "both.json"
    for out, traces in ((one, [DATA / "kineto" / "rank0.json"]),
                        (both, [DATA / "kineto" / "rank0.json", DATA / "kineto" / "rank1.json.gz"])):
        outcome = run_cli(d, ["import", "torch", *map(str, traces), "--spec", "h200", "-o", str(out)])
        if outcome.code != 0:
            raise OSError(outcome.err)
    return ["report", str(both), "--baseline", str(one), "--max-regression", "5%"]


def baseline_ncu_vs_trace(d: Path) -> list[str]:
    csv_path = d / "train.ncu.csv"
    csv_path.write_bytes(gzip.decompress((DATA / "kineto" / "h200-train.ncu.csv.gz").read_bytes()))
    outcome = run_cli(d, ["import", "ncu", str(csv_path), "--spec", "h200", "--group-by", "op", "-o",
                          str(d / "ncu.json")])
    if outcome.code != 0:
        raise OSError(outcome.err)
    return ["report", str(d / "ncu.json"), "--baseline", str(_imported(d, "trace", DATA / "kineto" /
                                                                          "h200-train.json.gz")),
            "--max-regression", "5%"]


def baseline_half_percent(d: Path) -> list[str]:
    a = _imported(d, "a", _stepped_trace(d / "a.trace.json", 4))
    b = _imported(d, "b", _stepped_trace(d / "b.trace.json", 4, add_factor=1.2))
    return ["report", str(b), "--baseline", str(a), "--max-regression", "0.5%"]


def diff_of_a_diff(d: Path) -> list[str]:
    a = _imported(d, "a", _stepped_trace(d / "a.trace.json", 2))
    outcome = run_cli(d, ["diff", str(a), str(a), "--format", "json", "-o", str(d / "d.json")])
    if outcome.code != 0:
        raise OSError(outcome.err)
    return ["report", str(d / "d.json"), "--baseline", str(a)]


def results_with_nan(d: Path) -> list[str]:
    a = _imported(d, "a", _stepped_trace(d / "a.trace.json", 2))
    (d / "nan.json").write_text(a.read_text(encoding="utf-8").replace('"wall_time": ', '"wall_time": NaN, "x": ',
                                                                       1), encoding="utf-8")
    return ["diff", str(a), str(d / "nan.json")]


def results_mfu_500(d: Path) -> list[str]:
    """A hand-edited MFU of 5.0 read as 'MFU 500.0% (+451.9 pp)' in diff."""
    a = _imported(d, "a", _stepped_trace(d / "a.trace.json", 2))
    doc = json.loads(a.read_text(encoding="utf-8"))
    doc["timeline"]["step"]["mfu"] = 5.0
    _write_json(d / "mfu.json", doc)
    return ["diff", str(a), str(d / "mfu.json")]


_HOSTILE = 'a|b <img src=x onerror=alert(1)> & "q" ]]> \x07\x1b[31m ' + "z_" * 100


def junit_hostile_group(d: Path) -> list[str]:
    a = _imported(d, "a", _stepped_trace(d / "a.trace.json", 3, module=_HOSTILE), "--group-by", "module")
    b = _imported(d, "b", _stepped_trace(d / "b.trace.json", 3, 1.5, module=_HOSTILE), "--group-by", "module")
    return ["report", str(b), "--baseline", str(a), "--max-regression", "5%", "--format", "junit", "-o",
            str(d / "j.xml")]


def _junit_parses(d: Path) -> str | None:
    import xml.etree.ElementTree as ET
    try:
        names = [c.get("name") or "" for c in ET.parse(d / "j.xml").iter("testcase")]
    except ET.ParseError as exc:
        return f"JUnit does not parse: {exc}"
    return None if any("a|b <img" in n for n in names) else f"the hostile group is not a test case: {names}"


def markdown_hostile_group(d: Path) -> list[str]:
    junit_hostile_group(d)
    return ["diff", str(d / "a.json"), str(d / "b.json"), "--format", "markdown", "-o", str(d / "d.md")]


def _markdown_escaped(d: Path) -> str | None:
    rows = [line for line in (d / "d.md").read_text(encoding="utf-8").splitlines() if "img src" in line]
    if not rows:
        return "the hostile group is missing"
    bad = [r for r in rows if "a|b" in r or "<img" in r or "\x1b" in r or "\x07" in r]
    return f"unescaped: {bad[0][:120]!r}" if bad else None


CASES = [
    Case("gz-inflates-past-cap", "input", gz_inflates_past_cap, 2, ("bomb.json.gz", "inflates to more than"),
         fast=False),
    Case("gz-inflates-to-1gb", "input", gz_inflates_to_1gb, 0, ("imported",), fast=False,
         check=_same_answer_as_the_step),
    Case("too-many-events-kept", "input", too_many_kept, 2, ("ops.json.gz", "the most one import keeps"), fast=False),
    Case("broken-80mb-trace", "input", broken_80mb, 2, ("broken.json", "traceEvents: is not valid JSON"), fast=False),
    Case("truncated-gz", "input", truncated_gz, 2, ("cut.json.gz", "truncated gzip")),
    Case("kernel-file-fifo", "input", kernel_file_fifo, 0, ("cabc123.py", "FIFO", "could not be read"),
         check=_same_as_without_sources),
    Case("kernel-file-proc-kmsg", "input", kernel_file_kmsg, 0, ("/proc/kmsg: blocks on read", "imported"),
         check=_same_as_without_sources),
    Case("kernel-file-5000-digit-xnumel", "input", kernel_file_huge_numel, 0, ("imported",),
         check=_same_as_without_sources),
    Case("triton-source-1000-deep", "input", deep_triton_source, 0, ("imported",)),
    Case("dup-events-3kb", "input", dup_events_small, 2, ("dup.json", "traceEvents: is given twice")),
    Case("dup-events-12mb", "input", dup_events_12mb, 2, ("dup.json", "traceEvents: is given twice")),
    Case("same-trace-twice", "input", same_trace_twice, 2, ("b.json.gz", "is the same trace as", "step.json")),
    Case("kernels-overlap-on-a-stream", "input", overlapping_kernels, 0,
         ("warning:", "overlap.json", "same CUDA stream", "overlap0")),
    Case("device-id-1e40", "input", lambda d: _huge_id(d, "device"), 2, ("device.json", "args.device")),
    Case("stream-id-1e40", "input", lambda d: _huge_id(d, "stream"), 2, ("stream.json", "args.stream")),
    Case("rank-1e40", "input", lambda d: _huge_id(d, "rank"), 2, ("rank.json", "distributedInfo.rank")),
    *([Case("trace-is-proc-kmsg", "input", lambda d: ["import", "torch", "/proc/kmsg", "--spec", "h200"], 2,
            ("/proc/kmsg",)),
       Case("spec-is-proc-kmsg", "input", lambda d: ["analyze", "vector_add", "--spec", "/proc/kmsg"], 2,
            ("/proc/kmsg",))] if os.access("/proc/kmsg", os.R_OK) else []),  # root: readable, and blocks
    Case("results-fifo", "input", results_as_fifo, 2, ("results.json", "FIFO")),
    Case("profile-script-fifo", "input", script_as_fifo, 2, ("train.py", "no such Python script")),
    Case("spec-yaml-alias-bomb", "input", spec_alias_bomb, 2, ("bomb.yaml", "aliases")),
    Case("results-nested-100000", "input", deep_results, 2, ("deep.json", "nested")),
    Case("ncu-csv-gzipped", "input", gz_ncu_csv, 2, ("ncu.csv.gz", "gzip")),
    Case("predict-beyond-device-memory", "figure", lambda d: ["analyze", "copy", "-p", "n=2**200", "--predict"], 2,
         ("n=2**200", "memory.capacity")),
    Case("sweep-predict-rows-beyond-memory", "figure",
         lambda d: ["sweep", "softmax_fused", "--over", "rows", "-p", "cols=8192", "--spec", "h100", "--predict", "-o",
                   str(d / "rows.json")], 0, check=_rows_fit),
    Case("descriptor-threads-1e300", "figure", threads_1e300, 2, ("k.yaml: threads:",)),
    Case("descriptor-20000-stages", "figure", stages_20000, 2, ("many.yaml: stages:", "20,000")),
    Case("spec-idle-power-over-limit", "figure", idle_over_limit, 2, ("hot.yaml", "energy.idle_power")),
    Case("results-fraction-contradicts-times", "figure", fraction_contradicts_times, 2,
         ("edited.json", "fraction_of_ceiling")),
    Case("calibrated-is-a-datasheet", "figure", calibrated_datasheet, 2, ("--calibrated", "not a measured spec")),
    Case("repeated-spec-on-one-spec-command", "figure",
         lambda d: ["sweep", "vector_add", "--spec", "h100", "--spec", "a100", "--predict"], 2, ("given 2 times",)),
    Case("predict-ignores-efficiency", "figure",
         lambda d: ["sweep", "vector_add", "--spec", "h100", "--predict", "--efficiency", "0.5"], 2,
         ("--efficiency", "--predict")),
    Case("import-over-a-measurement", "output", import_over_measurement, 2, ("m.json", "not replaced", "--force"),
         check=_measurement_kept),
    Case("sigterm-during-write", "output", lambda d: [], -signal.SIGTERM, (), check=_nothing_left,
         run=_signal_during_write(signal.SIGTERM)),
    Case("sighup-during-write", "output", lambda d: [], -signal.SIGHUP, (), check=_nothing_left,
         run=_signal_during_write(signal.SIGHUP)),
    Case("sigint-after-rename", "output", lambda d: [], 130, ("interrupted after writing", "a.json"),
         check=_written, run=interrupt_after_rename),
    Case("block-2^62-threads", "trace-model", lambda d: _launch_dim(d, "block", [2**62, 1, 1]), 2,
         ("dims.json", "args.block", "CUDA's limits")),
    Case("grid-zero", "trace-model", lambda d: _launch_dim(d, "grid", [0, 1, 1]), 2,
         ("dims.json", "args.grid", "CUDA's limits")),
    Case("profiler-step-nested", "trace-model", nested_profiler_steps, 0, ("ProfilerStep inside or across",),
         check=_every_kernel_in_step_1),
    Case("captures-record-90mb-before-events", "trace-model", captures_head_past_batch, 2, ("head.json", "traceEvents"),
         fast=False),
    Case("foreach-functor-reads-1e20-lists", "trace-model", _foreach_reads_1e20, 0, ("imported",),
         check=_no_op_above_its_ceiling),
    Case("flex-mask-constant-past-int64", "trace-model", flex_mask_beyond_int64, 0, ("imported",)),
    Case("triton-line-200000-minuses", "trace-model", triton_source_parser_overflow, 0, ("imported",)),
    Case("diff-1-step-vs-10", "report", diff_one_step_vs_ten, 0, check=_nothing_moved),
    Case("diff-same-gpu-other-spec", "report", diff_other_spec, 0, check=_spec_said),
    Case("baseline-2-ranks-vs-1", "report", baseline_two_ranks_vs_one, 2, ("both.json", "holds 2 ranks")),
    Case("baseline-ncu-vs-trace", "report", baseline_ncu_vs_trace, 2, ("ncu.json", "replayed alone")),
    Case("baseline-limit-0.5%", "report", baseline_half_percent, 1, ("over the 0.5% limit",)),
    Case("diff-json-as-results", "report", diff_of_a_diff, 2, ("d.json", "roofline/diff/v1")),
    Case("results-mfu-500%", "report", results_mfu_500, 2, ("mfu.json", "timeline.step.mfu")),
    Case("results-nan", "report", results_with_nan, 2, ("nan.json", "NaN is not JSON")),
    Case("junit-hostile-group", "report", junit_hostile_group, 1, ("slower than baseline",), check=_junit_parses),
    Case("markdown-hostile-group", "report", markdown_hostile_group, 0, check=_markdown_escaped),
]


def judge(case: Case, outcome: Outcome, folder: Path) -> str | None:
    """What is wrong with how the case ended, or None."""
    if "Traceback" in outcome.err:
        return "a traceback: " + outcome.err.strip().splitlines()[-1][:120]
    if outcome.code != case.code:
        return f"exit {outcome.code}, expected {case.code}: {outcome.err.strip()[-200:]}"
    missing = [s for s in case.says if s not in outcome.err]
    if missing:
        return f"the message lacks {missing}: {outcome.err.strip()[-200:]}"
    # our errors print 'error: ...'; click's refusals of an option's value print 'Error: ...' under the usage line
    if case.code == 2 and sum(line.startswith(("error:", "Error:")) for line in outcome.err.splitlines()) != 1:
        return f"not one error line: {outcome.err.strip()[-200:]}"
    return case.check(folder) if case.check is not None else None


def run_case(case: Case, scratch: Path) -> tuple[Outcome, str | None]:
    folder = scratch / case.name
    folder.mkdir()
    try:
        argv = case.make(folder)
    except OSError as exc:  # mkfifo where not allowed, a /proc file missing: nothing to run
        return Outcome(None, str(exc), 0.0), f"could not build the case: {exc}"
    outcome = (case.run or (lambda d, a: run_cli(d, a)))(folder, argv)
    why = judge(case, outcome, folder)
    subprocess.run(["rm", "-rf", str(folder)], check=False)  # shutil.rmtree recurses: 1000 levels overflow it
    return outcome, why


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--fast", action="store_true", help="only the cheap cases")
    parser.add_argument("--only", default="", help="comma-separated case names")
    args = parser.parse_args(argv)
    chosen = [c for c in CASES if (not args.fast or c.fast) and (not args.only or c.name in args.only.split(","))]
    failed = 0
    print(f"{'case':36} {'class':11} {'expect':>6} {'got':>6} {'s':>6}  verdict")
    with tempfile.TemporaryDirectory(prefix="roofline-adversarial-") as tmp:
        for case in chosen:
            outcome, why = run_case(case, Path(tmp))
            failed += why is not None
            print(f"{case.name:36} {case.kind:11} {case.code:>6} {str(outcome.code):>6} {outcome.seconds:6.1f}  "
                  f"{'ok' if why is None else 'FAIL: ' + why}", flush=True)
    print(f"{len(chosen) - failed} of {len(chosen)} cases ended as they should")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
