"""Reading gemmlab result CSVs (and their .meta.json) into pandas with the right dtypes.

One row per kernel x distribution x size x seed (results/README.md documents every column). The
column list is the one ``gemmlab run`` writes, bound from C++ (experiments/report/result.hpp);
older CSVs with fewer columns load too (the columns they lack come back empty: NaN or <NA>; a CSV
written before forms has every row's ``form`` "plain"), and columns this version does not know keep
pandas' guess.
"""

from __future__ import annotations

import json
import os
from collections.abc import Iterable
from pathlib import Path
from typing import Any

import pandas as pd

from . import _core

#: The CSV columns of ``gemmlab run`` and ``gemmlab evaluate``, in order: the C++ list
#: (experiments/report/result.hpp ``result_columns``), so Python cannot drift from the CLI.
COLUMNS: tuple[str, ...] = tuple(_core.result_columns())

#: Every value ``status`` takes (experiments/report/result.hpp ``Status``).
STATUSES: tuple[str, ...] = tuple(_core.statuses())

#: The columns that say how a row was timed, not what its kernel computed: two runs of the same kernel on the
#: same inputs differ in these alone (the C++ report layer's ``timing_columns``, which ``gemmlab compare`` compares
#: through the medians' ratio and noise).
TIMING_COLUMNS: tuple[str, ...] = tuple(_core.timing_columns())

_TEXT = {"kernel", "family", "input_format", "compute_format", "accumulator_format", "output_format",
         "accumulation", "split_products", "summation_tree", "layout_a", "layout_b", "distribution", "reference", "recipe",
         "note", "form", "c0_format", "bias_format", "epilogue_format", "c0_placement", "bias_placement",
         "stopped_by"}
# Counts: nullable, because rows that did not run (not_applicable, not_supported) leave them empty.
_INT = {"promotion_interval_k", "split_pieces", "fixed_point_bits", "M", "N", "K", "reps", "sm_clock_mhz", *_core.integer_stats_columns()}


def dtypes() -> dict[str, Any]:
    """The pandas dtype of every known column."""
    out: dict[str, Any] = {}
    for c in COLUMNS:
        if c in _TEXT:
            out[c] = "string"
        elif c in _INT:
            out[c] = "Int64"
        elif c == "seed":
            out[c] = "UInt64"  # a 64-bit seed may not fit int64
        elif c == "status":
            out[c] = pd.CategoricalDtype(list(STATUSES))
        else:
            out[c] = "float64"
    return out


def _meta_files(csv: Path) -> list[Path]:
    # RUN.csv -> RUN.meta.json; a run split over calls has RUN.a.meta.json, RUN.b.meta.json, ...
    stem = csv.with_suffix("")
    exact = stem.with_name(stem.name + ".meta.json")
    if exact.exists():
        return [exact]
    return sorted(csv.parent.glob(stem.name + ".*.meta.json"))


def load_results(path: str | os.PathLike | Iterable[str | os.PathLike]) -> pd.DataFrame:
    """Result CSV(s) as one DataFrame with typed columns.

    ``path``: a CSV file, a folder (every ``*.csv`` in it) or a list of files. Text columns are
    pandas ``string``, counts nullable ``Int64``, ``seed`` ``UInt64``, ``status`` a categorical of
    ``STATUSES``, statistics and timings ``float64`` (empty cells: NaN or <NA>). Every column of
    ``COLUMNS`` is there, in that order, then any column this version does not know: a column the
    file lacks (an older gemmlab wrote it) is empty, i.e. not measured. With several files a
    ``source`` column names each row's file. The metadata (``RUN.meta.json``, or ``RUN.*.meta.json``
    for a run split over several calls) is in ``df.attrs["meta"]``: a dict from file name to its
    parsed JSON. Raises FileNotFoundError, or ValueError for a file that is not a gemmlab CSV or a
    status this version does not know.
    """
    if isinstance(path, (str, os.PathLike)):
        p = Path(path)
        if p.is_dir():
            files = sorted(p.glob("*.csv"))
            if not files:
                raise FileNotFoundError(f"no .csv files in folder {p}")
        else:
            files = [p]
    else:
        files = [Path(x) for x in path]
        if not files:
            raise ValueError("load_results: no files given")
    known = dtypes()
    frames, meta = [], {}
    for f in files:
        if not f.exists():
            raise FileNotFoundError(f"result CSV {f} does not exist")
        if f.is_dir():
            raise ValueError(f"{f} is a folder: give it alone (every *.csv in it is read), not in a list of files")
        try:
            header = pd.read_csv(f, nrows=0).columns
        except pd.errors.EmptyDataError:
            raise ValueError(f"{f} is empty: not a gemmlab result CSV (a run that stopped before its first row "
                             "writes none; run it again)") from None
        except (UnicodeDecodeError, pd.errors.ParserError) as e:
            raise ValueError(f"{f} is not a gemmlab result CSV (it does not read as CSV text: "
                             f"{type(e).__name__}); give the CSV a gemmlab run, judge or evaluate wrote") from None
        missing = [c for c in ("kernel", "status") if c not in header]
        if missing:
            raise ValueError(f"{f} is not a gemmlab result CSV: it has no {', '.join(missing)} column")
        types = {c: t for c, t in known.items() if c in header and c != "status"}
        df = pd.read_csv(f, dtype=types, keep_default_na=False, na_values={c: ["", "nan", "NaN", "-nan"] for c in header if c not in _TEXT})
        unknown = sorted(set(df["status"]) - set(STATUSES))
        if unknown:
            present = len(set(COLUMNS) & set(header))
            other = (f" ({f.name} has {present} of the {len(COLUMNS)} columns of a result CSV: it is another command's "
                     "table, such as port's or explain's, not one load_results reads)") if 2 * present < len(COLUMNS) else ""
            raise ValueError(f"{f}: unknown status {unknown}; known: {', '.join(STATUSES)}{other}")
        df["status"] = df["status"].astype(known["status"])
        df = _with_every_column(df, known)
        if len(files) > 1:
            df["source"] = pd.Series(f.name, index=df.index, dtype="string")
        frames.append(df)
        for m in _meta_files(f):
            with open(m) as fh:
                meta[m.name] = json.load(fh)
    out = pd.concat(frames, ignore_index=True) if len(frames) > 1 else frames[0]
    out.attrs["meta"] = meta
    return out


