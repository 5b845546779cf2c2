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


def test_a_dry_run_loads(root):
    # tests/data/dry_run.csv: `gemmlab run --dry-run -k sgemm_01_naive,cublas_gemmex_fp16_f32 -d uniform_0_1,normal_0_1
    # -s 64 --seeds 1`: every row `planned`, the eighth status, with no statistics.
    df = gemmlab.load_results(root / "tests/data/dry_run.csv")
    assert len(df) == 4 and (df["status"] == "planned").all()
    assert "planned" in gemmlab.STATUSES and "timeout" in gemmlab.STATUSES and len(gemmlab.STATUSES) == 10
    assert df["rel_mean"].isna().all() and df["entries"].isna().all()


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
    # Files that are no CSV of a run, each named with what it is (pandas' own errors for the empty and the
    # binary file before, without the file's name).
    cases = [("other.csv", "a,b\n1,2\n", "not a gemmlab result CSV"),
             ("odd.csv", "kernel,status\nk,exploded\n", "unknown status"),
             ("empty.csv", "", "empty.csv is empty: not a gemmlab result CSV"),
             ("A.npy", b"\x93NUMPY\x01\x00" + bytes(range(128, 256)),
              "A.npy is not a gemmlab result CSV \\(it does not read as CSV text"),
             ("port.csv", "kernel,origin,from,gpu,distribution,status\nk,x,hopper,ampere,uniform_0_1,ported\n",
              "it is another command's table, such as port's")]
    for name, content, message in cases:
        f = tmp_path / name
        f.write_bytes(content) if isinstance(content, bytes) else f.write_text(content)
        with pytest.raises(ValueError, match=message):
            gemmlab.load_results(f)
    with pytest.raises(ValueError, match="is a folder: give it alone"):
        gemmlab.load_results([tmp_path])


# Columns added since the default run of 2026-11-21: the underflow-aware verdict's three (issue 13),
# the measures of other tools after them, and the timing noise after time_ms_max; scaled fp8's recipe
# after reference and its total error after the statistics (issue 22); split operands' pieces and
# products after promotion_interval_k (issue 20); an explained record's summation_tree after them (issue 37);
# fixed-point operands' bits after it, and their bound term and the bound ratio after assert_close_mismatches
# (issue 33); a form's columns (issue 34); the quantization error after the total error (issue 43); the
# median's confidence interval after the timing noise and what stopped the repetitions after reps (issue 42).
ADDED = ("split_pieces", "split_products", "summation_tree", "fixed_point_bits", "subnormal_reference",
         "underflow_bound", "bound_violations", "calc_diff", "snr_db", "max_abs_err", "assert_close",
         "assert_close_mismatches", "fixed_point_bound", "bound_ratio", "time_ms_iqr", "recipe", "total_rel_mean",
         "total_rel_std", "total_rel_max_abs", "total_normwise", "total_componentwise", "total_calc_diff",
         "quant_rel_mean", "quant_rel_std", "quant_rel_max_abs", "quant_normwise", "quant_componentwise", "form",
         "c0_format", "bias_format", "epilogue_format", "c0_placement", "bias_placement", "amax", "amax_exact",
         "time_ms_ci95_rel", "stopped_by")


def test_columns_are_those_of_the_newest_default_run(root):
    # gemmlab.COLUMNS is the C++ list (experiments/report/result.hpp result_columns), bound.
    with open(root / "results/default/default_h200_20261121.csv") as f:
        old = tuple(f.readline().strip().split(","))
    assert old == tuple(c for c in gemmlab.COLUMNS if c not in ADDED)
    cols = list(gemmlab.COLUMNS)
    at = cols.index("bound_violations")
    assert cols[at - 2:at + 6] == ["subnormal_reference", "underflow_bound", "bound_violations", "calc_diff",
                                   "snr_db", "max_abs_err", "assert_close", "assert_close_mismatches"]
    at = cols.index("time_ms_median")
    assert cols[at:at + 7] == ["time_ms_median", "time_ms_min", "time_ms_max", "time_ms_iqr", "time_ms_ci95_rel",
                               "reps", "stopped_by"]


