"""`roofline profile --with torch` and the capture it runs (roofline.kineto.capture), without PyTorch: a fake torch
package (tests/data/faketorch) stands in for it, as tests/data/ncu/fake/ncu stands in for Nsight Compute. Its
profiler writes the committed trace tests/data/kineto/step.json with the labels the program marked (torch.mark)
while it recorded, so the tests see which part of the program was profiled."""

from __future__ import annotations

import gzip
import io
import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from roofline.errors import InputError
from roofline.kineto.program import Running, capture_range, python_program
from roofline.ncu.program import GRACE, counter_access
from test_profile_processes import gone  # one rule for "the program and its children ended"

ROOT = Path(__file__).resolve().parents[1]
DATA = Path(__file__).parent / "data"
FAKE_TORCH = DATA / "faketorch"
FAKE_NCU = DATA / "ncu" / "fake"
STEP = DATA / "kineto" / "step.json"

# A program as written for ncu: marks before, inside and after its start-stop range, under emit_nvtx.
START_STOP = """\
import sys, torch
torch.mark("warm-up")
with torch.autograd.profiler.emit_nvtx(record_shapes=True):
    torch.cuda.profiler.start()
    torch.mark("step")
    torch.cuda.profiler.stop()
    torch.cuda.profiler.start()  # a second range: not profiled (the first only, as ncu)
    torch.mark("second step")
    torch.cuda.profiler.stop()
torch.mark("after")
print("args", sys.argv[1:])
sys.exit(int(sys.argv[1]) if len(sys.argv) > 1 else 0)
"""

# NVTX ranges: 'step' opened inside 'outer', with 'inner' (and another 'step') nested in it; a later 'step' too.
NVTX = """\
import torch
from torch.cuda import nvtx
nvtx.range_push("outer")
torch.mark("outer only")
nvtx.range_push("step")
torch.mark("in step")
with nvtx.range("inner"):
    torch.mark("in inner")
    with nvtx.range("step"):
        torch.mark("in nested step")
torch.mark("after inner")
nvtx.range_pop()
torch.mark("after step")
nvtx.range_pop()
with nvtx.range("step"):
    torch.mark("second step")
"""

# Starts a child that sleeps, writes both pids to argv[1], then sleeps too.
BACKGROUND = ("import os, subprocess, sys, time\n"
              "child = subprocess.Popen([sys.executable, '-c', 'import time; time.sleep(120)'])\n"
              "open(sys.argv[1] + '.tmp', 'w').write(f'{os.getpid()} {child.pid}')\n"
              "os.replace(sys.argv[1] + '.tmp', sys.argv[1])\n"
              "time.sleep(120)\n")


def script(tmp_path: Path, text: str, name: str = "prog.py") -> Path:
    path = tmp_path / name
    path.write_text(text)
    return path


def env(**extra: str) -> dict[str, str]:
    return dict(os.environ, PYTHONPATH=f"{FAKE_TORCH}{os.pathsep}{ROOT}", **extra)


def run_capture(tmp_path: Path, program: Path, *options: str, trace: str = "trace.json",
                **extra: str) -> tuple[subprocess.CompletedProcess[str], Path, Path]:
    out, status = tmp_path / "out" / trace, tmp_path / "status.json"
    proc = subprocess.run([sys.executable, "-m", "roofline.kineto.capture", "--trace", str(out), "--status",
                           str(status), *options, "--", str(program), *extra.pop("args", "").split()],
                          env=env(**extra), capture_output=True, text=True, timeout=60)
    return proc, out, status


def fake(trace: Path) -> dict:
    opener = gzip.open if trace.name.endswith(".gz") else open
    with opener(trace, "rt") as f:
        return json.load(f)["fakeTorch"]


# ---- the capture ------------------------------------------------------------------------------------------------


