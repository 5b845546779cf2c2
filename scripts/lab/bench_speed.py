#!/usr/bin/env python3
"""Issue 42's benchmark: the main job and the explain table timed on a GPU, each figure beside the last
committed run's, in one CSV (never a timed test: the targets are ratios and limits read off this CSV).

    python3 scripts/lab/bench_speed.py BIN_DIR OUT_DIR [PART ...]

BIN_DIR holds gemmlab and gemmlab_gpu_tests built from this tree; the Python parts need the gemmlab
package of this tree with its GPU engine on sys.path (PYTHONPATH: the wheel of scripts/build_wheel.sh
unpacked or installed), torch, Triton and JAX. PART (default: main):
  main            the GPU tests of the timing helper's noise rule, the statistics reuse and the early release
                  of held SMs; `gemmlab run --suite default` (each row stopped on noise) with its wall time and
                  scripts/check_main_job.py on it; `gemmlab compare` of its statistics and statuses with the
                  last committed run's; `gemmlab run --suite default --reps 20 --warmup 3` (today's fixed count) and
                  `gemmlab compare` of both runs; each noise-stopped median against the fixed run's, with
                  both CIs, for the fastest rows (about 3 minutes on an H100)
  explain-cli     `gemmlab explain` at 4096^3 on the 7 CLI baselines of the last explain table, and the
                  Triton fp16-accumulator and decreasing-K kernels (examples/triton_orders.py)
  explain-frameworks  examples/explain_frameworks.py at 4096^3: the Triton flavours (split operands among
                  them), split-K with atomics, torch.matmul and torch.mm, torch._scaled_mm
  explain-others  scripts/lab/explain37.py at 4096^3: split-K (atomics), jnp.matmul, torch.compile
  fastest         the fastest tenth of the main job's rows, fixed count and noise rule in turn, ROUNDS times
                  (default 3): each noise median against the CI of the fixed run just before it (fastest/)
  explain         the three explain parts
  all             main and explain
ONLY=NAME,... (environment) keeps the explain parts to those kernels (a CLI baseline, a flavour of
examples/explain_frameworks.py, triton_orders or one of explain37.py's parts: splitk, jax, compile), for a short
session; the default is every one.
Each part writes its files under OUT_DIR (main/, explain/) and its rows into OUT_DIR/speed.csv (the rows of
parts run before in the same OUT_DIR are kept): part, item, size, the new figure and the committed one
(`*_committed`, with the committed file in `committed_from`), and what the row shows. speed.meta.json beside
it; a table is printed last.
"""

from __future__ import annotations

import csv
import json
import os
import re
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
MAIN_COMMITTED = ROOT / "results/engine/h100_20261127_main_job"
MAIN_NOISE_COMMITTED = ROOT / "results/engine/h200_20261129_main_job/default_noise.csv"
EXPLAIN_COMMITTED = ROOT / "results/explain/h100_20261127_issue37"
CLI_KERNELS = ["cublas_gemmex_fp32_pedantic", "cublas_gemmex_fp32_fast_tf32", "cublas_gemmex_fp16_f32",
               "cublas_gemmex_bf16_f32", "cublaslt_fp8_e4m3_f32", "cublaslt_fp8_e4m3_f32_fast_accum",
               "hgemm_wgmma_06_tmastore_sm16_fp16_in_wgmma"]
DISTS = "uniform_0_1,normal_0_1,logunif_-8_8"
SIZE = "4096x4096x4096"
TIMING = ["time_ms_median", "time_ms_min", "time_ms_max", "time_ms_iqr", "time_ms_ci95_rel", "reps", "stopped_by",
          "tflops", "sm_clock_mhz"]
FIELDS = ["part", "item", "size", "value", "value_committed", "unit", "committed_from", "shows"]
ONLY = [k for k in os.environ.get("ONLY", "").split(",") if k]


def wanted(name: str) -> bool:
    """Whether ONLY (the environment) keeps this kernel or part: all when it is unset."""
    return not ONLY or name in ONLY


def log(msg: str) -> None:
    print(f"[bench_speed {time.strftime('%H:%M:%S')}] {msg}", flush=True)


