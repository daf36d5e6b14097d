"""`plot --hierarchy`: the model's per-level points (hollow) beside the counters' (filled), a legend of only what is
drawn, and roof labels that no roof runs through. Synthetic results documents with round numbers."""

from __future__ import annotations

import math
from typing import Any

import pytest

pytest.importorskip("matplotlib")

from roofline.render.charts.hierarchy import hierarchy_figure, hierarchy_points, model_points  # noqa: E402

MACHINE = {"id": "toy", "name": "Toy GPU", "bandwidth": 1e12, "latency": 1e-6, "bytes_in_flight": 1e6,
           "resident_threads": 10_000, "roofs": {"fp32": 10e12}, "caches": {"l1": {"bandwidth": 8e12},
                                                                           "l2": {"bandwidth": 3e12}}}


def kernel(name: str, counters: dict[str, Any] | None, traffic: dict[str, Any] | None = None, **extra: Any) -> dict:
    k = {"name": name, "params": {"n": 1000}, "dtype": "float32", "roof": "fp32", "status": "OK", "verified": True,
         "flops": 1e9, "bytes": 4e9, "time_median": 1e-3, "counters": counters}
    k.update(extra)
    if traffic is not None:
        k["traffic"] = traffic
    return k


def doc(*kernels: dict) -> dict:
    return {"schema": "roofline/results/v1", "machine": MACHINE, "device": {"name": "toy"}, "kernels": list(kernels)}


FULL = {"l1_bytes": 16e9, "l2_bytes": 8e9, "dram_read": 3e9, "dram_write": 1e9, "flops": 2e9, "time": 1e-3}
TRAFFIC = {"l1": {"bytes": 20e9, "intensity": 0.05}, "l2": {"bytes": 10e9, "intensity": 0.1}}


def _gids(fig) -> list[str]:
    return [a.get_gid() for ax in fig.axes for a in ax.get_children() if a.get_gid()]


def test_model_points_by_hand() -> None:
    d = doc(kernel("naive", FULL, TRAFFIC), kernel("old", FULL), kernel("unprofiled", None, TRAFFIC))
    counted, skipped = hierarchy_points([d])
    assert skipped == ["unprofiled"]
    model = {(p.name, p.level): p for p in model_points([d], counted)}
    # the model's FLOPs (1e9) over the model's bytes at each level, at the model's FLOPs over the measured 1 ms
    assert model["naive", "l1"].x == pytest.approx(0.05) and model["naive", "l2"].x == pytest.approx(0.1)
    assert model["naive", "dram"].x == pytest.approx(0.25)
    assert all(p.y == pytest.approx(1e12) for p in model.values())
    # results written before `traffic` existed: the DRAM point only; no counters: no point at all
    assert sorted(level for name, level in model if name == "old") == ["dram"]
    imported = doc(kernel("theirs", FULL, status="IMPORTED"))
    assert model_points([imported], hierarchy_points([imported])[0]) == []
    assert all(p.model for p in model.values())
    by_name = {p.name: p for p in counted}
    assert model["naive", "l1"].number == by_name["naive"].number and model["naive", "l1"].color == by_name["naive"].color


def test_figure_draws_model_hollow_beside_counters() -> None:
    fig = hierarchy_figure([doc(kernel("naive", FULL, TRAFFIC))])
    gids = _gids(fig)
    assert sorted(g for g in gids if g.startswith("roofline:hier-point:")) == [
        "roofline:hier-point:dram", "roofline:hier-point:l1", "roofline:hier-point:l2"]
    assert sorted(g for g in gids if g.startswith("roofline:hier-model:")) == [
        "roofline:hier-model:dram", "roofline:hier-model:l1", "roofline:hier-model:l2"]
    ax = fig.axes[0]
    for line in ax.get_lines():
        if (line.get_gid() or "").startswith("roofline:hier-model:"):
            assert line.get_markerfacecolor() == "none"
        if (line.get_gid() or "").startswith("roofline:hier-point:"):
            assert line.get_markerfacecolor() != "none"
    labels = [t.get_text() for t in ax.get_legend().get_texts()]
    assert "model (hollow)" in labels and "counters (filled)" in labels


def test_legend_lists_only_the_markers_drawn() -> None:
    dram_only = {"dram_read": 3e9, "dram_write": 1e9, "flops": 2e9, "time": 1e-3}
    fig = hierarchy_figure([doc(kernel("stream", dram_only))])
    labels = [t.get_text() for t in fig.axes[0].get_legend().get_texts()]
    assert "DRAM intensity" in labels
    assert "L1 intensity" not in labels and "L2 intensity" not in labels
    fig = hierarchy_figure([doc(kernel("stream", dram_only, {"l1": {"bytes": 8e9, "intensity": 0.125}}))])
    labels = [t.get_text() for t in fig.axes[0].get_legend().get_texts()]
    assert "L1 intensity" in labels and "L2 intensity" not in labels  # the model's L1 point is drawn


def test_no_roof_runs_through_its_label() -> None:
    fig = hierarchy_figure([doc(kernel("naive", FULL, TRAFFIC))])
    ax = fig.axes[0]
    renderer = fig.canvas.get_renderer()
    roofs = {line.get_gid().rsplit(":", 1)[1]: line for line in ax.get_lines()
             if (line.get_gid() or "").startswith("roofline:hier-roof:")}
    labels = [t for t in ax.texts if (t.get_gid() or "").startswith("roofline:hier-roof-label:")]
    assert sorted(t.get_gid().rsplit(":", 1)[1] for t in labels) == sorted(roofs) == ["dram", "l1", "l2"]
    for text in labels:
        angle = text.get_rotation()
        text.set_rotation(0)
        box = text.get_window_extent(renderer)  # unrotated: origin at the anchor, the text's width and height
        text.set_rotation(angle)
        u = (math.cos(math.radians(angle)), math.sin(math.radians(angle)))
        v = (-u[1], u[0])
        for line in roofs.values():  # neither its own roof nor another runs through the label
            (x0, y0), (x1, y1) = ax.transData.transform(line.get_xydata())
            for i in range(201):
                sx, sy = x0 + (x1 - x0) * i / 200 - box.x0, y0 + (y1 - y0) * i / 200 - box.y0
                along, across = sx * u[0] + sy * u[1], sx * v[0] + sy * v[1]
                assert not (0 <= along <= box.width and 0 <= across <= box.height), (text.get_text(), line.get_gid())


def test_cache_roofs_come_from_the_results_machine_block_not_from_the_bundled_specs():
    from roofline.render.charts.hierarchy import cache_bandwidths

    machine = {"id": "h200-sxm", "bandwidth": 4.8e12}
    assert cache_bandwidths({"machine": {**machine, "caches": {"l2": {"bandwidth": 1.0e13}}}}) == {
        "l1": None, "l2": 1.0e13, "dram": 4.8e12}
    # an older file without caches: no cache roofs, never a lookup of the bundled spec by id
    assert cache_bandwidths({"machine": machine, "device": {"spec_id": "h200-sxm"}}) == {
        "l1": None, "l2": None, "dram": 4.8e12}
    assert cache_bandwidths({"machine": machine}, {"l1": 3.0e13})["l1"] == 3.0e13


def test_the_machine_block_carries_the_spec_cache_figures():
    from roofline.model.analysis import machine_summary
    from roofline.load.specs import SpecCatalog

    summary = machine_summary(SpecCatalog.bundled().resolve("h200"))
    assert summary["caches"]["l2"]["size"] == 60 * 2**20