def test_start_stop_records_the_first_range_only_and_emit_nvtx_is_a_no_op(tmp_path: Path) -> None:
    """The fake's emit_nvtx fails beside a recording profiler, as PyTorch's does: the capture made it a no-op."""
    proc, out, status = run_capture(tmp_path, script(tmp_path, START_STOP), "--range", "start-stop")
    assert proc.returncode == 0, proc.stderr
    assert fake(out) == {"marks": ["step"], "starts": 1, "options": {
        "activities": ["cpu", "cuda"], "record_shapes": True, "with_stack": False, "with_modules": False}}
    assert json.loads(status.read_text())["outcome"] == "traced"
    assert "args []" in proc.stdout  # the program's own output untouched
    assert [p.name for p in out.parent.iterdir()] == ["trace.json"]  # no temporary file left beside it


def test_whole_run_gzipped_with_modules(tmp_path: Path) -> None:
    proc, out, _ = run_capture(tmp_path, script(tmp_path, START_STOP), "--modules", trace="t.json.gz")
    assert proc.returncode == 0, proc.stderr
    assert out.read_bytes()[:2] == b"\x1f\x8b"  # gzip
    got = fake(out)
    assert got["marks"] == ["warm-up", "step", "second step", "after"]
    assert got["options"]["with_stack"] and got["options"]["with_modules"]


def test_nvtx_range_by_name_first_one_with_its_nested_ranges(tmp_path: Path) -> None:
    proc, out, _ = run_capture(tmp_path, script(tmp_path, NVTX), "--range", "step")
    assert proc.returncode == 0, proc.stderr
    assert fake(out)["marks"] == ["in step", "in inner", "in nested step", "after inner"]


def test_range_never_reached_exits_2_and_writes_no_trace(tmp_path: Path) -> None:
    proc, out, status = run_capture(tmp_path, script(tmp_path, NVTX), "--range", "no-such-range")
    assert proc.returncode == 2
    assert "never reached an NVTX range named 'no-such-range'" in proc.stderr
    assert not out.exists() and (not out.parent.exists() or list(out.parent.iterdir()) == [])
    assert json.loads(status.read_text()) | {"program_seconds": 0} == {
        "outcome": "no-range", "status": 0, "cuda": True, "torch": "0.0+fake", "program_seconds": 0}


@pytest.mark.parametrize("code", [0, 2, 3, 7])
def test_the_programs_exit_status_is_passed_on(tmp_path: Path, code: int) -> None:
    """Its status, even 2 or 3 (the capture's own codes): the status file tells them apart."""
    proc, out, status = run_capture(tmp_path, script(tmp_path, START_STOP), "--range", "start-stop",
                                    args=str(code))
    assert proc.returncode == code
    assert json.loads(status.read_text())["status"] == code and fake(out)["marks"] == ["step"]


def test_an_uncaught_exception_is_status_1_with_its_traceback(tmp_path: Path) -> None:
    proc, out, status = run_capture(tmp_path, script(tmp_path, "import torch\nraise ValueError('bad batch')\n"))
    assert proc.returncode == 1 and "ValueError: bad batch" in proc.stderr
    assert json.loads(status.read_text())["status"] == 1


def test_without_torch_exit_3(tmp_path: Path) -> None:
    no_torch = tmp_path / "no_torch"
    (no_torch / "torch").mkdir(parents=True)
    (no_torch / "torch" / "__init__.py").write_text("raise ImportError('no torch here')\n")
    out, status = tmp_path / "t.json", tmp_path / "s.json"
    proc = subprocess.run([sys.executable, "-m", "roofline.kineto.capture", "--trace", str(out), "--status",
                           str(status), "--", str(script(tmp_path, "print('never')\n"))],
                          env=dict(os.environ, PYTHONPATH=f"{no_torch}{os.pathsep}{ROOT}"),
                          capture_output=True, text=True, timeout=60)
    assert proc.returncode == 3 and "cannot import torch" in proc.stderr and "never" not in proc.stdout
    assert json.loads(status.read_text())["outcome"] == "no-torch" and not out.exists()


