#!/usr/bin/env python3
"""Checks a new main-job run (`gemmlab run --suite default`) against the last committed one and
against the host path, with `gemmlab compare` doing every comparison of values:

1. every row of OLD is in NEW (same kernel, distribution, size, seed and formats), and every
   statistics column and the status of those rows is bit-identical (`gemmlab compare OLD NEW`,
   timings left out: exit 0);
2. NEW's metadata counts no row judged on the host path (`gpu_path.host_path_rows` = 0) and shows
   the time split (`timing_seconds`);
3. NEW's fp64 rows on one distribution (--host-dist) equal, in every statistics column, the rows
   the host path computes for the same inputs: the same kernels, size, seed, repetitions re-run
   with `--reference cpu` (operands packed and uploaded per row, C downloaded, the CPU exact
   reference and CPU statistics; each such row's note says "host path: ...").

Prints a table and exits 0 when every check holds, 1 when one fails, 2 for bad input. The
reports of `gemmlab compare` and the host-path CSV are written to --out (--host-csv: a host-path
CSV made before, instead of the re-run; tests/python/test_compare_runs.py uses it).

  scripts/compare_runs.py --gemmlab build/gemmlab \\
      --old results/engine/h100_20261123_judge_engine/default_h100.csv --new results/default-T.csv --out OUT
"""
import argparse
import csv
import json
import os
import subprocess
import sys

TIMING = ["time_ms_median", "time_ms_min", "time_ms_max", "time_ms_iqr", "time_ms_ci95_rel", "reps", "stopped_by",
          "tflops", "sm_clock_mhz"]
IDENTITY = ["kernel", "distribution", "M", "N", "K", "seed", "input_format", "output_format"]
MEASURED = {"passed", "no_bound", "failed_bound", "nondeterministic"}


def die(msg, code=2):
    print(f"compare_runs: {msg}", file=sys.stderr)
    sys.exit(code)


def read_rows(path):
    try:
        with open(path, newline="") as f:
            rows = list(csv.DictReader(f))
    except OSError as e:
        die(f"cannot read {path}: {e.strerror}")
    if not rows or any(c not in rows[0] for c in IDENTITY + ["status", "note"]):
        die(f"{path} is not a gemmlab result CSV with rows (it needs the columns {', '.join(IDENTITY)}, status, note)")
    return rows


def read_meta(csv_path):
    path = csv_path[:-4] + ".meta.json" if csv_path.endswith(".csv") else csv_path + ".meta.json"
    try:
        with open(path) as f:
            return json.load(f)
    except (OSError, ValueError) as e:
        die(f"cannot read the metadata {path} beside {csv_path}: {e}")


def identity(row):
    return tuple(row[c] for c in IDENTITY)


