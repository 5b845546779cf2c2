#!/usr/bin/env bash
# What a lent GPU machine offers (Python packages, CUDA libraries, headers), printed for the session's notes.
set -u
nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv,noheader
python3 --version; which python3; cmake --version | head -1; nvcc --version | tail -1
ls /usr/include/python3.12/Python.h 2>&1 | head -1; python3 -c "import sysconfig;print('py include', sysconfig.get_paths()['include'])"
ls -d /usr/lib/x86_64-linux-gnu/libmpfr.so.* /usr/lib/x86_64-linux-gnu/libgmp.so.* /usr/lib/x86_64-linux-gnu/libcrypto.so.* 2>&1
ldconfig -p | grep -E 'libcublas|libcudart' | head; ls /usr/local/cuda/lib64 | grep -E 'cublas|cudart' | head
python3 -m pip list 2>/dev/null | grep -iE 'torch|triton|jax|cupy|cuda|nvidia|numpy|pandas|pip |auditwheel|build|scikit|nanobind|pytest|matplotlib|threadpool'
python3 - <<'PY'
import importlib, os
for m in ("cuda.pathfinder", "cuda.bindings", "cuda", "threadpoolctl"):
    try: importlib.import_module(m); print("import", m, "ok")
    except Exception as e: print("import", m, "FAIL", e)
import torch, numpy
print("torch", torch.__version__, "cuda", torch.version.cuda, "grouped_mm", hasattr(torch, "_grouped_mm"), "scaled_grouped", hasattr(torch, "_scaled_grouped_mm"))
import nvidia, glob
for p in nvidia.__path__: print("nvidia pkgs:", sorted(os.listdir(p)))
print(glob.glob(os.path.join(list(nvidia.__path__)[0], "cublas", "lib", "*")))
numpy.show_config()
import jax, jax.numpy as jnp
print("jax", jax.__version__, jax.devices(), "default precision", jax.config.jax_default_matmul_precision)
PY