# ---- the program and the range, as profile takes them ------------------------------------------------------------


def test_python_programs_are_recognised(tmp_path: Path) -> None:
    path = script(tmp_path, "#!/usr/bin/env -S python3.12 -u\nprint(1)\n")
    p = python_program(["python3", "-u", "-X", "dev", str(path), "--batch", "4"])
    assert (p.python, p.options, p.script, p.args) == ("python3", ("-u", "-X", "dev"), str(path), ("--batch", "4"))
    assert python_program(["/opt/conda/bin/python3.11", str(path)]).python == "/opt/conda/bin/python3.11"
    p = python_program([str(path), "a"])
    assert (p.python, p.script, p.args) == ("python3.12", str(path), ("a",))  # the shebang's Python
    plain = script(tmp_path, "print(1)\n", "plain.py")
    assert python_program([str(plain)], default_python="/x/python").python == "/x/python"


@pytest.mark.parametrize("program, words", [
    (["./a.out"], "'./a.out' is not one"),
    (["python3", "-m", "train"], "python3 -m' is not one"),
    (["python3", "-c", "print(1)"], "python3 -c' is not one"),
    (["python", "-uc", "print(1)"], "python -uc' is not one"),
    (["python3"], "names none"),
    (["python3", "missing.py"], "missing.py: no such Python script"),
    (["python3", "--version"], "'--version' is not supported"),
])
def test_what_is_not_a_python_script_is_refused(program: list[str], words: str) -> None:
    with pytest.raises(InputError) as exc:
        python_program(program)
    assert words in str(exc.value)


def test_ranges_map_to_the_capture() -> None:
    assert capture_range(()) == "all"
    assert capture_range(("start-stop",)) == "start-stop"
    assert capture_range(("layer1/",)) == "layer1"  # ncu's NAME/ spelling
    for bad, words in ((("a", "b"), "one range, not 2"), (("all",), "leave --range out")):
        with pytest.raises(InputError) as exc:
            capture_range(bad)
        assert words in str(exc.value)


def test_counter_access_from_the_drivers_params(tmp_path: Path) -> None:
    params, status = tmp_path / "params", tmp_path / "status"
    status.write_text("Name:\tpython\nCapEff:\t0000000000000000\n")
    assert counter_access(tmp_path / "missing", status) is None  # cannot tell: say nothing
    params.write_text("ResmanDebugLevel: 4294967295\nRmProfilingAdminOnly: 0\n")
    assert counter_access(params, status) is None
    params.write_text("ResmanDebugLevel: 4294967295\nRmProfilingAdminOnly: 1\n")
    assert "RmProfilingAdminOnly: 1" in (counter_access(params, status) or "")
    status.write_text(f"CapEff:\t{1 << 21:016x}\n")  # CAP_SYS_ADMIN (root, --cap-add=SYS_ADMIN)
    assert counter_access(params, status) is None
    status.write_text(f"CapEff:\t{1 << 38:016x}\n")  # CAP_PERFMON
    assert counter_access(params, status) is None


# ---- roofline profile --with torch ---------------------------------------------------------------------------


@pytest.fixture
def faketorch(monkeypatch: pytest.MonkeyPatch, private_tmpdir: Path) -> Path:
    """The fake torch on the program's PYTHONPATH; no ncu anywhere; the temporary folder returned, empty."""
    monkeypatch.setenv("PYTHONPATH", f"{FAKE_TORCH}{os.pathsep}{ROOT}")
    monkeypatch.setenv("PATH", os.path.dirname(sys.executable) + os.pathsep + "/usr/bin:/bin")
    monkeypatch.setattr("roofline.ncu.profile._CUDA_NCU", ())
    monkeypatch.delenv("FAKE_TORCH_CUDA", raising=False)
    return private_tmpdir


