"""Figures that cannot be right (issue 31): a duplicated YAML key in any input file, a figure outside the plausible
range of its field, and every figure the repository ships held to the same checks as a user's."""

from __future__ import annotations

from pathlib import Path

import pytest

from conftest import KERNELS
from roofline.load.bundled import bundled_dir
from roofline.load.kernels import load_descriptor
from roofline.load.specs import load_spec
from roofline.model import invariants as inv

REPO = Path(__file__).resolve().parent.parent


# ---- a key written twice is refused in every YAML the tool reads ---------------------------------------------------


def test_a_duplicated_key_in_a_kernel_descriptor_is_refused(run_cli, tmp_path: Path, no_bundled_kernels) -> None:
    path = tmp_path / "k.yaml"
    path.write_text((KERNELS / "t_vadd.yaml").read_text() + "bytes: n * itemsize\n")
    r = run_cli("analyze", "--kernels", path, "--spec", "h100")
    assert r.code == 2
    assert r.err.strip() == f"error: {path}: line 11: duplicate key bytes (first at line 9); YAML would keep only " \
                            "the last value, so remove one"


def test_a_duplicated_key_in_a_gates_file_is_refused(run_cli, tmp_path: Path) -> None:
    gates = tmp_path / "gates.yaml"
    gates.write_text("default:\n  fail_below: 0.7\nkernels:\n  sum: {fail_below: 0.5, fail_below: 0.1}\n")
    r = run_cli("report", REPO / "tests" / "data" / "results" / "h100.json", "--gates", gates)
    assert r.code == 2
    assert f"{gates}: line 4: duplicate key kernels.sum.fail_below (first at line 4)" in r.err
    assert "Traceback" not in r.err


def test_the_same_key_in_two_mappings_is_no_duplicate() -> None:
    from roofline.load.inputs import parse_yaml

    assert parse_yaml("a: {x: 1}\nb: {x: 2}\n", "f.yaml") == {"a": {"x": 1}, "b": {"x": 2}}


# ---- plausible ranges --------------------------------------------------------------------------------------------


def _shipped_specs() -> list[Path]:
    return sorted(bundled_dir("specs").glob("*.yaml")) + sorted((REPO / "docs").rglob("*.yaml"))


@pytest.mark.parametrize("path", _shipped_specs(), ids=lambda p: p.name)
def test_every_shipped_spec_sits_inside_every_plausible_range_with_margin(path: Path) -> None:
    """Loading applies the ranges; here each figure must also sit 20 % inside its range, so that the ranges are not
    drawn round the bundled specs and the next generation of GPUs loads too."""
    spec = load_spec(path)
    for field, kind, value in inv._plausible_figures(spec):
        r = inv.PLAUSIBLE[kind]
        assert r.low * 1.2 <= value <= r.high / 1.2, f"{path.name}: {field} = {value} is near the edge of {kind}"


@pytest.mark.parametrize(("kind", "slip"), [("sm_clock", 1.41e12), ("sm_clock", 1.41e6), ("memory_bandwidth", 1555.0),
                                            ("memory_bandwidth", 1.555e15), ("l2_size", 50e12),
                                            ("cuda_core_roof", 19.5e15), ("tensor_roof", 989e18), ("power", 700e3)])
def test_a_unit_slip_falls_outside_its_range(kind: str, slip: float) -> None:
    assert inv.outside(kind, slip) is not None


def test_every_range_is_in_the_readme() -> None:
    """The ranges are documented where the spec format is: each kind's range as the messages print it."""
    readme = (REPO / "README.md").read_text(encoding="utf-8")
    for kind, r in inv.PLAUSIBLE.items():
        low, high = inv.show_plausible(r.low, r.unit), inv.show_plausible(r.high, r.unit)
        assert f"{low} to {high}" in readme, f"README.md does not give the range of {kind}: {low} to {high}"


# ---- what the repository ships passes the checks a user's files get ----------------------------------------------


@pytest.mark.parametrize("path", sorted(bundled_dir("kernels").glob("*.yaml")), ids=lambda p: p.name)
def test_every_bundled_kernel_loads_through_the_one_yaml_reader(path: Path) -> None:
    assert load_descriptor(path).name


