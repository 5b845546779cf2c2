#!/usr/bin/env python3
"""One current table from several runs of scripts/lab/bench_speed.py (each of them a subset, ONLY=...):

    scripts/lab/merge_speed.py OUT.csv LABEL=SPEED.csv [LABEL=SPEED.csv ...]

The inputs in the order given, a later one's row replacing an earlier one's of the same part and item; each
row keeps its run's LABEL (e.g. the round and the commit it ran at) in a column `run`. Writes OUT.csv and
OUT.meta.json (the inputs, the command, the date). Python standard library only; exit 2 on a missing or
malformed input."""
import csv
import datetime
import json
import sys
from pathlib import Path


def main(argv: list[str]) -> int:
    if len(argv) < 3 or any("=" not in a for a in argv[2:]):
        print(__doc__, file=sys.stderr)
        return 2
    out = Path(argv[1])
    rows: dict[tuple[str, str], dict] = {}
    columns: list[str] = []
    inputs = []
    for arg in argv[2:]:
        label, path = arg.split("=", 1)
        try:
            with open(path, newline="", encoding="utf-8") as f:
                reader = csv.DictReader(f)
                got = list(reader)
                fields = reader.fieldnames or []
        except OSError as e:
            print(f"merge_speed: {path}: {e.strerror or e}", file=sys.stderr)
            return 2
        if "part" not in fields or "item" not in fields:
            print(f"merge_speed: {path}: not a bench_speed.py table (no part and item columns)", file=sys.stderr)
            return 2
        columns += [c for c in fields if c not in columns]
        for r in got:
            rows.pop((r["part"], r["item"]), None)  # a later run's row goes where the run puts it, last
            rows[(r["part"], r["item"])] = {**r, "run": label}
        inputs.append({"label": label, "csv": path, "rows": len(got)})
    columns.append("run")
    with open(out, "w", newline="", encoding="utf-8") as f:
        w = csv.DictWriter(f, fieldnames=columns)
        w.writeheader()
        for r in sorted(rows.values(), key=lambda r: (r["part"], r["item"])):
            w.writerow(r)
    meta = {"produced_by": "scripts/lab/merge_speed.py", "command": " ".join(["scripts/lab/merge_speed.py"] + argv[1:]),
            "date_utc": datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ"),
            "inputs": inputs, "rows": len(rows), "columns": columns,
            "rule": "inputs in the order given; a later input's row replaces an earlier one's of the same part and item"}
    Path(str(out)[: -len(".csv")] + ".meta.json" if str(out).endswith(".csv") else str(out) + ".meta.json").write_text(
        json.dumps(meta, indent=1) + "\n", encoding="utf-8")
    print(f"merge_speed: {len(rows)} rows from {len(inputs)} runs -> {out}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
