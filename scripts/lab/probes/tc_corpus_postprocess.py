#!/usr/bin/env python3
"""Turns the OUT_DIR of `scripts/lab/gpu_session.sh BIN_DIR OUT_DIR tc-corpus` into the committed files and
prints the tables for results/probes/README.md.

    scripts/lab/probes/tc_corpus_postprocess.py OUT_DIR GPU DATE [DEST] [--more-tiles DIR ...] [--gemmlab BIN]
                                            [--run STEM] [--also CSV ...]

The fp64 tensor-core run (scripts/lab/gpu_tc_f64.sh) is the same kind of run under another stem:
    scripts/lab/probes/tc_corpus_postprocess.py OUT_DIR h100 DATE --run tc_f64 --also predict_f64.csv --gemmlab BIN

GPU is a short tag (h100, h200), DATE yyyymmdd; DEST defaults to results/probes/. --more-tiles names
the OUT_DIRs of further calls that validated the next random tiles (TC_FIRST_TILE = N, 2N, ...; only
their tc_corpus_validation.csv and tc_corpus.log are read): their counts are summed into one table,
which must then cover one contiguous range of tiles from the same seed per instruction. --gemmlab
replays every hardware outcome (probes and corpus) through `BIN tc-eval`, i.e. gemmlab's committed
model (tc::measured_hopper_params), where the run's own counts are those of the model it inferred.
Writes, with the stem <GPU>_<RUN>_<DATE> (RUN: tc_corpus unless --run says otherwise):
  <stem>.csv (+ .meta.json)                  findings: every inferred parameter and special rule, with evidence
  <stem>_corpus.csv (+ .meta.json)           tidy: one row per instruction x rule class, mismatching outputs
                                             (of the model the run inferred)
  <stem>_validation.csv (+ .meta.json)       tidy: one row per instruction x distribution x C range (random tiles,
                                             every call's tiles summed; the meta lists each call's seed and range)
  <stem>_replayed.csv (+ .meta.json)         with --gemmlab: one row per instruction x rule class (probes: class
                                             `probes`), mismatching outputs of the run's model and of gemmlab's
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
import argparse
import csv
import hashlib
import json
import lzma
import os
import re
import shutil
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
# The committed probe results (the default DEST): results/probes/ of this repository.
PROBES = os.path.join(os.path.dirname(os.path.dirname(os.path.dirname(HERE))), "results", "probes")
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


def write_csv(path, header, table):
    with open(path, "w", newline="") as f:
        w = csv.writer(f, lineterminator="\n")
        w.writerow(header)
        w.writerows(table)


def write_meta(csv_path, meta):
    with open(csv_path[:-4] + ".meta.json", "w") as f:
        json.dump(meta, f, indent=2)
        f.write("\n")


SUMMED = ("tiles", "outputs", "mismatching_outputs", "mismatching_bits")


def merge_validation(parts, dst_csv):
    """Sums the validation CSVs of several calls (tiles [F, F + N) each) into one table per
    instruction x distribution x C range; refuses parts that overlap, leave a gap or differ in seed
    or model. Returns the merged `all` rows."""
    tables = [(path, rows(path)) for path in parts]
    ranges = {}
    for path, table in tables:
        for r in table:
            if r["distribution"] == "all":
                ranges.setdefault(r["instruction"], []).append((int(r["first_tile"]), int(r["tiles"]), r["seed"], r["model"], path))
    for ins, rs in ranges.items():
        rs.sort()
        for (f0, n0, s0, m0, p0), (f1, n1, s1, m1, p1) in zip(rs, rs[1:]):
            if f1 != f0 + n0:
                sys.exit(f"{ins}: tiles [{f0}, {f0 + n0}) of {p0} and [{f1}, {f1 + n1}) of {p1} are not contiguous; "
                         "give calls whose --first-tile continue each other")
            if (s1, m1) != (s0, m0):
                sys.exit(f"{ins}: {p0} and {p1} differ in seed or model; they validate different things")
    merged, order = {}, []
    for path, table in tables:
        for r in table:
            key = (r["instruction"], r["distribution"], r["c_range"])
            if key not in merged:
                merged[key] = dict(r)
                order.append(key)
                continue
            m = merged[key]
            for c in SUMMED:
                m[c] = str(int(m[c]) + int(r[c]))
            m["first_tile"] = str(min(int(m["first_tile"]), int(r["first_tile"])))
            if r["status"] != m["status"]:
                m["status"] = f"{m['status']}+{r['status']}"
            if not m["first_mismatch"]:
                m["first_mismatch"] = r["first_mismatch"]
    header = list(tables[0][1][0].keys())
    write_csv(dst_csv, header, [[merged[k][c] for c in header] for k in order])
    metas = []
    for path, _ in tables:
        meta_path = path[:-4] + ".meta.json"
        metas.append(json.load(open(meta_path)) if os.path.exists(meta_path) else {})
    meta = dict(metas[0])
    meta["committed_as"] = os.path.basename(dst_csv)
    meta["rows"] = len(order)
    meta["merged_from"] = [
        {"call": i + 1, "command_line": m.get("command_line"), "date_utc": m.get("date_utc"),
         "git_commit": m.get("git_commit"),
         "seed_and_tiles": sorted({f"seed {s0}, tiles [{f0}, {f0 + n0})" for rs in ranges.values()
                                   for f0, n0, s0, _, p in rs if p == path})}
        for i, (m, (path, _)) in enumerate(zip(metas, tables))]
    meta["merge"] = ("scripts/lab/probes/tc_corpus_postprocess.py: tiles, outputs, mismatching_outputs and mismatching_bits "
                     "summed over the calls; first_tile is the first call's")
    write_meta(dst_csv, meta)
    return [merged[k] for k in order if k[1] == "all"]


def replay(gemmlab, out_dir, gpu_name, dst_csv, run="tc_corpus"):
    """Every hardware outcome of the run (probes and corpus) through `gemmlab tc-eval`: the cases
    rebuilt by tc-eval --write-cases, the hardware's D as the observed d. Returns the table rows."""
    table, models, commit = [], {}, None
    with tempfile.TemporaryDirectory() as tmp:
        for kind, outcomes_csv, id_col in (("probes", f"{run}_outcomes.csv", "probe"),
                                           ("corpus", f"{run}_corpus_outcomes.csv", "case")):
            by_ins = {}
            for r in rows(os.path.join(out_dir, outcomes_csv)):
                by_ins.setdefault(r["instruction"], {})[r[id_col]] = r
            for ins, outcomes in by_ins.items():
                cases, evaluated = os.path.join(tmp, "cases.csv"), os.path.join(tmp, "evaluated.csv")
                subprocess.run([gemmlab, "tc-eval", "--write-cases", kind, "-i", ins, "-o", cases], check=True,
                               stderr=subprocess.DEVNULL)
                built = rows(cases)
                id_of = "case" if "case" in built[0] else "probe"
                if {c[id_of] for c in built} != set(outcomes):
                    sys.exit(f"{ins}: the {kind} built by {gemmlab} are not the ones the hardware answered")
                with open(cases, newline="") as f:
                    header = next(csv.reader(f))
                write_csv(cases, header + ["d"], [[c[h] for h in header] + [outcomes[c[id_of]]["output_bits"]] for c in built])
                rc = subprocess.run([gemmlab, "tc-eval", "--in", cases, "-o", evaluated], stderr=subprocess.DEVNULL).returncode
                if rc not in (0, 5):
                    sys.exit(f"{gemmlab} tc-eval failed on the {kind} of {ins} (exit {rc})")
                meta = json.load(open(evaluated[:-4] + ".meta.json"))
                models[ins], commit = meta["instruction_models"][ins], meta.get("git_commit")
                counts = {}
                for e in rows(evaluated):
                    cls = e.get("class") if kind == "corpus" else "probes"
                    o = outcomes[e[id_of]]
                    n = counts.setdefault(cls, [0, 0, 0, ""])
                    n[0] += 1
                    n[1] += o["model_matches"] != "1"
                    if e["match"] != "1":
                        n[2] += 1
                        n[3] = n[3] or f"{e[id_of]}: hardware {o['output_bits']}, gemmlab {e['d_model']}"
                for cls, (cases_n, run_model, committed, first) in counts.items():
                    table.append([ins, gpu_name, cls, cases_n, run_model, committed, first])
    write_csv(dst_csv, ["instruction", "gpu", "class", "cases", "mismatching_outputs_run_model", "mismatching_outputs",
                        "first_mismatch"], table)
    write_meta(dst_csv, {
        "produced_by": "scripts/lab/probes/tc_corpus_postprocess.py --gemmlab BIN (tc-eval --write-cases, then tc-eval --in)",
        "what": "every hardware outcome of the tc-corpus run (probes: class `probes`; corpus: its rule classes) against "
                "the model the run inferred on the GPU (mismatching_outputs_run_model, from the run's outcomes CSVs) and "
                "against gemmlab's committed model, tc::measured_hopper_params, replayed here through tc-eval "
                "(mismatching_outputs)",
        "gemmlab_git_commit": commit,
        "source": [f"{run}_outcomes.csv", f"{run}_corpus_outcomes.csv"],
        "models": models,
        "rows": len(table),
        "columns": ["instruction", "gpu", "class", "cases", "mismatching_outputs_run_model", "mismatching_outputs",
                    "first_mismatch"],
    })
    return table


