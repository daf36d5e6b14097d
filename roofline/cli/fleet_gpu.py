"""`calibrate` and `doctor` under mpirun/srun: the commands that need a GPU on every rank. Each rank calibrates (or
checks) its node-local GPU; rank 0 prints the fleet's view and judges it. Without a GPU each rank's error comes back
through the same gather, and rank 0 says it once (exit 3 with the fix).

The finishing steps are functions of the gathered outcomes, so they are tested with outcomes written by hand
(tests/test_fleet_commands.py) on machines with no GPU.
"""

from __future__ import annotations

import time
from pathlib import Path
from typing import Any, Mapping

import click

from roofline.cli.common import is_stdout, note, print_tables, write_output
from roofline.cli.fleet import gather_note, rank_bugs
from roofline.fleet.runner import judge, run_ranks


def _parts(outcomes: Mapping[int, Any]) -> list[dict[str, Any]]:
    """The ranks' documents that came back, each device block naming its rank, host and label, index = rank."""
    from roofline.fleet.identity import rank_label
    from roofline.fleet.merge import DONE

    parts = []
    for rank, out in sorted(outcomes.items()):
        if out.state != DONE or out.document is None:
            continue
        ident = {**out.identity, "rank": rank}
        device = {**out.document["device"], **{k: v for k, v in ident.items() if v is not None},
                  "index": rank, "label": rank_label(ident)}
        parts.append({**out.document, "device": device})
    return parts


def _fleet_name(parts: list[dict[str, Any]]) -> str:
    names = sorted({str(p["device"].get("name")) for p in parts})
    hosts = len({p["device"].get("host") for p in parts})
    gpus = f"{len(parts)} × {names[0]}" if len(names) == 1 else " + ".join(names)
    return f"{gpus} on {hosts} node(s)"


# ---- calibrate ----------------------------------------------------------------------------------------------------

def calibrate_fleet(spec_name: str, output: Path | None, quick: bool, outlier: float | None, fmt: str,
                    timeout: float | None) -> None:
    from roofline.fleet.work import calibrate_device

    started = time.perf_counter()

    def work(device: int, on_identity: Any) -> dict[str, Any]:
        return calibrate_device(spec_name, quick, device, on_identity=on_identity)

    def finish(outcomes: Mapping[int, Any], size: int, stats: Any) -> None:
        finish_calibration(outcomes, size, stats, output, quick, outlier, fmt, timeout, started)

    run_ranks("calibrating its node-local GPU", work, timeout, finish, note,
              ("note: under mpirun calibrate measures each GPU's own ceilings, not the links between ranks",))


def finish_calibration(outcomes: Mapping[int, Any], size: int, stats: Any, output: Path | None, quick: bool,
                       outlier: float | None, fmt: str, timeout: float | None, started: float) -> None:
    """Rank 0: one spec of the fleet's medians (-o), the comparison with the datasheet, the figures across the fleet
    (each GPU against the fleet median, each node against the median of the node medians), and exit 1 naming each
    rank that failed or hung and, with --outlier, each GPU and node too far below."""
    import datetime as dt

    from roofline.version import __version__
    from roofline.records.clockstate import CAPPED_FRACTION
    from roofline.errors import GateFailed
    from roofline.fleet.merge import grouped_failures, raise_if_none
    from roofline.gates.nodes import fleet_summary, node_failure, node_figure_rows
    from roofline.gates.hosts import figure_rows, outliers
    from roofline.measurement.calibrate.figures import calibration_document, comparison_rows
    from roofline.measurement.calibrate.spec import check_loads, measured_spec, spec_yaml
    from roofline.measurement.multi.calibrate import device_figure_lists, host_figures
    from roofline.render.tables.calibrate import calibration_notes, comparison_table
    from roofline.render.tables.fleet import COLUMNS_UP_TO, fleet_table
    from roofline.render.tables.hosts import figure_host_table

    raise_if_none(outcomes, timeout)
    began = time.perf_counter()
    parts = _parts(outcomes)
    hosts = len({p["device"].get("host") for p in parts})
    datasheet = parts[0]["datasheet"]
    figures = host_figures(parts, scope=f"a fleet of {hosts} node(s)", unit="rank")
    fleet_device = {k: v for k, v in parts[0]["device"].items()
                    if k not in ("rank", "local_rank", "device_index", "uuid", "pci_bus_id", "serial", "label",
                                 "host", "index")}
    fleet_device["name"] = _fleet_name(parts)
    date = dt.datetime.now(dt.timezone.utc).date().isoformat()
    spec_doc, warnings = measured_spec(figures, fleet_device, datasheet, date, __version__)
    text = spec_yaml(spec_doc)
    check_loads(text)
    rows = figure_rows(device_figure_lists(parts))
    nodes = node_figure_rows(rows)
    slow = outliers(rows, outlier) if outlier is not None else []
    slow_nodes = outliers(nodes, outlier) if outlier is not None else []
    comparison = comparison_rows(figures, datasheet)
    merged = time.perf_counter()

    if output is not None:
        write_output(output, text, "measured-spec")
    to_stdout = output is not None and is_stdout(output)
    summary = fleet_summary(rows, nodes, outlier)
    if fmt == "json":
        from roofline.load.jsonio import dumps

        doc = calibration_document(figures, datasheet, fleet_device, spec_doc, time.perf_counter() - started)
        doc.update(devices=[calibration_document(p["figures"], datasheet, p["device"], None) for p in parts],
                   hosts=rows, nodes=nodes, fleet_summary=summary, outliers=slow, node_outliers=slow_nodes,
                   device_errors=grouped_failures(outcomes, timeout),
                   fleet={"engine": "mpi", "size": size, "timeout": timeout, "gather": stats.to_dict()})
        click.echo(dumps(doc), nl=False, err=to_stdout)
    else:
        tables: list[Any] = [comparison_table(comparison, datasheet, fleet_device, time.perf_counter() - started,
                                              quick, CAPPED_FRACTION)]
        if len(parts) <= COLUMNS_UP_TO:
            tables.append(figure_host_table(rows, outlier))
        tables.append(fleet_table(summary, outlier))
        print_tables(tables, None, stderr=to_stdout)
    written = time.perf_counter()
    for line in calibration_notes(comparison, warnings):
        note(line)
    if output is not None and not to_stdout:
        note(f"wrote {output} (spec id {spec_doc['id']}: each figure the median of {len(parts)} GPUs)")
    rank_bugs(outcomes)
    note(gather_note(stats, merged - began, written - merged))
    problems = [*grouped_failures(outcomes, timeout),
                *(f"{o['where']}: {o['kernel']} {-o['deviation']:.1%} below the fleet median (limit {outlier:.0%})"
                  for o in slow),
                *(f"{o['kernel']}: {node_failure(o, outlier or 0)}" for o in slow_nodes)]
    if problems:
        raise GateFailed(f"{len(problems)} problem(s) across {size} ranks: " + "; ".join(problems))


