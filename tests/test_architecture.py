"""docs/architecture.md's rooms and floors are generated from the imports by docs/architecture.py: the page is what
the code says, and no room imports one on its own floor or above (issue 30: rooms that never import back up)."""

from __future__ import annotations

import importlib.util
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
SCRIPT = ROOT / "docs" / "architecture.py"
_spec = importlib.util.spec_from_file_location("architecture", SCRIPT)
arch = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(arch)


def test_the_page_is_current_and_every_import_runs_down_the_floors():
    out = subprocess.run([sys.executable, str(SCRIPT), "--check"], capture_output=True, text=True, cwd=ROOT)
    assert out.returncode == 0, out.stderr


def test_the_scan_sees_imports_inside_functions_and_of_the_package_face():
    edges = arch.room_imports()
    # api.Result.show imports the renderer inside the method: an edge all the same
    assert ("api", "render") in edges and ("__init__", "api") in edges
    assert ("cli", "measurement") in edges and ("measurement", "model") in edges


def test_an_import_up_a_floor_or_across_one_is_named_with_where(tmp_path):
    wrong = arch.upward({("model", "records"): ["roofline/model/x.py:3"], ("sizes", "gates"): ["roofline/sizes/y.py:9"],
                         ("records", "load"): ["roofline/records/z.py:1"], ("newroom", "model"): ["roofline/newroom.py:2"]})
    assert wrong == ["model -> records: imports a room above it, at roofline/model/x.py:3",
                     "newroom -> model: room 'newroom' is on no floor (add it to FLOORS) at roofline/newroom.py:2",
                     "sizes -> gates: imports a room on its own floor, at roofline/sizes/y.py:9"]


def test_a_stage_importing_the_package_face_is_an_upward_import(tmp_path):
    package = tmp_path / "roofline"
    (package / "ncu").mkdir(parents=True)
    (package / "__init__.py").write_text("from roofline import api\n")
    (package / "api.py").write_text("")
    (package / "ncu" / "__init__.py").write_text("")
    (package / "ncu" / "importer.py").write_text("def f():\n    from roofline import __version__\n")
    original = arch.PACKAGE
    try:
        arch.PACKAGE = package
        edges = arch.room_imports(package)
    finally:
        arch.PACKAGE = original
    assert edges[("ncu", "__init__")] == ["roofline/ncu/importer.py:2"] and ("__init__", "api") in edges
    assert arch.upward({("ncu", "__init__"): edges[("ncu", "__init__")]}) == [
        "ncu -> __init__: imports a room above it, at roofline/ncu/importer.py:2"]


def test_the_diagram_draws_only_the_arrows_no_longer_path_implies():
    assert arch.reduced({("a", "b"), ("b", "c"), ("a", "c"), ("c", "d")}) == {("a", "b"), ("b", "c"), ("c", "d")}
