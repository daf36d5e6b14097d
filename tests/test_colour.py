"""Colour only on a terminal that wants it (roofline.render.console): NO_COLOR, TERM=dumb and MPI launchers (whose
rank output only looks like a terminal: `mpirun ... > log` filled the log with escape codes) get none unless
FORCE_COLOR or --color says otherwise; and a table of CPU ranks is not headed GPU."""

from __future__ import annotations

import io
import sys

import pytest

from roofline.render.console import MPI_RANK_VARIABLES, colour, interactive

ESC = "\x1b["
COLOUR_VARIABLES = ("NO_COLOR", "FORCE_COLOR", "TERM", "COLORTERM", *MPI_RANK_VARIABLES)


class Terminal(io.StringIO):
    """Standard output as a terminal would be: isatty() is true."""

    def isatty(self) -> bool:
        return True


@pytest.fixture
def clean_env(monkeypatch):
    for name in COLOUR_VARIABLES:
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("TERM", "xterm-256color")
    return monkeypatch


def _table_on_a_terminal(monkeypatch, *extra: str) -> str:
    """`roofline analyze` (a coloured table) written to a terminal; what it wrote."""
    from roofline.cli import main

    out = Terminal()
    monkeypatch.setattr(sys, "stdout", out)
    with pytest.raises(SystemExit) as exc:
        main(["analyze", "vector_add", "--spec", "h100", *extra])
    assert exc.value.code == 0
    return out.getvalue()


@pytest.mark.parametrize("env, choice, expected", [
    ({}, None, None),
    ({"NO_COLOR": "1"}, None, False),
    ({"NO_COLOR": "yes"}, None, False),
    ({"NO_COLOR": ""}, None, None),  # no-color.org: only a non-empty value counts
    ({"TERM": "dumb"}, None, False),
    ({"OMPI_COMM_WORLD_RANK": "0"}, None, False),
    ({"OMPI_COMM_WORLD_SIZE": "4"}, None, False),
    ({"PMI_RANK": "3"}, None, False),
    ({"PMIX_RANK": "3"}, None, False),
    ({"SLURM_PROCID": "0"}, None, False),
    ({"OMPI_COMM_WORLD_RANK": "0", "FORCE_COLOR": "1"}, None, True),
    ({"NO_COLOR": "1"}, "always", True),
    ({}, "never", False),
    ({"FORCE_COLOR": "1"}, "never", False),
    ({}, "auto", None),
])
def test_the_colour_decision(env, choice, expected):
    assert colour(choice, env) is expected


def test_a_terminal_gets_colour(clean_env):
    """The baseline the other cases are held against: without any of the variables, a terminal is coloured."""
    assert ESC in _table_on_a_terminal(clean_env)


@pytest.mark.parametrize("name, value", [("NO_COLOR", "1"), ("TERM", "dumb"), ("OMPI_COMM_WORLD_RANK", "0"),
                                         ("PMI_RANK", "1"), ("PMIX_RANK", "1"), ("SLURM_PROCID", "2")])
def test_no_escape_codes_where_colour_is_not_wanted(clean_env, name, value):
    clean_env.setenv(name, value)
    text = _table_on_a_terminal(clean_env)
    assert "vector_add" in text and ESC not in text


def test_force_color_and_the_color_option_win(clean_env):
    clean_env.setenv("OMPI_COMM_WORLD_RANK", "0")
    assert ESC in _table_on_a_terminal(clean_env, "--color", "always")
    clean_env.setenv("FORCE_COLOR", "1")
    assert ESC in _table_on_a_terminal(clean_env)
    assert ESC not in _table_on_a_terminal(clean_env, "--color", "never")


def test_color_always_colours_a_pipe(clean_env, run_cli):
    r = run_cli("analyze", "vector_add", "--spec", "h100", "--color", "always")
    assert r.code == 0 and ESC in r.out
    r = run_cli("analyze", "vector_add", "--spec", "h100")
    assert r.code == 0 and ESC not in r.out


def test_no_spinner_on_a_launchers_pseudo_terminal(clean_env):
    """The spinner and bars redraw with cursor codes: under mpirun they would fill the log as colour did."""
    from roofline.cli.progress import Steps

    assert interactive(Terminal())
    clean_env.setenv("OMPI_COMM_WORLD_RANK", "1")
    assert not interactive(Terminal())
    stream = Terminal()
    with Steps("measure", stream=stream) as steps:
        steps.start("copy")
        steps.finish("copy", "OK")
    assert ESC not in stream.getvalue() and "measure: copy: OK" in stream.getvalue()


def test_a_table_of_cpu_ranks_is_not_headed_gpu():
    from rich.console import Console

    from test_fleet_outliers import _fleet
    from roofline.cli.fleet import _measure_table
    from roofline.render.tables.measure import results_table

    def text(table) -> str:
        console = Console(width=250, record=True, file=io.StringIO())
        console.print(table)
        return console.export_text()

    small = _fleet(hosts=2, per_host=2)
    big = _fleet()
    assert small["backend"] == "numpy"
    for doc in (small, big):
        shown = text(_measure_table(doc)(doc))
        assert "GPU" not in shown.replace("not a GPU", ""), shown
        assert "CPU" in shown
    gpu = {**small, "backend": "cupy", "device": {**small["device"], "kind": "gpu"}}
    header = text(results_table(gpu)).splitlines()
    assert any(" GPU " in line and "kernel" in line for line in header)


def test_mpirun_into_a_log_writes_no_escape_codes_and_heads_cpu_ranks_cpu(tmp_path):
    """The case the issue met: `mpirun -n 2 roofline measure --backend numpy ... > log`. Open MPI forwards each
    rank's output through a pseudo-terminal, so the table thought it was on a terminal: the log held escape codes
    and a column headed GPU for CPU ranks."""
    from mpi_job import mpi_missing, run_job

    why = mpi_missing()
    if why is not None:
        pytest.skip(why)
    job = run_job(["mpirun", "-n", "2", sys.executable, "-m", "roofline", "measure", "--backend", "numpy",
                   "vector_add", "-p", "n=1024", "--min-time", "0", "--min-repeats", "3"], tmp_path,
                  env={"NO_COLOR": "", "FORCE_COLOR": "", "TERM": "xterm-256color"})
    assert job.returncode == 0, job.stderr[-2000:]
    assert "vector_add" in job.stdout and ESC not in job.stdout and ESC not in job.stderr
    header = next(line for line in job.stdout.splitlines() if "kernel" in line and "status" in line)
    assert "CPU" in header and "GPU" not in header


def test_a_report_of_cpu_ranks_is_not_headed_gpu(run_cli, tmp_path, monkeypatch):
    import json

    from test_fleet_outliers import _fleet

    monkeypatch.setenv("COLUMNS", "250")
    path = tmp_path / "fleet.json"
    path.write_text(json.dumps(_fleet(hosts=2, per_host=2)))
    for fmt in ("table", "markdown"):
        r = run_cli("report", path, "--format", fmt)
        assert r.code == 0, r.err
        assert "CPUs" in r.out and "GPU" not in r.out, r.out
