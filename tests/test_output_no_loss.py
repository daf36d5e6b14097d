"""Issue 31, data loss: -o never replaces one of the command's inputs (however the path is spelled: the same name,
'..', a symlink, a hard link), never writes a file named after a folder, never writes through a symlink, and never
replaces a file of another kind (a trace, a user's notes, a datasheet) unless --force says so.

Every refusal is exit 2 with one message naming the path, and the file it protects is byte for byte unchanged."""

from __future__ import annotations

import json
import os
import shutil
import time
from pathlib import Path

import pytest

DATA = Path(__file__).resolve().parent / "data"
TRACE = DATA / "kineto" / "step.json"
RESULTS = DATA / "results" / "h100.json"
KERNELS = DATA / "kernels"
ANALYZE = ("analyze", "--kernels", KERNELS, "--spec", "t4", "t_vadd")


@pytest.fixture
def trace(tmp_path: Path) -> Path:
    copy = tmp_path / "in.json"
    shutil.copyfile(TRACE, copy)
    return copy


@pytest.fixture
def results(tmp_path: Path) -> Path:
    copy = tmp_path / "f.json"
    shutil.copyfile(RESULTS, copy)
    return copy


def _refused(r, path: Path, *words: str) -> None:
    assert r.code == 2, (r.code, r.err)
    assert "Traceback" not in r.err and str(path) in r.err
    for word in words:
        assert word in r.err, r.err


# ---- an output is never one of the inputs ---------------------------------------------------------------------


def test_import_torch_onto_its_own_trace_is_refused(run_cli, trace):
    before = trace.read_bytes()
    r = run_cli("import", "torch", trace, "--spec", "h200", "-o", trace)
    _refused(r, trace, "is the input", "never replaces its input")
    assert trace.read_bytes() == before


def test_report_json_onto_its_results_is_refused(run_cli, results):
    before = results.read_bytes()
    r = run_cli("report", results, "--format", "json", "-o", results)
    _refused(r, results, "is the input RESULTS.json")
    assert results.read_bytes() == before


@pytest.mark.parametrize("spelling", ["dotdot", "symlink", "hardlink", "relative"])
def test_every_spelling_of_the_same_file_is_the_input(run_cli, results, tmp_path, monkeypatch, spelling):
    before = results.read_bytes()
    if spelling == "dotdot":
        (tmp_path / "sub").mkdir()
        output = tmp_path / "sub" / ".." / results.name
    elif spelling == "symlink":  # the input given through a link, the output by its own name
        output, link = results, tmp_path / "link.json"
        link.symlink_to(results)
        results = link
    elif spelling == "hardlink":
        output = tmp_path / "hard.json"
        os.link(results, output)
    else:
        monkeypatch.chdir(tmp_path)
        output = Path(results.name)
    r = run_cli("report", results, "--format", "markdown", "-o", output)
    _refused(r, output, "is the input")
    assert (tmp_path / "f.json").read_bytes() == before


def test_plot_onto_its_results_is_refused(run_cli, results):
    before = results.read_bytes()
    r = run_cli("plot", "--results", results, "-o", results.with_suffix(".json"))
    _refused(r, results, "--results")
    assert results.read_bytes() == before


def test_analyze_onto_a_descriptor_in_its_kernels_folder_is_refused(run_cli, tmp_path):
    folder = tmp_path / "kernels"
    shutil.copytree(KERNELS, folder)
    victim = sorted(folder.glob("*.yaml"))[0]
    before = victim.read_bytes()
    r = run_cli("analyze", "--kernels", folder, "--spec", "t4", "t_vadd", "-o", victim)
    _refused(r, victim, "a file read from the input --kernels")
    assert victim.read_bytes() == before


def test_a_spec_given_by_path_is_an_input(run_cli, tmp_path):
    spec = tmp_path / "t4.yaml"
    shutil.copyfile(DATA / "specs" / "toy.yaml", spec)
    before = spec.read_bytes()
    r = run_cli("analyze", "--kernels", KERNELS, "--spec", spec, "t_vadd", "-o", spec)
    _refused(r, spec, "is the input --spec")
    assert spec.read_bytes() == before


