"""load_results: gemmlab CSVs into pandas with the right dtypes."""

import math

import pandas as pd
import pytest

import gemmlab


def test_sample_run(root):
    df = gemmlab.load_results(root / "tests/data/sample_run.csv")
    assert len(df) == 36
    assert df["kernel"].dtype == "string" and df["note"].dtype == "string"
    assert df["M"].dtype == "Int64" and df["seed"].dtype == "UInt64"
    assert df["rel_mean"].dtype == "float64" and df["tflops"].dtype == "float64"
    assert isinstance(df["status"].dtype, pd.CategoricalDtype)
    assert list(df["status"].cat.categories) == list(gemmlab.STATUSES)
    assert (df["note"].fillna("") == df["note"]).all()  # empty notes are "", not <NA>
    row = df[(df.kernel == "sgemm_01_naive") & (df.distribution == "uniform_0_1")].iloc[0]
    assert row["rel_mean"] == 1.4628597625690146e-09 and row["M"] == 256 and row["status"] == "passed"
    assert df.attrs["meta"] == {}


def test_default_run_with_split_metadata_and_empty_cells(root):
    df = gemmlab.load_results(root / "results/default/default_h200_20261121.csv")
    assert len(df) == 510
    assert sorted(df.attrs["meta"]) == ["default_h200_20261121.a.meta.json", "default_h200_20261121.b.meta.json"]
    na = df[df.status == "not_applicable"]
    assert len(na) == 27 and na["entries"].isna().all() and na["rel_mean"].isna().all()
    assert df.loc[df.status == "passed", "tflops"].notna().all()


def test_several_files_get_a_source_column(root):
    df = gemmlab.load_results([root / "tests/data/sample_run.csv", root / "results/audit/save.csv"])
    assert set(df["source"]) == {"sample_run.csv", "save.csv"}
    assert isinstance(df["status"].dtype, pd.CategoricalDtype)


def test_nan_and_inf_cells(tmp_path):
    cols = list(gemmlab.COLUMNS)
    row = dict.fromkeys(cols, "")
    row.update(kernel="k", status="failed_bound", gamma_bound="inf", rel_mean="nan", M="8", seed="18446744073709551615")
    p = tmp_path / "r.csv"
    p.write_text(",".join(cols) + "\n" + ",".join(row[c] for c in cols) + "\n")
    df = gemmlab.load_results(p)
    assert math.isinf(df["gamma_bound"][0]) and math.isnan(df["rel_mean"][0])
    assert df["seed"][0] == 2**64 - 1


def test_errors(tmp_path):
    with pytest.raises(FileNotFoundError):
        gemmlab.load_results(tmp_path / "missing.csv")
    with pytest.raises(FileNotFoundError, match="no .csv files"):
        gemmlab.load_results(tmp_path)
    bad = tmp_path / "other.csv"
    bad.write_text("a,b\n1,2\n")
    with pytest.raises(ValueError, match="not a gemmlab result CSV"):
        gemmlab.load_results(bad)
    odd = tmp_path / "odd.csv"
    odd.write_text("kernel,status\nk,exploded\n")
    with pytest.raises(ValueError, match="unknown status"):
        gemmlab.load_results(odd)


def test_columns_are_those_of_the_newest_default_run(root):
    # gemmlab.COLUMNS is the C++ list (experiments/report/result.hpp result_columns), bound; since
    # the default run, only the underflow-aware verdict's three columns were added (issue 13).
    with open(root / "results/default/default_h200_20261121.csv") as f:
        old = tuple(f.readline().strip().split(","))
    added = ("subnormal_reference", "underflow_bound", "bound_violations")
    assert old == tuple(c for c in gemmlab.COLUMNS if c not in added)
    assert set(added) <= set(gemmlab.COLUMNS)
