"""Machine specs: the bundled ones load and cite every figure; bad specs are refused clearly; --spec resolution."""

from __future__ import annotations

from pathlib import Path
from typing import Any, Iterator

import pytest
import yaml

from conftest import INVALID_SPECS, KERNELS, TOY_SPEC
from roofline.load.bundled import bundled_dir
from roofline.errors import InputError
from roofline.load.specs import DEFAULT_SPEC, SpecCatalog, load_spec

BUNDLED_SPEC_FILES = sorted(bundled_dir("specs").glob("*.yaml"))


# ---- the bundled specs --------------------------------------------------------------------------


def test_there_are_bundled_specs() -> None:
    assert len(BUNDLED_SPEC_FILES) >= 10
    assert any(p.stem == "t4" for p in BUNDLED_SPEC_FILES)


@pytest.mark.parametrize("path", BUNDLED_SPEC_FILES, ids=lambda p: p.stem)
def test_every_bundled_spec_loads(path: Path) -> None:
    spec = load_spec(path)
    assert spec.id == path.stem
    assert spec.bandwidth > 0 and spec.latency > 0
    assert spec.roofs and all(v > 0 for v in spec.roofs.values())
    assert "fp32" in spec.roofs
    assert spec.sources


# Figures are the leaves of these sections plus these top-level keys; each must be named in a sources[].for.
_FIGURE_SECTIONS = ("memory", "compute", "clocks", "caches", "interconnect", "energy", "model")
_NOT_FIGURES = frozenset({"energy.source", "energy.inputs"})  # what the energy figures were measured on, and how
_FIGURE_KEYS = ("sm_count", "max_threads_per_sm", "compute_capability", "architecture", "power_limit")


def _figures(data: dict[str, Any]) -> Iterator[str]:
    def walk(value: Any, prefix: str) -> Iterator[str]:
        if prefix in _NOT_FIGURES:
            return
        if isinstance(value, dict):
            for key, inner in value.items():
                yield from walk(inner, f"{prefix}.{key}")
        elif value is not None:
            yield prefix

    for section in _FIGURE_SECTIONS:
        if section in data:
            yield from walk(data[section], section)
    for key in _FIGURE_KEYS:
        if data.get(key) is not None:
            yield key


def _cited(data: dict[str, Any]) -> set[str]:
    cited: set[str] = set()
    for entry in data.get("sources") or []:
        if isinstance(entry, dict):
            fields = entry.get("for") or []
            cited.update([fields] if isinstance(fields, str) else fields)
    return cited


@pytest.mark.parametrize("path", BUNDLED_SPEC_FILES, ids=lambda p: p.stem)
def test_every_figure_in_a_bundled_spec_is_cited(path: Path) -> None:
    data = yaml.safe_load(path.read_text(encoding="utf-8"))
    figures = list(_figures(data))
    assert "memory.bandwidth" in figures and "memory.latency" in figures
    uncited = [f for f in figures if f not in _cited(data)]
    assert uncited == [], f"{path.name}: figures without a sources[].for entry: {uncited}"


@pytest.mark.parametrize("path", BUNDLED_SPEC_FILES, ids=lambda p: p.stem)
def test_every_citation_names_a_figure_that_exists(path: Path) -> None:
    data = yaml.safe_load(path.read_text(encoding="utf-8"))
    dangling = sorted(_cited(data) - set(_figures(data)))
    assert dangling == [], f"{path.name}: sources[].for names fields the spec does not give: {dangling}"


def test_citation_walk_catches_an_uncited_figure() -> None:
    data = {"memory": {"bandwidth": "1 TB/s", "latency": "1 us"}, "compute": {"fp32": "1 TFLOP/s"},
            "sources": [{"for": ["memory.bandwidth", "compute.fp32"], "cite": "x"}]}
    assert [f for f in _figures(data) if f not in _cited(data)] == ["memory.latency"]


def test_ids_and_aliases_are_unique(bundled_specs: SpecCatalog) -> None:
    names = [s.id for s in bundled_specs.specs]
    names += [a for s in bundled_specs.specs for a in s.aliases if a != s.id]
    duplicates = sorted({n for n in names if names.count(n) > 1})
    assert duplicates == []
    assert len(bundled_specs.specs) == len(BUNDLED_SPEC_FILES)


def test_duplicate_alias_across_files_is_refused(tmp_path: Path) -> None:
    other = tmp_path / "other.yaml"
    other.write_text(TOY_SPEC.read_text().replace("id: toy", "id: other"), encoding="utf-8")  # same alias toy-gpu
    with pytest.raises(InputError, match=r"aliases: 'toy-gpu' is also used by"):
        SpecCatalog.from_paths([TOY_SPEC, other])


def test_default_spec_resolves(bundled_specs: SpecCatalog) -> None:
    assert bundled_specs.resolve(DEFAULT_SPEC).id == DEFAULT_SPEC


# ---- the toy spec is read exactly -----------------------------------------------------------------


