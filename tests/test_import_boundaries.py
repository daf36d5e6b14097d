"""The stages stay apart: a static scan of every import in roofline/ (including imports inside functions, which are
dependencies all the same) against the boundaries below.

- CuPy only in the CuPy backend and what it owns: measure/backend_cupy.py and measure/calibrate/gpu.py (kernel
  implementations under kernels/ are outside roofline/ and may use it freely). Everything else reaches CuPy through
  the backend object, so it imports, and is tested, on a machine without a GPU.
- matplotlib only in render/: `analyze`, `specs`, `kernels` and `--help` stay fast, and charts have one home.
- click only in cli/: the library is usable from Python (roofline.api) without the command line.
- neither render/ nor the pure core (the packages model/, load/, records/, sizes/, gates/ and errors.py) imports
  measurement/: analysing, reading results and drawing never need the measurement stage. The Python API
  (roofline/api.py) is the one edge there.
- inside the core, imports run one way, down the layers errors < model < load < records < sizes, gates: the physics
  never reads a file, loading never needs the results format, the results format never needs a verdict.
- nothing outside cli/ imports cli/.
- the pure core imports neither render/ nor ncu/ (results, analysis and loading never need a renderer or an
  importer), and measurement/ never imports the Python API (the API drives measurement, not the other way round).
- no import circle among roofline's modules, counting imports inside functions and under TYPE_CHECKING: a circle
  means two modules are one, or a shared piece lives in the wrong one.

An exception is a (module, imported name) pair with the reason it is allowed; a listed exception that is no longer
needed fails its own test, so the list cannot go stale.
"""

from __future__ import annotations

import ast
import sys
from pathlib import Path

import pytest

PACKAGE = Path(__file__).resolve().parent.parent / "roofline"

CUPY_HOMES = {"roofline.measurement.backend_cupy", "roofline.measurement.calibrate.gpu", "roofline.measurement.interconnect",
              "roofline.fleet.nccl"}  # fleet.nccl: the NCCL engine of `fleet links`, cupy.cuda.nccl is CuPy's NCCL
EDGES_OF_THE_CORE = {
    "roofline.api": "the Python API verifies and times callables: it is the measurement stage's entry from Python",
}

# (module, the stage it may import although its boundary says otherwise): why.
ALLOWED: dict[tuple[str, str], str] = {
    ("roofline.__main__", "roofline.cli"): "python -m roofline runs the command line",
    ("roofline.ncu.target", "cupy"): (
        "the process Nsight Compute profiles: it starts and stops CUDA's profiler, which older CuPy exposes only as "
        "cupy.cuda.profiler; it launches kernels through the CuPy backend otherwise"
    ),
}


def module_name(path: Path) -> str:
    parts = list(path.relative_to(PACKAGE.parent).with_suffix("").parts)
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def imports(path: Path) -> set[str]:
    """Every module name an import statement in the file names, absolute, with `from a import b` also as a.b."""
    tree = ast.parse(path.read_text(encoding="utf-8"), filename=str(path))
    package = module_name(path).split(".") if path.name == "__init__.py" else module_name(path).split(".")[:-1]
    found: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            found |= {alias.name for alias in node.names}
        elif isinstance(node, ast.ImportFrom):
            base_parts = package[: len(package) - (node.level - 1)] if node.level else []
            base = ".".join(base_parts + ([node.module] if node.module else []))
            found.add(base)
            found |= {f"{base}.{alias.name}" for alias in node.names}
    return found


MODULES = {module_name(p): imports(p) for p in sorted(PACKAGE.rglob("*.py"))}


def stage(name: str) -> str:
    """The stage an imported name belongs to, as the rules speak of it."""
    top = name.split(".")[0]
    if top in ("cupy", "cupyx"):
        return "cupy"
    if top in ("matplotlib", "click"):
        return top
    parts = name.split(".")
    if top == "roofline" and len(parts) > 1 and parts[1] in ("measurement", "cli", "render", "ncu", "api"):
        return f"roofline.{parts[1]}"
    if top == "roofline" and core_layer(name) is not None:
        return ".".join(parts[:2])
    return ""


