import torch  # first: gemmlab then shares PyTorch's cuBLAS
import gemmlab
from gemmlab import _cuda_libs

print("cuBLAS:", _cuda_libs.find().source)
print("gpu:", gemmlab.gpu_available())
rows = gemmlab.judge(torch.matmul, name="torch_matmul_fp16", input_format="fp16", output_format="fp16",
                     sizes=[4096], out="judge.csv")
print(rows[["kernel", "M", "status", "tflops", "rel_std", "cw_over_gamma"]].to_string())
r = rows.iloc[0]
print(f"SUMMARY {r.kernel} {r.status} {r.tflops:.0f} TFLOP/s cw/gamma={r.cw_over_gamma:.3g}")
