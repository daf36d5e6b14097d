"""Issue 38 items 4 and 5: every share is of ALL the GPU time, the work no model covers is a row of its own (with
its reasons, time and share) in every table, chart and report format; whole-program figures are bounds when work
has no model; a program with too much unmodelled time fails its gate; and a kernel, group or program above its
ceiling is never a pass.

tests/data/kineto/step.json is a real trace: 36 µs of GPU time, part of it with no model (aten::nonzero's 4 µs, a
kernel launched inside no op; its CUDA-graph kernels too where the replay is not attributed). The expected figures
are computed from the imported document, so they hold whichever of those a model covers."""

from __future__ import annotations

import json
import re
import xml.etree.ElementTree as ET
from pathlib import Path

import pytest

from roofline.kineto.document import import_traces
from roofline.records.coverage import (PROFILE_HINT, Unmodelled, above_ceiling, fraction_bounds,
                                       utilisation_bounds)
from roofline.records.files import load_results
from roofline.render.tables.grouped import (grouped_markdown, grouped_table, program_line, step_text,
                                            unmodelled_line)
from roofline.records.groups import Program
from roofline.model.units import format_time

DATA = Path(__file__).parent / "data" / "kineto"
STEP = DATA / "step.json"
GPU_TIME = 36e-6
NONZERO = 4e-6  # aten::nonzero: no model; 11.1% of the GPU time


def _rendered(table: object, width: int = 400) -> str:
    from rich.console import Console

    console = Console(width=width, record=True, color_system=None)
    console.print(table)
    return console.export_text()


@pytest.fixture(scope="module")
def step_doc() -> dict:
    doc, _ = import_traces([STEP], "h200")
    return doc


@pytest.fixture
def step_file(tmp_path: Path, step_doc: dict) -> Path:
    path = tmp_path / "step-results.json"
    path.write_text(json.dumps(step_doc), encoding="utf-8")
    return path


def _slow_spec(tmp_path: Path, l2: str | None) -> Path:
    """An H200 whose DRAM roof is 8 GB/s: the trace's launches beat it (clamp_min and addmm above 100%); with an
    L2 of `l2`, or none known."""
    spec = tmp_path / f"slow-{str(l2).replace(' ', '')}.yaml"
    spec.write_text(f"""schema_version: 1
id: slow-h200
name: A slow H200 for tests
device_names: ["NVIDIA H200"]
memory:
  bandwidth: 8 GB/s
  latency: 332 ns
compute:
  fp32: 66.9 TFLOP/s
  bf16: 133.8 TFLOP/s
  bf16_tensor: 989.4 TFLOP/s
""" + (f"caches:\n  l2: {{size: {l2}}}\n" if l2 else ""), encoding="utf-8")
    return spec


def _addmm_share(doc: dict) -> str:
    addmm = next(g for g in doc["groups"] if g["name"] == "aten::addmm")
    return f"{addmm['time'] / GPU_TIME:.1%}"


def _lost(doc: dict) -> tuple[float, float]:
    """(unmodelled time, its share of all GPU time) of an imported document."""
    return doc["program"]["unmodelled_time"], doc["program"]["unmodelled_share"]


# ---- shares of all GPU time -------------------------------------------------------------------------------------


def test_group_shares_are_of_all_gpu_time(step_doc: dict) -> None:
    program = step_doc["program"]
    assert program["gpu_time"] == pytest.approx(GPU_TIME) and program["unmodelled_time"] >= NONZERO
    modelled = sum(k["time_median"] for k in step_doc["kernels"])
    addmm = next(g for g in step_doc["groups"] if g["name"] == "aten::addmm")
    assert addmm["share"] == pytest.approx(addmm["time"] / GPU_TIME)  # not addmm["time"] / modelled
    assert addmm["share"] < addmm["time"] / modelled
    assert sum(g["share"] for g in step_doc["groups"]) + program["unmodelled_share"] == pytest.approx(1.0)