# ---- doctor -------------------------------------------------------------------------------------------------------

def doctor_fleet(spec_name: str, use_ncu: bool, ncu_path: str | None, fmt: str, timeout: float | None) -> None:
    from roofline.fleet.work import doctor_device

    def work(device: int, on_identity: Any) -> dict[str, Any]:
        return doctor_device(spec_name, use_ncu, ncu_path, device, on_identity=on_identity)

    def finish(outcomes: Mapping[int, Any], size: int, stats: Any) -> None:
        finish_doctor(outcomes, size, stats, fmt, timeout)

    run_ranks("checking its node-local GPU", work, timeout, finish, note)


DOCTOR_FLEET_SCHEMA = "roofline/doctor-fleet/v1"


def doctor_ranks(outcomes: Mapping[int, Any], timeout: float | None) -> list[dict[str, Any]]:
    """One entry per rank: where it ran and its verdict (roofline/doctor/v1), or ERROR / HUNG with its error."""
    from roofline.fleet.identity import rank_label
    from roofline.fleet.merge import DONE, FAILED

    out = []
    for rank, o in sorted(outcomes.items()):
        ident = {k: o.identity.get(k) for k in ("host", "local_rank", "device_index", "uuid", "pci_bus_id")}
        entry: dict[str, Any] = {"rank": rank, **ident, "where": rank_label({**o.identity, "rank": rank})}
        if o.state == DONE and o.document is not None:
            entry.update(status=o.document["status"], verdict=o.document)
        elif o.state == FAILED:
            entry.update(status="ERROR", error=o.error)
        else:
            within = f" within --timeout {timeout:g} s" if timeout is not None else ""
            entry.update(status="HUNG", error=f"hung: no result{within}")
        out.append(entry)
    return out


def finish_doctor(outcomes: Mapping[int, Any], size: int, stats: Any, fmt: str, timeout: float | None) -> None:
    """Rank 0: a row per rank (its verdict, or its error), the WARN and FAIL lines named by rank, exit 1 when any
    rank FAILED a check, failed or hung."""
    from roofline.gates.doctor import FAIL
    from roofline.errors import GateFailed
    from roofline.fleet.merge import raise_if_none
    from roofline.render.tables.doctor import doctor_notes
    from roofline.render.tables.fleet import doctor_fleet_table

    raise_if_none(outcomes, timeout)
    began = time.perf_counter()
    ranks = doctor_ranks(outcomes, timeout)
    statuses = [r["status"] for r in ranks]
    worst = FAIL if any(s in (FAIL, "ERROR", "HUNG") for s in statuses) else max(
        statuses, key=lambda s: {"PASS": 0, "WARN": 1}.get(s, 0))
    doc = {"schema": DOCTOR_FLEET_SCHEMA, "status": worst,
           "counts": {s: statuses.count(s) for s in ("PASS", "WARN", "FAIL", "ERROR", "HUNG")},
           "fleet": {"engine": "mpi", "size": size, "timeout": timeout, "gather": stats.to_dict()}, "ranks": ranks}
    merged = time.perf_counter()
    if fmt == "json":
        from roofline.load.jsonio import dumps

        click.echo(dumps(doc), nl=False)
    else:
        from roofline.gates.doctor import Check

        print_tables([doctor_fleet_table(ranks)], None)
        for r in ranks:
            if r.get("verdict"):
                checks = [Check(**{**c, "limits": tuple(c["limits"])}) for c in r["verdict"]["checks"]]
                for line in doctor_notes(checks):
                    note(f"{r['where']}: {line}")
    written = time.perf_counter()
    rank_bugs(outcomes)
    note(gather_note(stats, merged - began, written - merged))
    judge(outcomes, size, timeout)
    failed = [r for r in ranks if r["status"] == FAIL]
    if failed:
        named = "; ".join(f"{r['where']}: " + ", ".join(c["name"] for c in r["verdict"]["checks"]
                                                       if c["status"] == FAIL) for r in failed[:5])
        more = f"; and {len(failed) - 5} more" if len(failed) > 5 else ""
        raise GateFailed(f"doctor FAILED on {len(failed)} of {size} rank(s): {named}{more}")
