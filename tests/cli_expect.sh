#!/usr/bin/env bash
# Runs a command and checks its exit code, that its stderr matches a pattern, and that a result
# file was NOT left behind (no half-written output on failure).
#   cli_expect.sh EXPECTED_RC PATTERN MUST_NOT_EXIST|- [--skip-if-gpu] -- COMMAND...
# Exit 77 (CTest's skip code) with --skip-if-gpu when a GPU is present.
set -u
rc_want=$1; pattern=$2; absent=$3; shift 3
if [ "${1:-}" = "--skip-if-gpu" ]; then
  shift
  if nvidia-smi -L >/dev/null 2>&1; then echo "SKIP: a GPU is present; this test checks the no-GPU message"; exit 77; fi
fi
[ "${1:-}" = "--" ] && shift
err=$(mktemp); trap 'rm -f "$err"' EXIT
"$@" >/dev/null 2>"$err"; rc=$?
cat "$err"
if [ "$rc" != "$rc_want" ]; then echo "FAIL: exit code $rc, expected $rc_want"; exit 1; fi
if ! grep -Eq -- "$pattern" "$err"; then echo "FAIL: stderr does not match /$pattern/"; exit 1; fi
if [ "$absent" != "-" ] && ls $absent >/dev/null 2>&1; then echo "FAIL: $absent exists after a failed run"; exit 1; fi
echo "ok"
