"""Issue 10, part 3 on an H200: every target kernel swept over sizes with the first-principles model, nothing fitted
on the kernel, and the table of prediction errors per kernel and size.

Run on a GPU machine (about 2 minutes; it stops starting kernels at --budget seconds):

    python3 benchmarks/h200_sweep_predict.py --out DIR

It reads the calibrated spec docs/measurements/h200-measured.yaml (--calibrated; no calibrate run, to save
device time), then runs one `roofline sweep KERNEL --model first-principles --min-time 0.05` per kernel in its own
subprocess with a timeout (so one slow kernel cannot eat the rest): the maps and `sum` over n = 2^12, 2^14, …, 2^28
and the fused row kernels over rows = 2, 8, …, 32768 at cols = 1024 (16 kB … 256 MiB). Every size is checked against
its NumPy reference by the harness before it is timed. DIR receives summary.txt (the table), summary.json and
sweeps.tgz (each sweep's results JSON and log; packed because a device call returns at most 8 files; --no-pack keeps
them in DIR/raw). The table also shows the fitted model (anchored on each kernel's own smallest and
largest sizes) and the unanchored form (the one-element round trip, η = 1) recomputed from the same measurements.

Without a GPU: `--backend numpy --dry` runs the same plumbing at tiny sizes on the host CPU (the errors then mean
nothing: a GPU model against NumPy). `--recheck FILE…` recomputes the table from saved sweep results, no device.
Exit status: 0 when every kernel ran, 1 when one failed, timed out or was skipped for time.
"""

from __future__ import annotations

import argparse
import json
import shutil
import subprocess
import tarfile
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

CALIBRATED = ROOT / "docs" / "measurements" / "h200-measured.yaml"  # written by gpu_acceptance.py --record
MAPS = ["sum", "vector_add_float4", "copy", "scale", "triad", "relu", "gelu_tanh", "vector_add"]
ROWS = ["softmax_fused", "layernorm_fused"]
ROWS_ALL = ["softmax_fused", "layernorm_fused", "softmax_5pass", "layernorm_2pass"]
STENCILS = ["stencil5_naive", "stencil5_reuse", "conv3x3_naive", "conv3x3_reuse"]
COLS = 1024


def plan(dry: bool, matrix: bool = False) -> list[tuple[str, str, list[str]]]:
    """(label, kernel, the sweep's size options) in the order they run: `sum` first (the issue's case), row kernels
    last. With `matrix` (issue 21 §4), every kernel with a size model over each of its axes: the maps and `sum` from
    2^10 to 2^30, the row kernels over rows at 256, 8192 and 32768 columns and over columns at 64 rows, the
    stencils over n."""
    if matrix and not dry:
        # In the order of what the issue found first: the fused row kernels (the regime that missed), sum and the
        # plain maps, the stencils, then the multi-pass row kernels and the rest of the maps (--budget cuts the tail).
        def rows(k: str) -> list[tuple[str, str, list[str]]]:
            out = [(f"{k}-rows-c{c}", k, ["--over", "rows", "-p", f"cols={c}", "--sizes", sizes])
                   for c, sizes in ((256, "1..2**20:4"), (8192, "1..2**16:4"), (32768, "1..2**14:4"))]
            return out + [(f"{k}-cols-r64", k, ["--over", "cols", "-p", "rows=64", "--sizes", "2**8..2**20:4"])]

        maps = ["--sizes", "2**10..2**30:4"]
        first, rest = ["sum", "copy", "vector_add_float4", "triad"], [m for m in MAPS if m not in
                                                                        ("sum", "copy", "vector_add_float4", "triad")]
        return ([x for k in ROWS for x in rows(k)] + [(k, k, maps) for k in first]
                + [(k, k, ["--over", "n", "--sizes", "2**6..2**14:2"]) for k in STENCILS]
                + [x for k in ROWS_ALL if k not in ROWS for x in rows(k)] + [(k, k, maps) for k in rest])
    maps = ["--sizes", "2**8..2**12:4"] if dry else ["--sizes", "2**12..2**28:4"]
    rows = (["--over", "rows", "-p", "cols=64", "--sizes", "2..32:4"] if dry
            else ["--over", "rows", "-p", f"cols={COLS}", "--sizes", "2..2**15:4"])
    return [(k, k, maps) for k in MAPS] + [(k, k, rows) for k in ROWS]


def sweep(label: str, kernel: str, sizes: list[str], args: argparse.Namespace, timeout: float) -> dict:
    """One `roofline sweep` in a subprocess; its results JSON and log land in --out, named by `label`."""
    out = args.raw / f"{label}.json"
    cmd = [sys.executable, "-m", "roofline", "sweep", kernel, *sizes, "--model", "first-principles",
           "--calibrated", str(args.calibrated), "--min-time", str(args.min_time), "--backend", args.backend,
           "--spec", args.spec, "-o", str(out)]
    if args.dry:
        cmd += ["--min-repeats", "2"]
    start = time.perf_counter()
    try:
        run = subprocess.run(cmd, cwd=ROOT, capture_output=True, text=True, timeout=timeout)
        status = "OK" if run.returncode == 0 else f"exit {run.returncode}"
        log = run.stdout + run.stderr
    except subprocess.TimeoutExpired as exc:
        status, log = f"timed out after {timeout:.0f} s", _text(exc.stdout) + _text(exc.stderr)
    (args.raw / f"{label}.log").write_text(" ".join(cmd) + "\n" + log, encoding="utf-8")
    return {"kernel": label, "status": status, "seconds": time.perf_counter() - start,
            "results": str(out) if out.exists() else None}


