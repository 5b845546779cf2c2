#!/usr/bin/env python3
"""Issue 37's GPU list: gemmlab.explain on the kernels whose order may depend on scheduling, on framework
matmuls, and on bad input, each case in a process of its own (a GPU error that loses the CUDA context,
JAX's memory, torch.compile's caches end with it), with a short table last.

    python3 scripts/lab/explain37.py --out OUT [--part splitk|jax|compile|bad|all] [--sizes 4096 1024x2048x8192]

Cases (examples/splitk_atomic.py, framework_matmuls.py, bad_callables.py):
  splitk   Triton fp16 split-K 8 with tl.atomic_add, grid split-major (triton.ops.matmul's) and tile-major;
  jax      jnp.matmul fp32 at the default precision and at HIGHEST (XLA_PYTHON_CLIENT_PREALLOCATE=false);
  compile  torch.compile(mode="max-autotune", dynamic=False) of torch.matmul, fp16 and bf16, compiled and
           autotuned once per shape before explain, held there with set_stance("fail_on_recompile");
  bad      a callable raising on its third call, one returning the wrong shape on every fifth call, one
           storing far outside C on its third call (explain) or sixth (judge: the second row's).
Each size (4096^3 and the non-square one) on uniform_0_1, normal_0_1 and logunif_-8_8, seed 20261124.
Per case: OUT/<case>_<size>.csv (+ .meta.json: the whole report), _judged.csv (rows judged by the record
found), .explain.json (the report), .result.json (the table's row). A case whose .result.json exists is
not run again (delete it to redo).
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
EXAMPLES = ROOT / "examples"
DISTS = ["uniform_0_1", "normal_0_1", "logunif_-8_8"]
SEED = 20261124
BAD_SIZE = (1024, 1024, 1024)

CASES = {
    "splitk": ["triton_fp16_splitk8_atomic", "triton_fp16_splitk8_atomic_tile_major"],
    "jax": ["jnp_matmul_fp32_default", "jnp_matmul_fp32_highest"],
    "compile": ["torch_compile_max_autotune_fp16", "torch_compile_max_autotune_bf16"],
    "bad": ["raises_on_call_3", "wrong_shape_every_5", "illegal_access_on_call_3", "illegal_access_judge"],
}


def size_of(s: str) -> tuple[int, int, int]:
    p = [int(x) for x in s.lower().split("x")]
    return (p[0],) * 3 if len(p) == 1 else (p[0], p[1], p[2])


def tag_of(z) -> str:
    return "x".join(str(v) for v in z)


# --- one case, in the child ----------------------------------------------------------------------------

def row_of(e, name: str, z, wall: float, extra: dict) -> dict:
    r = e.report
    s = r.get("schedule", {})
    cmp = r["comparisons"]
    statuses = ",".join(sorted(set(e.judged["status"].astype(str)))) if e.judged is not None else ""
    variants = s.get("variants", [])
    return dict(kernel=name, size=tag_of(z), identified="yes" if e.identified else f"no ({r['failed_stage']})",
                mismatches=f"{sum(c['mismatches'] for c in cmp)}/{sum(c['outputs'] for c in cmp)}",
                by_variant=sum(c.get("by_variant", 0) for c in cmp), status=statuses,
                scheduling=s.get("verdict", "") + (f" ({s['exposed_by']})" if s.get("exposed_by") else ""),
                variants=f"{sum(v['revealed'] for v in variants)}/{len(variants)} revealed" if variants else "",
                explain_s=round(r["seconds"], 1), wall_s=round(wall, 1), reason=(r["reason"] or "")[:300],
                trials=" ".join(f"{t['perturbation']}:" + (f"{t['following']}/{t['entries']}" if not t["not_applied"]
                                                             else "n/a") for t in s.get("trials", [])),
                **extra)


def run_case(name: str, z, out: Path) -> dict:
    sys.path.insert(0, str(EXAMPLES))
    import gemmlab
    M, N, K = z
    base = out / f"{name}_{tag_of(z)}"
    kw = dict(size=z, distributions=DISTS, seed=SEED, out=base.with_suffix(".csv"),
              judge_out=Path(f"{base}_judged.csv"), reps=5, warmup=2)
    t0 = time.time()
    extra: dict = {}

    def finish(e):
        Path(f"{base}.explain.json").write_text(json.dumps(e.report, indent=1))
        print(e.summary, flush=True)
        return row_of(e, name, z, time.time() - t0, extra)

    if name.startswith("triton_fp16_splitk8"):
        from splitk_atomic import flavours
        spec = flavours()[name]
        return finish(gemmlab.explain(spec["fn"], name=name, input_format="fp16", output_format="fp32", **kw))
    if name.startswith("jnp_matmul"):
        from framework_matmuls import jax_matmuls, jax_metadata
        spec = jax_matmuls()[name]
        extra["jax"] = json.dumps(jax_metadata())
        return finish(gemmlab.explain(spec["fn"], name=name, framework="jax", input_format="fp32",
                                      output_format="fp32", **kw))
    if name.startswith("torch_compile"):
        from framework_matmuls import compiled_matmuls, torch_compile_metadata
        spec = compiled_matmuls()[name]
        cm = spec["fn"]
        extra["compile_s"] = round(cm.warm(M, N, K), 1)
        before = cm.compiles()
        with cm.held():
            e = gemmlab.explain(cm, name=name, input_format=spec["input_format"],
                                output_format=spec["output_format"], **kw)
        extra["recompiled"] = cm.compiles() - before
        extra["inductor"] = json.dumps(torch_compile_metadata())
        return finish(e)
    from bad_callables import RaisesOnCall, WrongShapeEvery, illegal_access_on_call
    if name == "illegal_access_judge":
        try:
            gemmlab.judge(illegal_access_on_call(6), name=name, input_format="fp16", sizes=[z],
                          distributions=DISTS[:2], reps=2, warmup=1, out=base.with_suffix(".csv"), force=True)
            return dict(kernel=name, size=tag_of(z), identified="-", status="no error raised (unexpected)")
        except gemmlab.GpuContextLost as ex:
            return dict(kernel=name, size=tag_of(z), identified="-",
                        status=f"GpuContextLost; {len(ex.rows)} row(s) kept: " +
                               ",".join(str(s) for s in ex.rows.get("status", [])),
                        reason=str(ex)[:300], wall_s=round(time.time() - t0, 1), journal=str(ex.journal))
    fn = {"raises_on_call_3": lambda: RaisesOnCall(3), "wrong_shape_every_5": lambda: WrongShapeEvery(5),
          "illegal_access_on_call_3": lambda: illegal_access_on_call(3)}[name]()
    try:
        e = gemmlab.explain(fn, name=name, input_format="fp16", output_format="fp32", judge_rows=False,
                            **{k: v for k, v in kw.items() if k != "judge_out"})
    except gemmlab.GpuContextLost as ex:
        e = ex.explanation
        extra["raised"] = "GpuContextLost"
        return finish(e)
    row = finish(e)
    # The same callable judged (a fresh one: its calls counted from 1): rows before the bad call kept.
    fn2 = {"raises_on_call_3": lambda: RaisesOnCall(6), "wrong_shape_every_5": lambda: WrongShapeEvery(5)}[name]()
    judged = gemmlab.judge(fn2, name=name, input_format="fp16", sizes=[z], distributions=DISTS, reps=2, warmup=1,
                           out=Path(f"{base}_judged.csv"), force=True, errors="rows")
    row["status"] = ",".join(f"{r.distribution}:{r.status}" for r in judged.itertuples())
    return row


# --- the driver --------------------------------------------------------------------------------------

def write_table_meta(path: Path, rows: list[dict]) -> None:
    """The summary table's metadata: how it was made, on which GPU, from which commit (the cases' own
    .meta.json files, beside it, each name theirs)."""
    commits, gpus, dates = set(), set(), []
    for r in rows:
        case = path.parent / f"{r.get('kernel')}_{r.get('size')}.meta.json"
        if case.exists():
            m = json.loads(case.read_text())
            commits.add(m.get("git_commit", "unknown"))
            gpus.add((m.get("gpu") or {}).get("name", "unknown"))
            dates.append(m.get("date_utc", ""))
    try:
        smi = subprocess.run(["nvidia-smi", "--query-gpu=name,driver_version", "--format=csv,noheader"],
                             capture_output=True, text=True).stdout.strip()
    except OSError as e:
        smi = f"unknown (nvidia-smi: {e.strerror})"
    path.write_text(json.dumps({
        "csv": path.name.replace(".meta.json", ".csv"), "kind": "summary table",
        "produced_by": " ".join(["scripts/lab/explain37.py", *sys.argv[1:]]),
        "from": "the cases' CSVs and .meta.json files beside it (each with its own command, GPU and date)",
        "gpu": smi or ", ".join(sorted(gpus)), "git_commit": sorted(commits),
        "date_utc": max(dates) if dates else time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())}, indent=1) + "\n")


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--out", required=True, type=Path)
    ap.add_argument("--part", default="all", choices=[*CASES, "all"])
    ap.add_argument("--sizes", nargs="+", default=["4096", "1024x2048x8192"])
    ap.add_argument("--case", help=argparse.SUPPRESS)  # the child: one case at one size
    ap.add_argument("--size", help=argparse.SUPPRESS)
    a = ap.parse_args()
    a.out.mkdir(parents=True, exist_ok=True)
    if a.case:
        z = size_of(a.size)
        row = run_case(a.case, z, a.out)
        (a.out / f"{a.case}_{tag_of(z)}.result.json").write_text(json.dumps(row))
        sys.stdout.flush()
        os._exit(0)  # a lost CUDA context: no teardown of the frameworks' GPU state
    parts = list(CASES) if a.part == "all" else [a.part]
    rows = []
    for part in parts:
        for name in CASES[part]:
            for s in (["x".join(map(str, BAD_SIZE))] if part == "bad" else a.sizes):
                z = size_of(s)
                result = a.out / f"{name}_{tag_of(z)}.result.json"
                if not result.exists():
                    env = dict(os.environ, XLA_PYTHON_CLIENT_PREALLOCATE="false")
                    t0 = time.time()
                    with open(a.out / f"{name}_{tag_of(z)}.log", "w") as log:
                        p = subprocess.run([sys.executable, __file__, "--out", str(a.out), "--case", name, "--size", s],
                                           stdout=log, stderr=subprocess.STDOUT, env=env, timeout=900)
                    print(f"{name} {tag_of(z)}: rc={p.returncode} in {time.time() - t0:.0f} s", flush=True)
                    if not result.exists():
                        rows.append(dict(kernel=name, size=tag_of(z), identified="crashed",
                                         reason=f"exit {p.returncode}; see {name}_{tag_of(z)}.log"))
                        continue
                rows.append(json.loads(result.read_text()))
    import pandas as pd
    t = pd.DataFrame(rows)
    t.to_csv(a.out / "explain37_table.csv", index=False)
    write_table_meta(a.out / "explain37_table.meta.json", rows)
    cols = [c for c in ("kernel", "size", "identified", "mismatches", "by_variant", "status", "scheduling", "variants",
                        "explain_s", "wall_s") if c in t.columns]
    with pd.option_context("display.width", 250, "display.max_colwidth", 48, "display.max_rows", 200):
        print(t[cols].to_string(index=False))
        if "reason" in t.columns:
            print()
            for r in t.itertuples():
                if isinstance(r.reason, str) and r.reason:
                    print(f"{r.kernel} {r.size}: {r.reason[:240]}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
