"""Issue 39, inputs and output files under hostile input: every read bounded in size and time, a trace streamed
(text and inflate) within a memory budget, traceEvents named twice refused on both paths, ids held to a sane
range, the same trace twice refused, overlapping work on one stream flagged, -o never replacing a results file of
another kind of run unasked, and writes that leave nothing behind on SIGTERM/SIGHUP and say so after a rename."""

from __future__ import annotations

import gzip
import json
import os
import signal
import subprocess
import sys
import threading
import time
import tracemalloc
import zlib
from pathlib import Path

import orjson
import pytest

from roofline.errors import InputError
from roofline.kineto import chunks, reader
from roofline.kineto.chunks import EventStream
from roofline.load import inputs

from conftest import DATA

STEP = DATA / "kineto" / "step.json"
MEASURED = DATA / "h200" / "results-2026-12-01.json"


def _step() -> dict:
    return json.loads(STEP.read_text(encoding="utf-8"))


def _write(path: Path, doc: object) -> Path:
    path.write_text(json.dumps(doc), encoding="utf-8")
    return path


# ---- the one bounded reader ---------------------------------------------------------------------------------


def test_a_read_that_blocks_is_refused_within_the_stall(tmp_path, monkeypatch):
    """A regular file whose read blocks (/proc/kmsg, a hung mount) used to hang the command for ever."""
    path = tmp_path / "spec.yaml"
    path.write_text("id: x\n", encoding="utf-8")
    release = threading.Event()
    real_read = os.read

    def blocking_read(fd: int, size: int) -> bytes:
        if os.fstat(fd).st_ino == path.stat().st_ino:
            release.wait(30)
        return real_read(fd, size)

    monkeypatch.setattr(inputs.os, "read", blocking_read)
    monkeypatch.setattr(inputs, "READ_STALL", 0.3)
    started = time.monotonic()
    try:
        with pytest.raises(InputError, match=r"spec\.yaml: did not answer within 0\.3 s"):
            inputs.read_input_bytes(path, 1 << 20, "a spec")
    finally:
        release.set()
    assert time.monotonic() - started < 5
    assert inputs.read_input_text(tmp_path / "spec.yaml", 1 << 20, "a spec") == "id: x\n"  # the next read works


def test_input_lines_reads_through_the_bounded_reader(tmp_path):
    path = tmp_path / "a.csv"
    path.write_bytes(b"\xef\xbb\xbfone\r\ntwo\n\nthree")
    assert list(inputs.input_lines(path, 1 << 20, "a CSV")) == ["one", "two", "", "three"]
    with pytest.raises(InputError, match="larger than 5 bytes"):
        list(inputs.input_lines(path, 5, "a CSV"))


# ---- Triton sources -----------------------------------------------------------------------------------------


def test_a_source_with_a_5000_digit_numel_is_not_used(tmp_path):
    from roofline.model.ops.triton import read_source

    text = ("triton_meta={'signature': {'in_ptr0': '*fp32', 'out_ptr0': '*fp32', 'xnumel': 'i32'}}\n"
            "@triton.jit\ndef triton_poi_fused_add_0(in_ptr0, out_ptr0, xnumel, XBLOCK):\n"
            f"    xnumel = {'9' * 5000}\n    tmp0 = tl.load(in_ptr0)\n")
    assert read_source(text) is None  # ValueError (int's 4300-digit limit) before
    assert read_source(text.replace("9" * 5000, "1024")).numels == {"xnumel": 1024}


def _deep(folder: Path, levels: int) -> None:
    folder.mkdir()
    fd = os.open(folder, os.O_RDONLY)
    for _ in range(levels):
        os.mkdir("a", dir_fd=fd)
        deeper = os.open("a", os.O_RDONLY, dir_fd=fd)
        os.close(fd)
        fd = deeper
    os.close(os.open("cdeep.py", os.O_WRONLY | os.O_CREAT, 0o644, dir_fd=fd))
    os.close(fd)


def test_a_folder_1000_deep_is_walked_without_recursion(tmp_path):
    from roofline.kineto.sources import KernelSources, walk_files

    _deep(tmp_path / "cache", 1000)
    try:
        found = list(walk_files(tmp_path / "cache", max_depth=2000))
        assert [p.name for p in found] == ["cdeep.py"]  # os.walk: RecursionError on Python 3.11
        assert list(walk_files(tmp_path / "cache")) == []  # MAX_DEPTH levels, not more
        assert KernelSources([tmp_path / "cache"]).read("/gone/cdeep.py") is None
    finally:
        subprocess.run(["rm", "-rf", str(tmp_path / "cache")], check=False)


def test_a_kernel_file_that_is_a_fifo_is_named_not_waited_on(tmp_path):
    from roofline.kineto.sources import KernelSources

    fifo = tmp_path / "cabc.py"
    os.mkfifo(fifo)
    sources = KernelSources()
    assert sources.read(str(fifo)) is None
    assert "FIFO" in sources.unreadable[str(fifo)]


# ---- the trace: streamed, inflated in pieces, within the budget ---------------------------------------------


