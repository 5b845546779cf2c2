#!/usr/bin/env python3
"""The hardware's answers to every probe, compactly: one row per instruction with the output bits
of its probes in `gemmlab probe`'s order, and the sha256 of the probe ids in that order (so a reader
can check that its own probe set, tc::make_probes, is the same one).

    scripts/lab/probes/compact_outcomes.py OUTCOMES.csv[.xz] OUT.csv

OUTCOMES is the `<out>_outcomes.csv` that `gemmlab probe` writes (columns instruction, probe, ...,
output_bits, ...), or its `<out>_corpus_outcomes.csv` (the corpus: the id column is `case`), plain or
xz-compressed. tests/cpu/test_tc_eval.cpp replays OUT through tc-eval.
"""
import csv
import hashlib
import io
import lzma
import sys


def main(src: str, dst: str) -> None:
    raw = lzma.open(src, "rt", newline="") if src.endswith(".xz") else open(src, newline="")
    with raw:
        rows = list(csv.DictReader(raw))
    id_col = "case" if rows and "case" in rows[0] else "probe"
    if not rows or not {"instruction", id_col, "output_bits"} <= rows[0].keys():
        sys.exit(f"{src}: expected the columns instruction, probe (or case) and output_bits of gemmlab probe's outcomes")
    order, ids, bits = [], {}, {}
    for r in rows:
        ins = r["instruction"]
        if ins not in ids:
            order.append(ins)
            ids[ins], bits[ins] = [], []
        ids[ins].append(r[id_col])
        bits[ins].append(r["output_bits"])
    out = io.StringIO()
    w = csv.writer(out, lineterminator="\n")
    w.writerow(["instruction", "probes", "probe_ids_sha256", "output_bits"])
    for ins in order:
        digest = hashlib.sha256("\n".join(ids[ins]).encode()).hexdigest()
        w.writerow([ins, len(ids[ins]), digest, " ".join(bits[ins])])
    with open(dst, "w", newline="") as f:
        f.write(out.getvalue())


if __name__ == "__main__":
    if len(sys.argv) != 3:
        sys.exit(__doc__)
    main(sys.argv[1], sys.argv[2])