def main(out_dir, gpu, date, dest, more_tiles=(), gemmlab=None, run="tc_corpus", also=()):
    stem = os.path.join(dest, f"{gpu}_{run}_{date}")
    need = [f"{run}.csv", f"{run}_corpus.csv", f"{run}_outcomes.csv", f"{run}_corpus_outcomes.csv"]
    missing = [n for n in need if not os.path.exists(os.path.join(out_dir, n))]
    if missing:
        sys.exit(f"{out_dir}: missing {', '.join(missing)}; run scripts/lab/gpu_session.sh BIN_DIR OUT_DIR tc-corpus (or, for --run tc_f64, scripts/lab/gpu_tc_f64.sh BIN_DIR OUT_DIR) first")
    src = lambda n: os.path.join(out_dir, n)
    copy_with_meta(src(f"{run}.csv"), stem + ".csv")
    copy_with_meta(src(f"{run}_corpus.csv"), stem + "_corpus.csv")
    parts = [os.path.join(d, f"{run}_validation.csv") for d in (out_dir, *more_tiles)]
    parts = [p for p in parts if os.path.exists(p)]
    valid_all = merge_validation(parts, stem + "_validation.csv") if parts else []
    if os.path.exists(src(f"{run}.log")):
        shutil.copyfile(src(f"{run}.log"), stem + ".log")
        with open(stem + ".log", "a") as log:  # the other calls' validation lines (their probe stage is the same)
            for d in more_tiles:
                log.write(f"\n# --- {os.path.basename(os.path.normpath(d))}: the next random tiles ---\n")
                with open(os.path.join(d, f"{run}.log")) as f:
                    log.writelines(line for line in f if line.startswith("validate") or "validation table" in line)
    with open(src(f"{run}_outcomes.csv"), "rb") as f, lzma.open(stem + "_outcomes.csv.xz", "wb", preset=9) as g:
        shutil.copyfileobj(f, g)
    if os.path.exists(src(f"{run}_outcomes.meta.json")):
        with open(src(f"{run}_outcomes.meta.json")) as f:
            m = json.load(f)
        m["committed_as"] = os.path.basename(stem + "_outcomes.csv.xz") + " (xz-compressed)"
        write_meta(stem + "_outcomes.csv", m)
    compact = os.path.join(HERE, "compact_outcomes.py")
    subprocess.run([sys.executable, compact, src(f"{run}_outcomes.csv"), stem + "_outputs.csv"], check=True)
    subprocess.run([sys.executable, compact, src(f"{run}_corpus_outcomes.csv"), stem + "_corpus_outputs.csv"],
                   check=True)
    run_meta = json.load(open(src(f"{run}.meta.json"))) if os.path.exists(src(f"{run}.meta.json")) else {}
    for suffix, raw in (("_outputs.csv", f"{run}_outcomes.csv"), ("_corpus_outputs.csv", f"{run}_corpus_outcomes.csv")):
        write_meta(stem + suffix, {
            "produced_by": f"scripts/lab/probes/compact_outcomes.py {raw} {os.path.basename(stem + suffix)}",
            "what": "the hardware's D bits per instruction in the order gemmlab builds the cases (tc::make_probes / "
                    "tc::make_corpus), with the sha256 of the case ids; replayed by tests/cpu/test_tc_eval.cpp",
            "columns": ["instruction", "probes", "probe_ids_sha256", "output_bits"],
            "source_sha256": hashlib.sha256(open(src(raw), "rb").read()).hexdigest(),
            "run": {k: run_meta.get(k) for k in ("command_line", "date_utc", "git_commit", "gpu", "software")},
        })

    findings = rows(src(f"{run}.csv"))
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
    corpus = rows(src(f"{run}_corpus.csv"))
    classes = list(dict.fromkeys(r["class"] for r in corpus))
    print("| instruction | " + " | ".join(classes) + " |")
    print("|---|" + "---|" * len(classes))
    table = {}
    for r in corpus:
        table.setdefault(r["instruction"], {})[r["class"]] = f"{r['mismatching_outputs']} / {r['cases']}"
    for ins, v in table.items():
        print(f"| {ins} | " + " | ".join(v.get(c, "n/a") for c in classes) + " |")

    if valid_all:
        print("\n## Random tiles\n")
        print("| instruction | first tile | tiles | outputs | mismatching |")
        print("|---|---|---|---|---|")
        for r in valid_all:
            print(f"| {r['instruction']} | {r['first_tile']} | {r['tiles']} | {r['outputs']} | **{r['mismatching_outputs']}** |")

    if gemmlab:
        gpu_name = (corpus[0]["gpu"] if corpus else gpu.upper())
        table = replay(gemmlab, out_dir, gpu_name, stem + "_replayed.csv", run)
        print(f"\n## Every outcome replayed through {gemmlab} tc-eval (gemmlab's committed model)\n")
        print("| instruction | class | cases | mismatching (run's model) | mismatching (gemmlab) |")
        print("|---|---|---|---|---|")
        for ins, _, cls, n, run_model, committed, first in table:
            if run_model or committed:
                print(f"| {ins} | {cls} | {n} | {run_model} | **{committed}** |")
        print(f"| all | | {sum(t[3] for t in table)} | {sum(t[4] for t in table)} | **{sum(t[5] for t in table)}** |")

    fill_hardware_columns(dest, gpu, date, findings, rows(src(f"{run}_corpus_outcomes.csv")))

    for name in also:  # further CSVs of the run (e.g. predict_f64.csv), committed with their metadata
        if not os.path.exists(src(name)):
            sys.exit(f"{out_dir}: no {name} (named by --also)")
        copy_with_meta(src(name), os.path.join(dest, f"{gpu}_{name[:-4]}_{date}.csv"))
        print(f"committed {name} as {gpu}_{name[:-4]}_{date}.csv")