def test_the_timing_columns_are_columns_and_only_those_the_timing_writes():
    # gemmlab.TIMING_COLUMNS: what two runs of the same kernel on the same inputs may differ in. Each is a
    # column; the statistics, the status and the note are not among them.
    assert set(gemmlab.TIMING_COLUMNS) <= set(gemmlab.COLUMNS)
    assert not {"status", "note", "rel_mean", "rel_std", "kernel", "M"} & set(gemmlab.TIMING_COLUMNS)
    cols = list(gemmlab.COLUMNS)
    at = cols.index("time_ms_median")
    assert set(cols[at:at + 7]) <= set(gemmlab.TIMING_COLUMNS)


def test_an_older_csv_gets_the_columns_it_lacks_empty(root):
    df = gemmlab.load_results(root / "results/default/default_h200_20261121.csv")
    assert list(df.columns) == list(gemmlab.COLUMNS)
    for c in ("calc_diff", "snr_db", "max_abs_err", "time_ms_iqr", "underflow_bound", "fixed_point_bound",
              "bound_ratio"):
        assert df[c].dtype == "float64" and df[c].isna().all(), c
    for c in ("assert_close", "assert_close_mismatches", "bound_violations", "fixed_point_bits"):
        assert df[c].dtype == "Int64" and df[c].isna().all(), c
    # Columns it has keep their values.
    assert df.loc[df.status == "passed", "tflops"].notna().all()


def test_infinite_snr_reads_back(tmp_path):
    cols = list(gemmlab.COLUMNS)
    row = dict.fromkeys(cols, "")
    row.update(kernel="k", status="passed", snr_db="inf", calc_diff="0", assert_close="1", M="8", seed="1")
    p = tmp_path / "r.csv"
    p.write_text(",".join(cols) + "\n" + ",".join(row[c] for c in cols) + "\n")
    df = gemmlab.load_results(p)
    assert df["snr_db"][0] == math.inf and df["calc_diff"][0] == 0.0 and df["assert_close"][0] == 1
    assert gemmlab.results.row_from_fields([row[c] for c in cols])["snr_db"] == math.inf


def test_a_summary_tables_metadata_names_every_sources_run(tmp_path):
    import json

    from gemmlab.results import write_summary_meta

    (tmp_path / "a.csv").write_text("kernel\nx\n")
    (tmp_path / "a.meta.json").write_text(json.dumps({"command_line": "gemmlab run -k x", "date_utc": "2026-11-29T10:00:00Z",
                                                      "gpu": {"name": "NVIDIA H200"}, "gemmlab_version": "0.1.0",
                                                      "git_commit": "abc"}))
    (tmp_path / "b.csv").write_text("kernel\ny\n")  # no metadata beside it
    (tmp_path / "c.csv").write_text("kernel\nz\n")
    (tmp_path / "c.meta.json").write_text("{ cut short")
    table = tmp_path / "table.csv"
    table.write_text("kernel\nx\ny\n")
    out = write_summary_meta(table, [tmp_path / "a.csv", tmp_path / "b.csv", tmp_path / "refused.csv", tmp_path / "c.csv"],
                             "make_table --out T")
    assert out == tmp_path / "table.meta.json"
    doc = json.loads(out.read_text())
    assert doc["csv"] == "table.csv" and doc["produced_by"] == "make_table --out T" and doc["kind"] == "summary table"
    a, b, refused, c = doc["sources"]
    assert a["csv"] == "a.csv" and a["runs"] == [{"meta": "a.meta.json", "command_line": "gemmlab run -k x",
                                                  "date_utc": "2026-11-29T10:00:00Z", "gpu": "NVIDIA H200",
                                                  "gemmlab_version": "0.1.0", "git_commit": "abc"}]
    assert b == {"csv": "b.csv", "meta": "none beside it"}
    assert refused["meta"].startswith("no such CSV")
    assert c["runs"][0]["meta"] == "c.meta.json" and c["runs"][0]["unreadable"]  # said, not raised
    assert not list(tmp_path.glob("*.tmp"))
    with pytest.raises(FileNotFoundError, match="write the table first"):
        write_summary_meta(tmp_path / "nope.csv", [tmp_path / "a.csv"], "make_table")
    assert not (tmp_path / "nope.meta.json").exists()
