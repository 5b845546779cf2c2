#!/usr/bin/env python3
"""The guard that keeps the main job fast: reads a `gemmlab run`'s metadata (RUN.meta.json) and fails
when the work outside the kernels' launches is more than a fraction of the launches themselves.

    scripts/check_main_job.py RUN.meta.json [--max-fraction 0.03]

timing_seconds.non_kernel_fraction_of_kernels is (total - kernels) / kernels (experiments/engine/run.cpp):
inputs, references, statistics, packing, I/O and the engine, against the launches. The main job
(`gemmlab run --suite default`) was at 4.7% before host kernels and the CPU fallback of the fp64 rows
took it to 126% (issue 33). The limit is the one README.md states for the main job, 3% (issue 42;
tests/python/test_check_main_job.py holds the two together). Exit 0 within the limit, 1 above it (both
print the figures, and the largest parts outside the kernels), 2 when the file cannot be read, is not
JSON, or lacks the keys (the message says which). Python standard library only.
"""
import argparse
import json
import math
import sys

KEY = "non_kernel_fraction_of_kernels"
# The largest non-kernel time as a fraction of the kernels' time: README.md's limit for the main job.
LIMIT = 0.03


def fail_input(path, why):
    print(f"check_main_job: {path}: {why}", file=sys.stderr)
    sys.exit(2)


def number(timing, key, path):
    v = timing.get(key)
    if isinstance(v, bool) or not isinstance(v, (int, float)) or not math.isfinite(v):
        fail_input(path, f"timing_seconds.{key} is {json.dumps(v)}, not a finite number "
                         "(is this the .meta.json of a `gemmlab run`?)")
    return float(v)


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("meta", help="the run's metadata, RUN.meta.json beside RUN.csv")
    ap.add_argument("--max-fraction", type=float, default=LIMIT,
                    help=f"largest allowed non-kernel time as a fraction of kernel time (default {LIMIT:g}, README.md's)")
    args = ap.parse_args(argv)
    if not (math.isfinite(args.max_fraction) and args.max_fraction >= 0):
        ap.error(f"--max-fraction {args.max_fraction}: give a non-negative number, e.g. 0.05")
    try:
        with open(args.meta, encoding="utf-8") as f:
            text = f.read()
    except OSError as e:
        fail_input(args.meta, f"cannot be read ({e.strerror or e}); give the .meta.json a `gemmlab run` wrote")
    try:
        meta = json.loads(text)
    except json.JSONDecodeError as e:
        fail_input(args.meta, f"is not valid JSON ({e.msg} at line {e.lineno}, column {e.colno}): "
                              "give the .meta.json a finished `gemmlab run` wrote")
    timing = meta.get("timing_seconds") if isinstance(meta, dict) else None
    if not isinstance(timing, dict):
        fail_input(args.meta, "has no timing_seconds object (is this the .meta.json of a `gemmlab run`?)")
    if KEY not in timing:
        fail_input(args.meta, f"timing_seconds has no {KEY} (keys: {', '.join(timing) or 'none'}): "
                              "written by gemmlab run since the main job's time split; re-run with this gemmlab")
    if meta.get("dry_run"):
        fail_input(args.meta, "is a --dry-run's metadata: nothing ran, so there is no time to check")
    fraction = number(timing, KEY, args.meta)
    kernels = number(timing, "kernels", args.meta) if "kernels" in timing else math.nan
    non_kernel = number(timing, "non_kernel", args.meta) if "non_kernel" in timing else math.nan
    total = number(timing, "total", args.meta) if "total" in timing else math.nan
    if not kernels > 0:
        fail_input(args.meta, f"timing_seconds.kernels is {timing.get('kernels')}: no launch was timed, "
                              "so the fraction means nothing (did every row fail or come from a journal?)")
    rows = meta.get("rows", "?")
    figures = (f"{rows} rows, {total:.2f} s in all: kernels {kernels:.2f} s, everything else {non_kernel:.2f} s = "
               f"{100 * fraction:.1f}% of the kernels' time (limit {100 * args.max_fraction:g}%)")
    parts = [f"{k} {timing[k]:.2f} s" for k in ("kernel_setup", "reference", "statistics", "inputs", "io", "startup",
                                                "other")
             if isinstance(timing.get(k), (int, float)) and not isinstance(timing.get(k), bool)]
    outside = f"; outside the kernels: {', '.join(parts)}" if parts else ""
    if fraction > args.max_fraction:
        print(f"check_main_job: FAIL: {args.meta}: {figures}{outside}")
        return 1
    print(f"check_main_job: ok: {args.meta}: {figures}{outside}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
