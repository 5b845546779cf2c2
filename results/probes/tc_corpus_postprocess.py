#!/usr/bin/env python3
"""Turns the OUT_DIR of `scripts/gpu_session.sh BIN_DIR OUT_DIR tc-corpus` into the committed files and
prints the tables for results/probes/README.md.

    results/probes/tc_corpus_postprocess.py OUT_DIR GPU DATE [DEST]

GPU is a short tag (h100, h200), DATE yyyymmdd; DEST defaults to this folder. Writes, with the stem
<GPU>_tc_corpus_<DATE>:
  <stem>.csv (+ .meta.json)                  findings: every inferred parameter and special rule, with evidence
  <stem>_corpus.csv (+ .meta.json)           tidy: one row per instruction x rule class, mismatching outputs
  <stem>_validation.csv (+ .meta.json)       tidy: one row per instruction x distribution x C range (random tiles)
  <stem>_outcomes.csv.xz                     every probe's inputs and bits (xz)
  <stem>_outputs.csv                         the hardware's bits per instruction in probe order (replayed by
                                             tests/cpu/test_tc_eval.cpp ReproducesEveryCommittedProbeOutcome)
  <stem>_corpus_outputs.csv                  the hardware's bits per instruction in corpus order (replayed by
                                             ReproducesEveryCommittedCorpusOutcome)
  <stem>.log                                 the run's printout
and fills the `hardware` column of mmasim_crosscheck.csv from the inferred special rules. Then it
prints: the inferred special rules per instruction (put them into reference/tc_model.cpp
measured_hopper_params where they differ from it, so the replay tests pass), the per-class mismatch
table and the validation table, as Markdown.
"""
import csv
import json
import lzma
import os
import shutil
import subprocess
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
RULES = ("nan_encoding", "overflow", "zero_sign", "zero_operand_alignment", "tf32_low_bits")


def rows(path):
    with open(path, newline="") as f:
        return list(csv.DictReader(f))


def copy_with_meta(src_csv, dst_csv):
    shutil.copyfile(src_csv, dst_csv)
    meta = src_csv[:-4] + ".meta.json"
    if os.path.exists(meta):
        with open(meta) as f:
            m = json.load(f)
        m["committed_as"] = os.path.basename(dst_csv)
        with open(dst_csv[:-4] + ".meta.json", "w") as f:
            json.dump(m, f, indent=2)
            f.write("\n")


def main(out_dir, gpu, date, dest):
    stem = os.path.join(dest, f"{gpu}_tc_corpus_{date}")
    need = ["tc_corpus.csv", "tc_corpus_corpus.csv", "tc_corpus_outcomes.csv", "tc_corpus_corpus_outcomes.csv"]
    missing = [n for n in need if not os.path.exists(os.path.join(out_dir, n))]
    if missing:
        sys.exit(f"{out_dir}: missing {', '.join(missing)}; run scripts/gpu_session.sh BIN_DIR OUT_DIR tc-corpus first")
    src = lambda n: os.path.join(out_dir, n)
    copy_with_meta(src("tc_corpus.csv"), stem + ".csv")
    copy_with_meta(src("tc_corpus_corpus.csv"), stem + "_corpus.csv")
    if os.path.exists(src("tc_corpus_validation.csv")):
        copy_with_meta(src("tc_corpus_validation.csv"), stem + "_validation.csv")
    if os.path.exists(src("tc_corpus.log")):
        shutil.copyfile(src("tc_corpus.log"), stem + ".log")
    with open(src("tc_corpus_outcomes.csv"), "rb") as f, lzma.open(stem + "_outcomes.csv.xz", "wb", preset=9) as g:
        shutil.copyfileobj(f, g)
    compact = os.path.join(HERE, "compact_outcomes.py")
    subprocess.run([sys.executable, compact, src("tc_corpus_outcomes.csv"), stem + "_outputs.csv"], check=True)
    subprocess.run([sys.executable, compact, src("tc_corpus_corpus_outcomes.csv"), stem + "_corpus_outputs.csv"],
                   check=True)

    findings = rows(src("tc_corpus.csv"))
    inferred = {}
    for r in findings:
        if r["feature"] in RULES:
            inferred.setdefault(r["instruction"], {})[r["feature"]] = r["observed"]
    print(f"## Special rules inferred on the {gpu.upper()} ({date})\n")
    print("| instruction | " + " | ".join(RULES) + " |")
    print("|---|" + "---|" * len(RULES))
    for ins, v in inferred.items():
        print(f"| {ins} | " + " | ".join(v.get(k, "-").split(" [evidence")[0] for k in RULES) + " |")

    print("\n## Corpus: mismatching outputs per rule class\n")
    corpus = rows(src("tc_corpus_corpus.csv"))
    classes = list(dict.fromkeys(r["class"] for r in corpus))
    print("| instruction | " + " | ".join(classes) + " |")
    print("|---|" + "---|" * len(classes))
    table = {}
    for r in corpus:
        table.setdefault(r["instruction"], {})[r["class"]] = f"{r['mismatching_outputs']} / {r['cases']}"
    for ins, v in table.items():
        print(f"| {ins} | " + " | ".join(v.get(c, "n/a") for c in classes) + " |")

    if os.path.exists(src("tc_corpus_validation.csv")):
        print("\n## Random tiles\n")
        print("| instruction | first tile | tiles | outputs | mismatching |")
        print("|---|---|---|---|---|")
        for r in rows(src("tc_corpus_validation.csv")):
            if r["distribution"] == "all":
                print(f"| {r['instruction']} | {r['first_tile']} | {r['tiles']} | {r['outputs']} | **{r['mismatching_outputs']}** |")

    # The hardware column of the MMA-Sim / Khattak-Mikaitis cross-check.
    cross = os.path.join(dest, "mmasim_crosscheck.csv")
    if os.path.exists(cross):
        table = rows(cross)
        for r in table:
            verdicts = set()
            for ins in r["instructions"].split():  # the instructions where the two models disagree
                got = inferred.get(ins, {}).get(r["rule"])
                if got is None:
                    continue
                value = got.split(" ")[0]
                verdicts.add("gemmlab" if value == r["gemmlab"] else "MMA-Sim" if value == r["mmasim"] else f"neither ({value})")
            if verdicts:
                r["hardware"] = f"{' / '.join(sorted(verdicts))} ({gpu.upper()} {date})"
        with open(cross, "w", newline="") as f:
            w = csv.DictWriter(f, fieldnames=list(table[0].keys()), lineterminator="\n")
            w.writeheader()
            w.writerows(table)
        print(f"\nfilled the hardware column of {cross}")


if __name__ == "__main__":
    if len(sys.argv) not in (4, 5):
        sys.exit(__doc__)
    main(sys.argv[1], sys.argv[2], sys.argv[3], sys.argv[4] if len(sys.argv) == 5 else HERE)