def in_package(module: str, package: str) -> bool:
    return module == package or module.startswith(package + ".")


# The core's packages, lowest layer first: a core module imports only its own layer and the layers below it.
CORE_LAYERS = {"roofline.errors": 0, "roofline.model": 1, "roofline.load": 2, "roofline.records": 3,
               "roofline.sizes": 4, "roofline.gates": 4}


def core_layer(module: str) -> int | None:
    """The layer of a module of the pure core (model/, load/, records/, sizes/, gates/, errors.py), else None."""
    parts = module.split(".")
    return CORE_LAYERS.get(".".join(parts[:2])) if len(parts) > 1 else None


def is_core(module: str) -> bool:
    return core_layer(module) is not None


def broken_rules(module: str, imported_stage: str) -> list[str]:
    rules = []
    if imported_stage == "cupy" and module not in CUPY_HOMES:
        rules.append("CuPy only in the CuPy backend and the modules it owns")
    if imported_stage == "matplotlib" and not in_package(module, "roofline.render"):
        rules.append("matplotlib only in render/")
    if imported_stage == "click" and not in_package(module, "roofline.cli"):
        rules.append("click only in cli/")
    if imported_stage == "roofline.measurement" and (in_package(module, "roofline.render") or is_core(module)):
        rules.append("render/ and the pure core never import measurement/")
    if imported_stage == "roofline.cli" and not in_package(module, "roofline.cli"):
        rules.append("nothing outside cli/ imports cli/")
    if imported_stage == "roofline.render" and is_core(module):
        rules.append("the pure core never imports render/")
    if imported_stage == "roofline.ncu" and is_core(module):
        rules.append("the pure core never imports ncu/")
    if imported_stage == "roofline.api" and in_package(module, "roofline.measurement"):
        rules.append("measurement/ never imports the Python API")
    mine, theirs = core_layer(module), CORE_LAYERS.get(imported_stage)
    if mine is not None and theirs is not None and theirs > mine:
        rules.append("the core's imports run down its layers (errors < model < load < records < sizes, gates)")
    elif (mine is not None and theirs is not None and theirs == mine and mine > 0
          and not in_package(module, imported_stage)):
        rules.append("sizes/ and gates/ are one layer and do not import each other")
    return rules


def violations() -> dict[tuple[str, str], list[str]]:
    found: dict[tuple[str, str], list[str]] = {}
    for module, names in MODULES.items():
        for name in sorted(names):
            for rule in broken_rules(module, stage(name)):
                found.setdefault((module, stage(name)), [])
                if f"{name}: {rule}" not in found[(module, stage(name))]:
                    found[(module, stage(name))].append(f"{name}: {rule}")
    return found


def test_the_top_level_holds_only_the_public_faces():
    """Issue 22: the folders tell the architecture; a new module goes into the stage it belongs to."""
    top = sorted(p.name for p in PACKAGE.glob("*.py"))
    assert top == ["__init__.py", "__main__.py", "api.py", "errors.py", "kernelapi.py", "pytest_plugin.py", "version.py"]


def test_the_scan_sees_the_package():
    # guards against a scan that finds nothing and so passes: the known homes of each library are seen
    assert "roofline.measurement.backend_cupy" in MODULES and "roofline.render.charts.plot" in MODULES
    assert any(stage(n) == "cupy" for n in MODULES["roofline.measurement.backend_cupy"])
    assert any(stage(n) == "matplotlib" for n in MODULES["roofline.render.charts.plot"])
    assert any(stage(n) == "click" for n in MODULES["roofline.cli"])
    assert any(stage(n) == "roofline.measurement" for n in MODULES["roofline.cli.sweep"])


