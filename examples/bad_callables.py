"""Callables that misbehave, for checking that gemmlab.explain and gemmlab.judge report bad input clearly,
keep the rows finished before it, and never identify a kernel that failed (scripts/lab/explain37.py,
tests/python/test_explain_gpu37.py). Each is a correct fp16 -> fp32 torch matmul except on the calls
named:

* ``RaisesOnCall(n)``: raises ValueError on call n;
* ``WrongShapeEvery(n)``: returns C without its last column on every n-th call;
* ``illegal_access_on_call(n)``: a Triton kernel that stores far outside C on call n: an illegal memory
  access, after which the CUDA context of the process is lost (run it in a process of its own).

The call counts are the callable's own: gemmlab's launches of it, warm-up and timed ones alike.
"""

from __future__ import annotations

try:
    import torch
    import triton
    import triton.language as tl
except ImportError as e:
    raise ImportError(f"examples/bad_callables.py needs PyTorch and Triton with a CUDA GPU ({e})") from e


class RaisesOnCall:
    """fn(A, B, out): out = A B, but raises ValueError on call ``n``."""

    def __init__(self, n: int = 3, name: str = "raises_on_call_3"):
        self.n, self.calls, self.__name__ = n, 0, name

    def __call__(self, A, B, out):
        self.calls += 1
        if self.calls == self.n:
            raise ValueError(f"raised on purpose on call {self.calls}")
        torch.matmul(A.float(), B.float(), out=out)


class WrongShapeEvery:
    """fn(A, B) -> C (fp32), C without its last column on every ``n``-th call."""

    def __init__(self, n: int = 5, name: str = "wrong_shape_every_5"):
        self.n, self.calls, self.__name__ = n, 0, name

    def __call__(self, A, B):
        self.calls += 1
        C = torch.matmul(A.float(), B.float())
        return C[:, :-1] if self.calls % self.n == 0 else C


@triton.jit
def _store_kernel(c_ptr, value, n, offset, BLOCK: tl.constexpr):
    # Stores `value` into c[offset + i] for i < n: offset 0 is harmless, a huge one faults.
    i = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    tl.store(c_ptr + offset + i, value, mask=i < n)


def illegal_access_on_call(n: int = 3, name: str = "illegal_access_on_call_3"):
    """fn(A, B, out): out = A B, then on call ``n`` a store 2^40 elements past C (unmapped memory)."""
    calls = {"n": 0}

    def fn(A, B, out):
        calls["n"] += 1
        torch.matmul(A.float(), B.float(), out=out)
        if calls["n"] == n:
            _store_kernel[(1,)](out, 0.0, 128, 1 << 40, BLOCK=128)

    fn.__name__ = name
    return fn
