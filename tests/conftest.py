"""Shared fixtures: paths to the test data, a CLI runner around roofline.cli.main, and the `gpu` auto-skip."""

from __future__ import annotations

from typing import NamedTuple

import functools
from pathlib import Path

import pytest

TESTS = Path(__file__).resolve().parent
DATA = TESTS / "data"
SPECS = DATA / "specs"
KERNELS = DATA / "kernels"
INVALID_SPECS = DATA / "invalid" / "specs"
INVALID_KERNELS = DATA / "invalid" / "kernels"
TOY_SPEC = SPECS / "toy.yaml"
NCU = DATA / "ncu"  # Nsight Compute CSVs: synthetic_*.csv in ncu's raw-page layout, h200_*.csv real captures
NCU_PYTORCH = NCU / "synthetic_pytorch_metrics.csv"
NCU_UNITS = NCU / "synthetic_cuda_units.csv"
NCU_FULL = NCU / "synthetic_full.csv"
NCU_PROFILED = NCU / "synthetic_profiled.csv"
NCU_NOPERM = NCU / "synthetic_nvgpuctrperm.csv"


def results_files() -> list[Path]:
    """Every results document (roofline/results/v1) the repository ships under tests/data."""
    import json

    from roofline.records.schema import RESULTS_SCHEMA

    found = []
    for path in sorted(DATA.rglob("*.json")):
        try:
            doc = json.loads(path.read_text(encoding="utf-8"))
        except (ValueError, UnicodeDecodeError):
            continue
        if isinstance(doc, dict) and doc.get("schema") == RESULTS_SCHEMA:
            found.append(path)
    return found


def h200_profile(csv: str) -> dict:
    """A real H200 capture of tests/data/ncu imported against h200-sxm and grouped by op, as 'profile' writes it."""
    from roofline.ncu.group import add_groups
    from roofline.ncu.importer import import_csv

    doc, _ = import_csv(NCU / csv, "h200")
    add_groups(doc, "op")
    return doc


def plot_html(doc: dict, folder: Path, stem: str) -> Path:
    """`doc` written as folder/STEM.json and drawn by 'roofline plot --results ... -o folder/STEM.html', which must
    succeed; the page's path."""
    import json

    from roofline.cli import main

    out = folder / f"{stem}.json"
    out.write_text(json.dumps(doc), encoding="utf-8")
    html_path = out.with_suffix(".html")
    with pytest.raises(SystemExit) as exit_info:
        main(["plot", "--results", str(out), "-o", str(html_path)])
    assert exit_info.value.code in (0, None)
    return html_path


# ---- the `gpu` marker: tests that need CuPy and a CUDA device are skipped without them ----------


@functools.lru_cache(maxsize=1)
def gpu_available() -> bool:
    try:
        import cupy  # noqa: PLC0415 - only imported when a gpu test was collected

        return cupy.cuda.runtime.getDeviceCount() > 0
    except Exception:  # noqa: BLE001 - no CuPy, no driver, no device: all mean "skip"
        return False


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    gpu_items = [item for item in items if item.get_closest_marker("gpu") is not None]
    if not gpu_items or gpu_available():
        return
    skip = pytest.mark.skip(reason="needs CuPy and a CUDA device (cupy.cuda.runtime.getDeviceCount() > 0)")
    for item in gpu_items:
        item.add_marker(skip)


# ---- fixtures -------------------------------------------------------------------------------------


@pytest.fixture(autouse=True)
def no_gpu_for_spec_auto(monkeypatch: pytest.MonkeyPatch, tmp_path_factory: pytest.TempPathFactory) -> None:
    """--spec auto in analyze and plot reads the driver's GPU list: hidden, so a test's default spec is h100-sxm on
    a GPU host too (tests of the probe point roofline.load.autospec.GPU_INFO_DIR at a folder of their own)."""
    import roofline.load.autospec

    monkeypatch.setattr(roofline.load.autospec, "GPU_INFO_DIR", tmp_path_factory.getbasetemp() / "no-nvidia-driver")


@pytest.fixture
def toy_spec_path() -> Path:
    return TOY_SPEC


@pytest.fixture
def toy_spec():
    from roofline.load.specs import load_spec

    return load_spec(TOY_SPEC)


@pytest.fixture(scope="session")
def bundled_specs():
    from roofline.load.specs import SpecCatalog

    return SpecCatalog.bundled()


@pytest.fixture
def t4(bundled_specs):
    return bundled_specs.resolve("t4")


@pytest.fixture
def no_bundled_kernels(monkeypatch: pytest.MonkeyPatch, tmp_path_factory: pytest.TempPathFactory) -> Path:
    """Hide the bundled kernels (written concurrently by others) so CLI tests see only tests/data descriptors."""
    import roofline.load.kernels

    empty = tmp_path_factory.mktemp("no_bundled_kernels")
    real = roofline.load.kernels.bundled_dir
    monkeypatch.setattr(roofline.load.kernels, "bundled_dir", lambda kind: empty if kind == "kernels" else real(kind))
    return empty


class Result(NamedTuple):
    """Exit code, stdout, stderr of one CLI call; unpacks like a tuple."""

    code: int | None
    out: str
    err: str


@pytest.fixture
def run_cli(capsys: pytest.CaptureFixture[str]):
    """Call roofline.cli.main(argv) as the console script would; return exit code, stdout and stderr."""
    from roofline.cli import main

    def run(*argv: object) -> Result:
        capsys.readouterr()  # drop anything captured before this call
        with pytest.raises(SystemExit) as exc_info:
            main([str(a) for a in argv])
        captured = capsys.readouterr()
        return Result(exc_info.value.code, captured.out, captured.err)

    return run


@pytest.fixture(autouse=True)
def _no_inherited_columns(monkeypatch: pytest.MonkeyPatch) -> None:
    """Tables fit $COLUMNS (roofline.render.tables.fit); pytest-xdist workers inherit COLUMNS=80. Tests that care set it."""
    monkeypatch.delenv("COLUMNS", raising=False)


@pytest.fixture
def private_tmpdir(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> Path:
    """An empty temporary folder for the command and every process it starts (TMPDIR and tempfile's own), so a
    test can assert that nothing was left behind in it."""
    import tempfile

    tmp = tmp_path / "tmp"
    tmp.mkdir()
    monkeypatch.setenv("TMPDIR", str(tmp))
    monkeypatch.setattr(tempfile, "tempdir", str(tmp))
    return tmp


@pytest.fixture
def mpi() -> None:
    """Skip (with the reason) where mpirun or mpi4py is missing or cannot start ranks; probed once, when needed."""
    from mpi_job import mpi_missing

    reason = mpi_missing()
    if reason is not None:
        pytest.skip(reason)