def _commit() -> str:
    try:
        return subprocess.run(["git", "rev-parse", "--short", "HEAD"], cwd=ROOT, capture_output=True, text=True,
                              timeout=10).stdout.strip() or "unknown"
    except (OSError, subprocess.SubprocessError):
        return "unknown"


def _text(data: bytes | str | None) -> str:
    return data.decode(errors="replace") if isinstance(data, bytes) else (data or "")


def judge(paths: list[Path], calibrated: Path) -> tuple[list, list[str]]:
    """Rows of every saved sweep (roofline.sizes.compare) and the lines of the table, with the verdict."""
    from roofline.load.kernels import KernelCatalog
    from roofline.load.specs import load_spec
    from roofline.sizes.compare import compare, table_lines, worst
    from roofline.model.units import format_time

    spec, catalog = load_spec(calibrated), KernelCatalog.load()
    rows, lines = [], []
    for i, path in enumerate(paths):
        doc = json.loads(path.read_text(encoding="utf-8"))
        if i == 0:
            dev = doc.get("device", {})
            lines.append(f"device: {dev.get('name')} (driver {dev.get('driver')}, CUDA {dev.get('cuda_runtime')}, "
                         f"CuPy {dev.get('cupy_version')}); backend {doc.get('backend')}; spec {calibrated.name}; "
                         f"created {doc.get('created')}")
        mine = compare(doc, catalog.select([doc["sweep"]["kernel"]])[0], spec)
        rows += mine
        m = doc["sweep"]["model"]
        if m.get("model") == "first-principles":
            lines.append(f"{doc['sweep']['kernel']}: L {format_time(m['launch_floor'])}, λk "
                         f"{format_time(m['round_trip'])} ({m['round_trip_source']})")
        lines.append(f"  {doc['sweep']['kernel']} worst: first-principles {worst(mine):+.1%}, fitted {worst(mine, 'fitted_error'):+.1%}, "
                     f"unfitted {worst(mine, 'unfitted_error'):+.1%}" if worst(mine) is not None else "  no size ran")
    lines += [""] + table_lines(rows)
    ok = [r for r in rows if r.error is not None]
    within = sum(r.within for r in ok)
    lines.append(f"\nverdict: first-principles within 25 % at {within} of {len(ok)} sizes"
                 f" ({len(rows) - len(ok)} FAILED); worst {worst(rows) or 0:+.1%}; "
                 + ("PASS" if ok and within == len(ok) == len(rows) else "FAIL"))
    return rows, lines


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--out", type=Path, default=Path("sweep-predict"))
    parser.add_argument("--calibrated", type=Path, default=CALIBRATED)
    parser.add_argument("--backend", choices=["cupy", "numpy"], default="cupy")
    parser.add_argument("--spec", default=None, help="default: auto on the GPU, h200 with --backend numpy")
    parser.add_argument("--min-time", type=float, default=0.05)
    parser.add_argument("--matrix", action="store_true", help="issue 21 §4: every kernel over each of its axes")
    parser.add_argument("--dry", action="store_true", help="tiny sizes (with --backend numpy: no GPU needed)")
    parser.add_argument("--budget", type=float, default=190.0, help="seconds; no kernel starts after that")
    parser.add_argument("--timeout", type=float, default=40.0, help="seconds per kernel")
    parser.add_argument("--only", default=None, help="comma-separated kernels (default: all)")
    parser.add_argument("--no-pack", action="store_true", help="keep the sweeps in DIR/raw, no sweeps.tgz")
    parser.add_argument("--recheck", type=Path, nargs="+", default=None,
                        help="recompute the table from saved sweep results; runs nothing")
    args = parser.parse_args()
    if args.recheck:
        print("\n".join(judge(args.recheck, args.calibrated)[1]))
        return 0
    args.spec = args.spec or ("h200" if args.backend == "numpy" else "auto")
    args.raw = args.out / "raw"
    args.raw.mkdir(parents=True, exist_ok=True)
    start = time.perf_counter()
    print(f"commit {_commit()}; {args.backend}; calibrated spec {args.calibrated}", flush=True)
    chosen = plan(args.dry, args.matrix)
    if args.only:
        names = args.only.split(",")
        chosen = [p for p in chosen if p[0] in names or p[1] in names]
    runs = []
    for label, kernel, sizes in chosen:
        left = args.budget - (time.perf_counter() - start)
        if left < 5:
            runs.append({"kernel": label, "status": "skipped: out of time", "seconds": 0.0, "results": None})
            continue
        runs.append(sweep(label, kernel, sizes, args, min(args.timeout, left)))
        r = runs[-1]
        print(f"{label}: {r['status']}, {r['seconds']:.1f} s (elapsed {time.perf_counter() - start:.0f} s)",
              flush=True)
    rows, lines = judge([Path(r["results"]) for r in runs if r["results"]], args.calibrated)
    elapsed = time.perf_counter() - start
    lines.append(f"elapsed: {elapsed:.1f} s for {len(rows)} sizes of {len(runs)} kernels")
    print("\n".join(lines))
    (args.out / "summary.txt").write_text("\n".join(lines) + "\n", encoding="utf-8")
    (args.out / "summary.json").write_text(json.dumps({
        "runs": runs, "elapsed": elapsed, "calibrated": str(args.calibrated), "backend": args.backend,
        "rows": [{**r.__dict__, "within": r.within} for r in rows]}, indent=1), encoding="utf-8")
    if not args.no_pack:
        with tarfile.open(args.out / "sweeps.tgz", "w:gz") as tar:
            tar.add(args.raw, arcname="sweeps")
        shutil.rmtree(args.raw)
    return 0 if all(r["status"] == "OK" for r in runs) else 1


if __name__ == "__main__":
    sys.exit(main())
