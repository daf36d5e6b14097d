"""What the fleet's gather costs as the ranks grow: `mpirun --oversubscribe -n R roofline measure --backend numpy` on
a tiny kernel selection, for R = 1, 4, 16, 64 (a benchmark, not a test; docs/measurements/fleet-scale.md has a run).

    PYTHONPATH=. python3 benchmarks/fleet_scale.py                    # R = 1,4,16,64, node and flat gathering
    PYTHONPATH=. python3 benchmarks/fleet_scale.py --ranks 4,16 --gather flat --markdown

Per R and gathering mode it reports what rank 0 measured inside the tool (the `fleet: gather ...` line and the file's
`fleet.gather` block): the result messages it received, their pickled bytes, the seconds spent receiving them, the
merge and the write (JSON text, the -o file and standard output); and from outside: the results file's size and the
wall time of the whole mpirun (start-up of every rank included: with R ranks on a few cores that dominates).

`node` gathering splits the ranks into simulated nodes of --node-size ranks (ROOFLINE_FLEET_TEST_NODE_SIZE, named
host~n0, host~n1, ...), so the two-level gather runs on one machine; `flat` sends every rank straight to rank 0.
R = 1 is not a fleet (one rank runs `measure` as without mpirun): it is the single-GPU baseline of the file size.

    PYTHONPATH=. python3 benchmarks/fleet_scale.py --offline 64,1000,10000

measures rank 0's side alone at rank counts no machine here can start: copies of one rank's measured document, each
pickled and unpickled (the CPU cost of receiving it), merged, written as JSON; and the memory that takes, with the
whole-document writer (merge everything, then one JSON text) and with the streaming one `measure` and `sweep` use
(--writer).
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import re
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
GATHER_LINE = re.compile(r"fleet: gather \((?P<mode>\w+), (?P<groups>\d+) group\(s\)\): .*?merge (?P<merge>[\d.]+) ms; "
                         r"write (?P<write>[\d.]+) ms")
MPI_ENV = {"OMPI_ALLOW_RUN_AS_ROOT": "1", "OMPI_ALLOW_RUN_AS_ROOT_CONFIRM": "1",
           "OMPI_MCA_btl_vader_single_copy_mechanism": "none"}


def run_once(ranks: int, gather: str, node_size: int, kernels: list[str], params: list[str], min_time: float,
             timeout: float) -> dict:
    """One mpirun; the figures of one table row."""
    env = {**os.environ, **MPI_ENV, "PYTHONPATH": str(ROOT), "ROOFLINE_FLEET_GATHER": gather,
           "OMP_NUM_THREADS": "1", "OPENBLAS_NUM_THREADS": "1"}
    if gather == "node":
        env["ROOFLINE_FLEET_TEST_NODE_SIZE"] = str(node_size)
    forward = [a for name in ("ROOFLINE_FLEET_GATHER", "ROOFLINE_FLEET_TEST_NODE_SIZE", "OMP_NUM_THREADS",
                              "OPENBLAS_NUM_THREADS") if name in env for a in ("-x", name)]
    with tempfile.TemporaryDirectory() as tmp:
        out = Path(tmp) / "fleet.json"
        cmd = ["mpirun", "--oversubscribe", "-n", str(ranks), *forward, sys.executable, "-m", "roofline", "measure",
               "--backend", "numpy", *[a for p in params for a in ("-p", p)], "--min-time", str(min_time),
               "--min-repeats", "3", *kernels, "--format", "json", "-o", str(out),
               *(["--timeout", str(timeout)] if ranks > 1 else [])]
        started = time.perf_counter()
        proc = subprocess.run(cmd, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True,
                              timeout=timeout + 600)
        wall = time.perf_counter() - started
        if proc.returncode != 0:
            raise SystemExit(f"R={ranks} {gather}: mpirun exited {proc.returncode}:\n{proc.stderr[-3000:]}")
        doc = json.loads(out.read_text())
        size = out.stat().st_size
    row = {"ranks": ranks, "gather": gather if ranks > 1 else "-", "file_bytes": size, "wall_s": wall,
           "entries": len(doc["kernels"])}
    match = GATHER_LINE.search(proc.stderr)
    if ranks > 1:
        if not match:
            raise SystemExit(f"R={ranks}: no 'fleet: gather' line on standard error:\n{proc.stderr[-2000:]}")
        stats = doc["fleet"]["gather"]
        row.update(groups=stats["groups"], messages=stats["messages"], pickled_bytes=stats["bytes"],
                   receive_s=stats["receive_s"], merge_s=float(match["merge"]) / 1e3, write_s=float(match["write"]) / 1e3,
                   last_result_s=stats["last_result_s"])
        row["gather_s"] = row["receive_s"] + row["merge_s"] + row["write_s"]
    return row


def rank_document(kernels: list[str], params: list[str], min_time: float) -> dict:
    """One rank's results document, measured here in-process as a fleet rank measures it (NumPy backend)."""
    from roofline.fleet.work import measure_selection
    from roofline.measurement.multi.measure import MeasureRequest
    from roofline.measurement.policy import MeasurePolicy

    request = MeasureRequest(tuple(kernels), (), tuple(params), "auto", MeasurePolicy(min_time=min_time, min_repeats=3))
    return measure_selection(request, "numpy", 0)