def test_two_outputs_on_one_file_are_refused_before_the_program_runs(run_cli, tmp_path):
    out = tmp_path / "both.json"
    r = run_cli("profile", "--with", "torch", "-o", out, "--save-trace", out, "--", "python3", "-c", "pass")
    _refused(r, out, "give each output its own path")
    assert not out.exists()


def test_the_check_runs_before_the_work(run_cli, trace, monkeypatch):
    """The refusal comes before the trace is read: an import that would take minutes wastes none of them."""
    import roofline.kineto.reader

    def no_read(*_a, **_k):
        raise AssertionError("the trace was read before the output was checked")

    monkeypatch.setattr(roofline.kineto.reader, "read_trace", no_read)
    r = run_cli("import", "torch", trace, "-o", trace)
    _refused(r, trace, "is the input")


# ---- folders: never a file named after one --------------------------------------------------------------------


@pytest.mark.parametrize("argv, example", [(ANALYZE, "analysis.json"), (("report", RESULTS), "report.md"),
                                           (("plot", "--results", RESULTS), "roofline.png"),
                                           (("import", "torch", TRACE, "--spec", "h200"), "results.json")])
def test_a_trailing_slash_is_refused_and_makes_nothing(run_cli, tmp_path, argv, example):
    target = f"{tmp_path / 'newdir'}/"
    r = run_cli(*argv, "-o", target)
    assert r.code == 2 and "names a folder; give a file name in it" in r.err, r.err
    assert f"e.g. {target}{example}" in r.err.replace("\n", "")
    assert list(tmp_path.iterdir()) == []  # neither a folder nor a file called newdir


def test_an_existing_folder_is_refused(run_cli, tmp_path):
    r = run_cli("report", RESULTS, "-o", tmp_path)
    assert r.code == 2 and "Traceback" not in r.err
    assert list(tmp_path.iterdir()) == []


# ---- a file of another kind is not replaced without --force ---------------------------------------------------


def test_results_never_replace_a_file_that_is_not_a_results_document(run_cli, tmp_path):
    notes = tmp_path / "notes.json"
    notes.write_text('{"my": "notes"}\n')
    r = run_cli("import", "torch", TRACE, "--spec", "h200", "-o", notes)
    _refused(r, notes, "not a roofline document", "--force")
    assert notes.read_text() == '{"my": "notes"}\n'


def test_a_kineto_trace_is_not_a_results_document(run_cli, tmp_path):
    other = tmp_path / "other-trace.json"
    shutil.copyfile(TRACE, other)
    before = other.read_bytes()
    r = run_cli("import", "torch", TRACE, "--spec", "h200", "-o", other)
    _refused(r, other, "not a roofline document")
    assert other.read_bytes() == before


def test_results_replace_results_and_force_replaces_anything(run_cli, tmp_path, results):
    before = results.read_bytes()
    r = run_cli("import", "torch", TRACE, "--spec", "h200", "-o", results)  # a measurement: another kind of run
    _refused(r, results, "a results file of a measurement", "--force")
    assert results.read_bytes() == before
    r = run_cli("import", "torch", TRACE, "--spec", "h200", "--force", "-o", results)
    assert r.code == 0, r.err
    assert json.loads(results.read_text())["backend"] == "torch"
    r = run_cli("import", "torch", TRACE, "--spec", "h200", "-o", results)  # an import's results: replaced
    assert r.code == 0, r.err
    notes = tmp_path / "notes.txt"
    notes.write_text("mine")
    r = run_cli("import", "torch", TRACE, "--spec", "h200", "--force", "-o", notes)
    assert r.code == 0, r.err
    assert json.loads(notes.read_text())["schema"] == "roofline/results/v1"


def test_a_report_never_replaces_a_results_document(run_cli, tmp_path, results):
    other = tmp_path / "other.json"
    shutil.copyfile(RESULTS, other)
    before = other.read_bytes()
    for fmt in ("json", "markdown"):
        r = run_cli("report", results, "--format", fmt, "-o", other)
        _refused(r, other, "roofline/results document")
    assert other.read_bytes() == before


