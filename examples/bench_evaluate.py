"""gemmlab.evaluate on the CPU (numpy arrays, the file round trip's path) against the GPU (torch
tensors already on the GPU), on the same inputs and C, in one run; the two rows must be equal.

    python examples/bench_evaluate.py --out results/judge/evaluate_cpu_vs_gpu_h100.csv [--size 4096]

Writes one row per path (seconds, speed-up, whether every statistics column is equal) plus .meta.json.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time
from pathlib import Path

import numpy as np
import torch

import gemmlab


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--out", required=True)
    ap.add_argument("--size", type=int, default=4096)
    ap.add_argument("--distribution", default="uniform_0_1")
    ap.add_argument("--seed", type=int, default=20261121)
    a = ap.parse_args()
    n = a.size
    A, B = gemmlab.generate_problem(a.distribution, n, n, n, "fp16", a.seed)
    At = torch.from_numpy(A.astype(np.float16)).cuda()
    Bt = torch.from_numpy(B.astype(np.float16)).cuda()
    Ct = torch.matmul(At.float(), Bt.float())  # a fp32 product of the fp16 values (a SIMT/TF32-free path)
    C = Ct.cpu().numpy()
    kw = dict(output_format="fp32", input_format="fp16", kernel="torch_matmul_upcast", family="external",
              distribution=a.distribution, seed=a.seed)
    gemmlab.evaluate(At[:256, :256].contiguous(), Bt[:256, :256].contiguous(), Ct[:256, :256].contiguous(), **kw)  # warm-up
    torch.cuda.synchronize()
    t0 = time.perf_counter()
    gpu = gemmlab.evaluate(At, Bt, Ct, **kw)
    torch.cuda.synchronize()
    t_gpu = time.perf_counter() - t0
    t0 = time.perf_counter()
    cpu = gemmlab.evaluate(A, B, C, **kw)
    t_cpu = time.perf_counter() - t0
    # Every column but `reference` (the engine's name: GPU int8 split vs CPU fixed point, both exact).
    differ = [k for k in gemmlab.COLUMNS if k != "reference" and str(gpu[k]) != str(cpu[k])]
    out = Path(a.out)
    out.parent.mkdir(parents=True, exist_ok=True)
    lines = ["path,size,seconds,speedup_vs_cpu,rows_equal,columns_differing"]
    lines.append(f"cpu,{n},{t_cpu:.4f},1,{not differ},{';'.join(differ)}")
    lines.append(f"gpu,{n},{t_gpu:.4f},{t_cpu / t_gpu:.1f},{not differ},{';'.join(differ)}")
    out.write_text("\n".join(lines) + "\n")
    meta = {"produced_by": "examples/bench_evaluate.py", "argv": sys.argv, "gpu": torch.cuda.get_device_name(),
            "cpu_count": os.cpu_count(), "date_utc": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
            **gemmlab.framework_metadata("torch")}
    out.with_suffix(".meta.json").write_text(json.dumps(meta, indent=2) + "\n")
    print("\n".join(lines))
    return 0 if not differ else 1


if __name__ == "__main__":
    sys.exit(main())
