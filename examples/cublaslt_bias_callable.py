"""cuBLASLt with the BIAS epilogue and alpha / beta, called straight from Python (ctypes), as a callable for
``gemmlab.judge`` and ``gemmlab.explain`` on a form.

The call is the one gemmlab's built-in ``cublaslt_bias_fp16`` / ``cublaslt_bias_bf16`` make
(kernels/cublas/cublaslt_epilogue.cu): CUBLAS_COMPUTE_32F with fp32 alpha and beta, the row-major buffers read
as column-major D^T = alpha B^T A^T + beta C0^T + bias, the bias (one value per column of C, in the output type)
through CUBLASLT_EPILOGUE_BIAS (DEFAULT without one), the heuristic's first algorithm for a 32 MiB workspace,
on the caller's stream. ``fn(A, B, C0=None, bias=None, alpha=1.0, beta=0.0) -> C``, A (M, K), B (K, N), C0 (M, N)
row-major, fp16 or bf16 (gemmlab's style "return", form keywords as gemmlab passes them).
"""

from __future__ import annotations

import ctypes
import glob
import os

import torch

_R = {torch.float16: 2, torch.bfloat16: 14}  # cudaDataType_t
_COMPUTE_32F, _R_32F = 68, 0
_TRANSA, _TRANSB, _EPILOGUE, _BIAS_POINTER, _BIAS_DATA_TYPE = 3, 4, 7, 8, 26  # cublasLtMatmulDescAttributes_t
_EPILOGUE_DEFAULT, _EPILOGUE_BIAS = 1, 4
_PREF_MAX_WORKSPACE_BYTES = 1
_WORKSPACE = 32 << 20


class _HeuristicResult(ctypes.Structure):  # cublasLtMatmulHeuristicResult_t
    _fields_ = [("algo", ctypes.c_uint64 * 8), ("workspaceSize", ctypes.c_size_t), ("state", ctypes.c_int),
                ("wavesCount", ctypes.c_float), ("reserved", ctypes.c_int * 4)]


def _liblt() -> ctypes.CDLL:
    names = ["libcublasLt.so.13", "libcublasLt.so.12", *glob.glob("/usr/local/cuda/lib64/libcublasLt.so*"),
             *glob.glob(os.path.join(os.path.dirname(torch.__file__), "..", "nvidia", "cu*", "lib", "libcublasLt.so*"))]
    for n in names:
        try:
            return ctypes.CDLL(n)
        except OSError:
            continue
    raise OSError("libcublasLt not found")


class _Lt:
    def __init__(self) -> None:
        self.lib = _liblt()
        self.h = ctypes.c_void_p()
        self.check(self.lib.cublasLtCreate(ctypes.byref(self.h)), "cublasLtCreate")
        self.workspace = torch.empty(_WORKSPACE, dtype=torch.uint8, device="cuda")
        self.plans: dict = {}

    @staticmethod
    def check(status: int, what: str) -> None:
        if status != 0:
            raise RuntimeError(f"{what} returned cuBLAS status {status}")

    def attr(self, desc, attr: int, value: ctypes._SimpleCData) -> None:
        self.check(self.lib.cublasLtMatmulDescSetAttribute(desc, attr, ctypes.byref(value), ctypes.sizeof(value)),
                   f"cublasLtMatmulDescSetAttribute({attr})")

    def plan(self, dtype, M: int, N: int, K: int, bias: bool):
        key = (dtype, M, N, K, bias)
        if key in self.plans:
            return self.plans[key]
        op = ctypes.c_void_p()
        self.check(self.lib.cublasLtMatmulDescCreate(ctypes.byref(op), _COMPUTE_32F, _R_32F), "cublasLtMatmulDescCreate")
        self.attr(op, _TRANSA, ctypes.c_int(0))
        self.attr(op, _TRANSB, ctypes.c_int(0))
        self.attr(op, _EPILOGUE, ctypes.c_uint32(_EPILOGUE_BIAS if bias else _EPILOGUE_DEFAULT))
        if bias:
            self.attr(op, _BIAS_DATA_TYPE, ctypes.c_int(_R[dtype]))
        lay = []
        for rows, cols, ld in ((N, K, N), (K, M, K), (N, M, N)):  # B^T, A^T, D^T column-major
            d = ctypes.c_void_p()
            self.check(self.lib.cublasLtMatrixLayoutCreate(ctypes.byref(d), _R[dtype], ctypes.c_uint64(rows),
                                                           ctypes.c_uint64(cols), ctypes.c_int64(ld)),
                       "cublasLtMatrixLayoutCreate")
            lay.append(d)
        pref = ctypes.c_void_p()
        self.check(self.lib.cublasLtMatmulPreferenceCreate(ctypes.byref(pref)), "cublasLtMatmulPreferenceCreate")
        ws = ctypes.c_size_t(_WORKSPACE)
        self.check(self.lib.cublasLtMatmulPreferenceSetAttribute(pref, _PREF_MAX_WORKSPACE_BYTES, ctypes.byref(ws),
                                                                 ctypes.sizeof(ws)), "cublasLtMatmulPreferenceSetAttribute")
        res = _HeuristicResult()
        found = ctypes.c_int(0)
        st = self.lib.cublasLtMatmulAlgoGetHeuristic(self.h, op, lay[0], lay[1], lay[2], lay[2], pref, 1,
                                                     ctypes.byref(res), ctypes.byref(found))
        self.lib.cublasLtMatmulPreferenceDestroy(pref)
        if st != 0 or found.value == 0:
            raise RuntimeError(f"cuBLASLt offers no algorithm for M={M} N={N} K={K}" + (" with the BIAS epilogue" if bias
                                                                                         else "") + f" (status {st})")
        self.plans[key] = (op, lay, res)
        return self.plans[key]


_lt: _Lt | None = None


def cublaslt_bias(A: torch.Tensor, B: torch.Tensor, C0: torch.Tensor | None = None, bias: torch.Tensor | None = None,
                  alpha: float = 1.0, beta: float = 0.0) -> torch.Tensor:
    """C = alpha A B + beta C0 + bias as ``cublaslt_bias_fp16`` / ``_bf16`` compute it."""
    global _lt
    if _lt is None:
        _lt = _Lt()
    M, K = A.shape
    N = B.shape[1]
    if A.dtype not in _R or B.dtype != A.dtype or not (A.is_contiguous() and B.is_contiguous()):
        raise ValueError("cublaslt_bias takes row-major fp16 or bf16 A and B of one dtype")
    op, lay, res = _lt.plan(A.dtype, M, N, K, bias is not None)
    if bias is not None:
        _lt.attr(op, _BIAS_POINTER, ctypes.c_void_p(bias.data_ptr()))
    D = torch.empty((M, N), dtype=A.dtype, device=A.device)
    c = C0 if C0 is not None else D
    a, b = ctypes.c_float(alpha), ctypes.c_float(beta if C0 is not None else 0.0)
    stream = ctypes.c_void_p(torch.cuda.current_stream().cuda_stream)
    _lt.check(_lt.lib.cublasLtMatmul(_lt.h, op, ctypes.byref(a), ctypes.c_void_p(B.data_ptr()), lay[0],
                                     ctypes.c_void_p(A.data_ptr()), lay[1], ctypes.byref(b), ctypes.c_void_p(c.data_ptr()),
                                     lay[2], ctypes.c_void_p(D.data_ptr()), lay[2], ctypes.byref(res.algo),
                                     ctypes.c_void_p(_lt.workspace.data_ptr()), ctypes.c_size_t(_WORKSPACE), stream),
              "cublasLtMatmul")
    return D