def test_a_file_written_with_shares_of_the_modelled_time_reads_and_shows_shares_of_all(tmp_path: Path,
                                                                                         step_doc: dict) -> None:
    old = json.loads(json.dumps(step_doc))
    modelled = sum(k["time_median"] for k in old["kernels"])
    for g in old["groups"]:
        g["share"] = g["time"] / modelled  # as files before issue 38 hold it
    path = tmp_path / "old.json"
    path.write_text(json.dumps(old), encoding="utf-8")
    typed = load_results(path).typed
    addmm = next(g for g in typed.grouped() if g.name == "aten::addmm")
    assert addmm.share == pytest.approx(addmm.time / GPU_TIME)


def test_the_table_has_the_unmodelled_rows_with_their_share(step_doc: dict) -> None:
    text = _rendered(grouped_table(step_doc))
    assert re.search(r"aten::addmm\s.*" + re.escape(_addmm_share(step_doc)), text)
    assert re.search(r"unmodelled: no model for aten::nonzero\s.*\b1\s.*4 µs\s.*11\.1%", text)
    time, share = _lost(step_doc)
    assert f"{share:.1%} ({format_time(time)}) with no model" in text


def test_the_markdown_has_the_unmodelled_rows(step_doc: dict) -> None:
    text = grouped_markdown(step_doc)
    row = next(line for line in text.splitlines() if "aten::nonzero" in line)
    assert row.startswith("| – | unmodelled: no model for aten::nonzero | 1 | 4 µs | 11.1% |")
    assert f"| {_addmm_share(step_doc)} |" in next(line for line in text.splitlines() if "aten::addmm" in line)


def test_the_launch_table_says_what_has_no_model(tmp_path: Path) -> None:
    from roofline.render.tables.trace import launch_table

    doc, _ = import_traces([STEP], "h200", group_by="none")
    text = _rendered(launch_table(doc))
    assert "unmodelled: no model for aten::nonzero" in text and "4 µs (11.1%)" in text
    time = sum(u["time"] for u in doc["unmodelled"])  # no program block without groups
    share = time / GPU_TIME
    assert f"unmodelled: {format_time(time)}, {share:.1%} of GPU time" in text


def test_report_formats_show_shares_of_all_and_the_unmodelled_rows(run_cli, step_file: Path, step_doc: dict) -> None:
    ok = ("--max-unmodelled", "60%")
    code, out, err = run_cli("report", step_file, *ok, "--wide")
    assert code == 0, err
    assert re.search(r"aten::addmm\s.*" + re.escape(_addmm_share(step_doc)), out)
    assert re.search(r"unmodelled: no model for aten::nonzero.*11\.1%", out)
    code, out, err = run_cli("report", step_file, *ok, "--format", "markdown")
    assert "| – | unmodelled: no model for aten::nonzero | 1 | 4 µs | 11.1% |" in out
    code, out, err = run_cli("report", step_file, *ok, "--format", "json")
    report = json.loads(out)
    addmm = next(r for r in report["rows"] if r["name"] == "aten::addmm")
    assert addmm["share"] == pytest.approx(addmm["time"] / GPU_TIME)
    lost = report["programs"][0]["unmodelled"]
    assert lost["share"] == pytest.approx(_lost(step_doc)[1])
    nonzero = next(r for r in lost["reasons"] if r["why"] == "no model for aten::nonzero")
    assert nonzero["time"] == pytest.approx(NONZERO) and nonzero["share"] == pytest.approx(NONZERO / GPU_TIME)
    assert sum(r["time"] for r in lost["reasons"]) == pytest.approx(lost["time"])
    code, out, err = run_cli("report", step_file, *ok, "--format", "junit")
    suite = ET.fromstring(out).find("testsuite")
    case = next(c for c in suite.iter("testcase") if c.get("name") == "unmodelled: no model for aten::nonzero")
    skipped = case.find("skipped")
    assert skipped is not None and "11.1% of GPU time" in skipped.get("message", "")