def widened(doc: dict, copies: int) -> dict:
    """A rank document with its entries repeated `copies` times under distinct names ('copy~2'): the entry count of
    a larger selection (30 kernels a GPU) from entries measured here, each of the measured size."""
    import copy

    if copies <= 1:
        return doc
    kernels = [{**copy.deepcopy(k), "name": f"{k['name']}~{i}"} for i in range(copies) for k in doc["kernels"]]
    return {**doc, "kernels": kernels}


def offline(ranks: int, doc: dict, node_size: int) -> dict:
    """Rank 0's share at `ranks` ranks without the ranks: `ranks` copies of one rank's document, each pickled and
    unpickled (what receiving a result costs in CPU), merged (fleet_document), turned into JSON and written; then
    the peak memory of holding them and merging them (tracemalloc, a second pass, as it slows the first)."""
    import copy
    import pickle
    import tracemalloc

    from roofline.fleet.identity import rank_identity
    from roofline.fleet.merge import DONE, RankOutcome, fleet_document
    from roofline.load.jsonio import dumps

    def outcomes() -> dict:
        out = {}
        for r in range(ranks):
            ident = {"name": doc["device"]["name"], "cpu": doc["device"].get("cpu"),
                     **rank_identity(f"node-{r // node_size:05d}", r, r % node_size, r % node_size)}
            out[r] = RankOutcome(r, ident, DONE, copy.deepcopy(doc))
        return out

    outs = outcomes()
    started = time.perf_counter()
    wire = 0
    for out in outs.values():
        blob = pickle.dumps(("done", out.document), protocol=pickle.HIGHEST_PROTOCOL)
        wire += len(blob)
        out.document = pickle.loads(blob)[1]
    unpickle = time.perf_counter() - started
    started = time.perf_counter()
    merged = fleet_document(outs, ranks)
    merge = time.perf_counter() - started
    started = time.perf_counter()
    text = dumps(merged)
    encode = time.perf_counter() - started
    with tempfile.TemporaryDirectory() as tmp:
        started = time.perf_counter()
        (Path(tmp) / "fleet.json").write_text(text)
        write = time.perf_counter() - started
    size = len(text.encode())
    del merged, text, outs
    tracemalloc.start()
    outs = outcomes()
    for out in outs.values():  # as received: unpickled, sharing no strings with each other
        out.document = pickle.loads(pickle.dumps(out.document, protocol=pickle.HIGHEST_PROTOCOL))
    held = tracemalloc.get_traced_memory()[0]
    dumps(fleet_document(outs, ranks))
    peak = tracemalloc.get_traced_memory()[1]
    tracemalloc.stop()
    return {"ranks": ranks, "writer": "whole", "entries": ranks * len(doc["kernels"]), "pickled_bytes": wire,
            "unpickle_s": unpickle, "merge_s": merge, "json_s": encode, "write_s": write, "file_bytes": size,
            "held_bytes": held, "peak_bytes": peak}