def run(cmd: list[str], out: Path, env: dict | None = None, timeout: float = 900) -> tuple[int, float]:
    """Runs cmd with stdout and stderr into `out`; (exit code, wall seconds)."""
    t0 = time.time()
    with open(out, "w") as f:
        try:
            rc = subprocess.run([str(c) for c in cmd], stdout=f, stderr=subprocess.STDOUT, cwd=ROOT,
                                env={**os.environ, **(env or {})}, timeout=timeout).returncode
        except subprocess.TimeoutExpired:
            rc = 124
    return rc, time.time() - t0


def read_csv(path: Path) -> list[dict]:
    with open(path, newline="") as f:
        return list(csv.DictReader(f))


def number(x) -> float | None:
    try:
        v = float(x)
    except (TypeError, ValueError):
        return None
    return v


# --- main ----------------------------------------------------------------------------------------------

def fastest_tenth(rows: dict) -> list:
    """The keys of the fastest tenth of the timed rows (at least one), fastest first."""
    timed = sorted((k for k in rows if number(rows[k]["time_ms_median"])), key=lambda k: number(rows[k]["time_ms_median"]))
    return timed[: max(1, len(timed) // 10)]


def median_within_ci(a: dict, b: dict) -> bool:
    """Row a's median within row b's 95% CI of its median (time_ms_ci95_rel; none: only an equal median)."""
    ma, mb = number(a["time_ms_median"]), number(b["time_ms_median"])
    return abs(ma - mb) / mb <= (number(b.get("time_ms_ci95_rel")) or 0.0)


def part_main(bin_dir: Path, out: Path) -> list[dict]:
    d = out / "main"
    d.mkdir(parents=True, exist_ok=True)
    gemmlab = bin_dir / "gemmlab"
    rows: list[dict] = []
    rc, _ = run([bin_dir / "gemmlab_gpu_tests", "--gtest_brief=1",
                 "--gtest_filter=GpuStopping*:PerturbRelease*:StatsReuse*:ExplainInputsGpu*:GpuHarness*:SchedulePerturbation*"],
                d / "gpu_tests.log")
    tail = [ln for ln in (d / "gpu_tests.log").read_text().splitlines() if re.match(r"^\[  (PASSED|FAILED|SKIPPED)", ln)]
    log(f"GPU tests rc={rc}: {' '.join(tail)}")
    rows.append(dict(part="main", item="gpu_tests_rc", value=rc, unit="exit code", shows="the noise rule, statistics "
                     "reuse and early release of held SMs on the GPU (main/gpu_tests.log)"))

    committed_meta = json.loads((MAIN_COMMITTED / "default_h100.meta.json").read_text())
    committed_wall = number(re.search(r"wall ([0-9.]+) s", (MAIN_COMMITTED / "wall.txt").read_text()).group(1))
    ct = committed_meta["timing_seconds"]
    src = "results/engine/h100_20261127_main_job/default_h100.meta.json"

    noise_csv = d / "default_noise.csv"
    rc, wall = run([gemmlab, "run", "--suite", "default", "-o", noise_csv, "--force"], d / "default_noise.log")
    log(f"main job (noise) rc={rc} wall {wall:.1f} s")
    meta = json.loads(noise_csv.with_suffix(".meta.json").read_text())
    t = meta["timing_seconds"]
    rows += [
        dict(part="main", item="rows", value=meta["rows"], value_committed=committed_meta["rows"], unit="rows",
             committed_from=src, shows=">= 700 rows"),
        dict(part="main", item="wall_s", value=round(wall, 2), value_committed=committed_wall, unit="s",
             committed_from="results/engine/h100_20261127_main_job/wall.txt", shows="<= 30 s end to end"),
    ]
    for k in ("total", "kernels", "non_kernel", "non_kernel_fraction_of_kernels", "kernel_setup", "reference",
              "statistics", "inputs", "io", "startup", "other"):
        rows.append(dict(part="main", item=f"timing_{k}", value=round(t[k], 4) if k in t else "",
                         value_committed=round(ct[k], 4) if k in ct else "", unit="" if "fraction" in k else "s",
                         committed_from=src,
                         shows="non-kernel time <= 3% of kernel time" if "fraction" in k else "the time split"))
    rows.append(dict(part="main", item="stats_reused_rows", value=meta.get("gpu_path", {}).get("stats_reused_rows", ""),
                     unit="rows", shows="rows whose statistics were an earlier row's of the same bits"))
    rc, _ = run([sys.executable, ROOT / "scripts/check_main_job.py", noise_csv.with_suffix(".meta.json")],
                d / "check_main_job.log")
    log("check_main_job: " + (d / "check_main_job.log").read_text().strip())
    rows.append(dict(part="main", item="check_main_job_rc", value=rc, unit="exit code",
                     shows="scripts/check_main_job.py passes (0) at the README's limit"))
    stops: dict[str, int] = {}
    for r in read_csv(noise_csv):
        if r.get("stopped_by"):
            stops[r["stopped_by"]] = stops.get(r["stopped_by"], 0) + 1
    for why, n in sorted(stops.items()):
        rows.append(dict(part="main", item=f"rows_stopped_by_{why}", value=n, unit="rows", shows="what ended the rows"))

    def compare(a: Path, b: Path, name: str) -> int:
        rc, _ = run([gemmlab, "compare", a, b, "--ignore", ",".join(TIMING), "--md", d / f"{name}.md"],
                    d / f"{name}.log")
        return rc

    rc = compare(MAIN_COMMITTED / "default_h100.csv", noise_csv, "committed_vs_noise")
    log(f"statistics and statuses against the committed run: gemmlab compare rc={rc}")
    rows.append(dict(part="main", item="committed_vs_noise_compare_rc", value=rc, unit="exit code", committed_from=
                     "results/engine/h100_20261127_main_job/default_h100.csv", shows="every statistics column and "
                     "status bit-identical to the last committed default run (0; main/committed_vs_noise.md)"))

    # The fastest tenth of the rows again with today's fixed count, right after (the committed run, made
    # with it, already holds every row's statistics to the noise run's): their medians against each
    # other's confidence intervals, and their statistics once more.
    noise = {(r["kernel"], r["distribution"], r["form"]): r for r in read_csv(noise_csv)}
    picked = fastest_tenth(noise)
    fixed_csv = d / "fastest_fixed.csv"
    rc, wall_fixed = run([gemmlab, "run", "-k", ",".join(sorted({k for k, _, _ in picked})),
                          "-d", ",".join(sorted({dist for _, dist, _ in picked})), "-s", "4096", "--seeds", "20261121",
                          "--reps", "20", "--warmup", "3", "-o", fixed_csv, "--force"], d / "fastest_fixed.log")
    log(f"the fastest rows' kernels with --reps 20 --warmup 3: rc={rc} wall {wall_fixed:.1f} s")
    rc = compare(fixed_csv, noise_csv, "fixed_vs_noise")
    log(f"statistics and statuses, fixed count against noise: gemmlab compare rc={rc}")
    rows.append(dict(part="main", item="fixed_vs_noise_compare_rc", value=rc, unit="exit code",
                     shows="the fastest rows' kernels with --reps 20 --warmup 3: the same statistics and statuses as "
                           "with the noise rule (0; main/fixed_vs_noise.md)"))
    fixed = {(r["kernel"], r["distribution"], r["form"]): r for r in read_csv(fixed_csv)}
    fastest = [(k, noise[k], fixed[k]) for k in picked if k in fixed and number(fixed[k]["time_ms_median"])]
    with open(d / "fastest_medians.csv", "w", newline="") as f:
        w = csv.writer(f)
        w.writerow(["kernel", "distribution", "form", "median_noise", "ci95_rel_noise", "reps_noise", "median_fixed",
                    "ci95_rel_fixed", "rel_diff", "fixed_within_noise_ci", "noise_within_fixed_ci"])
        inside_noise = inside_fixed = 0
        for (k, dist, form), a, b in fastest:
            ma, mb = number(a["time_ms_median"]), number(b["time_ms_median"])
            ca, cb = number(a.get("time_ms_ci95_rel")) or 0.0, number(b.get("time_ms_ci95_rel")) or 0.0
            diff = (mb - ma) / ma
            in_a, in_b = median_within_ci(b, a), median_within_ci(a, b)
            inside_noise += in_a
            inside_fixed += in_b
            w.writerow([k, dist, form, ma, ca, a.get("reps", ""), mb, cb, round(diff, 6), in_a, in_b])
    from gemmlab.results import write_summary_meta  # this tree's package (PYTHONPATH, scripts/lab/README.md)

    write_summary_meta(d / "fastest_medians.csv", [noise_csv, fixed_csv],
                       "scripts/lab/bench_speed.py " + " ".join(sys.argv[1:]) + " (part main)")
    rows.append(dict(part="main", item="fastest_rows_fixed_median_within_noise_ci", value=inside_noise,
                     value_committed=len(fastest), unit=f"of {len(fastest)} rows",
                     shows="the fastest tenth: the fixed run's median within the noise run's 95% CI "
                           "(main/fastest_medians.csv; value_committed holds the count of rows)"))
    rows.append(dict(part="main", item="fastest_rows_noise_median_within_fixed_ci", value=inside_fixed,
                     value_committed=len(fastest), unit=f"of {len(fastest)} rows",
                     shows="the same the other way round"))
    return rows


def part_fastest(bin_dir: Path, out: Path) -> list[dict]:
    """The fastest tenth of the main job's rows timed by both protocols in turn, in one session: ROUNDS
    (environment, default 3) rounds of `--reps 20 --warmup 3` then the noise rule, each run seconds after the
    other, so that the comparison of a noise-stopped median with the fixed count's CI is not one of two runs
    minutes apart (the GPU's clocks drift between those by more than either CI). The rows: those of this OUT_DIR's
    main part when it ran, else the committed H200 main job's (MAIN_NOISE_COMMITTED)."""
    d = out / "fastest"
    d.mkdir(parents=True, exist_ok=True)
    gemmlab = bin_dir / "gemmlab"
    source = out / "main" / "default_noise.csv"
    if not source.exists():
        source = MAIN_NOISE_COMMITTED
    noise = {(r["kernel"], r["distribution"], r["form"]): r for r in read_csv(source)}
    picked = fastest_tenth(noise)
    kernels = ",".join(sorted({k for k, _, _ in picked}))
    dists = ",".join(sorted({dist for _, dist, _ in picked}))
    rounds = int(os.environ.get("ROUNDS", "3"))
    runs: dict[tuple[str, int], dict] = {}
    for r in range(rounds):
        for proto in ("fixed", "noise"):
            csv_path = d / f"{proto}_{r}.csv"
            extra = ["--reps", "20", "--warmup", "3"] if proto == "fixed" else []
            rc, wall = run([gemmlab, "run", "-k", kernels, "-d", dists, "-s", "4096", "--seeds", "20261121", *extra,
                            "-o", csv_path, "--force"], d / f"{proto}_{r}.log")
            log(f"round {r} {proto}: rc={rc} wall {wall:.1f} s")
            runs[(proto, r)] = {(x["kernel"], x["distribution"], x["form"]): x for x in read_csv(csv_path)} if rc == 0 else {}

    counts = {"noise_in_fixed": 0, "fixed_in_noise": 0, "either": 0, "fixed_in_next_fixed": 0, "pairs": 0, "drift_pairs": 0}
    with open(d / "fastest_interleaved.csv", "w", newline="") as f:
        w = csv.writer(f)
        w.writerow(["kernel", "distribution", "form", "round", "median_fixed", "ci95_rel_fixed", "median_noise",
                    "ci95_rel_noise", "reps_noise", "stopped_by_noise", "rel_diff", "noise_within_fixed_ci",
                    "fixed_within_noise_ci", "rel_diff_fixed_to_next_round"])
        for key in picked:
            for r in range(rounds):
                a, b = runs[("fixed", r)].get(key), runs[("noise", r)].get(key)
                if not a or not b or not number(a["time_ms_median"]) or not number(b["time_ms_median"]):
                    continue
                ma, mb = number(a["time_ms_median"]), number(b["time_ms_median"])
                nf, fn = median_within_ci(b, a), median_within_ci(a, b)
                counts["pairs"] += 1
                counts["noise_in_fixed"] += nf
                counts["fixed_in_noise"] += fn
                counts["either"] += nf or fn
                nxt = runs.get(("fixed", r + 1), {}).get(key)
                drift = ""
                if nxt and number(nxt["time_ms_median"]):
                    counts["drift_pairs"] += 1
                    counts["fixed_in_next_fixed"] += median_within_ci(nxt, a)
                    drift = round((number(nxt["time_ms_median"]) - ma) / ma, 6)
                w.writerow([*key, r, ma, a.get("time_ms_ci95_rel", ""), mb, b.get("time_ms_ci95_rel", ""), b.get("reps", ""),
                            b.get("stopped_by", ""), round((mb - ma) / ma, 6), nf, fn, drift])
    from gemmlab.results import write_summary_meta  # this tree's package (PYTHONPATH, scripts/lab/README.md)

    write_summary_meta(d / "fastest_interleaved.csv", [d / f"{p}_{r}.csv" for r in range(rounds) for p in ("fixed", "noise")],
                       "scripts/lab/bench_speed.py " + " ".join(sys.argv[1:]) + " (part fastest)")
    n, nd = counts["pairs"], counts["drift_pairs"]
    return [
        dict(part="fastest", item="noise_median_within_fixed_ci", value=counts["noise_in_fixed"], value_committed=n,
             unit=f"of {n} row-rounds", shows="the noise rule's median within the CI of the fixed count's run just before "
             "it (fastest/fastest_interleaved.csv; value_committed holds the count)"),
        dict(part="fastest", item="fixed_median_within_noise_ci", value=counts["fixed_in_noise"], value_committed=n,
             unit=f"of {n} row-rounds", shows="the same the other way round"),
        dict(part="fastest", item="within_either_ci", value=counts["either"], value_committed=n, unit=f"of {n} row-rounds",
             shows="the two medians within one of the two CIs"),
        dict(part="fastest", item="fixed_median_within_previous_fixed_ci", value=counts["fixed_in_next_fixed"],
             value_committed=nd, unit=f"of {nd} row-rounds", shows="the drift: the fixed count against itself one round "
             "later (the same protocol; what no per-run CI covers)"),
    ]


# --- explain -------------------------------------------------------------------------------------------

def committed_explain() -> dict[str, dict]:
    """kernel -> {explain_s, wall_s, from} of the last committed explain table at 4096^3."""
    out: dict[str, dict] = {}
    cli_log = (EXPLAIN_COMMITTED / "last_round/cli_run.log").read_text()
    for k in CLI_KERNELS:
        m = re.search(rf"explain {k} rc=\d+ ([0-9.]+) s", cli_log)
        meta = json.loads((EXPLAIN_COMMITTED / f"last_round/cli_{k}.meta.json").read_text())
        out[k] = dict(explain_s=round(meta["report"]["seconds"], 1), wall_s=number(m.group(1)) if m else None,
                      src=f"results/explain/h100_20261127_issue37/last_round/cli_{k}.meta.json")
    for sub in ("last_round/frameworks/explain_table.csv", "splitk/explain37_table.csv", "jax/explain37_table.csv",
                "compile/explain37_table.csv"):
        for r in read_csv(EXPLAIN_COMMITTED / sub):
            if r["size"] == SIZE:
                out[r["kernel"]] = dict(explain_s=number(r["explain_s"]), wall_s=number(r["wall_s"]),
                                        src=f"results/explain/h100_20261127_issue37/{sub}")
    for k in ("triton_fp16_acc16", "triton_fp32_k_reversed"):
        meta = json.loads((EXPLAIN_COMMITTED / f"orders/{k}_{SIZE}.meta.json").read_text())
        out[k] = dict(explain_s=round(meta["report"]["seconds"], 1), wall_s=None,
                      src=f"results/explain/h100_20261127_issue37/orders/{k}_{SIZE}.meta.json")
    return out


def explain_rows(part: str, kernel: str, report: dict | None, wall: float | None, committed: dict) -> list[dict]:
    c = committed.get(kernel, {})
    rows = []
    if report is None:
        return [dict(part=part, item=f"{kernel}:explain_s", size=SIZE, value="", value_committed=c.get("explain_s", ""),
                     unit="s", committed_from=c.get("src", ""), shows="no report: see the part's log")]
    mism = sum(x["mismatches"] for x in report["comparisons"])
    outs = sum(x["outputs"] for x in report["comparisons"])
    rows.append(dict(part=part, item=f"{kernel}:explain_s", size=SIZE, value=round(report["seconds"], 2),
                     value_committed=c.get("explain_s", ""), unit="s", committed_from=c.get("src", ""),
                     shows=f"<= 10 s; identified={report['identified']} mismatches {mism}/{outs}; " +
                           (f"first call {report['first_call_seconds']:.2f} (before the clock); "
                            if report.get("first_call_seconds") else "") + "stages " +
                           " ".join(f"{s['stage']} {s['seconds']:.2f}" for s in report.get("stages", []))))
    if wall is not None:
        rows.append(dict(part=part, item=f"{kernel}:wall_s", size=SIZE, value=round(wall, 2),
                         value_committed=c.get("wall_s", "") if c.get("wall_s") is not None else "", unit="s",
                         committed_from=c.get("src", ""), shows="explain with its judged rows, end to end"))
    return rows


def report_of(meta_path: Path) -> dict | None:
    try:
        return json.loads(meta_path.read_text())["report"]
    except (OSError, ValueError, KeyError):
        return None


def part_explain_cli(bin_dir: Path, out: Path, committed: dict) -> list[dict]:
    d = out / "explain" / "cli"
    d.mkdir(parents=True, exist_ok=True)
    rows: list[dict] = []
    for k in filter(wanted, CLI_KERNELS):
        rc, wall = run([bin_dir / "gemmlab", "explain", "-k", k, "-s", "4096", "-d", DISTS, "-o", d / f"cli_{k}.csv",
                        "--judge", d / f"cli_{k}_judged.csv"], d / f"cli_{k}.log")
        report = report_of(d / f"cli_{k}.meta.json")
        log(f"explain {k}: rc={rc} wall {wall:.1f} s, explain {report['seconds'] if report else float('nan'):.1f} s")
        rows += explain_rows("explain-cli", k, report, wall, committed)
    if not wanted("triton_orders"):
        return rows
    od = out / "explain" / "orders"
    rc, wall = run([sys.executable, ROOT / "examples/triton_orders.py", "--out", od, "--sizes", "4096"],
                   out / "explain" / "orders.log")
    log(f"triton_orders.py rc={rc} wall {wall:.1f} s (both kernels, with Triton's compilation)")
    for k in ("triton_fp16_acc16", "triton_fp32_k_reversed"):
        rows += explain_rows("explain-cli", k, report_of(od / f"{k}_{SIZE}.meta.json"), None, committed)
    return rows


def part_explain_frameworks(out: Path, committed: dict) -> list[dict]:
    d = out / "explain" / "frameworks"
    d.mkdir(parents=True, exist_ok=True)
    only = [k for k in ONLY if k not in CLI_KERNELS and k not in ("triton_orders", "splitk", "jax", "compile")]
    if ONLY and not only:
        return []
    rc, wall = run([sys.executable, ROOT / "examples/explain_frameworks.py", "--out", d, "--sizes", "4096", "--dists",
                    DISTS] + (["--only", ",".join(only)] if only else []), out / "explain" / "frameworks.log",
                   timeout=1800)
    log(f"explain_frameworks.py rc={rc} wall {wall:.1f} s")
    rows: list[dict] = []
    table = d / "explain_table.csv"
    for r in read_csv(table) if table.exists() else []:
        rows += explain_rows("explain-frameworks", r["kernel"], report_of(d / f"{r['kernel']}_{SIZE}.meta.json"),
                             number(r.get("wall_s")), committed)
    return rows


def part_explain_others(out: Path, committed: dict) -> list[dict]:
    d = out / "explain" / "explain37"
    d.mkdir(parents=True, exist_ok=True)
    rows: list[dict] = []
    for p in filter(wanted, ("splitk", "jax", "compile")):
        table = d / "explain37_table.csv"
        table.unlink(missing_ok=True)  # each part writes its own table there, with its .meta.json
        table.with_suffix(".meta.json").unlink(missing_ok=True)
        rc, wall = run([sys.executable, ROOT / "scripts/lab/explain37.py", "--out", d, "--part", p, "--sizes", "4096"],
                       out / "explain" / f"explain37_{p}.log", env={"XLA_PYTHON_CLIENT_PREALLOCATE": "false"})
        log(f"explain37.py --part {p} rc={rc} wall {wall:.1f} s")
        if table.exists():
            table.rename(d / f"explain37_table_{p}.csv")
            if table.with_suffix(".meta.json").exists():
                meta = json.loads(table.with_suffix(".meta.json").read_text())
                meta["csv"] = f"explain37_table_{p}.csv"
                (d / f"explain37_table_{p}.meta.json").write_text(json.dumps(meta, indent=1) + "\n")
                table.with_suffix(".meta.json").unlink()
        for r in read_csv(d / f"explain37_table_{p}.csv") if (d / f"explain37_table_{p}.csv").exists() else []:
            if r["size"] == SIZE:
                rows += explain_rows("explain-others", r["kernel"], report_of(d / f"{r['kernel']}_{SIZE}.meta.json"),
                                     number(r.get("wall_s")), committed)
    return rows


# --- the CSV, its metadata and the table -----------------------------------------------------------------

def main() -> int:
    if len(sys.argv) < 3:
        print(__doc__, file=sys.stderr)
        return 2
    bin_dir, out = Path(sys.argv[1]).resolve(), Path(sys.argv[2]).resolve()
    parts = sys.argv[3:] or ["main"]
    expand = {"explain": ["explain-cli", "explain-frameworks", "explain-others"],
              "all": ["main", "explain-cli", "explain-frameworks", "explain-others"]}
    parts = [q for p in parts for q in expand.get(p, [p])]
    known = {"main", "fastest", "explain-cli", "explain-frameworks", "explain-others"}
    if any(p not in known for p in parts):
        print(f"bench_speed: unknown part among {parts}; known: {', '.join(sorted(known))}, explain, all", file=sys.stderr)
        return 2
    if {"main", "fastest", "explain-cli"} & set(parts) and not os.access(bin_dir / "gemmlab", os.X_OK):
        print(f"bench_speed: {bin_dir / 'gemmlab'} is not an executable gemmlab: give BIN_DIR, the folder a build of "
              "this tree wrote gemmlab and gemmlab_gpu_tests to", file=sys.stderr)
        return 2
    # ONLY's names: the CLI baselines and explain37's parts are known here, the frameworks' flavours to
    # examples/explain_frameworks.py (which refuses an unknown one, naming the known).
    others = [k for k in ONLY if k not in CLI_KERNELS and k not in ("triton_orders", "splitk", "jax", "compile")]
    if others and "explain-frameworks" not in parts:
        print(f"bench_speed: ONLY names {', '.join(others)}, neither a CLI baseline ({', '.join(CLI_KERNELS)}), "
              "triton_orders nor an explain37 part (splitk, jax, compile); a framework flavour needs the part "
              "explain-frameworks", file=sys.stderr)
        return 2
    out.mkdir(parents=True, exist_ok=True)
    try:
        gpu = subprocess.run(["nvidia-smi", "--query-gpu=name,driver_version,clocks.sm,clocks.max.sm,temperature.gpu",
                              "--format=csv,noheader"], capture_output=True, text=True).stdout.strip()
    except OSError as e:
        gpu = f"unknown (nvidia-smi: {e.strerror})"
    log(f"GPU: {gpu}; parts: {' '.join(parts)}")
    committed = committed_explain()
    speed = out / "speed.csv"
    rows = [r for r in (read_csv(speed) if speed.exists() else []) if r["part"] not in parts]
    t0 = time.time()
    for p in parts:
        if p == "main":
            rows += part_main(bin_dir, out)
        elif p == "fastest":
            rows += part_fastest(bin_dir, out)
        elif p == "explain-cli":
            rows += part_explain_cli(bin_dir, out, committed)
        elif p == "explain-frameworks":
            rows += part_explain_frameworks(out, committed)
        else:
            rows += part_explain_others(out, committed)
    with open(speed, "w", newline="") as f:
        w = csv.DictWriter(f, fieldnames=FIELDS)
        w.writeheader()
        for r in rows:
            w.writerow({k: r.get(k, "") for k in FIELDS})
    meta_path = out / "speed.meta.json"
    meta = json.loads(meta_path.read_text()) if meta_path.exists() else {}
    meta.setdefault("parts", {})
    for p in parts:
        meta["parts"][p] = {"date_utc": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()), "gpu": gpu,
                            "command": " ".join(["scripts/lab/bench_speed.py", *sys.argv[1:]]),
                            "seconds": round(time.time() - t0, 1)}
    meta["csv"] = "speed.csv"
    meta["columns"] = FIELDS
    meta["committed"] = {"main": str(MAIN_COMMITTED.relative_to(ROOT)), "explain": str(EXPLAIN_COMMITTED.relative_to(ROOT))}
    meta_path.write_text(json.dumps(meta, indent=1) + "\n")
    print()
    width = max(len(r["item"]) for r in rows) if rows else 10
    print(f"{'part':<19} {'item':<{width}} {'new':>12} {'committed':>12}  shows")
    for r in rows:
        print(f"{r['part']:<19} {r['item']:<{width}} {str(r.get('value', '')):>12} {str(r.get('value_committed', '')):>12}"
              f"  {str(r.get('shows', ''))[:90]}")
    log(f"done in {time.time() - t0:.0f} s: {speed}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