def test_toy_spec_values(toy_spec) -> None:
    assert toy_spec.id == "toy"
    assert toy_spec.aliases == ("toy-gpu",)
    assert toy_spec.bandwidth == 1e12
    assert toy_spec.latency == 1e-6
    assert toy_spec.capacity == 16 * 2**30
    assert dict(toy_spec.roofs) == {"fp32": 10e12, "fp16_tensor": 100e12}
    assert toy_spec.bytes_in_flight == pytest.approx(1e6)
    assert toy_spec.resident_threads == 10_000
    assert toy_spec.path == TOY_SPEC


def test_t4_figures(t4) -> None:
    assert t4.bandwidth == 320e9
    assert t4.latency == 400e-9
    assert t4.roofs["fp32"] == 8.1e12
    assert t4.resident_threads == 40 * 1024
    assert "Tesla T4" in t4.device_names


# ---- --spec resolution --------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("name", "expected"),
    [
        ("h100-sxm", "h100-sxm"),  # id
        ("H100-SXM", "h100-sxm"),  # ids are case-insensitive
        ("h100", "h100-sxm"),  # alias
        ("a100", "a100-sxm4-80gb"),  # alias beats the prefix that would be ambiguous
        ("t4", "t4"),
        ("rtx", "rtx-4090"),  # unique prefix
        ("b2", "b200"),  # unique prefix
    ],
)
def test_resolve_by_id_alias_or_prefix(bundled_specs: SpecCatalog, name: str, expected: str) -> None:
    assert bundled_specs.resolve(name).id == expected


def test_resolve_by_path(bundled_specs: SpecCatalog) -> None:
    spec = bundled_specs.resolve(str(TOY_SPEC))
    assert spec.id == "toy" and spec.bandwidth == 1e12


def test_resolve_ambiguous_prefix_names_the_candidates(bundled_specs: SpecCatalog) -> None:
    with pytest.raises(InputError) as exc_info:
        bundled_specs.resolve("a100-pcie")
    message = exc_info.value.message
    assert "a100-pcie-40gb" in message and "a100-pcie-80gb" in message
    assert "several" in message


def test_resolve_unknown_suggests_the_closest(bundled_specs: SpecCatalog) -> None:
    with pytest.raises(InputError, match=r"no spec named 'h100-sxn' \(did you mean 'h100-sxm'\?\)"):
        bundled_specs.resolve("h100-sxn")


def test_resolve_missing_path_is_an_input_error(bundled_specs: SpecCatalog, tmp_path: Path) -> None:
    missing = tmp_path / "nope.yaml"
    with pytest.raises(InputError, match="no such file"):
        bundled_specs.resolve(str(missing))


def test_cli_spec_by_path_alias_and_prefix(run_cli, no_bundled_kernels) -> None:
    import json

    r = run_cli("analyze", "t_vadd", "--kernels", KERNELS / "t_vadd.yaml", "--format", "json",
                "--spec", TOY_SPEC, "--spec", "h100", "--spec", "rtx")
    assert r.code == 0, r.err
    assert [doc["machine"]["id"] for doc in json.loads(r.out)] == ["toy", "h100-sxm", "rtx-4090"]


def test_cli_ambiguous_prefix_exits_2_naming_the_candidates(run_cli, no_bundled_kernels) -> None:
    r = run_cli("analyze", "t_vadd", "--kernels", KERNELS / "t_vadd.yaml", "--spec", "a100-pcie")
    assert r.code == 2
    assert "a100-pcie-40gb" in r.err and "a100-pcie-80gb" in r.err
    assert "Traceback" not in r.err + r.out
    r = run_cli("specs", "show", "h100-")
    assert r.code == 2
    assert all(c in r.err for c in ("h100-nvl", "h100-pcie", "h100-sxm"))


def test_cli_specs_list_and_show(run_cli) -> None:
    import json

    r = run_cli("specs", "--format", "json")
    assert r.code == 0
    rows = {row["id"]: row for row in json.loads(r.out)}
    assert set(rows) == {p.stem for p in BUNDLED_SPEC_FILES}
    assert rows["t4"]["fp32_ridge"] == pytest.approx(8.1e12 / 320e9)
    r = run_cli("specs", "show", TOY_SPEC)
    assert r.code == 0
    assert "Toy GPU" in r.out and "1 TB/s" in r.out and "Invented for the test suite" in r.out


# ---- invalid specs: one case per class, through the loader and through the CLI ---------------------

