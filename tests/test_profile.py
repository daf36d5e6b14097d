"""`roofline profile -- PROGRAM`: ncu driven with the roofline metrics, the program's failure passed through, the
progress line, and the grouped, ranked results, with a fake `ncu` on PATH (tests/data/ncu/fake/ncu, a Python
script that writes a committed capture) as kerncraft fakes likwid."""

from __future__ import annotations

import io
import json
import sys
from pathlib import Path

import pytest

from roofline.ncu.metrics import IMPORT_METRICS, metrics_argument
from roofline.ncu.program import START_STOP, ProgressLine, Scope, import_command, profile_command
from conftest import NCU

FAKE = NCU / "fake"
GPT2 = NCU / "h200_gpt2_profile.csv"
OK = [sys.executable, "-c", "print('model ran')"]


@pytest.fixture
def fake_ncu(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> Path:
    """The fake ncu first on PATH, recording its argument lists in the returned file."""
    monkeypatch.setenv("PATH", f"{FAKE}:{__import__('os').environ['PATH']}")
    record = tmp_path / "ncu-args.jsonl"
    monkeypatch.setenv("FAKE_NCU_ARGS", str(record))
    monkeypatch.setenv("FAKE_NCU_CSV", str(GPT2))
    monkeypatch.delenv("FAKE_NCU_STDERR", raising=False)
    return record


def test_command_asks_for_exactly_the_roofline_metrics() -> None:
    cmd = profile_command("ncu", ["python3", "m.py", "--batch", "4"], "/tmp/r.ncu-rep",
                          Scope(("layer1", START_STOP), "gemm|attn", 3, 10))
    assert cmd[cmd.index("--metrics") + 1] == metrics_argument(IMPORT_METRICS)
    assert cmd[cmd.index("--clock-control") + 1] == "none" and "--nvtx" in cmd
    assert cmd[cmd.index("--nvtx-include") + 1] == "layer1/"
    assert cmd[cmd.index("--profile-from-start") + 1] == "off"
    assert cmd[cmd.index("--kernel-name") + 1] == "regex:gemm|attn"
    assert cmd[cmd.index("--launch-skip") + 1] == "3" and cmd[cmd.index("--launch-count") + 1] == "10"
    assert cmd[-4:] == ["python3", "m.py", "--batch", "4"]  # the program's own arguments untouched, last
    assert import_command("ncu", "/tmp/r.ncu-rep") == ["ncu", "--import", "/tmp/r.ncu-rep", "--csv", "--page",
                                                       "raw", "--print-units", "base"]


def test_profile_writes_grouped_results(run_cli, fake_ncu: Path, tmp_path: Path) -> None:
    out, csv = tmp_path / "gpt2.json", tmp_path / "gpt2.csv"
    code, stdout, err = run_cli("profile", "--range", "start-stop", "-o", out, "--save-csv", csv, "--", *OK)
    assert code in (0, None), err
    runs = [json.loads(line) for line in fake_ncu.read_text().splitlines()]
    assert runs[0][-len(OK):] == OK and runs[0][runs[0].index("--profile-from-start") + 1] == "off"
    report = runs[0][runs[0].index("--export") + 1]
    assert runs[1] == ["--import", report, "--csv", "--page", "raw", "--print-units", "base"]
    assert "profile: 235 launches profiled in" in err  # one ==PROF== Profiling line per launch, counted
    doc = json.loads(out.read_text())
    assert doc["groups"][0]["name"] == "aten::mm" and doc["groups"][0]["by"] == "op"
    assert [g["recoverable_time"] for g in doc["groups"]] == sorted((g["recoverable_time"] for g in doc["groups"]),
                                                                   reverse=True)
    assert doc["source"]["command"] == OK and csv.read_text() == GPT2.read_text()
    assert "aten::mm" in stdout and "program: GPU time 7.31 ms" in stdout.replace("\n", " ")


@pytest.mark.parametrize("status", [7, 2, 3, 101])
def test_program_failure_exits_4_with_its_status_and_stderr(run_cli, fake_ncu: Path, tmp_path: Path,
                                                            status: int) -> None:
    """The program's own status is said, never passed through: its 2 or 3 would read as our input error or missing
    backend."""
    out = tmp_path / "never.json"
    program = [sys.executable, "-c", f"import sys; sys.stderr.write('CUDA out of memory\\n'); sys.exit({status})"]
    code, stdout, err = run_cli("profile", "-o", out, "--", *program)
    assert code == 4
    assert "CUDA out of memory" in err and f"status {status}" in err and "==ERROR==" not in err
    assert not out.exists() and stdout == ""


def test_without_ncu_exit_3_with_the_fix(run_cli, monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.setenv("PATH", str(tmp_path))
    monkeypatch.setattr("roofline.ncu.profile._CUDA_NCU", ())
    code, _, err = run_cli("profile", "--", *OK)
    assert code == 3 and "not on PATH" in err and "--ncu-path PATH" in err
    code, _, err = run_cli("profile", "--ncu", tmp_path / "nope", "--", *OK)
    assert code == 3 and "no such executable" in err


def test_ncu_that_cannot_profile_exits_3(run_cli, fake_ncu: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("FAKE_NCU_STDERR", "==ERROR== ERR_NVGPUCTRPERM - The user does not have permission")
    code, _, err = run_cli("profile", "--", *OK)
    assert code == 3 and "ERR_NVGPUCTRPERM" in err


def test_nothing_profiled_names_the_scope(run_cli, fake_ncu: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("FAKE_NCU_CSV")
    code, _, err = run_cli("profile", "--kernel-name", "nomatch", "--", *OK)
    assert code == 2 and "No kernels were profiled" in err and "--kernel-name" in err


def test_kernel_name_is_the_option_and_kernel_its_deprecated_alias(run_cli, fake_ncu: Path) -> None:
    """Issue 22: ncu's own word, --kernel-name REGEX (--kernel clashed with --kernels PATH); --kernel still works."""
    code, _, err = run_cli("profile", "--kernel-name", "gemm|attn", "--launch-count", "4", "--format", "json", "--",
                           *OK)
    assert code in (0, None), err and "deprecated" not in err
    assert json.loads(_).get("source", {}).get("scope") == {"kernel_name": "gemm|attn", "launch_skip": 0,
                                                            "launch_count": 4}  # what the totals cover
    code, _, err = run_cli("profile", "--kernel", "softmax", "--", *OK)
    assert code in (0, None), err
    assert "warning: --kernel is deprecated" in err and "use --kernel-name REGEX" in err
    runs = [json.loads(line) for line in fake_ncu.read_text().splitlines()]
    named = [r[r.index("--kernel-name") + 1] for r in runs if "--kernel-name" in r]
    assert named == ["regex:gemm|attn", "regex:softmax"]
    calls = fake_ncu.read_text()
    code, _, err = run_cli("profile", "--kernel-name", "(gemm", "--", *OK)
    assert code == 2 and "'(gemm' is not a regular expression" in err
    assert fake_ncu.read_text() == calls  # refused before ncu or the program ran
    help_text = run_cli("profile", "--help").out
    assert "--kernel-name REGEX" in help_text and "--kernel REGEX" not in help_text
    code, _, err = run_cli("profile", "--kernel", "a", "--kernel-name", "b", "--", *OK)
    assert code == 2 and "give one of them" in err


def test_group_by_is_checked(run_cli, fake_ncu: Path) -> None:
    code, _, err = run_cli("profile", "--group-by", "range:0", "--", *OK)
    assert code == 2 and "range:N" in err


def test_progress_plain_lines_off_a_terminal() -> None:
    stream = io.StringIO()
    progress = ProgressLine(stream, every=10)
    for launches, elapsed in ((0, 0.5), (3, 1.0), (5, 2.0), (9, 12.0), (9, 30.0)):
        progress(launches, elapsed)
    progress.done(9, 31.0)
    assert stream.getvalue().splitlines() == ["profile: 3 launches profiled (1 s)", "profile: 9 launches profiled "
                                              "(12 s)", "profile: 9 launches profiled in 31.0 s"]


def test_progress_live_line_on_a_terminal() -> None:
    class Tty(io.StringIO):
        def isatty(self) -> bool:
            return True

    stream = Tty()
    progress = ProgressLine(stream)
    progress(1, 0.4)
    progress(2, 0.9)
    progress.done(2, 1.0)
    assert stream.getvalue().count("\r") == 3 and "\n" not in stream.getvalue()[:-1]
    assert stream.getvalue().endswith("profile: 2 launches profiled in 1.0 s\x1b[K\n")
