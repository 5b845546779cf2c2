#!/usr/bin/env python3
"""gemmlab's CPU baselines (family cpu: Eigen's fp32 and fp64 products, kernels/cpu/eigen_gemm.cpp)
beside numpy.matmul on the same host, in one run: GFLOP/s of each, the SIMD level and threads Eigen
ran with, numpy's BLAS and its threads. Writes one CSV + .meta.json and prints a short table.

    python3 scripts/lab/cpu_baselines.py --gemmlab build/gemmlab --out results/cpu/cpu_baselines_h100.csv

It runs `gemmlab run -k family:cpu -s N -d uniform_0_1 --reps R --warmup 1` (a GPU is needed: the
harness keeps A, B and C there; the copies to and from the host are outside the timed region), then
numpy.matmul on U[0,1) float32 and float64 matrices of the same size: one warm-up, then the median of
--numpy-reps timed calls (time.perf_counter). GFLOP/s = 2 N^3 / median time. numpy's BLAS and thread
count come from threadpoolctl when it is installed, else from numpy.show_config and the environment.
Exit 0 when every row was measured, 1 when gemmlab failed (its log is named), 2 for bad arguments.
"""
import argparse
import csv
import datetime
import io
import json
import os
import platform
import re
import statistics
import subprocess
import sys
import time
from pathlib import Path

COLUMNS = ["implementation", "dtype", "M", "N", "K", "time_ms_median", "gflops", "ratio_to_numpy", "threads",
           "simd", "library", "repetitions", "note"]


def cpu_model():
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or "unknown"


def usable_cores():
    try:
        return len(os.sched_getaffinity(0))
    except AttributeError:
        return os.cpu_count()


def numpy_blas(np):
    """numpy's BLAS as threadpoolctl sees it (library, version, threads, architecture), else its build config."""
    info = {"threadpoolctl": None, "config": None}
    try:
        from threadpoolctl import threadpool_info
        info["threadpoolctl"] = [p for p in threadpool_info() if p.get("user_api") == "blas"]
    except ImportError:
        pass
    try:
        cfg = np.show_config(mode="dicts")
        info["config"] = cfg.get("Build Dependencies", {}).get("blas")
    except (TypeError, AttributeError):  # numpy < 1.26: no mode="dicts"
        pass
    return info


def blas_summary(info):
    """(library, threads, architecture) for the table and the CSV."""
    pools = info.get("threadpoolctl") or []
    if pools:
        p = pools[0]
        lib = f"{p.get('internal_api', '?')} {p.get('version') or ''}".strip()
        return lib, str(p.get("num_threads", "")), p.get("architecture") or ""
    cfg = info.get("config") or {}
    lib = f"{cfg.get('name', 'unknown BLAS')} {cfg.get('version', '')}".strip()
    env = [os.environ.get(v) for v in ("OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS", "MKL_NUM_THREADS")]
    threads = next((t for t in env if t), None)
    return lib, threads or f"{usable_cores()} (assumed: one per core; install threadpoolctl to know)", ""


def time_numpy(np, n, dtype, reps, seed):
    rng = np.random.default_rng(seed)
    a = rng.random((n, n), dtype=dtype)
    b = rng.random((n, n), dtype=dtype)
    np.matmul(a, b)  # warm-up: the BLAS's threads and buffers
    times = []
    for _ in range(reps):
        t0 = time.perf_counter()
        np.matmul(a, b)
        times.append(time.perf_counter() - t0)
    return statistics.median(times)


def eigen_rows(csv_path):
    with open(csv_path, newline="") as f:
        return [r for r in csv.DictReader(f) if r.get("family") == "cpu"]


