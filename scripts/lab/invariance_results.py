#!/usr/bin/env python3
"""Post-processing of scripts/lab/gpu_invariance.sh: OUT_DIR -> results/invariance/<gpu>_<date>/.

    python3 scripts/lab/invariance_results.py OUT_DIR [DEST]

Copies every CSV with its .meta.json (a CSV without one is refused: no result without its
metadata), draws the invariance matrix of each (plots/invariance.py: matrix_cublas.png, ...; for
the library CSVs one figure per input format), and writes claims.md: the two public claims
answered from the CSVs alone, with the figures they rest on:
  * vLLM PR #43337: "split-K is the only source on SM90; cuBLAS workspace settings remove it"
    (vllm_workspace.csv, vllm_orders_k256.csv);
  * Transformer Engine #2986: "a row changing with 5 of 7 batch sizes" (te_*.csv: the library
    kernels', and torch.matmul's and Triton's from examples/invariance_frameworks.py).
DEST defaults to results/invariance/<gpu>_<date> with gpu h100/h200 from the metadata and the
date of the run.
"""
import csv
import json
import os
import shutil
import subprocess
import sys
from collections import defaultdict

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))  # the repository (this file is in scripts/lab/)


def rows_of(path):
    with open(path, newline="") as f:
        return list(csv.DictReader(f))


def sweep_verdicts(rows, check="m"):
    """(kernel, config) -> (equal, differs, other, [why of each differing row])."""
    out = defaultdict(lambda: [0, 0, 0, []])
    for r in rows:
        if r["check"] != check:
            continue
        v = out[(r["kernel"], r["config"])]
        if r["status"] == "equal":
            v[0] += 1
        elif r["status"] == "differs":
            v[1] += 1
            v[3].append(r["why"])
        else:
            v[2] += 1
    return out


def vllm(out_dir):
    ws = os.path.join(out_dir, "vllm_workspace.csv")
    orders = os.path.join(out_dir, "vllm_orders_k256.csv")
    if not os.path.exists(ws):
        return ["vLLM PR #43337: not run (vllm_workspace.csv missing)."]
    lines = ["### vLLM PR #43337: split-K is the only source on SM90; cuBLAS workspace settings remove it", "",
             "| kernel | setting | m equal | m differ | m not taken |", "| --- | --- | ---: | ---: | ---: |"]
    v = sweep_verdicts(rows_of(ws))
    for (k, c), (eq, df, other, _) in v.items():
        lines.append(f"| {k} | {c} | {eq} | {df} | {other} |")
    defaults = {k: x for (k, c), x in v.items() if c == "default"}
    removed = {}
    for k, x in defaults.items():
        if x[1] == 0:
            removed[k] = "no variance under the default settings: nothing to remove"
            continue
        fixed = [c for (kk, c), y in v.items() if kk == k and c != "default" and y[1] == 0]
        removed[k] = ("removed by " + ", ".join(fixed)) if fixed else "no setting removed it"
    lines += ["", "Workspace settings: " + "; ".join(f"{k}: {t}" for k, t in removed.items()) + "."]
    if os.path.exists(orders):
        whys = [w for x in sweep_verdicts(rows_of(orders)).values() for w in x[3]]
        split = sum(" vs split-K " in w for w in whys)
        other = [w for w in whys if " vs split-K " not in w]
        if not whys:
            src = "no entry differed at K = 256: the source could not be examined at this K"
        elif not other:
            src = f"every one of the {len(whys)} differing sizes at K = 256 is a change of split-K count (revealed)"
        else:
            src = (f"{split} of {len(whys)} differing sizes at K = 256 are a change of split-K count; the others: "
                   + " | ".join(sorted(set(w[:160] for w in other))[:3]))
        lines.append("Source: " + src + ".")
    any_default_var = any(x[1] for x in defaults.values())
    lines += ["", "Verdict: " + ("not on this GPU (no batch variance under the default settings)" if not any_default_var
                                  else "see the two lines above (confirmed only if every source is split-K and a "
                                       "workspace setting removes every difference)"), ""]
    return lines