def test_the_kernel_report_of_an_ungrouped_trace_lists_the_unmodelled_time(run_cli, tmp_path: Path) -> None:
    doc, _ = import_traces([STEP], "h200", group_by="none")
    path = tmp_path / "launches.json"
    path.write_text(json.dumps(doc), encoding="utf-8")
    time = sum(u["time"] for u in doc["unmodelled"])
    line = f"unmodelled: {format_time(time)}, {time / GPU_TIME:.1%} of GPU time"
    code, out, err = run_cli("report", path, "--wide")
    assert code == 0, err
    flat = " ".join(out.split())  # the caption wraps at the terminal's width
    assert line in flat and "no model for aten::nonzero (4 µs, 11.1%)" in flat
    code, out, _ = run_cli("report", path, "--format", "markdown")
    assert "**Unmodelled**" in out and line in out
    code, out, _ = run_cli("report", path, "--format", "json")
    assert json.loads(out)["devices"][0]["unmodelled"]["time"] == pytest.approx(time)
    code, out, _ = run_cli("report", path, "--format", "junit")
    root = ET.fromstring(out.split("?>", 1)[1])
    case = next(c for c in root.iter("testcase") if c.get("name") == "unmodelled: no model for aten::nonzero")
    assert "11.1% of GPU time" in case.find("skipped").get("message", "")
    assert int(root.get("tests")) == len(doc["kernels"]) + len({u["why"] for u in doc["unmodelled"]})


def test_the_png_side_panel_lists_the_unmodelled_time(step_doc: dict) -> None:
    pytest.importorskip("matplotlib")
    from roofline.render.charts.profile import profile_figure

    fig = profile_figure(step_doc)
    side = next(t.get_text() for ax in fig.axes for t in ax.texts if t.get_gid() == "roofline:side-panel")
    assert "share of all GPU time" in side
    time, share = _lost(step_doc)
    assert f"no model: {format_time(time)}," in side and f"{share:.1%} of GPU time" in side
    assert "no model for aten::nonzero" in side and "4 µs, 11.1%" in side


def test_the_html_page_has_the_unmodelled_rows_and_shares_of_all(step_doc: dict) -> None:
    pytest.importorskip("matplotlib")
    from roofline.render.charts.html import profile_html

    text = profile_html(step_doc)
    rows = re.findall(r'<tr id="unmodelled-\d+" class="unmodelled">(.*?)</tr>', text)
    assert any("no model for aten::nonzero" in r and "11.1%" in r for r in rows)
    time, share = _lost(step_doc)
    assert f'<p id="unmodelled">unmodelled: {format_time(time)}, {share:.1%} of GPU time' in text
    data = json.loads(re.search(r'id="roofline-data">(.*?)</script>', text, re.S).group(1))
    addmm = next(p for p in data["points"] if p["name"] == "aten::addmm")
    assert f"({_addmm_share(step_doc)} of GPU time)" in addmm["tooltip"]


def test_the_html_tooltip_in_a_browser_shows_the_share_of_all_gpu_time(tmp_path: Path, step_doc: dict) -> None:
    from test_html_chart import INSTALL_HINT, _chromium

    sync_api = pytest.importorskip("playwright.sync_api", reason=INSTALL_HINT)
    exe = _chromium()
    if exe is None:
        pytest.skip(INSTALL_HINT)
    from conftest import plot_html

    page = plot_html(step_doc, tmp_path, "step")
    points = [g["name"] for g in step_doc["groups"] if g["flops"]]
    with sync_api.sync_playwright() as pw:
        browser = pw.chromium.launch(executable_path=exe, headless=True, args=["--no-sandbox"])
        tab = browser.new_page(viewport={"width": 1400, "height": 1000})
        tab.goto(page.as_uri())
        index = [g["name"] for g in step_doc["groups"]].index("aten::addmm")
        assert "aten::addmm" in points
        tab.locator(f"#pt-{index}").hover()
        tooltip = tab.locator("#tooltip")
        tooltip.wait_for(state="visible", timeout=5000)
        assert f"({_addmm_share(step_doc)} of GPU time)" in tooltip.inner_text()
        assert "no model for aten::nonzero" in tab.locator("#unmodelled").inner_text()
        browser.close()