def test_a_figure_replaces_only_a_figure_of_its_format(run_cli, tmp_path):
    chart = tmp_path / "chart.png"
    chart.write_text("not a picture")
    r = run_cli("plot", "--results", RESULTS, "-o", chart)
    _refused(r, chart, "not a PNG image")
    assert chart.read_text() == "not a picture"
    chart.unlink()
    assert run_cli("plot", "--results", RESULTS, "-o", chart).code == 0
    assert run_cli("plot", "--results", RESULTS, "-o", chart).code == 0  # a PNG over the PNG it made


def test_text_output_replaces_text_and_its_own_json(run_cli, tmp_path):
    out = tmp_path / "a.json"
    out.write_text("old text")
    assert run_cli(*ANALYZE, "--format", "markdown", "-o", out).code == 0
    r = run_cli(*ANALYZE, "--format", "json", "-o", out)  # a document replaces only a document of its kind
    _refused(r, out, "not a roofline document")
    doc = tmp_path / "b.json"
    for _ in range(2):  # a new file, then the analysis over the analysis
        r = run_cli(*ANALYZE, "--format", "json", "-o", doc)
        assert r.code == 0, r.err
    assert json.loads(doc.read_text())["schema"] == "roofline/analysis/v1"


def test_the_refusal_comes_before_a_measurement(run_cli, tmp_path):
    """measure/sweep/profile check -o as the options are read: a whole run is not spent to be refused."""
    notes = tmp_path / "notes.txt"
    notes.write_text("mine")
    r = run_cli("measure", "--backend", "numpy", "--spec", "t4", "--kernels", DATA / "measure", "m_add",
                "-p", "n=1000", "--min-time", "0", "--min-repeats", "1", "-o", notes)
    assert r.code == 2 and "not replaced" in r.err and "--force" in r.err, r.err
    assert "m_add" not in r.out and notes.read_text() == "mine"


def test_calibrate_never_replaces_a_datasheet(run_cli, tmp_path):
    sheet = tmp_path / "mine.yaml"
    shutil.copyfile(DATA / "specs" / "toy.yaml", sheet)
    before = sheet.read_bytes()
    r = run_cli("calibrate", "--spec", "h200", "-o", sheet)
    assert r.code == 2 and "not a measured spec" in r.err, r.err
    assert sheet.read_bytes() == before


def test_the_api_write_never_replaces_a_file_that_is_not_results(tmp_path):
    from roofline.errors import InputError
    from roofline.records.document import ResultsDocument

    doc = ResultsDocument.from_json(json.loads(RESULTS.read_text()))
    notes = tmp_path / "notes.txt"
    notes.write_text("mine")
    with pytest.raises(InputError, match="not a roofline document.*force=True"):
        doc.write(notes)
    assert notes.read_text() == "mine"
    doc.write(notes, force=True)
    doc.write(notes)  # now a results document: replaced by results
    assert json.loads(notes.read_text())["schema"] == "roofline/results/v1"


def test_telling_a_file_kind_never_blows_up_on_a_hostile_head(tmp_path):
    """why_not_replace reads 64 KiB of the existing file with a regex: plain values with spaces after them, which
    an ambiguous pattern would try in exponentially many ways, are answered at once."""
    from roofline.load.jsonio import why_not_replace

    hostile = tmp_path / "h.json"
    hostile.write_bytes(b"{" + b'"a": 1    ,  ' * 4000 + b'"x": {}}')
    started = time.monotonic()
    assert "not a roofline document" in why_not_replace(hostile, "roofline/results/v1")
    assert time.monotonic() - started < 5  # milliseconds; the ambiguous pattern did not finish 20 items in a minute
    late = tmp_path / "late.json"
    late.write_bytes(b"{" + b'"a": 1    ,  ' * 4000 + b'"schema": "roofline/results/v1"}')
    assert why_not_replace(late, "roofline/results/v1") is None
