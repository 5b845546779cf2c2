"""gemmlab.tc's GPU generations and gemmlab.port, from Python (the C++ of reference/tc_gpus.hpp and
experiments/engine/port.hpp): no GPU needed."""
from pathlib import Path

import numpy as np
import pytest

import gemmlab
from gemmlab import tc

ROOT = Path(__file__).resolve().parents[2]
EXPLAINED = ROOT / "results/explain/h100_20261127_issue37/last_round/frameworks/triton_fp16_f32_4096x4096x4096.meta.json"


def test_generations_and_their_models():
    assert tc.generation("l4") == "ada" and tc.generation("sm_80") == "ampere" and tc.generation("B200") == "blackwell"
    assert {g["name"] for g in tc.gpus()} == {"v100", "a100", "a30", "a2", "ada", "l4", "l40s", "h100", "h200", "b200"}
    assert tc.instructions("volta") == ["wmma_m16n16k16_f16_f32", "wmma_m16n16k16_f16_f16", "mma_m8n8k4_f16_f32",
                                        "mma_m8n8k4_f16_f16"]
    assert not any(i.startswith("wgmma") for i in tc.instructions("ampere"))
    a100 = tc.model("mma_m16n8k16_f16_f32", "a100")
    assert (a100.block_size, a100.neab) == (8, 1)  # blocks of 8 at 24 fraction bits
    hopper = tc.model("mma_m16n8k16_f16_f32")
    assert (hopper.block_size, hopper.neab) == (16, 2)
    assert tc.published_params("mma_m16n8k16_f16_f32").block_size == hopper.block_size
    assert tc.provenance("mma_m16n8k16_f16_f32", "a100")[0] == "fitted"
    assert tc.provenance("mma_m16n8k16_f16_f32", "h100")[0] == "probed"
    assert tc.provenance("tcgen05_m128n8k32_e4m3_f32", "b200")[0] == "literature"
    with pytest.raises(ValueError, match="closest instruction it has is mma_m16n8k16_f16_f32"):
        tc.model("wgmma_m64n8k16_f16_f32", "a100")
    with pytest.raises(ValueError, match="not a GPU gemmlab models"):
        tc.model("mma_m16n8k16_f16_f32", "rtx9090")


def test_the_same_dot_on_two_generations():
    # 1 + 8 products of 2^-25: Hopper's 25 fraction bits keep them (1 + 2^-22), Ampere's 24 lose each.
    a = [1.0] + [2.0**-12] * 8 + [0.0] * 7
    b = [1.0] + [2.0**-13] * 8 + [0.0] * 7
    assert tc.dot(tc.model("mma_m16n8k16_f16_f32"), a, b) == 1 + 2.0**-22
    assert tc.dot(tc.model("mma_m16n8k16_f16_f32", "a100"), a, b) == 1.0
    A = np.array([a] * 16)
    B = np.array([b] * 8).T.copy()
    C = tc.emulate(tc.Order.of("in_mma", "mma_m16n8k16_f16_f32"), A, B, gpu="a100")
    assert C[0, 0] == 1.0


def test_port_of_a_builtin_record():
    rows = gemmlab.port("hgemm_mma_01_naive_in_mma", gpus=["a100", "b200"], size=256, entries=64,
                        distributions=["uniform_0_1"])
    assert list(rows.columns) == list(gemmlab._core.port_columns())
    a100 = rows[rows.gpu == "ampere"].iloc[0]
    b200 = rows[rows.gpu == "blackwell"].iloc[0]
    assert a100.status == "ported" and a100.changed > 0 and a100.bias_u < a100.bias_u_from < 0
    assert b200.status == "same_model" and b200.changed == 0
    with pytest.raises(ValueError, match="neither a built-in kernel"):
        gemmlab.port("no_such_kernel")
    with pytest.raises(ValueError, match="not a GPU gemmlab models"):
        gemmlab.port("hgemm_mma_01_naive_in_mma", gpus=["rtx9090"], size=64, entries=4)


def test_port_of_what_explain_wrote(tmp_path):
    out = tmp_path / "new" / "port.csv"
    rows = gemmlab.port(EXPLAINED, gpus=["l4"], size=(32, 32, 4096), entries=16, distributions=["uniform_0_1"],
                        out=out)
    assert rows.iloc[0].kernel == "triton_fp16_f32" and rows.iloc[0].gpu == "ada"
    assert rows.iloc[0].measured_bias_u == pytest.approx(-393.93, abs=0.01)
    assert out.exists()
    assert (tmp_path / "new" / "port.meta.json").exists()