def offline_streamed(ranks: int, doc: dict, node_size: int) -> dict:
    """The same at rank 0 with the streaming writer `measure` and `sweep` use (roofline.fleet.stream): each
    document, as it is received (unpickled), is spooled and a slim copy kept; then the merge of the slim copies and
    the file assembled from the spool, written atomically. Timed in one pass, memory (tracemalloc) in a second."""
    import copy
    import pickle
    import tracemalloc

    from roofline.fleet.identity import rank_identity
    from roofline.fleet.merge import DONE, RankOutcome, fleet_document, part
    from roofline.fleet.stream import Spool
    from roofline.load.jsonio import write_text_atomic

    blob = pickle.dumps(("done", doc), protocol=pickle.HIGHEST_PROTOCOL)

    def run(folder: str) -> dict:
        spool = Spool(folder, 8)
        outs, took = {}, {"receive": 0.0}
        for r in range(ranks):
            ident = {"name": doc["device"]["name"], "cpu": doc["device"].get("cpu"),
                     **rank_identity(f"node-{r // node_size:05d}", r, r % node_size, r % node_size)}
            started = time.perf_counter()
            out = RankOutcome(r, ident, DONE, pickle.loads(blob)[1])  # as received: its own objects
            out.document = spool.add(r, part(out), ranks)
            took["receive"] += time.perf_counter() - started
            outs[r] = out
        took["held"] = tracemalloc.get_traced_memory()[0] if tracemalloc.is_tracing() else 0
        started = time.perf_counter()
        merged = fleet_document(outs, ranks)
        took["merge"] = time.perf_counter() - started
        started = time.perf_counter()
        size, chunks = spool.document(merged)
        write_text_atomic(Path(folder) / "fleet.json", chunks)
        took["write"] = time.perf_counter() - started
        took["size"] = size
        spool.close()
        return took

    with tempfile.TemporaryDirectory() as tmp:
        timed = run(tmp)
        tracemalloc.start()
        measured = run(tmp)
        peak = tracemalloc.get_traced_memory()[1]
        tracemalloc.stop()
    return {"ranks": ranks, "writer": "streamed", "entries": ranks * len(doc["kernels"]),
            "pickled_bytes": ranks * len(blob), "unpickle_s": timed["receive"], "merge_s": timed["merge"],
            "json_s": 0.0, "write_s": timed["write"], "file_bytes": timed["size"], "held_bytes": measured["held"],
            "peak_bytes": peak}


def offline_markdown(rows: list[dict]) -> str:
    lines = ["| ranks | writer | entries | pickled MB | receive s | merge s | JSON s | write s | rank 0 total s | "
             "file MB | documents held MB | peak MB |", "|" + "---:|" * 12]
    for r in rows:
        total = r["unpickle_s"] + r["merge_s"] + r["json_s"] + r["write_s"]
        lines.append(f"| {r['ranks']} | {r.get('writer', 'whole')} | {r['entries']} | {r['pickled_bytes'] / 1e6:.2f} | "
                     f"{r['unpickle_s']:.3f} | {r['merge_s']:.3f} | {r['json_s']:.3f} | {r['write_s']:.3f} | "
                     f"{total:.3f} | {r['file_bytes'] / 1e6:.2f} | {r['held_bytes'] / 1e6:.1f} | "
                     f"{r['peak_bytes'] / 1e6:.1f} |")
    return "\n".join(lines) + "\n"