def test_list_ops_of_a_plain_trace_get_the_profile_hint() -> None:
    entries = [{"op": "aten::_fused_adamw_", "why": "no model for aten::_fused_adamw_", "time": 1e-3},
               {"op": "aten::nonzero", "why": "no model for aten::nonzero", "time": 1e-5}]
    plain = Unmodelled.of(entries, 4e-3)
    adamw = plain.reasons[0]
    assert adamw.share == pytest.approx(0.25) and adamw.hint == PROFILE_HINT
    assert "`roofline profile --with torch` records their shapes" in adamw.text
    assert plain.reasons[1].hint is None
    assert "roofline profile --with torch" in unmodelled_line(plain)
    profiled = Unmodelled.of(entries, 4e-3, source_with="torch")  # profile --with torch annotated them already
    assert profiled.reasons[0].hint is None


# ---- bounds of whole-program figures ----------------------------------------------------------------------------


def test_fraction_bounds_hold_whatever_the_unmodelled_work_did() -> None:
    b = fraction_bounds(sol_time=4e-6, modelled_time=8e-6, unmodelled_time=2e-6)
    assert b.modelled == pytest.approx(0.5) and b.low == pytest.approx(0.4) and b.high == pytest.approx(0.6)
    assert not b.exact and not b.unknown


def test_mfu_is_a_lower_bound_or_na_when_work_has_no_model() -> None:
    base = {"wall_time": 10e-3, "idle_share": 0.1, "gpu_time": 9e-3, "fraction_of_ceiling_wall": 0.3,
            "mfu": 0.4, "hfu": 0.45, "peak": {"roof": "bf16_tensor", "flops": 989.4e12}}
    exact = step_text({**base, "unmodelled_time": 0.05e-3})  # 0.6% of GPU time: the figure stands
    assert "MFU 40.0%" in exact and "HFU 45.0%" in exact and "≥" not in exact
    bound = step_text({**base, "unmodelled_time": 2e-3})  # 22%: the unmodelled time can only add FLOPs
    assert "MFU ≥ 40.0% (≤ 60.0%)" in bound and "HFU ≥ 45.0%" in bound and "lower bounds" in bound
    unknown = step_text({**base, "unmodelled_time": 8e-3})  # 89%
    assert "MFU n/a" in unknown and "HFU n/a" in unknown and "MFU 40" not in unknown
    b = utilisation_bounds(0.4, 2e-3, 10e-3, 9e-3)
    assert (b.low, b.high) == (pytest.approx(0.4), pytest.approx(0.6))


def test_an_mfu_above_100_percent_is_not_printed_as_a_figure() -> None:
    text = step_text({"wall_time": 1e-3, "idle_share": 0.0, "gpu_time": 1e-3, "unmodelled_time": 0.0,
                      "mfu": 3.47, "hfu": 3.47, "peak": {"roof": "bf16_tensor", "flops": 989.4e12}})
    assert "347" in text and "MFU not shown" in text and "HFU not shown" in text
    assert "MFU 347" not in text and "no GPU does" in text


def test_the_program_line_gives_a_bound_not_the_modelled_fraction(step_doc: dict) -> None:
    p = step_doc["program"]
    line = program_line(Program.as_written(p), None)
    b = fraction_bounds(p["sol_time"], p["time"], p["unmodelled_time"])
    assert f"time-weighted fraction of ceiling over all GPU time ≥ {b.low:.1%} (≤ {b.high:.1%})" in line
    assert b.low < p["fraction_of_ceiling"] < b.high
    graph = Program(1.57e-6, 0.00628e-6, 0.004, 1.56e-6, 1, 1, 1.0,
                    {"gpu_time": 1.14e-3, "unmodelled_time": 1.14e-3 - 1.57e-6, "unmodelled_share": 0.9986})
    line = program_line(graph, None)
    assert "fraction of ceiling over all GPU time n/a" in line and "0.4%" in line.split("alone at")[1]


