"""``gemmlab inputs`` folders from Python: the same C++ as the CLI (experiments/engine/inputs.hpp).

A folder holds ``A.npy`` (M, K) and ``B.npy`` (K, N), float64, bit for bit the inputs
``gemmlab run`` feeds a kernel of that input format, and ``inputs.json`` (gemmlab version, git
commit, ``inputs_format_version``, distribution, M, N, K, seed, format, sha256 of A and B).
Run your kernel on them and judge its C with ``gemmlab evaluate DIR --output C.npy`` or
``gemmlab.evaluate(f.A, f.B, C, input_format=f.format, ...)``.
"""

from __future__ import annotations

import json
import os
import warnings
from dataclasses import dataclass
from typing import Any

import numpy as np

from . import _core
from ._checks import check_format, whole
from .distributions import _check_seed

#: The layout version of inputs.json this gemmlab writes and reads.
INPUTS_FORMAT_VERSION: int = _core.inputs_format_version()


@dataclass(frozen=True)
class Inputs:
    """A ``gemmlab inputs`` folder read back."""

    A: np.ndarray  #: (M, K) float64
    B: np.ndarray  #: (K, N) float64
    distribution: str
    M: int
    N: int
    K: int
    seed: int
    format: str  #: the kernel's input format
    json: dict[str, Any]  #: inputs.json


def _inputs(d: dict[str, Any]) -> Inputs:
    j = json.loads(d["json"])
    return Inputs(A=np.asarray(d["A"]), B=np.asarray(d["B"]), distribution=j["distribution"], M=j["M"], N=j["N"],
                  K=j["K"], seed=j["seed"], format=j["format"], json=j)


def inputs(distribution: str, M: int, N: int, K: int, *, seed: int = 1, fmt: str = "fp32",
           out: str | os.PathLike, force: bool = False, threads: int = 0) -> Inputs:
    """``gemmlab inputs -d distribution -s MxNxK --seed seed --format fmt -o out``: writes the folder
    and returns it. ValueError for a non-empty folder (unless ``force``), an unknown distribution,
    or one that cannot be expressed in ``fmt``."""
    for name, v in (("M", M), ("N", N), ("K", K)):
        if whole(v, name) >= 1 << 31:
            raise ValueError(f"{name} = {int(v)}: sizes are below 2**31")
    _core.write_inputs(distribution, int(M), int(N), int(K), _check_seed(seed), check_format(fmt), os.fspath(out),
                       bool(force), int(threads))
    return read_inputs(out)


def read_inputs(folder: str | os.PathLike) -> Inputs:
    """A folder written by ``gemmlab inputs`` (or ``inputs``). ValueError for a folder that is not
    one, whose A.npy or B.npy changed since (sha256), or that another gemmlab version or inputs
    format wrote; a folder of another git commit of the same version gives a warning."""
    d = _core.read_inputs(os.fspath(folder))
    for w in d["warnings"]:
        warnings.warn(w, stacklevel=2)
    return _inputs(d)