def _yaml_blocks() -> list[tuple[str, str]]:
    """(where, text) of every YAML block in the README and docs/*.md."""
    import re

    out = []
    for page in [REPO / "README.md", *sorted((REPO / "docs").glob("*.md"))]:
        for i, m in enumerate(re.finditer(r"```ya?ml\n(.*?)```", page.read_text(encoding="utf-8"), re.S)):
            out.append((f"{page.name}#{i}", m.group(1)))
    return out


@pytest.mark.parametrize(("where", "text"), _yaml_blocks(), ids=[w for w, _ in _yaml_blocks()])
def test_every_yaml_block_in_the_docs_loads_as_what_it_is(where: str, text: str, tmp_path: Path) -> None:
    """A spec block loads as a spec (units, ranges, invariants), a kernel as a descriptor, a gates file as gates;
    any other block (a CI workflow, a fragment) at least parses through the one reader, duplicate keys refused."""
    from roofline.gates.config import load_gates
    from roofline.load.inputs import parse_yaml

    data = parse_yaml(text, where)
    path = tmp_path / "block.yaml"
    path.write_text(text, encoding="utf-8")
    if isinstance(data, dict) and {"memory", "compute"} <= set(data):
        assert load_spec(path).id
    elif isinstance(data, dict) and {"name", "flops", "bytes"} <= set(data) and "implementation" not in data:
        assert load_descriptor(path).name == data["name"]
    elif isinstance(data, dict) and ("default" in data or "kernels" in data) and "jobs" not in data:
        assert load_gates(path) is not None


def _shipped_results() -> list[Path]:
    """The results files (roofline/results/v1) the repository ships: the docs' measurements and the H200 captures
    the tests replay (the interconnect and sweep-row files there are other formats, read by their own commands)."""
    import json

    paths = sorted((REPO / "docs").rglob("*.json")) + sorted((REPO / "tests" / "data" / "h200").glob("*.json"))
    return [p for p in paths if json.loads(p.read_text(encoding="utf-8")).get("schema") == "roofline/results/v1"]


@pytest.mark.parametrize("path", _shipped_results(), ids=lambda p: p.name)
def test_every_results_file_the_repository_ships_passes_a_users_checks(path: Path, run_cli) -> None:
    """The shipped H200 measurements go through the one reader (schema, ranks, power in range) and `report`, as a
    user's file would; none is exempt."""
    from roofline.records.files import load_results

    results = load_results(path)
    assert results.doc["kernels"]
    code, out, err = run_cli("report", path, "--format", "json")
    assert code in (0, 1), err  # 1: a shipped file may hold a kernel that failed a gate; never 2 (bad input)
    assert "Traceback" not in out + err


def test_a_link_rated_in_bits_loads_as_an_eighth_in_bytes(tmp_path: Path) -> None:
    """A network rated 400 Gb/s per GPU is 50 GB/s; read as GB/s it would be eight times too fast."""
    text = (REPO / "specs" / "h200-sxm.yaml").read_text(encoding="utf-8")
    path = tmp_path / "h200-ib.yaml"
    path.write_text(text.replace("interconnect:\n", "interconnect:\n  network: {bandwidth: 400 Gb/s}\n", 1),
                    encoding="utf-8")
    assert load_spec(path).interconnect["network"].bandwidth == 50e9


@pytest.mark.parametrize(("change", "field", "fragment"), [
    (lambda m: m.update(bandwidth=1555.0), "machine.bandwidth", "1.55 kB/s is outside 1 GB/s to 40 TB/s"),
    (lambda m: m["roofs"].update(fp32=19.5e15), "machine.roofs.fp32", "19.5 PFLOP/s is outside 1 GFLOP/s to 1 PFLOP/s"),
    (lambda m: m.update(latency=332.0), "machine.latency", "outside 50 ns to 5 µs"),
])
def test_a_results_file_measured_against_an_impossible_spec_is_refused(change, field: str, fragment: str,
                                                                       tmp_path: Path, run_cli) -> None:
    """The spec block inside a results file is held to the ranges a spec file is: a file edited by hand, or one
    written before the ranges, cannot draw a 1,555 B/s roof."""
    import json

    doc = json.loads((REPO / "tests" / "data" / "results" / "h100.json").read_text(encoding="utf-8"))
    change(doc["machine"])
    path = tmp_path / "r.json"
    path.write_text(json.dumps(doc), encoding="utf-8")
    code, out, err = run_cli("report", path)
    assert code == 2 and out == ""
    assert err.startswith(f"error: {path}: {field}: ") and fragment in err
