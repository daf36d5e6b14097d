"""Issue 22: where a results file came from travels beside its document (roofline.records.files.ResultsFile), never
inside it. Every gate and renderer `report` and `plot` call is watched: none may be handed a document carrying a
key of its own making (one starting with '_', as the old in-band `_source` did)."""

from __future__ import annotations

import importlib
import inspect
import json
import sys
from pathlib import Path
from typing import Any, Callable, Mapping

import pytest

pytest.importorskip("matplotlib")

from roofline.records.devices import merge_documents  # noqa: E402
from roofline.records.files import ResultsFile  # noqa: E402
from test_fleet_outliers import _fleet  # noqa: E402

DATA = Path(__file__).parent / "data"
RESULTS = DATA / "results"
WATCHED = ["roofline.gates.report", "roofline.gates.groups", "roofline.gates.devices", "roofline.gates.nodes",
           "roofline.gates.hosts", "roofline.render.charts.plot", "roofline.render.charts.sweep",
           "roofline.render.charts.hierarchy", "roofline.render.charts.fleet", "roofline.render.charts.profile",
           "roofline.render.charts.points", "roofline.render.charts.html", "roofline.render.tables.report",
           "roofline.render.tables.grouped", "roofline.render.tables.fleet", "roofline.render.tables.hosts"]


CALLERS = ["roofline.cli.report", "roofline.cli.plot", "roofline.cli.importer"]  # the commands the test runs


def _private_keys(value: Any, where: str, seen: set[int]) -> list[str]:
    """The keys starting with '_' anywhere in a document (or a ResultsFile's document, or a list of them)."""
    if isinstance(value, ResultsFile):
        return _private_keys(value.doc, where, seen)
    if id(value) in seen or not isinstance(value, (Mapping, list, tuple)):
        return []
    seen.add(id(value))
    if isinstance(value, Mapping):
        found = [f"{where}.{k}" for k in value if isinstance(k, str) and k.startswith("_")]
        return found + [f for k, v in value.items() for f in _private_keys(v, f"{where}.{k}", seen)]
    return [f for i, v in enumerate(value) for f in _private_keys(v, f"{where}[{i}]", seen)]


@pytest.fixture
def watched(monkeypatch: pytest.MonkeyPatch) -> tuple[set[str], list[str]]:
    """(the watched functions that were called, the private keys their arguments carried)."""
    called: set[str] = set()
    found: list[str] = []
    seen: set[int] = set()

    def watch(name: str, fn: Callable[..., Any]) -> Callable[..., Any]:
        def wrapper(*args: Any, **kwargs: Any) -> Any:
            called.add(name)
            for i, arg in enumerate([*args, *kwargs.values()]):
                found.extend(_private_keys(arg, f"{name}(arg {i})", seen))
            return fn(*args, **kwargs)
        return wrapper

    for module_name in CALLERS:  # loaded first, so the sweep below finds the functions they imported by name
        importlib.import_module(module_name)
    wrapped: dict[int, Callable[..., Any]] = {}
    for module_name in WATCHED:
        module = importlib.import_module(module_name)
        for name, fn in inspect.getmembers(module, inspect.isfunction):
            if fn.__module__ == module_name and not name.startswith("_"):
                wrapped[id(fn)] = watch(f"{module_name.rsplit('.', 1)[1]}.{name}", fn)
                monkeypatch.setattr(module, name, wrapped[id(fn)])
    for module_name, module in list(sys.modules.items()):  # `from roofline.gates.report import build_report`
        if module_name.startswith("roofline") and module is not None:
            for name, value in list(vars(module).items()):
                if id(value) in wrapped and value is not wrapped[id(value)]:
                    monkeypatch.setattr(module, name, wrapped[id(value)])
    return called, found


def _several_devices(tmp_path: Path) -> Path:
    parts = []
    for i, name in enumerate(("h100.json", "h100_baseline.json")):
        doc = json.loads((RESULTS / name).read_text())
        doc["device"]["device_id"] = i
        parts.append(doc)
    path = tmp_path / "several.json"
    path.write_text(json.dumps(merge_documents(parts)))
    return path


def test_no_gate_or_renderer_is_handed_a_key_the_reader_added(run_cli, tmp_path, watched):
    called, found = watched
    several, fleet, grouped = _several_devices(tmp_path), tmp_path / "fleet.json", tmp_path / "grouped.json"
    fleet.write_text(json.dumps(_fleet()))
    assert run_cli("import", "ncu", DATA / "ncu" / "h200_nvtx_small.csv", "--group-by", "op", "--spec", "h200",
                   "-o", grouped).code == 0
    runs = [
        ("report", RESULTS / "h100.json", RESULTS / "a100_failed.json", "--baseline", RESULTS / "h100_baseline.json",
         "--format", "json"),
        ("report", several, "--baseline", several, "--max-regression", "5%", "--outlier", "5%"),
        ("report", fleet, "--outlier", "5%", "--format", "markdown"),
        ("report", grouped, "--fail-below-program", "10%", "--format", "json"),
        ("plot", "--results", RESULTS / "h100.json", "-o", tmp_path / "r.svg"),
        ("plot", "--sweep", RESULTS / "sweep.json", "-o", tmp_path / "s.svg"),
        ("plot", "--hierarchy", "--results", RESULTS / "h200_ncu_profiled.json", "-o", tmp_path / "h.svg"),
        ("plot", "--results", fleet, "-o", tmp_path / "f.svg"),
        ("plot", "--results", grouped, "-o", tmp_path / "g.svg"),
    ]
    for argv in runs:
        assert run_cli(*argv).code in (0, 1), argv  # 1: a gate failed, the report written first
    assert {"report.build_report", "groups.group_report", "devices.host_report", "nodes.fleet_rows",
            "plot.roofline_figure", "sweep.sweep_figure", "hierarchy.hierarchy_figure", "fleet.fleet_figure",
            "profile.profile_figure"} <= called
    assert found == []


def test_the_watch_sees_a_key_the_reader_added(watched):
    """The check above can fail: a document carrying the old in-band key is caught."""
    from roofline.gates import report

    called, found = watched
    doc = json.loads((RESULTS / "h100.json").read_text())
    report.build_report([ResultsFile.of({**doc, "_source": "h100.json"})])
    assert "report.build_report" in called and found == ["report.build_report(arg 0)[0]._source"]
