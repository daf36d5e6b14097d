"""roofline.measurement.single: `measure` on one device, decided then run, on the host CPU (--backend numpy) with the
kernels of tests/data/measure: the notes, the refusal when nothing can run, the entries kept when a kernel stops the
run (once the progress display is closed), the document and the verdict. The command around it is
tests/test_measure_cli.py."""

from __future__ import annotations

import contextlib
from typing import Any

import pytest

from roofline.errors import GateFailed, InputError, RooflineError
from roofline.load.selection import load_selection
from roofline.measurement.policy import MeasurePolicy
from roofline.measurement.progress import SILENT
from roofline.measurement.single import single_run, verdict

from test_measure_cli import BROKEN, MEASURE

POLICY = MeasurePolicy(min_time=0.0, min_repeats=2)


def _run(names: tuple[str, ...], paths: tuple = (MEASURE,), notes: list[str] | None = None) -> Any:
    selected, overrides = load_selection(names, paths, ("n=1000",))
    return single_run(selected, overrides, bool(names), "numpy", 0, "h200", POLICY,
                      (notes if notes is not None else []).append)


def _showing(events: list[str]) -> Any:
    @contextlib.contextmanager
    def showing() -> Any:
        events.append("open")
        try:
            yield SILENT
        finally:  # as Steps closes its spinner whatever happened
            events.append("closed")

    return showing


def test_measure_and_document_with_the_host_note(no_bundled_kernels) -> None:
    notes: list[str] = []
    run = _run(("m_add",), notes=notes)
    assert [d.name for d in run.runnable] == ["m_add"] and run.machine is not None and run.not_run == []
    assert len(notes) == 1 and notes[0].startswith("note: --backend numpy runs the NumPy references on the HOST CPU")
    events: list[str] = []
    entries = run.measure(_showing(events), lambda doc, n: pytest.fail("nothing stopped the run"))
    assert events == ["open", "closed"] and [e["name"] for e in entries] == ["m_add"]
    doc = run.document(entries)
    assert doc["schema"] == "roofline/results/v1" and doc["kernels"][0]["status"] == "OK"
    verdict(doc)


def test_every_kernel_skips_the_analysis_only_one_with_a_note(no_bundled_kernels) -> None:
    notes: list[str] = []
    run = _run((), notes=notes)
    assert "note: m_analysis_only skipped: it has no implementation (analysis only)" in notes
    assert "m_analysis_only" not in [d.name for d in run.runnable]


def test_nothing_that_can_run_is_an_input_error_after_the_notes(no_bundled_kernels) -> None:
    with pytest.raises(InputError, match="has no implementation"):
        _run(("m_analysis_only",))


def test_a_kernel_that_stops_the_run_hands_over_what_ran_once_the_display_is_closed(no_bundled_kernels) -> None:
    run = _run(("m_add", "m_inputs_list"), (MEASURE, BROKEN))
    events: list[str] = []
    kept: list[tuple[list[str], int]] = []

    def stopped(doc: dict, measured: int) -> None:
        events.append("stopped")
        kept.append(([k["name"] for k in doc["kernels"]], measured))

    with pytest.raises(RooflineError, match="inputs: must return a dict"):
        run.measure(_showing(events), stopped)
    assert events == ["open", "closed", "stopped"] and kept == [(["m_add"], 1)]


def test_the_verdict_names_five_failed_kernels_then_counts() -> None:
    doc = {"kernels": [{"name": f"k{i}", "status": "FAILED", "verified": False} for i in range(7)]
           + [{"name": "ok", "status": "OK", "verified": True}]}
    with pytest.raises(GateFailed, match=r"^7 kernels FAILED verification: k0, k1, k2, k3, k4 and 2 more$"):
        verdict(doc)
    verdict({"kernels": doc["kernels"][-1:]})