def test_profile_with_torch_writes_grouped_results(run_cli, faketorch: Path, tmp_path: Path) -> None:
    prog = script(tmp_path, START_STOP)
    out, kept = tmp_path / "step.json", tmp_path / "kept" / "step.json.gz"
    kept.parent.mkdir()
    code, stdout, err = run_cli("profile", "--with", "torch", "--range", "start-stop", "--save-trace", kept, "-o",
                                out, "--", sys.executable, prog, "0")
    assert code in (0, None), err
    doc = json.loads(out.read_text())
    src = doc["source"]
    assert src["with"] == "torch" and "op shape models" in src["figures"] and src["chosen_by"] == "--with torch"
    assert src["range"] == "start-stop" and src["files"] == [str(kept)] and src["torch"] == "0.0+fake"
    assert src["command"] == [sys.executable, str(prog), "0"]
    assert doc["groups"][0]["name"] == "aten::addmm" and doc["groups"][0]["by"] == "op"
    assert {k["kineto"]["file"] for k in doc["kernels"]} == {str(kept)}  # never the temporary trace
    assert fake(kept)["marks"] == ["step"]  # the trace kept, gzipped as its name asks
    assert "torch trace, op shape models" in stdout and "aten::addmm" in stdout
    # 7: the 5 eager ones and the CUDA graph replay's 2 kernels, matched to the same kernels launched eagerly
    assert "profiled 9 GPU events with torch.profiler on h200-sxm: 7 on the roofline" in err and "not counters" in err
    # the step under its kernels (issue 34): the timeline block and its table, the program line over wall time
    assert doc["timeline"]["schema"] == "roofline/timeline/v1" and doc["timeline"]["devices"][0]["events"] == 9
    text = " ".join(stdout.split())
    assert "timeline · GPU busy" in text and "of ceiling over wall time" in text
    assert "profile: ran under torch.profiler in" in err
    assert list(faketorch.iterdir()) == []  # trace, status and the package link removed


def test_kernel_name_and_launch_window_select_the_traces_launches_as_ncu_would(run_cli, faketorch: Path,
                                                                             tmp_path: Path) -> None:
    prog = script(tmp_path, START_STOP)

    def profile(*scope: str) -> tuple[int | None, dict | None, str]:
        out = tmp_path / "out.json"
        out.unlink(missing_ok=True)
        code, _, err = run_cli("profile", "--with", "torch", *scope, "-o", out, "--", sys.executable, prog, "0")
        return code, json.loads(out.read_text()) if out.exists() else None, err.replace("\n", " ")

    # the trace's 7 kernels in launch order: xmma_gemm, splitKreduce (both aten::addmm), vectorized_elementwise
    # (clamp_min), index_elementwise (nonzero), then a CUDA graph replay of xmma_gemm and vectorized_elementwise
    code, doc, err = profile("--kernel-name", "xmma_gemm|splitK", "--launch-count", "2")
    assert code in (0, None), err
    assert doc["source"]["scope"] == {"kernel_name": "xmma_gemm|splitK", "launch_skip": 0, "launch_count": 2}
    assert [(g["name"], g["launches"]) for g in doc["groups"]] == [("aten::addmm", 2)]
    assert "2 of 7 kernel launches kept (copies and fills left out" in err
    code, doc, err = profile("--kernel-name", "elementwise", "--launch-count", "1")  # the function name, searched
    assert code in (0, None) and [g["name"] for g in doc["groups"]] == ["aten::clamp_min"], err
    code, doc, err = profile("--kernel-name", "elementwise", "--launch-skip", "3")
    assert code == 2 and doc is None and "none of the 7 kernel launches in " in err, err
    code, doc, err = profile("--kernel-name", "^void")  # the return type is not part of the function name
    assert code == 2 and doc is None and "none of the 7" in err, err


