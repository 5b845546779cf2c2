#!/usr/bin/env python3
"""Post-processing of scripts/lab/gpu_fprevgroups.sh's OUT_DIR (FPRev unit groups, issue 20; run locally).

    python3 scripts/lab/fprevgroups_results.py OUT_DIR results/explain/h100_<date>_fprevgroups
    python3 scripts/lab/fprevgroups_results.py OUT_DIR --table-only      # print the table, write nothing

Prints one row per explained kernel: identified or the failed stage, the FPRev masks' group size, the
launches and the compared outputs that differ. With DEST: copies each explain CSV (and its judged CSV)
with the .meta.json gemmlab wrote beside it, the GPU test log, and writes fprevgroups_table.csv with
its .meta.json. Refuses (exit 2, nothing written) an OUT_DIR without explain CSVs or a CSV without
its .meta.json.
"""
import argparse
import csv
import json
import os
import re
import shutil
import sys


def explain_csvs(out_dir):
    found = []
    for sub in ("", "frameworks"):
        d = os.path.join(out_dir, sub)
        if not os.path.isdir(d):
            continue
        for f in sorted(os.listdir(d)):
            if f.endswith(".csv") and not f.endswith("_judged.csv") and f != "explain_table.csv":
                found.append(os.path.join(d, f))
    return found


def row_of(path):
    meta_path = path[:-4] + ".meta.json"
    if not os.path.exists(meta_path):
        sys.exit(f"{path} has no {os.path.basename(meta_path)} beside it: was it written by gemmlab explain?")
    report = json.load(open(meta_path))["report"]
    rows = list(csv.DictReader(open(path)))
    if not rows:
        sys.exit(f"{path} has no rows")
    group = re.search(r"groups of G = (\d+) \((\d+) items", report["tree"]["masks"])
    return {"kernel": rows[0]["kernel"], "size": f"{rows[0]['M']}x{rows[0]['N']}x{rows[0]['K']}",
            "identified": rows[0]["identified"], "failed_stage": report["failed_stage"],
            "unit_group": group.group(1) if group else "one group",
            "items_per_pair": group.group(2) if group else "1",
            "mismatches": sum(c["mismatches"] for c in report["comparisons"]),
            "compared_outputs": sum(c["outputs"] for c in report["comparisons"]),
            "launches": report["launches"], "explain_seconds": round(report["seconds"], 1),
            "numerics": report["numerics_text"][:100], "reason": report["reason"][:200]}


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("out_dir", help="OUT_DIR of scripts/lab/gpu_fprevgroups.sh")
    ap.add_argument("dest", nargs="?", help="results folder to write, e.g. results/explain/h100_20261125_fprevgroups")
    ap.add_argument("--table-only", action="store_true", help="print the table only")
    a = ap.parse_args()
    if not a.dest and not a.table_only:
        ap.error("give DEST or --table-only")
    paths = explain_csvs(a.out_dir)
    if not paths:
        print(f"{a.out_dir} has no explain CSV: run scripts/lab/gpu_fprevgroups.sh BIN {a.out_dir} first", file=sys.stderr)
        return 2
    table = [row_of(p) for p in paths]
    cols = list(table[0])
    for r in table:
        print("  ".join(f"{r[c]}" for c in cols if c not in ("numerics", "reason"))
              + (f"  ({r['failed_stage']}: {r['reason'][:100]})" if r["failed_stage"] else ""))
    if a.table_only:
        return 0
    os.makedirs(a.dest, exist_ok=True)
    for p in paths:
        for f in (p, p[:-4] + "_judged.csv"):
            for g in (f, f[:-4] + ".meta.json"):
                if os.path.exists(g):
                    shutil.copy2(g, os.path.join(a.dest, os.path.basename(g)))
    log = os.path.join(a.out_dir, "fprevgroups_gpu_tests.log")
    if os.path.exists(log):
        shutil.copy2(log, os.path.join(a.dest, os.path.basename(log)))
    tmp = os.path.join(a.dest, "fprevgroups_table.csv.tmp")
    with open(tmp, "w", newline="") as f:
        w = csv.DictWriter(f, fieldnames=cols)
        w.writeheader()
        w.writerows(table)
    os.replace(tmp, os.path.join(a.dest, "fprevgroups_table.csv"))
    meta = {"produced_by": "scripts/lab/fprevgroups_results.py", "source": os.path.abspath(a.out_dir),
            "rows_from": [os.path.basename(p) for p in paths],
            "columns": {"unit_group": "FPRev units per item (reference/fprev.hpp)",
                        "items_per_pair": "items (launch slots) per FPRev pair"}}
    with open(os.path.join(a.dest, "fprevgroups_table.meta.json.tmp"), "w") as f:
        json.dump(meta, f, indent=2)
    os.replace(os.path.join(a.dest, "fprevgroups_table.meta.json.tmp"), os.path.join(a.dest, "fprevgroups_table.meta.json"))
    print(f"wrote {a.dest}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