def write_atomically(path, text):
    tmp = path.with_name(path.name + ".tmp")
    tmp.write_text(text)
    tmp.replace(path)


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--gemmlab", default="build/gemmlab", help="the gemmlab binary (default build/gemmlab)")
    ap.add_argument("--out", required=True, help="output CSV (its .meta.json and gemmlab's own CSV and log go beside it)")
    ap.add_argument("--size", type=int, default=4096, help="N of the N^3 products (default 4096)")
    ap.add_argument("--reps", type=int, default=10, help="gemmlab's timed repetitions (default 10; median reported)")
    ap.add_argument("--numpy-reps", type=int, default=7, help="numpy's timed calls per dtype (default 7; median)")
    ap.add_argument("--seed", type=int, default=1, help="seed of gemmlab's inputs and numpy's (default 1)")
    args = ap.parse_args(argv)
    if args.size < 1 or args.reps < 1 or args.numpy_reps < 1:
        ap.error("--size, --reps and --numpy-reps must be at least 1")
    out = Path(args.out)
    if out.suffix != ".csv":
        ap.error(f"--out {out}: name a .csv file")
    if not out.parent.is_dir():
        ap.error(f"--out {out}: folder {out.parent} does not exist; create it first")
    import numpy as np  # after the arguments: --help works without numpy

    n = args.size
    stem = out.with_suffix("")
    g_csv, g_log = Path(f"{stem}_gemmlab.csv"), Path(f"{stem}_gemmlab.log")
    cmd = [args.gemmlab, "run", "-k", "family:cpu", "-s", str(n), "-d", "uniform_0_1", "--seeds", str(args.seed),
           "--reps", str(args.reps), "--warmup", "1", "-o", str(g_csv), "--force"]
    print("running: " + " ".join(cmd), flush=True)
    t0 = time.perf_counter()
    with open(g_log, "w") as log:
        try:
            rc = subprocess.run(cmd, stdout=log, stderr=subprocess.STDOUT).returncode
        except OSError as e:
            print(f"cpu_baselines: cannot run {args.gemmlab}: {e.strerror or e} (give --gemmlab the built binary)",
                  file=sys.stderr)
            return 1
    gemmlab_seconds = time.perf_counter() - t0
    if rc != 0 or not g_csv.exists():
        print(f"cpu_baselines: gemmlab exited {rc}; see {g_log}", file=sys.stderr)
        return 1
    eigen = eigen_rows(g_csv)
    if not eigen or any(r["status"] not in ("passed", "no_bound") for r in eigen):
        bad = [(r["kernel"], r["status"], r["note"]) for r in eigen if r["status"] not in ("passed", "no_bound")]
        print(f"cpu_baselines: gemmlab's cpu rows are missing or not measured: {bad or 'no row of family cpu'} "
              f"(see {g_csv})", file=sys.stderr)
        return 1

    blas = numpy_blas(np)
    lib, np_threads, arch = blas_summary(blas)
    numpy_gflops = {}
    rows = []
    for dtype, name in ((np.float32, "fp32"), (np.float64, "fp64")):
        t = time_numpy(np, n, dtype, args.numpy_reps, args.seed)
        numpy_gflops[name] = 2.0 * n ** 3 / t / 1e9
        rows.append({"implementation": "numpy.matmul", "dtype": name, "M": n, "N": n, "K": n,
                     "time_ms_median": f"{1e3 * t:.3f}", "gflops": f"{numpy_gflops[name]:.5g}", "ratio_to_numpy": "1",
                     "threads": np_threads, "simd": arch, "library": lib, "repetitions": args.numpy_reps,
                     "note": f"numpy {np.__version__}, U[0,1) from numpy.random.default_rng({args.seed}), "
                             "median of the timed calls after one warm-up"})
    for r in eigen:
        note = r["note"]
        level = re.search(r"(x86-64-v\d) \(([^)]*)\)", note)
        threads = re.search(r"up to (\d+) OpenMP thread", note)
        gflops = 1e3 * float(r["tflops"])
        dtype = r["input_format"]
        rows.append({"implementation": f"gemmlab {r['kernel']}", "dtype": dtype, "M": r["M"], "N": r["N"], "K": r["K"],
                     "time_ms_median": f"{float(r['time_ms_median']):.3f}", "gflops": f"{gflops:.5g}",
                     "ratio_to_numpy": f"{gflops / numpy_gflops[dtype]:.4g}" if dtype in numpy_gflops else "",
                     "threads": threads.group(1) if threads else "",
                     "simd": f"{level.group(1)} ({level.group(2)})" if level else "", "library": "Eigen (OpenMP)",
                     "repetitions": r["reps"], "note": note})
    rows.sort(key=lambda r: (r["dtype"], r["implementation"]))

    table = io.StringIO()
    writer = csv.DictWriter(table, fieldnames=COLUMNS, lineterminator="\n")
    writer.writeheader()
    writer.writerows(rows)
    meta = {
        "what": "gemmlab's CPU baselines (family cpu) beside numpy.matmul on the same host",
        "command": " ".join([sys.executable] + sys.argv),
        "date_utc": datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ"),
        "host": {"name": platform.node(), "cpu": cpu_model(), "logical_cpus": os.cpu_count(),
                 "usable_cpus": usable_cores(), "machine": platform.machine()},
        "environment": {v: os.environ.get(v) for v in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS")},
        "gemmlab": {"command": " ".join(cmd), "exit": rc, "csv": str(g_csv), "log": str(g_log),
                    "seconds": round(gemmlab_seconds, 2)},
        "numpy": {"version": np.__version__, "blas": blas, "reps": args.numpy_reps, "seed": args.seed},
        "python": sys.version.split()[0],
        "columns": COLUMNS,
    }
    write_atomically(out, table.getvalue())
    write_atomically(Path(f"{stem}.meta.json"), json.dumps(meta, indent=1, default=str) + "\n")

    print(f"\n{n}^3 on {cpu_model()} ({usable_cores()} usable CPUs); numpy's BLAS: {lib}")
    print(f"{'implementation':26} {'dtype':5} {'time ms':>10} {'GFLOP/s':>9} {'x numpy':>8} {'threads':>8}  simd")
    for r in rows:
        print(f"{r['implementation']:26} {r['dtype']:5} {float(r['time_ms_median']):10.1f} {float(r['gflops']):9.1f} "
              f"{r['ratio_to_numpy'] or '-':>8} {str(r['threads']).split(' ')[0]:>8}  {r['simd']}")
    print(f"wrote {out} and {stem}.meta.json")
    return 0


if __name__ == "__main__":
    sys.exit(main())