def te(out_dir):
    paths = sorted(f for f in os.listdir(out_dir) if f.startswith("te_") and f.endswith(".csv"))
    if not paths:
        return ["Transformer Engine #2986: not run (no te_*.csv)."]
    lines = ["### Transformer Engine #2986: a row changing with 5 of 7 batch sizes", "",
             "Batch sizes 1, 2, 4, 8, 16, 32, 64 (rows) of a bf16 (M, 4096) x (4096, 4096) GEMM, uniform_-1_1; "
             "rows of each M < 64 compared bit for bit with the same rows at M = 64.", "",
             "| kernel | setting | batch sizes whose rows differ from M = 64 | which |", "| --- | --- | ---: | --- |"]
    by = defaultdict(list)
    for path in paths:
        for r in rows_of(os.path.join(out_dir, path)):
            if r["check"] == "m":
                by[(r["kernel"], r["config"])].append(r)
    for (k, c), rs in by.items():
        diff = [r["m"] for r in rs if r["status"] == "differs"]
        lines.append(f"| {k} | {c} | {len(diff)} of {len(rs)} | {', '.join(diff) or '-'} |")
    lines.append("")
    return lines


def main():
    if len(sys.argv) not in (2, 3):
        sys.exit(__doc__)
    out_dir = sys.argv[1]
    csvs = sorted(f for f in os.listdir(out_dir) if f.endswith(".csv"))
    if not csvs:
        sys.exit(f"{out_dir}: no CSV (run scripts/lab/gpu_invariance.sh BIN_DIR {out_dir} first)")
    for f in csvs:
        if not os.path.exists(os.path.join(out_dir, f[:-4] + ".meta.json")):
            sys.exit(f"{out_dir}/{f}: no .meta.json beside it; a result is committed only with its metadata")
    meta = json.load(open(os.path.join(out_dir, csvs[0][:-4] + ".meta.json")))
    gpu = str(meta.get("gpu", {}).get("name", meta.get("gpu_name", "gpu"))).lower()
    tag = "h200" if "h200" in gpu else "h100" if "h100" in gpu else "gpu"
    date = str(meta.get("date_utc", "")).split("T")[0].replace("-", "") or "undated"
    dest = sys.argv[2] if len(sys.argv) == 3 else os.path.join(ROOT, "results", "invariance", f"{tag}_{date}")
    os.makedirs(dest, exist_ok=True)
    plot = os.path.join(ROOT, "plots", "invariance.py")
    for f in csvs:
        for suffix in (".csv", ".meta.json"):
            shutil.copy2(os.path.join(out_dir, f[:-4] + suffix), os.path.join(dest, f[:-4] + suffix))
        src = os.path.join(dest, f)
        rows = rows_of(src)
        formats = sorted({r["input_format"] for r in rows})
        if len(formats) > 1:  # one matrix per input format: fp32 (and TF32, 16F/16BF modes), fp16, bf16, e4m3
            for fmt in formats:
                part = os.path.join(dest, f"{f[:-4]}_{fmt}.csv")
                with open(part, "w", newline="") as o:
                    w = csv.DictWriter(o, fieldnames=list(rows[0].keys()))
                    w.writeheader()
                    w.writerows(r for r in rows if r["input_format"] == fmt)
                subprocess.run([sys.executable, plot, part, os.path.join(dest, f"{f[:-4]}_{fmt}.png"),
                                "--title", f"{f[:-4]}, {fmt} inputs"], check=True)
                os.remove(part)  # the figure's rows are the committed CSV's, filtered
        else:
            subprocess.run([sys.executable, plot, src, os.path.join(dest, f[:-4] + ".png")], check=True)
    claims = ["# The claims, answered from " + os.path.relpath(dest, ROOT), ""] + vllm(out_dir) + te(out_dir)
    with open(os.path.join(dest, "claims.md"), "w") as f:
        f.write("\n".join(claims) + "\n")
    print("\n".join(claims))
    print(f"wrote {dest}")


if __name__ == "__main__":
    main()