# ---- the unmodelled-share gate ----------------------------------------------------------------------------------


def test_a_program_with_more_than_5_percent_unmodelled_fails_by_default(run_cli, step_file: Path,
                                                                         step_doc: dict) -> None:
    share = _lost(step_doc)[1]
    assert share > 0.11  # aten::nonzero alone
    code, out, err = run_cli("report", step_file, "--format", "json")
    assert code == 1
    assert f"{share:.1%} of GPU time has no model, over the 5% --max-unmodelled gate" in err
    program = json.loads(out)["programs"][0]
    assert program["verdict"] == "fail" and json.loads(out)["gates"]["max_unmodelled"] == 0.05
    code, out, err = run_cli("report", step_file, "--max-unmodelled", "50%")
    assert code == 0, err


def test_the_gates_file_sets_max_unmodelled(run_cli, step_file: Path, tmp_path: Path) -> None:
    gates = tmp_path / "gates.yaml"
    gates.write_text("default:\n  max_unmodelled: 60%\n", encoding="utf-8")
    code, _, err = run_cli("report", step_file, "--gates", gates)
    assert code == 0, err
    code, _, err = run_cli("report", step_file, "--gates", gates, "--max-unmodelled", "10%")  # the option wins
    assert code == 1 and "over the 10% --max-unmodelled gate" in err
    per_kernel = tmp_path / "per-kernel.yaml"
    per_kernel.write_text("kernels:\n  sum: {max_unmodelled: 10%}\n", encoding="utf-8")
    code, _, err = run_cli("report", step_file, "--gates", per_kernel)
    assert code == 2 and "kernels.sum.max_unmodelled" in err and "give it under default" in err


def test_fail_below_program_judges_the_lower_bound(run_cli, step_file: Path, step_doc: dict) -> None:
    p = step_doc["program"]
    b = fraction_bounds(p["sol_time"], p["time"], p["unmodelled_time"])
    limit = (b.low + p["fraction_of_ceiling"]) / 2  # the modelled part alone holds it; over all GPU time, not sure
    code, out, err = run_cli("report", step_file, "--max-unmodelled", "60%", "--fail-below-program", repr(limit),
                             "--format", "json")
    assert code == 1 and f"program at ≥ {b.low:.1%} of ceiling over all its GPU time" in err
    code, out, err = run_cli("report", step_file, "--max-unmodelled", "60%", "--fail-below-program",
                             repr(b.low * 0.9))
    assert code == 0, err


# ---- above the ceiling ------------------------------------------------------------------------------------------


def test_above_ceiling_names_l2_when_the_bytes_fit_else_the_spec_or_model() -> None:
    machine = {"id": "h200-sxm", "caches": {"l2": {"size": 60 * 2**20}}}
    fits = above_ceiling(1.11, "memory", 16.8e6, machine, "the Kineto trace")
    assert fits is not None and fits.cause == "l2-resident" and "L2" in fits.text and "--spec" not in fits.text
    big = above_ceiling(1.11, "memory", 2e9, machine, "the Kineto trace")
    assert big is not None and big.cause == "spec-or-model" and "do not fit" in big.text
    assert "the CSV" not in big.text and "from the Kineto trace" in big.text
    counted = above_ceiling(1.11, "memory", 16.8e6, machine, "the ncu CSV")  # ncu counts DRAM bytes: not L2
    assert counted is not None and counted.cause == "spec-or-model" and "is --spec the GPU" in counted.text
    assert above_ceiling(1.01, "memory", 16.8e6, machine) is None


