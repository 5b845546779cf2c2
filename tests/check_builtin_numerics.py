#!/usr/bin/env python3
"""python/gemmlab/builtin_numerics.json must say of every kernel this build registers what
`gemmlab list --numerics-json` says (a build of fewer families checks fewer kernels; the file is
regenerated with every family: `build/gemmlab list --numerics-json python/gemmlab/builtin_numerics.json`).

    check_builtin_numerics.py GEMMLAB_BIN COMMITTED_JSON SCRATCH_JSON
"""
import json
import subprocess
import sys

gemmlab, committed, scratch = sys.argv[1:4]
subprocess.run([gemmlab, "list", "--numerics-json", scratch], check=True, capture_output=True)
now = json.load(open(scratch))
have = json.load(open(committed))
stale = [k for k in now if have.get(k) != now[k]]
if stale:
    sys.exit(f"{committed} is stale for {len(stale)} kernels (e.g. {stale[:3]}); regenerate it: "
             f"gemmlab list --numerics-json {committed}")
print(f"{len(now)} kernels of this build agree with {committed} ({len(have)} listed)")