# The corpus class each disagreement of mmasim_disagreements.csv belongs to -> the rule of
# mmasim_crosscheck.csv that decides it.
RULE_OF_CLASS = {"exact_cancellation": "zero_sign", "c_alone": "zero_operand_alignment",
                 "zero_operands": "zero_operand_alignment", "overflow_before_alignment": "overflow",
                 "overflow_after_alignment": "overflow", "exponent_gap": "overflow",
                 "tf32_low_bits": "tf32_nan_low_bits", "subnormal": "zero_c_alignment",
                 "zero_c_alignment": "zero_c_alignment"}


def hardware_values(findings, corpus_outcomes, cross):
    """What the run's outcomes say of each cross-check rule, per instruction, in the words of
    mmasim_crosscheck.csv's gemmlab / mmasim columns (None: no input of the run tells)."""
    by_rule = {r["rule"]: r for r in cross}
    values = {}
    for r in findings:
        o, ins = r["observed"], r["instruction"]
        if o.startswith("ambiguous"):
            continue
        if r["feature"] == "zero_c_alignment":
            values[("zero_c_alignment", ins)] = "emin_out-7" if "emin_out - 7" in o else "absent"
        elif r["feature"] in ("zero_operand_alignment", "overflow", "zero_sign"):
            values[(r["feature"], ins)] = o.split(" ")[0]
    # tf32 NaN whose payload lies in the low 13 bits (corpus tf32_low_bits, case i % 50 == 7):
    # what the hardware wrote where the run's model read a NaN
    if "tf32_nan_low_bits" in by_rule:
        rule = by_rule["tf32_nan_low_bits"]
        for o in corpus_outcomes:
            if o["class"] == "tf32_low_bits" and o["model_bits"] == "0x7fffffff":
                infinite = o["output_bits"] in ("0x7f800000", "0xff800000")
                values[("tf32_nan_low_bits", o["instruction"])] = rule["mmasim"] if infinite else rule["gemmlab"]
    return values