def test_auto_chooses_torch_without_ncu_and_module_groups(run_cli, faketorch: Path, tmp_path: Path,
                                                          monkeypatch: pytest.MonkeyPatch) -> None:
    code, stdout, err = run_cli("profile", "--group-by", "module", "--format", "json", "--",
                                sys.executable, script(tmp_path, START_STOP))
    assert code in (0, None), err
    doc = json.loads(stdout)
    assert doc["source"]["with"] == "torch" and doc["source"]["chosen_by"] == "auto: --group-by module given"
    assert doc["source"]["files"] == [] and doc["source"]["range"] == "all"
    assert {g["name"] for g in doc["groups"]} >= {"Linear_0", "ReLU_0"}
    # -S: no site-packages, so roofline (installed there for these tests) is found only through the link that
    # profile puts on the program's PYTHONPATH: the program's Python needs torch, not roofline
    monkeypatch.setenv("PYTHONPATH", str(FAKE_TORCH))
    monkeypatch.chdir(tmp_path)  # nor the checkout as the working folder
    code, stdout, err = run_cli("profile", "--format", "json", "--", sys.executable, "-S",
                                script(tmp_path, START_STOP))
    assert code in (0, None), err
    assert json.loads(stdout)["source"]["chosen_by"] == "auto: ncu is not on PATH"
    assert "profile: with torch.profiler (ncu is not on PATH)" in err


