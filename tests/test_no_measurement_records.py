"""Tests read committed fixtures only: nothing under benchmarks/ (GPU-run tools, rewritten with each run) or
docs/measurements/ (the records each GPU run replaces), so a new measurement can never break or silently change
a test. The data a test needs is copied into tests/data with its provenance.

The benchmark scripts' own host-side tests live beside them in benchmarks/tests (pytest's testpaths runs both);
they may load the scripts, but they too read no record under docs/measurements/.

The scan reads every Python file's code (comments and docstrings, which may say where a fixture came from, are
not read): a string such as "benchmarks", "docs/measurements/h200.md" or the pieces of ROOT / "docs" /
"measurements" is a path into those folders.
"""

from __future__ import annotations

import ast
import re
from pathlib import Path

import pytest

TESTS = Path(__file__).resolve().parent
ROOT = TESTS.parent
BENCHMARK_TESTS = ROOT / "benchmarks" / "tests"


def _docstrings(tree: ast.AST) -> set[int]:
    """ids of the string constants that are docstrings (module, class, function)."""
    found = set()
    for node in ast.walk(tree):
        if isinstance(node, (ast.Module, ast.ClassDef, ast.FunctionDef, ast.AsyncFunctionDef)) and node.body:
            first = node.body[0]
            if isinstance(first, ast.Expr) and isinstance(first.value, ast.Constant):
                found.add(id(first.value))
    return found


def references(path: Path, folders: tuple[str, ...]) -> list[str]:
    """'line N: "text"' for each string in the file's code that names one of `folders` as a path part."""
    tree = ast.parse(path.read_text(encoding="utf-8"), filename=str(path))
    skip = _docstrings(tree)
    found = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Constant) and isinstance(node.value, str) and id(node) not in skip:
            parts = [p for p in re.split(r"[\\/]", node.value) if p]
            if any(folder in parts for folder in folders):
                found.append((node.lineno, f"line {node.lineno}: {node.value[:80]!r}"))
    return [text for _, text in sorted(found)]


def test_the_scan_finds_a_path_in_code_and_not_in_a_docstring(tmp_path: Path) -> None:
    sample = tmp_path / "test_sample.py"
    sample.write_text('"""Made with benchmarks/h200_ncu_tensor.sh."""\n'
                      'ROOT = None\n'
                      'A = ROOT / "docs" / "measurements" / "h200.md"\n'
                      'B = "benchmarks/trace_check.py"\n'
                      'C = "measurements were taken"  # a sentence, not a path\n', encoding="utf-8")
    assert references(sample, ("benchmarks", "measurements")) == [
        "line 3: 'measurements'", "line 4: 'benchmarks/trace_check.py'"]


@pytest.mark.parametrize("path", sorted(p for p in TESTS.rglob("*.py") if p != Path(__file__).resolve()),
                         ids=lambda p: str(p.relative_to(TESTS)))
def test_no_test_or_fixture_reads_benchmarks_or_measurement_records(path: Path) -> None:
    found = references(path, ("benchmarks", "measurements"))
    assert not found, (f"{path.relative_to(ROOT)} reads under benchmarks/ or docs/measurements/ ({'; '.join(found)}): "
                       "copy the data into tests/data (say where it came from) or have the test make it")


@pytest.mark.parametrize("path", sorted(BENCHMARK_TESTS.glob("*.py")), ids=lambda p: p.name)
def test_the_benchmark_scripts_tests_read_no_measurement_record(path: Path) -> None:
    found = references(path, ("measurements",))
    assert not found, f"{path.relative_to(ROOT)} reads under docs/measurements/ ({'; '.join(found)})"