@pytest.mark.parametrize("module, imported, expected", [
    ("roofline.model.units", "cupy", ["CuPy only in the CuPy backend and the modules it owns"]),
    ("roofline.measurement.harness", "cupyx.scipy", ["CuPy only in the CuPy backend and the modules it owns"]),
    ("roofline.measurement.backend_cupy", "cupy", []),
    ("roofline.cli.plot", "matplotlib.figure", ["matplotlib only in render/"]),
    ("roofline.render.charts.roofs", "matplotlib", []),
    ("roofline.gates.report", "click", ["click only in cli/"]),
    ("roofline.model.analysis", "roofline.measurement.policy", ["render/ and the pure core never import measurement/"]),
    ("roofline.model.analysis", "roofline.records.document",
     ["the core's imports run down its layers (errors < model < load < records < sizes, gates)"]),
    ("roofline.load.kernels", "roofline.sizes.predict",
     ["the core's imports run down its layers (errors < model < load < records < sizes, gates)"]),
    ("roofline.gates.report", "roofline.sizes.fitted", ["sizes/ and gates/ are one layer and do not import each other"]),
    ("roofline.gates.report", "roofline.records.files", []),
    ("roofline.records.files", "roofline.errors", []),
    ("roofline.model.units", "roofline.model.expr", []),
    ("roofline.render.tables.measure", "roofline.measurement.gpustate", ["render/ and the pure core never import measurement/"]),
    ("roofline.api", "roofline.measurement.harness", []),
    ("roofline.ncu.importer", "roofline.measurement.policy", []),
    ("roofline.measurement.session", "roofline.cli.common", ["nothing outside cli/ imports cli/"]),
    ("roofline.records.document", "roofline.render.tables.measure", ["the pure core never imports render/"]),
    ("roofline.api", "roofline.render.tables.measure", []),
    ("roofline.gates.report", "roofline.ncu.halfprec", ["the pure core never imports ncu/"]),
    ("roofline.cli.importer", "roofline.ncu.importer", []),
    ("roofline.measurement.harness", "roofline.api", ["measurement/ never imports the Python API"]),
    ("roofline.measurement.calibrate.gpu", "roofline.api", ["measurement/ never imports the Python API"]),
    ("roofline.pytest_plugin", "roofline.api", []),
    ("roofline.cli", "roofline.render.text", []),
])
def test_the_rules_themselves(module, imported, expected):
    assert broken_rules(module, stage(imported)) == expected


def test_relative_imports_are_resolved(tmp_path, monkeypatch):
    package = tmp_path / "roofline"
    (package / "render").mkdir(parents=True)
    chart = package / "render" / "chart.py"
    chart.write_text("from . import roofs\nfrom ..measurement import gpustate\nfrom .. import units\n", encoding="utf-8")
    (package / "render" / "__init__.py").write_text("from .roofs import x\n", encoding="utf-8")
    monkeypatch.setattr(sys.modules[__name__], "PACKAGE", package)
    assert module_name(chart) == "roofline.render.chart"
    assert {"roofline.render.roofs", "roofline.measurement.gpustate", "roofline.units"} <= imports(chart)
    assert "roofline.render.roofs.x" in imports(package / "render" / "__init__.py")
    assert module_name(package / "render" / "__init__.py") == "roofline.render"


def test_every_import_keeps_to_the_boundaries():
    found = {key: why for key, why in violations().items() if key not in ALLOWED}
    assert not found, "imports across a stage boundary:\n" + "\n".join(
        f"  {module}: {'; '.join(lines)}" for (module, _), lines in sorted(found.items()))


@pytest.mark.parametrize("key", sorted(ALLOWED))
def test_every_listed_exception_is_still_needed(key):
    assert key in violations(), f"{key[0]} no longer imports {key[1]}: delete its entry in ALLOWED"


@pytest.mark.parametrize("name, package", [("measure", "roofline.measurement.harness"),
                                           ("results", "roofline.records.files")])
