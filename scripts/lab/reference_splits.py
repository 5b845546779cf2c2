#!/usr/bin/env python3
"""The GPU exact reference's two splits side by side (issue 42): two `gemmlab bench-reference` CSVs of one
session, one with GEMMLAB_REFERENCE_SPLIT=digits and one with the automatic choice, joined per problem.

    scripts/lab/reference_splits.py DIGITS.csv AUTO.csv OUT.csv

Writes OUT.csv (distribution, input, size, the digit split's seconds and GEMMs, the automatic split's
split, seconds and GEMMs, and their ratio) with OUT.meta.json (the two inputs' metadata), and prints the
table. The rows compared are the `gpu_int8_ozaki_resident` ones (operands already on the GPU, as `gemmlab
run` has them), else `gpu_int8_ozaki`. Python standard library only.
"""
import csv
import json
import sys
from pathlib import Path


NEEDED = ("what", "distribution", "input", "M", "N", "K", "engine", "seconds", "split", "gemms")


def rows_of(path: Path) -> dict:
    got: dict = {}
    with open(path, newline="") as f:
        reader = csv.DictReader(f)
        missing = [c for c in NEEDED if c not in (reader.fieldnames or [])]
        if missing:
            raise ValueError(f"{path}: no column {', '.join(missing)}: give a CSV of `gemmlab bench-reference` "
                             "(one that shows the split: since 2026-11-30)")
        for r in reader:
            if r["what"] != "reference" or not r["engine"].startswith("gpu_int8_ozaki"):
                continue
            key = (r["distribution"], r["input"], f'{r["M"]}x{r["N"]}x{r["K"]}')
            if key in got and not r["engine"].endswith("_resident"):
                continue  # the resident row, where there is one, is what `gemmlab run` pays
            got[key] = r
    return got


def main(argv: list[str]) -> int:
    if len(argv) != 3:
        print(__doc__.split("\n\n")[1], file=sys.stderr)
        return 2
    digits_csv, auto_csv, out_csv = (Path(a) for a in argv)
    for p in (digits_csv, auto_csv):
        if not p.is_file():
            print(f"reference_splits: {p}: no such file (give two bench-reference CSVs)", file=sys.stderr)
            return 2
    try:
        d, a = rows_of(digits_csv), rows_of(auto_csv)
        for r in [*d.values(), *a.values()]:
            if not float(r["seconds"]) > 0:
                raise ValueError(f"a row of {r['distribution']} {r['input']} has seconds {r['seconds']!r}")
    except (ValueError, csv.Error, UnicodeDecodeError) as e:
        print(f"reference_splits: {e}", file=sys.stderr)
        return 2
    if not d:
        print(f"reference_splits: {digits_csv} has no GPU reference row (was it run with --no-gpu?)", file=sys.stderr)
        return 2
    missing = sorted(set(d) ^ set(a))
    if missing:
        print(f"reference_splits: the two runs differ in their problems ({missing[:3]}...): run both with the same "
              "options", file=sys.stderr)
        return 2
    if any(r["split"] != "digits" for r in d.values()):
        print(f"reference_splits: {digits_csv} has rows of another split: run it with GEMMLAB_REFERENCE_SPLIT=digits",
              file=sys.stderr)
        return 2
    fields = ["distribution", "input", "size", "engine", "digits_seconds", "digits_gemms", "auto_split",
              "auto_seconds", "auto_gemms", "digits_over_auto"]
    out = []
    for key in sorted(d):
        rd, ra = d[key], a[key]
        sd, sa = float(rd["seconds"]), float(ra["seconds"])
        out.append(dict(distribution=key[0], input=key[1], size=key[2], engine=ra["engine"], digits_seconds=sd,
                        digits_gemms=rd["gemms"], auto_split=ra["split"], auto_seconds=sa, auto_gemms=ra["gemms"],
                        digits_over_auto=round(sd / sa, 3)))
    with open(out_csv, "w", newline="") as f:
        w = csv.DictWriter(f, fieldnames=fields)
        w.writeheader()
        w.writerows(out)
    meta = {"produced_by": "scripts/lab/reference_splits.py", "command_line": " ".join(["reference_splits.py", *argv]),
            "columns": fields, "inputs": {}}
    for p in (digits_csv, auto_csv):
        m = p.with_suffix(".meta.json")
        meta["inputs"][str(p)] = json.loads(m.read_text()) if m.is_file() else None
    Path(out_csv).with_suffix(".meta.json").write_text(json.dumps(meta, indent=1) + "\n")
    print(f"{'distribution':<16} {'input':<6} {'size':<16} {'digits s':>9} {'GEMMs':>6} {'auto':>9} {'s':>9} "
          f"{'GEMMs':>6} {'ratio':>6}")
    for r in out:
        print(f"{r['distribution']:<16} {r['input']:<6} {r['size']:<16} {r['digits_seconds']:>9.4f} "
              f"{r['digits_gemms']:>6} {r['auto_split']:>9} {r['auto_seconds']:>9.4f} {r['auto_gemms']:>6} "
              f"{r['digits_over_auto']:>6}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
