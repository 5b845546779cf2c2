"""Callables that misbehave, for checking that gemmlab.explain and gemmlab.judge report bad input clearly,
keep the rows finished before it, and never identify a kernel that failed (scripts/lab/explain37.py,
tests/python/test_explain_gpu37.py, tests/python/test_watchdog_gpu.py). Each is a correct fp16 -> fp32
torch matmul except on the calls named:

* ``RaisesOnCall(n)``: raises ValueError on call n;
* ``WrongShapeEvery(n)``: returns C without its last column on every n-th call;
* ``illegal_access_on_call(n)``: a Triton kernel that stores far outside C on call n: an illegal memory
  access, after which the CUDA context of the process is lost (a closure: it runs in the caller's
  process, so run that in a process of its own).

And, on inputs whose inner dimension is ``k`` (one size of a plan: its row misbehaves, the rows of the
other sizes do not), classes that gemmlab.judge sends to a worker process (``isolate``):

* ``SpinsOnK(k)``: a Triton kernel that waits for a flag nobody sets (a stream-K fix-up waiting for a
  partial that never comes): the launch never ends;
* ``SleepsOnK(k, seconds)``: blocks in Python for ``seconds`` (``float("inf")``: forever), then returns C;
* ``AssertsOnK(k)``: a Triton kernel whose device assertion fails: a trap (cudaErrorAssert);
* ``IllegalAccessOnK(k)``: the store far outside C above (cudaErrorIllegalAddress);
* ``RaisesOnK(k)``: raises ValueError.

``HangsOnCall(n)`` blocks in Python forever on call n (gemmlab.explain's 40th call, say).

The call counts are the callable's own: gemmlab's launches of it, warm-up and timed ones alike (in a worker
process, counted from that process's first call).
"""

from __future__ import annotations

import math
import time

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


@triton.jit
def _spin_kernel(flag_ptr):
    # Waits for a flag nobody sets: the launch never ends, and holds the GPU until its process does.
    while tl.load(flag_ptr, volatile=True) == 0:
        pass


@triton.jit(debug=True)
def _assert_kernel(x_ptr):
    # A device assertion that fails (debug=True keeps it): the kernel traps, cudaErrorAssert.
    x = tl.load(x_ptr)
    tl.device_assert(x < 0, "gemmlab's bad_callables: the assertion fails on purpose")


class _OnK:
    """fn(A, B, out): out = A B, and on inputs of inner dimension ``k`` the misdeed of the subclass."""

    def __init__(self, k: int, name: str):
        self.k, self.__name__ = k, name

    def __call__(self, A, B, out):
        torch.matmul(A.float(), B.float(), out=out)
        if A.shape[1] == self.k:
            self.misdeed(out)

    def misdeed(self, out):
        raise NotImplementedError


class SpinsOnK(_OnK):
    def __init__(self, k: int, name: str = "spins_on_k"):
        super().__init__(k, name)

    def misdeed(self, out):
        flag = torch.zeros(1, dtype=torch.int32, device=out.device)
        _spin_kernel[(1,)](flag)

    @staticmethod
    def warm(device: str = "cuda") -> None:
        """Compiles the spinning kernel without launching it: Triton's cache on disk then serves every process,
        so that a run's time beside the four sizes is the watchdog's, not a first compilation's."""
        _spin_kernel.warmup(torch.zeros(1, dtype=torch.int32, device=device), grid=(1,))


class SleepsOnK(_OnK):
    def __init__(self, k: int, seconds: float = math.inf, name: str = "sleeps_on_k"):
        super().__init__(k, name)
        self.seconds = seconds

    def misdeed(self, out):
        if math.isinf(self.seconds):
            while True:
                time.sleep(3600)
        time.sleep(self.seconds)


class AssertsOnK(_OnK):
    def __init__(self, k: int, name: str = "asserts_on_k"):
        super().__init__(k, name)

    def misdeed(self, out):
        _assert_kernel[(1,)](torch.ones(1, dtype=torch.int32, device=out.device))


class IllegalAccessOnK(_OnK):
    def __init__(self, k: int, name: str = "illegal_access_on_k"):
        super().__init__(k, name)

    def misdeed(self, out):
        _store_kernel[(1,)](out, 0.0, 128, 1 << 40, BLOCK=128)


class RaisesOnK(_OnK):
    def __init__(self, k: int, name: str = "raises_on_k"):
        super().__init__(k, name)

    def misdeed(self, out):
        raise ValueError(f"raised on purpose at K = {self.k}")


class HangsOnCall:
    """fn(A, B, out): out = A B, but blocks in Python forever on call ``n``."""

    def __init__(self, n: int = 40, name: str = "hangs_on_call_40"):
        self.n, self.calls, self.__name__ = n, 0, name

    def __call__(self, A, B, out):
        self.calls += 1
        if self.calls == self.n:
            while True:
                time.sleep(3600)
        torch.matmul(A.float(), B.float(), out=out)