def test_the_api_functions_stay_functions_whatever_was_imported_first(name, package):
    """Issue 22: no package is named measure or results (they are roofline.measurement and roofline.records), so
    importing a stage first cannot put a module where roofline.measure or roofline.results should be."""
    import subprocess

    code = (f"import {package}, roofline, inspect; f = roofline.{name}; "
            "assert inspect.isfunction(f), type(f); assert f.__module__ == 'roofline.api'; print('ok')")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=PACKAGE.parent)
    assert out.returncode == 0 and out.stdout.strip() == "ok", out.stderr


# ---- no circles -------------------------------------------------------------------------------------------------


def import_graph(modules: dict[str, set[str]]) -> dict[str, set[str]]:
    """module -> the roofline modules it imports. A name resolves to the longest module it starts with
    ('roofline.render.charts.points.Point' -> roofline.render.charts.points); an import of one's own parent package is left out
    (Python has already run it before the module, so it cannot close a circle)."""
    def resolve(name: str) -> str | None:
        parts = name.split(".")
        while parts and ".".join(parts) not in modules:
            parts.pop()
        return ".".join(parts) or None

    graph: dict[str, set[str]] = {}
    for module, names in modules.items():
        targets = {resolve(n) for n in names} - {None, module}
        graph[module] = {t for t in targets if t is not None and not module.startswith(t + ".")}
    return graph


def circles(graph: dict[str, set[str]]) -> list[list[str]]:
    """The strongly connected components of more than one module (Tarjan), each sorted, as a list sorted too."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    found: list[list[str]] = []

    def visit(v: str) -> None:
        index[v] = low[v] = len(index)
        stack.append(v)
        for w in sorted(graph.get(v, ())):
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in stack:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            component = []
            while True:
                w = stack.pop()
                component.append(w)
                if w == v:
                    break
            if len(component) > 1 or v in graph.get(v, ()):
                found.append(sorted(component))

    limit = sys.getrecursionlimit()
    sys.setrecursionlimit(max(limit, 10 * len(graph) + 100))
    try:
        for v in sorted(graph):
            if v not in index:
                visit(v)
    finally:
        sys.setrecursionlimit(limit)
    return sorted(found)


def test_the_circle_finder_finds_circles():
    graph = import_graph({
        "roofline.a": {"roofline.b.f"}, "roofline.b": {"roofline.c"}, "roofline.c": {"roofline.a", "roofline"},
        "roofline.d": {"roofline.d"}, "roofline.e": {"roofline.a"}, "roofline": set(),
        "roofline.p": set(), "roofline.p.q": {"roofline.p"},  # a module importing its parent package: no circle
    })
    assert graph["roofline.a"] == {"roofline.b"} and "roofline" not in graph["roofline.c"]
    assert circles(graph) == [["roofline.a", "roofline.b", "roofline.c"]]
    assert circles({"x": {"y"}, "y": {"x"}, "z": {"z"}}) == [["x", "y"], ["z"]]


def test_the_graph_sees_imports_inside_functions():
    # roofline.api imports the measurement session inside its functions only: that is an edge all the same
    assert "roofline.measurement.session" in import_graph(MODULES)["roofline.api"]


def test_no_import_circles():
    found = circles(import_graph(MODULES))
    assert not found, "import circles (move the shared piece to the module that owns it):\n" + "\n".join(
        "  " + " <-> ".join(c) for c in found)


def test_the_architecture_page_names_every_module_of_the_core():
    """docs/architecture.md says what each module of the core and each public face does: a module added without a
    line there fails."""
    page = (PACKAGE.parent / "docs" / "architecture.md").read_text(encoding="utf-8")
    top = [p.name for p in PACKAGE.glob("*.py") if p.name != "__init__.py"]
    core = [f"roofline/{p.parent.name}/{p.name}" for pkg in CORE_LAYERS if pkg != "roofline.errors"
            for p in (PACKAGE / pkg.split(".")[1]).glob("*.py") if p.name != "__init__.py"]
    assert len(core) > 25
    missing = [name for name in sorted(top + core) if f"`{name}`" not in page]
    assert not missing, f"docs/architecture.md does not say what these do: {', '.join(missing)}"