# (file in tests/data/invalid/specs, dotted field or None, fragment of the message)
INVALID = [
    ("syntax_error", None, "YAML syntax error: line 9"),
    ("missing_id", "id", "is required"),
    ("missing_name", "name", "is required"),
    ("missing_bandwidth", "memory.bandwidth", "is required"),
    ("missing_latency", "memory.latency", "is required"),
    ("missing_compute", "compute", "is required"),
    ("unknown_key", "memory.bandwith", "unknown key (did you mean 'bandwidth'?)"),
    ("wrong_type", "sm_count", "expected a whole number, got a string 'many'"),
    ("negative_bandwidth", "memory.bandwidth", "must be positive"),
    ("zero_bandwidth", "memory.bandwidth", "must be positive"),
    ("bad_unit", "memory.bandwidth", "unknown unit 'TB' for a bandwidth"),
    ("unknown_roof", "compute.fp33", "unknown key (did you mean 'fp32'?)"),
    ("schema_too_new", "schema_version", "newer than this roofline reads"),
    # issue 31: figures that cannot be right
    ("bare_number", "memory.bandwidth", "1555 has no unit (a bare number would be read as 1555 B/s); write it with "
                                        "its unit, like '4.8 TB/s'"),
    ("duplicate_key", "line 7", "duplicate key memory.bandwidth (first at line 5)"),
    ("terahertz_clock", "clocks.boost", "1.41 THz is outside 100 MHz to 3.5 GHz, the plausible range of an SM clock"),
    ("petaflop_fp32", "compute.fp32", "19.5 PFLOP/s is outside 1 GFLOP/s to 1 PFLOP/s, the plausible range of a "
                                      "CUDA-core roof"),
    ("flop_per_clock", "compute.fp32", "0.1281 FLOP/clk is outside 1 FLOP/clk to 131072 FLOP/clk, the plausible "
                                       "range of FLOP per SM per clock"),
]
# issue 33: the energy block, every figure with its unit and in range, each roof one the spec has
INVALID += [
    ("energy_no_unit", "energy.memory.dram", "138 has no unit (a bare number would be read as 138 J/B)"),
    ("energy_nanojoule", "energy.memory.dram", "138 nJ/B is outside 0.1 pJ/B to 5 nJ/B"),
    ("energy_unknown_roof", "energy.compute.bf16_tensor", "this spec has no bf16_tensor roof (it has fp32, "
                                                           "fp16_tensor)"),
    ("energy_l2_above_dram", "energy.memory.l2", "200 pJ/B is not below energy.memory.dram 138 pJ/B"),
    ("energy_missing_dram", "energy.memory.dram", "is required"),
    ("energy_bad_inputs", "energy.inputs", "is 'zeros'; expected one of random, application, constant"),
    ("energy_idle_kilowatts", "energy.idle_power", "100 kW is outside 1 W to 5 kW"),
]
INVALID_IDS = [case for case, _, _ in INVALID]


def _expected_prefix(path: Path, field: str | None) -> str:
    return f"{path}: {field}: " if field else f"{path}: "


def test_every_invalid_spec_file_is_covered() -> None:
    assert sorted(p.stem for p in INVALID_SPECS.glob("*.yaml")) == sorted(INVALID_IDS)


@pytest.mark.parametrize(("case", "field", "fragment"), INVALID, ids=INVALID_IDS)
def test_loader_refuses_invalid_spec(case: str, field: str | None, fragment: str) -> None:
    path = INVALID_SPECS / f"{case}.yaml"
    with pytest.raises(InputError) as exc_info:
        load_spec(path)
    message = exc_info.value.message
    assert message.startswith(_expected_prefix(path, field))
    assert fragment in message
    assert exc_info.value.exit_code == 2


@pytest.mark.parametrize(("case", "field", "fragment"), INVALID, ids=INVALID_IDS)
def test_cli_refuses_invalid_spec(case: str, field: str | None, fragment: str, run_cli, no_bundled_kernels,
                                  tmp_path: Path) -> None:
    path = INVALID_SPECS / f"{case}.yaml"
    out = tmp_path / "out.json"
    r = run_cli("analyze", "--kernels", KERNELS / "t_vadd.yaml", "--spec", path, "--format", "json", "-o", out)
    assert r.code == 2
    assert r.err.startswith("error: " + _expected_prefix(path, field))
    assert fragment in r.err
    assert "Traceback" not in r.err + r.out
    assert r.out == ""
    assert not out.exists()
    assert list(tmp_path.iterdir()) == []  # no temporary file left behind either


def test_cli_invalid_spec_in_specs_show(run_cli) -> None:
    path = INVALID_SPECS / "unknown_key.yaml"
    r = run_cli("specs", "show", path)
    assert r.code == 2
    assert f"{path}: memory.bandwith: unknown key (did you mean 'bandwidth'?)" in r.err
    assert "Traceback" not in r.err


def test_spec_id_must_be_lowercase(tmp_path: Path) -> None:
    path = tmp_path / "upper.yaml"
    path.write_text(TOY_SPEC.read_text().replace("id: toy", "id: Toy"), encoding="utf-8")
    with pytest.raises(InputError, match=r"upper.yaml: id: must be lowercase"):
        load_spec(path)


def test_top_level_must_be_a_mapping(tmp_path: Path) -> None:
    path = tmp_path / "list.yaml"
    path.write_text("- 1\n- 2\n", encoding="utf-8")
    with pytest.raises(InputError, match="expected a mapping of keys at the top, got a list"):
        load_spec(path)


def test_short_spec_name_typo_suggests_the_closest(run_cli):
    result = run_cli("analyze", "--spec", "t5")
    assert result.code == 2
    assert "did you mean 't4'" in result.err