def markdown(rows: list[dict]) -> str:
    head = ("| ranks | gather | groups | messages to rank 0 | pickled kB | receive ms | merge ms | write ms | "
            "rank 0 total ms | file kB | file kB / rank | wall s |")
    lines = [head, "|" + "---:|" * 2 + "---:|" * 10]
    for r in rows:
        if r["ranks"] == 1:
            lines.append(f"| 1 | (no fleet) | – | – | – | – | – | – | – | {r['file_bytes'] / 1e3:.1f} | "
                         f"{r['file_bytes'] / 1e3:.1f} | {r['wall_s']:.1f} |")
            continue
        lines.append(f"| {r['ranks']} | {r['gather']} | {r['groups']} | {r['messages']} | "
                     f"{r['pickled_bytes'] / 1e3:.1f} | {r['receive_s'] * 1e3:.2f} | {r['merge_s'] * 1e3:.1f} | "
                     f"{r['write_s'] * 1e3:.1f} | {r['gather_s'] * 1e3:.1f} | {r['file_bytes'] / 1e3:.1f} | "
                     f"{r['file_bytes'] / r['ranks'] / 1e3:.2f} | {r['wall_s']:.1f} |")
    return "\n".join(lines) + "\n"


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--ranks", default="1,4,16,64")
    parser.add_argument("--gather", default="node,flat", help="node, flat or both (node,flat)")
    parser.add_argument("--node-size", type=int, default=8, help="ranks per simulated node for node gathering")
    parser.add_argument("--kernels", default="vector_add,copy")
    parser.add_argument("-p", "--param", action="append", default=None, help="default: n=2**10")
    parser.add_argument("--min-time", type=float, default=0.01)
    parser.add_argument("--timeout", type=float, default=900.0, help="--timeout of each fleet run, seconds")
    parser.add_argument("--json", type=Path, default=None, help="also write the rows here")
    parser.add_argument("--markdown", action="store_true", help="print the table as Markdown only")
    parser.add_argument("--offline", default=None, metavar="R,R,...",
                        help="instead: rank 0's receive, merge and write at these rank counts without mpirun, from "
                             "copies of one rank's measured document (e.g. 64,1000,10000), and its memory")
    parser.add_argument("--copies", type=int, default=1,
                        help="with --offline: each rank's entries repeated this many times under distinct names "
                             "(15 gives 30 entries a rank from the 2 measured kernels)")
    parser.add_argument("--writer", default="whole,streamed",
                        help="with --offline: rank 0's writer, whole (merge, then one JSON text) or streamed "
                             "(roofline.fleet.stream, what measure and sweep use), or both")
    args = parser.parse_args()
    if args.offline:
        sys.path.insert(0, str(ROOT))
        doc = widened(rank_document(args.kernels.split(","), args.param or ["n=2**10"], args.min_time), args.copies)
        found = []
        for ranks in [int(r) for r in args.offline.split(",")]:
            for writer in args.writer.split(","):
                found.append((offline if writer == "whole" else offline_streamed)(ranks, doc, args.node_size))
                if not args.markdown:
                    print(json.dumps(found[-1]), flush=True)
        if args.json is not None:
            args.json.write_text(json.dumps({"machine": {"cpus": os.cpu_count(), "python": platform.python_version()},
                                             "offline": found}, indent=2) + "\n")
        print(offline_markdown(found), end="")
        return 0
    rows = []
    for ranks in [int(r) for r in args.ranks.split(",")]:
        for gather in (args.gather.split(",") if ranks > 1 else ["flat"]):
            row = run_once(ranks, gather, args.node_size, args.kernels.split(","), args.param or ["n=2**10"],
                           args.min_time, args.timeout)
            rows.append(row)
            if not args.markdown:
                print(json.dumps(row), flush=True)
    if args.json is not None:
        args.json.write_text(json.dumps({"machine": {"cpus": os.cpu_count(), "python": platform.python_version()},
                                         "rows": rows}, indent=2) + "\n")
    print(markdown(rows), end="")
    return 0


if __name__ == "__main__":
    sys.exit(main())