def compare(gemmlab, a, b, ignore, md):
    """`gemmlab compare A B --ignore ... --md MD`: its exit status (0 equal, 3 a statistic or status differs)."""
    cmd = [gemmlab, "compare", a, b, "--ignore", ",".join(ignore), "--md", md]
    r = subprocess.run(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    if r.returncode not in (0, 3, 4):
        die(f"{' '.join(cmd)} failed (exit {r.returncode}): {r.stderr.strip()}")
    return r.returncode


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--gemmlab", required=True, help="the gemmlab binary that made NEW")
    p.add_argument("--old", required=True, help="the last committed run of the main job (CSV)")
    p.add_argument("--new", required=True, help="the new run of the main job (CSV, .meta.json beside it)")
    p.add_argument("--out", required=True, help="folder for the reports and the host-path CSV")
    p.add_argument("--host-dist", default="uniform_0_1", help="distribution of the fp64 host-path check")
    p.add_argument("--host-csv", help="the host-path rows of that check, made before (no re-run)")
    args = p.parse_args()
    if not os.access(args.gemmlab, os.X_OK):
        die(f"--gemmlab {args.gemmlab} is not an executable")
    os.makedirs(args.out, exist_ok=True)
    old, new = read_rows(args.old), read_rows(args.new)
    meta = read_meta(args.new)
    checks = []  # (what, result, ok)

    # 1. The rows that existed before: all there, every statistic bit-identical.
    new_ids = {identity(r) for r in new}
    missing = [r for r in old if identity(r) not in new_ids]
    checks.append(("rows of OLD present in NEW", f"{len(old) - len(missing)} / {len(old)}", not missing))
    for r in missing[:10]:
        print("  missing in NEW: " + " ".join(f"{c}={r[c]}" for c in IDENTITY))
    rc = compare(args.gemmlab, args.old, args.new, TIMING, os.path.join(args.out, "old_vs_new.md"))
    checks.append(("their statistics and status bit-identical", "yes" if rc == 0 else
                   f"NO (gemmlab compare exit {rc}: {args.out}/old_vs_new.md)", rc == 0))

    # 2. Nothing judged on the host path; the time split.
    host_rows = meta.get("gpu_path", {}).get("host_path_rows")
    checks.append(("NEW rows judged on the host path", str(host_rows), host_rows == 0))
    if host_rows:
        print("  host-path reasons: " + json.dumps(meta["gpu_path"].get("host_path_reasons", {})))
    t = meta.get("timing_seconds", {})
    if t:
        checks.append(("NEW wall time / launches / non-kernel fraction",
                       f"{t['total']:.1f} s / {t['kernels']:.1f} s / {t['non_kernel_fraction_of_kernels']:.3f}", True))

    # 3. The fp64 rows against the host path on the same inputs.
    fp64 = [r for r in new if r["input_format"] == "fp64" and r["distribution"] == args.host_dist
            and r["status"] in MEASURED]
    if not fp64:
        checks.append((f"fp64 rows of NEW on {args.host_dist}", "none measured", False))
    else:
        kernels = sorted({r["kernel"] for r in fp64})
        sizes = sorted({f"{r['M']}x{r['N']}x{r['K']}" for r in fp64})
        seeds = sorted({r["seed"] for r in fp64})
        plan = meta.get("plan", {})
        host_csv = args.host_csv or os.path.join(args.out, "fp64_host_path.csv")
        # The same timing as NEW: its fixed count, or (reps 0) its noise rule.
        timing = (["--reps", str(plan["reps"])] if plan.get("reps", 20) else
                  [x for k, v in plan.get("stopping", {}).items() for x in (f"--{k.replace('_', '-')}", str(v))])
        cmd = [args.gemmlab, "run", "-k", ",".join(kernels), "-d", args.host_dist, "-s", ",".join(sizes),
               "--seeds", ",".join(seeds), *timing, "--warmup", str(plan.get("warmup", 3)),
               "--reference", "cpu", "-o", host_csv, "--force"]
        if not args.host_csv:
            print("running: " + " ".join(cmd), flush=True)
            r = subprocess.run(cmd, stdout=subprocess.DEVNULL)
            if r.returncode != 0:
                die(f"the host-path run exited {r.returncode}", 1)
        host = read_rows(host_csv)
        on_host = sum(1 for h in host if h["note"].startswith("host path: "))
        fp64_ids = {identity(x) for x in fp64}
        matched = sum(1 for h in host if identity(h) in fp64_ids)
        checks.append((f"fp64 host-path rows ({args.host_dist}) that took the host path", f"{on_host} / {len(host)}",
                       on_host == len(host) == len(fp64)))
        rc = compare(args.gemmlab, args.new, host_csv, TIMING + ["reference", "note"],
                     os.path.join(args.out, "fp64_gpu_vs_host.md"))
        checks.append((f"fp64 rows of NEW = host path, every statistic", f"{matched} rows, " +
                       ("bit-identical" if rc == 0 else f"NOT identical (exit {rc}: {args.out}/fp64_gpu_vs_host.md)"),
                       rc == 0 and matched == len(fp64)))

    width = max(len(w) for w, _, _ in checks)
    print()
    for what, result, ok in checks:
        print(f"{what:<{width}}  {result}  {'ok' if ok else 'FAILED'}")
    failed = [w for w, _, ok in checks if not ok]
    print("\nall checks hold" if not failed else f"\n{len(failed)} check(s) failed")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
