#!/usr/bin/env python3
"""Where explain's time goes on a Python fp8 kernel (issue 42): torch._scaled_mm rowwise e4m3 at 4096^3
explained in this process (isolate=False) under cProfile with GEMMLAB_PROFILE_ORACLE=1 (the oracle's split
of each call: writing the lines, the launch with its entries, explain's own work between calls), then once
more with isolate="auto" (in-process too: the flavour is a local function, as in the explain table). Prints the stage times, the oracle's split
and the Python functions with the most time; the profile is written to OUT_DIR/fp8.prof.

    python scripts/lab/probes/profile_fp8_explain.py OUT_DIR
"""
import cProfile
import os
import pstats
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[3] / "examples"))
os.environ["GEMMLAB_PROFILE_ORACLE"] = "1"

import gemmlab  # noqa: E402
from explain_frameworks import torch_flavours  # noqa: E402

out = Path(sys.argv[1])
out.mkdir(parents=True, exist_ok=True)
spec = torch_flavours()["torch_scaled_mm_rowwise_e4m3"]


def explain(isolate):
    t0 = time.time()
    e = gemmlab.explain(spec["fn"], name="torch_scaled_mm_rowwise_e4m3", input_format="e4m3", output_format="bf16",
                        layout_b="col", size=(4096, 4096, 4096), seed=20261124, isolate=isolate,
                        distributions=["uniform_0_1", "normal_0_1", "logunif_-8_8"])
    r = e.report
    stages = " ".join(f"{s['stage']} {s['seconds']:.2f} s/{s.get('launches', '?')}" for s in r.get("stages", []))
    print(f"isolate={isolate}: identified={e.identified} launches={r['launches']} explain {r['seconds']:.2f} s "
          f"wall {time.time() - t0:.2f} s; stages {stages}", flush=True)


prof = cProfile.Profile()
prof.enable()
explain(False)
prof.disable()
prof.dump_stats(str(out / "fp8.prof"))
st = pstats.Stats(prof)
st.sort_stats("tottime").print_stats(25)
st.sort_stats("cumulative").print_stats(25)
explain("auto")  # this flavour is a local function: "auto" explains it in-process, as the explain table does