def verdict(rule, value):
    return "gemmlab" if value == rule["gemmlab"] else "MMA-Sim" if value == rule["mmasim"] else f"neither ({value})"


TAGGED = re.compile(r"\((H\d00 \d{8})(, H\d00 \d{8})*\)$")


def add_tag(cell, text, tag):
    """`text (tag)`, or the cell with tag added when this GPU's text is already there."""
    if cell.startswith(text + " (") and "to settle" not in cell:
        return cell if tag in cell else cell[:-1] + ", " + tag + ")"
    return f"{text} ({tag})"


def fill_hardware_columns(dest, gpu, date, findings, corpus_outcomes):
    """The hardware column of mmasim_crosscheck.csv (per rule) and mmasim_disagreements.csv (per
    instruction x class), from the rules the run inferred; a second GPU's run adds its tag."""
    cross_csv = os.path.join(dest, "mmasim_crosscheck.csv")
    if not os.path.exists(cross_csv):
        return
    cross = rows(cross_csv)
    values = hardware_values(findings, corpus_outcomes, cross)
    tag = f"{gpu.upper()} {date}"
    for r in cross:
        found = {ins: values.get((r["rule"], ins)) for ins in r["instructions"].split()}
        told = {ins: verdict(r, v) for ins, v in found.items() if v is not None}
        if not told:
            continue
        text = " / ".join(sorted(set(told.values())))
        silent = sorted(ins for ins, v in found.items() if v is None)
        if silent:
            text += f"; no input tells for {' '.join(silent)}"
        r["hardware"] = add_tag(r["hardware"], text, tag)
    write_csv(cross_csv, list(cross[0].keys()), [list(r.values()) for r in cross])
    print(f"\nfilled the hardware column of {cross_csv}")
    dis_csv = os.path.join(dest, "mmasim_disagreements.csv")
    if not os.path.exists(dis_csv):
        return
    by_rule = {r["rule"]: r for r in cross}
    dis = rows(dis_csv)
    ran = {o["instruction"] for o in corpus_outcomes}
    for r in dis:
        if r["instruction"] not in ran:  # another run's instruction (e.g. --run tc_f64 has only the f64 ones)
            continue
        rule = by_rule.get(RULE_OF_CLASS.get(r["class"], ""))
        # rows still open, or filled by an earlier run of this script; mmasim_crosscheck.py's own
        # counts on the probes ("H100: gemmlab 44, MMA-Sim 0") stay
        if rule is None or not (r["hardware"].startswith("to settle") or TAGGED.search(r["hardware"])):
            continue
        v = values.get((rule["rule"], r["instruction"]))
        text = verdict(rule, v) if v is not None else "no input of the run tells"
        r["hardware"] = add_tag(r["hardware"], text, tag)
    write_csv(dis_csv, list(dis[0].keys()), [list(r.values()) for r in dis])
    print(f"filled the hardware column of {dis_csv}")


if __name__ == "__main__":
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("out_dir")
    ap.add_argument("gpu")
    ap.add_argument("date")
    ap.add_argument("dest", nargs="?", default=PROBES)
    ap.add_argument("--more-tiles", nargs="*", default=[], metavar="DIR")
    ap.add_argument("--gemmlab", metavar="BIN")
    ap.add_argument("--run", default="tc_corpus",
                    help="the stem of the run's CSVs in OUT_DIR (tc_corpus; tc_f64 for scripts/lab/gpu_tc_f64.sh); "
                         "the committed files are <GPU>_<RUN>_<DATE>*")
    ap.add_argument("--also", nargs="*", default=[], metavar="CSV",
                    help="further CSVs of OUT_DIR to commit with their .meta.json as <GPU>_<NAME>_<DATE>.csv")
    a = ap.parse_args()
    main(a.out_dir, a.gpu, a.date, a.dest, a.more_tiles, a.gemmlab, a.run, a.also)