def _padded(path: Path, text_bytes: int) -> Path:
    """The step trace and padding events an import drops, gzip-compressed: `text_bytes` of text."""
    doc = _step()
    events = doc.pop("traceEvents")
    pad = {"ph": "X", "cat": "python_function", "name": "pad", "ts": 1, "dur": 1, "args": {"p": "a" * 4000}}
    count = max(0, (text_bytes - len(json.dumps(doc))) // len(json.dumps(pad)))
    packer = zlib.compressobj(6, zlib.DEFLATED, 31)
    with path.open("wb") as out:
        out.write(packer.compress(json.dumps({**doc, "traceEvents": events})[:-2].encode()))
        one = b"," + json.dumps(pad).encode()
        for _ in range(count):
            out.write(packer.compress(one))
        out.write(packer.compress(b"]}") + packer.flush())
    return path


def test_a_gz_trace_is_inflated_and_parsed_in_pieces(tmp_path, monkeypatch):
    """A 48 MB text used to be inflated whole and parsed from one buffer (the parser's objects ~10x the text): the
    peak now follows the batch, not the file (orjson takes ~14x a batch while it parses it: 1 MiB batches here)."""
    monkeypatch.setattr(chunks, "BATCH", 1 << 20)
    monkeypatch.setattr(reader, "STREAM_FROM", 1 << 20)
    monkeypatch.setattr(reader, "INFLATE_PIECE", 1 << 20)
    path = _padded(tmp_path / "big.json.gz", 48 << 20)
    tracemalloc.start()
    try:
        trace = reader.read_trace(path)
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert len(trace.gpu) == len(reader.read_trace(STEP).gpu)
    assert peak < 24 << 20, f"{peak / 2**20:.0f} MiB held at the peak"


def test_a_gz_trace_that_inflates_past_the_cap_is_refused_naming_it(tmp_path, monkeypatch):
    monkeypatch.setattr(reader, "MAX_TRACE_TEXT", 4 << 20)
    path = _padded(tmp_path / "bomb.json.gz", 6 << 20)
    with pytest.raises(InputError, match=r"bomb\.json\.gz: inflates to more than 4 MiB of text.*2 GiB of memory"):
        reader.read_trace(path)


def test_too_many_kept_events_are_refused(tmp_path, monkeypatch):
    monkeypatch.setattr(reader, "MAX_KEPT_EVENTS", 50)
    doc = {"traceEvents": [{"ph": "X", "cat": "cpu_op", "name": "aten::add", "ts": 1000 + i, "dur": 1, "tid": 1}
                           for i in range(60)]}
    with pytest.raises(InputError, match=r"ops\.json: holds more than 50 ops"):
        reader.read_trace(_write(tmp_path / "ops.json", doc))


@pytest.mark.parametrize("sizes", [[1], [7, 3, 100], [4096]])
def test_the_batches_of_a_text_in_pieces_are_the_events(monkeypatch, sizes):
    monkeypatch.setattr(chunks, "BATCH", 64)
    doc = {"schemaVersion": 1, "traceEvents": [{"name": f"k{i}", "s": "}, {", "ts": i} for i in range(200)],
           "after": "]}"}
    text = json.dumps(doc).encode()
    pieces, at, i = [], 0, 0
    while at < len(text):
        pieces.append(text[at:at + sizes[i % len(sizes)]])
        at += sizes[i % len(sizes)]
        i += 1
    stream = EventStream(iter(pieces), orjson.loads)
    assert [e for batch in stream for e in batch] == doc["traceEvents"]
    assert stream.head == {**doc, "traceEvents": []}


# ---- traceEvents twice, ids, the same trace twice, overlapping work ---------------------------------------


def _twice(path: Path, pad: int) -> Path:
    doc = _step()
    events = doc.pop("traceEvents")
    filler = [{"ph": "X", "cat": "python_function", "name": "pad", "ts": 1, "dur": 1, "args": {"p": "a" * 1000}}]
    text = (json.dumps(doc)[:-1] + ', "traceEvents": ' + json.dumps(events + filler * pad)
            + ', "traceEvents": []}')
    path.write_text(text, encoding="utf-8")
    return path


@pytest.mark.parametrize("pad", [0, 12_000], ids=["3kb-whole-parse", "12mb-batches"])
def test_trace_events_named_twice_is_refused_on_both_paths(tmp_path, pad):
    path = _twice(tmp_path / "dup.json", pad)
    assert (path.stat().st_size > reader.STREAM_FROM) == bool(pad)
    with pytest.raises(InputError, match=r"dup\.json: traceEvents: is given twice"):
        reader.read_trace(path)


def test_the_stream_refuses_trace_events_twice():
    from roofline.kineto.chunks import DuplicateEvents

    text = b'{"traceEvents": [{"a": 1}, {"b": 2}], "x": 1, "traceEvents": []}'
    with pytest.raises(DuplicateEvents):
        [e for batch in EventStream(text, orjson.loads) for e in batch]


@pytest.mark.parametrize("field", ["device", "stream", "rank"])
def test_an_id_past_the_range_is_refused_naming_the_field(tmp_path, field):
    doc = _step()
    if field == "rank":
        doc["distributedInfo"] = {"rank": 10 ** 40}
    else:
        next(e for e in doc["traceEvents"] if e.get("cat") == "kernel")["args"][field] = -10 ** 40
    name = "distributedInfo.rank" if field == "rank" else f"args.{field}"
    with pytest.raises(InputError, match=rf"t\.json: {name}: is -?10+… \(41 digits\)"):
        reader.read_trace(_write(tmp_path / "t.json", doc))


def test_the_same_trace_twice_is_refused_by_content(tmp_path):
    from roofline.kineto.document import import_traces

    doc = _step()
    doc.pop("distributedInfo", None)  # no rank of its own: before, the two copies became ranks 0 and 1
    a = _write(tmp_path / "a.json", doc)
    b = tmp_path / "b.json.gz"
    b.write_bytes(gzip.compress(a.read_bytes()))
    with pytest.raises(InputError, match=r"b\.json\.gz: is the same trace as .*a\.json \(identical content\)"):
        import_traces([a, b], "h200")


def test_kernels_overlapping_on_a_stream_are_flagged(run_cli, tmp_path):
    doc = _step()
    ts = min(e["ts"] for e in doc["traceEvents"] if e.get("cat") == "kernel")
    doc["traceEvents"] += [{"ph": "X", "cat": "kernel", "name": f"late{i}", "ts": ts + 200 * i, "dur": 1000.0,
                            "args": {"device": 0, "stream": 7, "correlation": 90000 + i}} for i in range(5)]
    r = run_cli("import", "torch", _write(tmp_path / "o.json", doc), "--spec", "h200")
    assert r.code == 0, r.err
    warning = next(line for line in r.err.splitlines() if "same CUDA stream" in line)
    assert warning.startswith("warning: ") and "o.json" in warning and "'late0'" in warning
    r = run_cli("import", "torch", STEP, "--spec", "h200")
    assert "same CUDA stream" not in r.err  # a trace in order is not flagged


# ---- -o and signals -----------------------------------------------------------------------------------------


def test_an_import_does_not_replace_a_measurement_unasked(run_cli, tmp_path):
    target = tmp_path / "m.json"
    target.write_bytes(MEASURED.read_bytes())
    r = run_cli("import", "torch", STEP, "--spec", "h200", "-o", target)
    assert r.code == 2 and "Traceback" not in r.err
    assert "m.json: not replaced: it is a results file of a measurement" in r.err and "--force" in r.err
    assert target.read_bytes() == MEASURED.read_bytes()
    r = run_cli("import", "torch", STEP, "--spec", "h200", "-o", target, "--force")
    assert r.code == 0, r.err
    r = run_cli("import", "torch", STEP, "--spec", "h200", "-o", target)  # an import replaces an import
    assert r.code == 0, r.err


def test_why_not_replace_compares_who_made_a_results_file(tmp_path):
    from roofline.load.jsonio import document_writes, why_not_replace

    path = tmp_path / "r.json"
    path.write_bytes(MEASURED.read_bytes())
    assert why_not_replace(path, document_writes({"schema": "roofline/results/v1", "backend": "numpy"})) is None
    assert "a prediction from the model" in why_not_replace(
        path, document_writes([{"schema": "roofline/results/v1", "backend": "model"}]))
    assert why_not_replace(path, "roofline/results/v1") is None  # who writes it not known: the kind is enough


_WRITER = """
import sys, time
from roofline.load.jsonio import write_text_atomic
def chunks():
    for i in range(4000):
        yield b" " * (1 << 16)
        if i == 5:
            print("writing", flush=True)
        time.sleep(0.005)
write_text_atomic(sys.argv[1], chunks())
"""


@pytest.mark.parametrize("sig", [signal.SIGTERM, signal.SIGHUP], ids=["SIGTERM", "SIGHUP"])
def test_a_signal_during_a_write_leaves_no_temporary_file(tmp_path, sig):
    env = {**os.environ, "PYTHONPATH": str(Path(__file__).resolve().parent.parent)}
    p = subprocess.Popen([sys.executable, "-c", _WRITER, str(tmp_path / "out.json")], env=env,
                         stdout=subprocess.PIPE, text=True, start_new_session=True)
    assert p.stdout is not None and p.stdout.readline() == "writing\n"
    p.send_signal(sig)
    assert p.wait(timeout=30) == -sig  # ended by the signal, as its default would
    assert sorted(os.listdir(tmp_path)) == []  # neither the temporary file nor a half-written out.json


def test_an_interrupt_after_the_rename_says_the_file_was_written(run_cli, tmp_path, monkeypatch):
    import roofline.cli.common as common

    said = common.note

    def note(message: str) -> None:
        if message.startswith("wrote "):
            raise KeyboardInterrupt  # Ctrl-C just after the rename
        said(message)

    monkeypatch.setattr(common, "note", note)
    r = run_cli("analyze", "vector_add", "--spec", "h200", "--format", "json", "-o", tmp_path / "a.json")
    assert r.code == 130
    assert f"interrupted after writing {tmp_path / 'a.json'} (complete" in r.err and "aborted" not in r.err
    assert json.loads((tmp_path / "a.json").read_text())  # whole