def _with_every_column(df: pd.DataFrame, known: dict[str, Any]) -> pd.DataFrame:
    # The columns of COLUMNS an older CSV lacks, added empty with their dtype, in COLUMNS order.
    extra = [c for c in df.columns if c not in known]
    out = df.reindex(columns=[*COLUMNS, *extra])
    for c in COLUMNS:
        if c not in df.columns:
            out[c] = pd.Series(pd.NA if known[c] != "float64" else float("nan"), index=out.index, dtype=known[c])
    if "form" in known and "form" not in df.columns:  # written before forms: every row was C = A B
        out["form"] = pd.Series("plain", index=out.index, dtype=known["form"])
    return out


def to_frame(rows: Iterable[dict]) -> pd.DataFrame:
    """Rows from ``evaluate`` as a DataFrame with the same columns and dtypes as ``load_results``,
    so the two concatenate (``pd.concat([load_results(csv), to_frame(rows)])``)."""
    df = pd.DataFrame(list(rows), columns=list(COLUMNS))
    for c, t in dtypes().items():
        if c == "status":
            df[c] = df[c].astype(t)
        elif t == "string":
            df[c] = df[c].fillna("").astype("string")
        else:
            df[c] = pd.array(df[c].tolist(), dtype=t) if t in ("Int64", "UInt64") else df[c].astype(t)
    return df


def row_from_fields(fields: Iterable[str]) -> dict[str, Any]:
    """A row as the C++ report layer writes it (strings in ``COLUMNS`` order) as a dict of Python
    values: text as ``str``, counts as ``int``, statistics and timings as ``float``; an empty cell or
    ``nan`` (nothing measured) as ``None``."""
    out: dict[str, Any] = {}
    for c, v in zip(COLUMNS, fields, strict=True):
        if c in _TEXT or c == "status":
            out[c] = v
        elif v in ("", "nan", "-nan"):
            out[c] = None
        elif c in _INT or c == "seed":
            out[c] = int(v)
        else:
            out[c] = float(v)
    return out


def write_summary_meta(table_csv: str | os.PathLike, sources: Iterable[str | os.PathLike], produced_by: str,
                       note: str = "") -> Path:
    """``TABLE.meta.json`` beside a table drawn from gemmlab result CSVs (a study's summary, not a run):
    the command that made it, when, and for each source CSV what its own ``.meta.json`` says of it (its
    command, date, GPU, gemmlab version and commit), so the table says where every figure comes from
    as a run CSV does. A source without metadata is named as such. Written atomically; returns the
    path. ``produced_by``: the command line (e.g. ``"examples/judge_quantized.py --out OUT"``). Raises
    FileNotFoundError where the table itself is not written yet."""
    import time

    table = Path(table_csv)
    if not table.is_file():
        raise FileNotFoundError(f"{table}: write the table first; its .meta.json describes it (and would otherwise "
                                "describe no table)")
    entries = []
    for s in sources:
        src = Path(s)
        metas = _meta_files(src)
        entry: dict[str, Any] = {"csv": os.path.relpath(src, table.parent)}
        if not src.exists():
            entry["meta"] = "no such CSV: the case wrote none (refused before any row)"
        elif not metas:
            entry["meta"] = "none beside it"
        for m in metas:
            try:
                meta = json.loads(m.read_text())
                if not isinstance(meta, dict):
                    raise ValueError("not a JSON object")
            except (OSError, ValueError) as e:  # said in the table's metadata, never a table without any
                entry.setdefault("runs", []).append({"meta": os.path.relpath(m, table.parent), "unreadable": str(e)})
                continue
            gpu = meta.get("gpu")
            entry.setdefault("runs", []).append({
                "meta": os.path.relpath(m, table.parent), "command_line": meta.get("command_line"),
                "date_utc": meta.get("date_utc"), "gpu": gpu.get("name") if isinstance(gpu, dict) else gpu,
                "gemmlab_version": meta.get("gemmlab_version"), "git_commit": meta.get("git_commit")})
        entries.append(entry)
    out = table.with_suffix(".meta.json")
    doc = {"csv": table.name, "kind": "summary table", "produced_by": produced_by,
           "date_utc": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()), "sources": entries}
    if note:
        doc["note"] = note
    tmp = out.with_name(out.name + ".tmp")
    tmp.write_text(json.dumps(doc, indent=1) + "\n")
    os.replace(tmp, out)
    return out
