import sys
import torch
import gemmlab
sys.path.insert(0, "/work/main/experiments/examples")
from triton_matmul import flavours

f = flavours()["triton_fp16_f32"]
e = gemmlab.explain(f["fn"], name="triton_fp16_f32", input_format="fp16", output_format="fp32", size=4096,
                    reps=5, warmup=2, out="explain.csv", judge_out="explain_judged.csv")
print(e.summary)
status = ",".join(sorted(set(e.judged["status"]))) if e.judged is not None else "-"
print(f"SUMMARY identified={e.identified} judged={status} behaves_like={' '.join(e.behaves_like[:2])}")
