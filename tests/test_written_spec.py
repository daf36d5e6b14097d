"""roofline.measurement.calibrate.spec.written_spec: the one way a calibration (one GPU, a host, a fleet) becomes the
text of a spec file: dated today by this version, amended (energy, links) with that date, and read back through the
spec loader before anything is written."""

from __future__ import annotations

import datetime as dt
from pathlib import Path

import pytest
import yaml

from roofline.errors import InputError
from roofline.load.specs import SpecCatalog, load_spec
from roofline.measurement.calibrate.spec import written_spec
from roofline.version import __version__

from test_calibrate import H200_DEVICE, figures


@pytest.fixture(scope="module")
def h200():
    return SpecCatalog.bundled().resolve("h200-sxm")


def test_the_text_is_the_document_dated_today_and_it_loads(tmp_path: Path, h200) -> None:
    before = dt.datetime.now(dt.timezone.utc).date().isoformat()
    spec = written_spec(figures(), H200_DEVICE, h200)
    after = dt.datetime.now(dt.timezone.utc).date().isoformat()
    assert spec.warnings == []
    assert spec.doc["measurement"]["date"] in (before, after)
    assert spec.doc["measurement"]["tool_version"] == __version__
    assert yaml.safe_load(spec.text) == spec.doc and spec.text.startswith("# Written by roofline calibrate")
    path = tmp_path / "m.yaml"
    path.write_text(spec.text, encoding="utf-8")
    assert load_spec(path).id == "h200-sxm-measured"


def test_the_amendment_gets_the_spec_date_and_adds_its_warnings(h200) -> None:
    seen: list[str] = []

    def amend(doc: dict, date: str) -> tuple[dict, list[str]]:
        seen.append(date)
        return {**doc, "notes": doc["notes"] + " Amended."}, ["warning: amended"]

    base = written_spec(figures(), H200_DEVICE, h200)
    spec = written_spec(figures(), H200_DEVICE, h200, amend)
    assert seen == [spec.doc["measurement"]["date"]]
    assert spec.doc["notes"].endswith(" Amended.") and "Amended." in spec.text
    assert spec.warnings == [*base.warnings, "warning: amended"]


def test_the_datasheet_fallback_warning_is_kept_beside_the_amendments(h200) -> None:
    from roofline.measurement.calibrate.figures import FAILED, Figure

    figs = figures(memory_latency=Figure("memory.latency", FAILED, None, "pointer chase", "wrong cycle"))
    spec = written_spec(figs, H200_DEVICE, h200, lambda doc, date: (doc, ["warning: later"]))
    assert len(spec.warnings) == 2 and "latency" in spec.warnings[0] and spec.warnings[1] == "warning: later"


def test_a_spec_the_loader_refuses_is_an_error_before_any_file(h200) -> None:
    def broken(doc: dict, date: str) -> tuple[dict, list[str]]:
        return {**doc, "memory": {**doc["memory"], "bandwidth": "fast"}}, []

    with pytest.raises(InputError, match="bandwidth"):
        written_spec(figures(), H200_DEVICE, h200, broken)


def test_calibrate_energy_amends_the_spec_with_its_block_cited_on_the_spec_date(h200) -> None:
    from roofline.measurement.calibrate.energy import with_energy
    from test_energy_calibrate import _runs

    spec = written_spec(figures(), H200_DEVICE, h200, with_energy(_runs(), "NVIDIA H200"))
    date = spec.doc["measurement"]["date"]
    assert list(spec.doc).index("energy") == list(spec.doc).index("notes") - 1
    cite = spec.doc["sources"][-1]
    assert "energy.idle_power" in cite["for"]
    assert cite["cite"].startswith(f"roofline calibrate --energy {__version__} on NVIDIA H200, {date}")
    assert yaml.safe_load(spec.text)["energy"] == spec.doc["energy"]