def test_auto_chooses_ncu_where_it_may_read_counters(run_cli, faketorch: Path, tmp_path: Path,
                                                     monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("PATH", f"{FAKE_NCU}{os.pathsep}{os.environ['PATH']}")
    monkeypatch.setenv("FAKE_NCU_CSV", str(DATA / "ncu" / "h200_gpt2_profile.csv"))
    monkeypatch.delenv("FAKE_NCU_ARGS", raising=False)
    monkeypatch.delenv("FAKE_NCU_STDERR", raising=False)
    prog = [sys.executable, str(script(tmp_path, START_STOP))]
    monkeypatch.setattr("roofline.ncu.program.counter_access", lambda: None)
    code, stdout, err = run_cli("profile", "--format", "json", "--", *prog)
    assert code in (0, None), err
    src = json.loads(stdout)["source"]
    assert (src["with"], src["chosen_by"], src["tool"]) == ("ncu", "auto: ncu found", "ncu")
    assert "counted by ncu" in err
    monkeypatch.setattr("roofline.ncu.program.counter_access", lambda: "the driver keeps them to admins")
    code, stdout, err = run_cli("profile", "--format", "json", "--", *prog)
    assert code in (0, None), err
    assert json.loads(stdout)["source"]["chosen_by"] == "auto: the driver keeps them to admins"


def test_ncu_without_counter_permission_names_with_torch(run_cli, faketorch: Path, tmp_path: Path,
                                                         monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("PATH", f"{FAKE_NCU}{os.pathsep}{os.environ['PATH']}")
    monkeypatch.setenv("FAKE_NCU_STDERR", "==ERROR== ERR_NVGPUCTRPERM - The user does not have permission to "
                                          "access NVIDIA GPU Performance Counters on the target device 0.")
    code, _, err = run_cli("profile", "--with", "ncu", "--", sys.executable, script(tmp_path, START_STOP))
    assert code == 3 and "ERR_NVGPUCTRPERM" in err and "--with torch" in err


@pytest.mark.parametrize("args, words", [
    (["--with", "torch", "--launch-count", "3", "--ncu", "ncu"], "--ncu-path: options of ncu"),
    (["--with", "torch", "--save-csv", "x.csv"], "--save-csv: options of ncu"),
    (["--with", "torch", "--group-by", "range:2"], "--group-by range:2: options of ncu"),
    (["--with", "torch", "--range", "a", "--range", "b"], "2 --range options: options of ncu"),
    (["--with", "ncu", "--save-trace", "t.json"], "--save-trace: options of --with torch"),
    (["--with", "ncu", "--group-by", "module"], "--group-by module: options of --with torch"),
    (["--save-csv", "x.csv", "--save-trace", "t.json"], "belong to different sources"),
    (["--kernel-name", "gemm(", "--with", "torch"], "'gemm(' is not a regular expression"),
    (["--group-by", "modul"], "not one of op, kernel, module"),
])
def test_options_of_the_other_source_are_refused(run_cli, faketorch: Path, tmp_path: Path, args: list[str],
                                                 words: str) -> None:
    out = tmp_path / "never.json"
    code, stdout, err = run_cli("profile", *args, "-o", out, "--", sys.executable, script(tmp_path, START_STOP))
    assert code == 2 and words in err.replace("\n", " "), err
    assert "Traceback" not in err and not out.exists() and stdout == ""


@pytest.mark.parametrize("program, words", [
    (["./a.out", "--size", "4"], "--with torch runs a Python program"),
    ([sys.executable, "-m", "train"], "runs a script file"),
    ([sys.executable, "missing.py"], "missing.py: no such Python script"),
])
def test_what_torch_cannot_run_exits_2(run_cli, faketorch: Path, program: list[str], words: str) -> None:
    code, _, err = run_cli("profile", "--with", "torch", "--", *program)
    assert code == 2 and words in err.replace("\n", " ") and "Traceback" not in err


@pytest.mark.parametrize("status", [7, 2, 3])
def test_the_programs_failure_exits_4_with_its_status_and_stderr(run_cli, faketorch: Path, tmp_path: Path,
                                                                 status: int) -> None:
    prog = script(tmp_path, "import sys, torch\nsys.stderr.write('CUDA out of memory\\n')\nsys.exit(%d)\n" % status)
    out = tmp_path / "never.json"
    code, stdout, err = run_cli("profile", "--with", "torch", "-o", out, "--", sys.executable, prog)
    assert code == 4 and f"status {status} under torch.profiler" in err and "CUDA out of memory" in err
    assert not out.exists() and stdout == "" and list(faketorch.iterdir()) == []


def test_a_range_never_reached_exits_2_naming_it(run_cli, faketorch: Path, tmp_path: Path) -> None:
    code, _, err = run_cli("profile", "--with", "torch", "--range", "train_step", "--", sys.executable,
                           script(tmp_path, NVTX))
    assert code == 2 and "never reached an NVTX range named 'train_step'" in err and "check --range" in err


def test_no_torch_or_no_gpu_exits_3(run_cli, faketorch: Path, tmp_path: Path,
                                    monkeypatch: pytest.MonkeyPatch) -> None:
    prog = script(tmp_path, START_STOP)
    monkeypatch.setenv("FAKE_TORCH_CUDA", "0")
    code, _, err = run_cli("profile", "--with", "torch", "--", sys.executable, prog)
    assert code == 3 and "sees no CUDA device" in err
    no_torch = tmp_path / "no_torch"
    (no_torch / "torch").mkdir(parents=True)
    (no_torch / "torch" / "__init__.py").write_text("raise ImportError('no torch here')\n")
    monkeypatch.setenv("PYTHONPATH", str(no_torch))  # nor roofline: found through the link profile adds
    code, _, err = run_cli("profile", "--with", "torch", "--", sys.executable, prog)
    assert code == 3 and "cannot import torch (no torch here)" in err and "install PyTorch" in err


def test_a_program_that_ends_its_process_itself(run_cli, faketorch: Path, tmp_path: Path) -> None:
    prog = script(tmp_path, "import os, torch\nos._exit(0)\n")
    code, _, err = run_cli("profile", "--with", "torch", "--", sys.executable, prog)
    assert code == 2 and "os._exit" in err
    prog = script(tmp_path, "import os, torch\nos._exit(9)\n")
    code, _, err = run_cli("profile", "--with", "torch", "--", sys.executable, prog)
    assert code == 4 and "status 9" in err


def test_timeout_ends_the_program_and_its_child(run_cli, faketorch: Path, tmp_path: Path) -> None:
    record, out = tmp_path / "pids", tmp_path / "never.json"
    began = time.monotonic()
    code, _, err = run_cli("profile", "--with", "torch", "--timeout", "2", "-o", out, "--", sys.executable,
                           script(tmp_path, BACKGROUND), record)
    assert code == 5, err
    assert time.monotonic() - began < 2 + GRACE + 5
    assert "--timeout 2" in err and "Traceback" not in err
    assert gone([int(p) for p in record.read_text().split()]), "the program or its child outlived the timeout"
    assert not out.exists() and list(faketorch.iterdir()) == []


def test_sigterm_ends_everything(faketorch: Path, tmp_path: Path) -> None:
    record, out = tmp_path / "pids", tmp_path / "never.json"
    proc = subprocess.Popen([sys.executable, "-m", "roofline", "profile", "--with", "torch", "-o", str(out), "--",
                             sys.executable, str(script(tmp_path, BACKGROUND)), str(record)],
                            env=dict(os.environ), stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        deadline = time.monotonic() + 30
        while not record.exists() and time.monotonic() < deadline and proc.poll() is None:
            time.sleep(0.05)
        assert record.exists(), proc.communicate(timeout=5)
        proc.send_signal(signal.SIGTERM)
        _, err = proc.communicate(timeout=GRACE + 10)
    finally:
        if proc.poll() is None:
            proc.kill()
    assert proc.returncode == 143, err
    assert "the PyTorch capture and the program were ended" in err and "Traceback" not in err
    assert gone([int(p) for p in record.read_text().split()]), "the program or its child outlived roofline"
    assert not out.exists() and list(faketorch.iterdir()) == []


def test_the_running_line_only_on_a_terminal() -> None:
    class Tty(io.StringIO):
        def isatty(self) -> bool:
            return True

    plain, tty = io.StringIO(), Tty()
    for stream in (plain, tty):
        running = Running(stream)
        running(0, 3.2)
        running.end()
    assert plain.getvalue() == ""  # a CI log gets the one 'ran under torch.profiler' line at the end
    assert tty.getvalue() == "\rprofile: running under torch.profiler (3 s)\x1b[K\r\x1b[K"


def test_steps_records_the_first_n_ranges_each_marked_as_a_step(tmp_path: Path) -> None:
    """--steps 2: the window runs from the first 'step' range to the end of the second, each range inside a
    ProfilerStep#k annotation (what torch.profiler's schedule writes), what ran between them recorded too."""
    proc, out, _ = run_capture(tmp_path, script(tmp_path, NVTX), "--range", "step", "--steps", "2")
    assert proc.returncode == 0, proc.stderr
    assert fake(out)["marks"] == ["ProfilerStep#1 begins", "in step", "in inner", "in nested step", "after inner",
                                  "ProfilerStep#1 ends", "after step", "ProfilerStep#2 begins", "second step",
                                  "ProfilerStep#2 ends"]
    proc, out, _ = run_capture(tmp_path, script(tmp_path, NVTX), "--range", "step", "--steps", "3")
    assert proc.returncode == 0 and "the range ran 2 times in the window, not 3" in proc.stderr
    proc, out, _ = run_capture(tmp_path, script(tmp_path, START_STOP), "--range", "start-stop", "--steps", "2")
    assert fake(out)["marks"] == ["ProfilerStep#1 begins", "step", "ProfilerStep#1 ends", "ProfilerStep#2 begins",
                                  "second step", "ProfilerStep#2 ends"]


def test_steps_needs_torch_and_a_range(run_cli, faketorch: Path, tmp_path: Path) -> None:
    prog = script(tmp_path, START_STOP)
    r = run_cli("profile", "--with", "torch", "--steps", "3", "--", sys.executable, prog)
    assert r.code == 2 and "--range" in r.err
    r = run_cli("profile", "--with", "ncu", "--range", "start-stop", "--steps", "3", "--", sys.executable, prog)
    assert r.code == 2 and "--with torch" in r.err