def test_a_kernel_above_its_ceiling_is_not_a_pass(run_cli, tmp_path: Path) -> None:
    doc = json.loads((Path(__file__).parent / "data" / "results" / "h100.json").read_text(encoding="utf-8"))
    k = doc["kernels"][1]  # the times made to agree with the stored fraction (a results file is checked for that)
    scale = k["time_median"] / (k["sol_time"] / 5.11)
    for field in ("time_min", "time_median", "time_max"):
        if k.get(field) is not None:
            k[field] /= scale
    k["fraction_of_ceiling"] = k["sol_time"] / k["time_median"]
    path = tmp_path / "r.json"
    path.write_text(json.dumps(doc), encoding="utf-8")
    code, out, err = run_cli("report", path, "--format", "json")
    assert code == 0, err
    report = json.loads(out)
    assert report["rows"][1]["verdict"] == "above-ceiling" and report["summary"]["above_ceiling"] == 1
    assert report["summary"]["passed"] == 3
    code, out, _ = run_cli("report", path, "--format", "junit")
    assert "above-ceiling:" in out
    code, out, _ = run_cli("report", path, "--strict-model", "--format", "json")
    assert code == 1 and json.loads(out)["rows"][1]["verdict"] == "fail"


@pytest.mark.parametrize("l2, cause", [("60 MiB", "L2-resident"), (None, "counts too few bytes or FLOPs")])
def test_a_group_above_its_ceiling_gets_its_own_verdict_naming_the_cause(run_cli, tmp_path: Path, l2: str | None,
                                                                         cause: str) -> None:
    out_file = tmp_path / "slow.json"
    code, _, err = run_cli("import", "torch", STEP, "--spec", _slow_spec(tmp_path, l2), "-o", out_file)
    assert code in (0, None), err
    assert "the CSV" not in err and cause in err  # the import's note names the trace and the likely cause
    code, out, err = run_cli("report", out_file, "--max-unmodelled", "60%", "--format", "json")
    assert code == 0, err
    report = json.loads(out)
    clamp = next(r for r in report["rows"] if r["name"] == "aten::clamp_min")
    assert clamp["verdict"] == "above-ceiling" and clamp["fraction_of_ceiling"] > 1.5
    assert cause in clamp["notes"][0]
    assert report["summary"]["above_ceiling"] >= 2 and report["summary"]["ok"]
    code, out, err = run_cli("report", out_file, "--max-unmodelled", "60%", "--format", "markdown")
    assert "**above-ceiling**" in out


@pytest.mark.parametrize("l2, cause", [("60 MiB", "l2-resident"), (None, "spec-or-model")])
def test_a_program_above_its_ceiling_and_strict_model_on_a_grouped_profile(run_cli, tmp_path: Path,
                                                                           l2: str | None, cause: str) -> None:
    out_file = tmp_path / "slow.json"
    code, _, err = run_cli("import", "torch", STEP, "--spec", _slow_spec(tmp_path, l2), "-o", out_file)
    assert code in (0, None), err
    code, out, err = run_cli("report", out_file, "--max-unmodelled", "60%", "--format", "json")
    program = json.loads(out)["programs"][0]
    assert program["verdict"] == "above-ceiling" and program["fraction_of_ceiling"] > 1.02
    assert program["above_ceiling"]["cause"] == cause  # with an L2 every group above its roof fits in it
    clamp = next(r for r in json.loads(out)["rows"] if r["name"] == "aten::clamp_min")
    assert f"aten::clamp_min ({clamp['fraction_of_ceiling']:.0%}, {cause})" in program["notes"][0]
    code, out, err = run_cli("report", out_file, "--max-unmodelled", "60%", "--strict-model", "--format", "json")
    assert code == 1 and "(--strict-model)" in err
    report = json.loads(out)
    assert report["programs"][0]["verdict"] == "fail"
    assert next(r for r in report["rows"] if r["name"] == "aten::clamp_min")["verdict"] == "fail"
