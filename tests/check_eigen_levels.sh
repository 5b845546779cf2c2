#!/usr/bin/env bash
# The Eigen products built once per x86-64 level (CMakeLists.txt, kernels/cpu/eigen_product.hpp) are
# isolated and are what their level says:
#  - each object defines exactly its five gemmlab_eigen_x86_64_v<N>_* entries as global symbols, every
#    other symbol local (an Eigen template left global would be shared among the levels at link time,
#    and a v2 host could run v4 code);
#  - v2 has no VEX/EVEX instruction (no v-prefixed mnemonic, no ymm or zmm register);
#  - v3 uses ymm registers and FMA, no zmm;
#  - v4 uses zmm registers.
#   check_eigen_levels.sh OBJECT_DIR [NM OBJDUMP]
set -u
dir=$1; nm=${2:-nm}; objdump=${3:-objdump}
fail=0
bad() { echo "FAIL: $*"; fail=1; }
for v in 2 3 4; do
  obj=$dir/gemmlab_eigen_x86_64_v$v.o
  [ -r "$obj" ] || { bad "$obj is missing (build gemmlab_kernels first)"; continue; }
  globals=$("$nm" --defined-only -g "$obj" | awk '{print $3}' | sort | tr '\n' ' ')
  want=$(printf 'gemmlab_eigen_x86_64_v%s_%s\n' $v dgemm $v sgemm $v simd $v threads $v version | sort | tr '\n' ' ')
  [ "$globals" = "$want" ] || bad "v$v defines global symbols [$globals], expected exactly [$want]"
  asm=$("$objdump" -d --no-show-raw-insn "$obj")
  mnemonics=$(printf '%s\n' "$asm" | awk -F'\t' 'NF >= 2 { split($2, a, " "); print a[1] }')
  n_vex=$(printf '%s\n' "$mnemonics" | grep -c '^v')
  n_ymm=$(printf '%s\n' "$asm" | grep -c '%ymm')
  n_zmm=$(printf '%s\n' "$asm" | grep -c '%zmm')
  n_fma=$(printf '%s\n' "$mnemonics" | grep -c '^vfn\?m\(add\|sub\)')
  echo "x86-64-v$v: $(printf '%s\n' "$mnemonics" | wc -l) instructions, $n_vex VEX/EVEX, $n_ymm with ymm, $n_zmm with zmm, $n_fma FMA"
  case $v in
    2) [ "$n_vex" -eq 0 ] || bad "v2 has $n_vex VEX/EVEX instructions (AVX): a v2 host would fault on them" ;;
    3) [ "$n_zmm" -eq 0 ] || bad "v3 has $n_zmm instructions on zmm registers (AVX-512)"
       [ "$n_ymm" -gt 0 ] && [ "$n_fma" -gt 0 ] || bad "v3 has no ymm ($n_ymm) or no FMA ($n_fma) instruction: not built for AVX2 + FMA" ;;
    4) [ "$n_zmm" -gt 0 ] || bad "v4 has no instruction on zmm registers: not built for AVX-512" ;;
  esac
done
[ $fail = 0 ] && echo ok
exit $fail
