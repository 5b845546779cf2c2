#!/usr/bin/env bash
# Builds gemmlab on a lent GPU machine that has nvcc, CMake and ninja but none of the -dev packages:
#   scripts/lab/gpu_build.sh DEBS_DIR BUILD_DIR [TARGET...]
# DEBS_DIR holds the Debian -dev packages (made here with `apt-get download libmpfr-dev libgmp-dev libgmpxx4ldbl
# libeigen3-dev libcli11-dev nlohmann-json3-dev libtomlplusplus-dev libtomlplusplus3 libgtest-dev libssl-dev`), or
# *.tar.xz archives of what they unpack to (their static libraries left out: a fraction of the size to carry). They
# are unpacked into a private sysroot (never into /); their .so links are pointed at the machine's own runtime
# libraries (libmpfr6, libgmp10, libcrypto3 come with its compiler and Python) and their pkg-config files at the
# sysroot. Builds for sm_90a (GEMMLAB_CUDA_ARCHS to change) with every CPU core.
set -euo pipefail
debs=$(realpath "$1"); build=$2; shift 2
targets=("$@"); [ ${#targets[@]} -eq 0 ] && targets=(gemmlab gemmlab_gpu_tests)
sys=/tmp/gemmlab-sysroot
rm -rf "$sys"; mkdir -p "$sys"
for f in "$debs"/*.deb; do [ -e "$f" ] && dpkg -x "$f" "$sys"; done
for f in "$debs"/*.tar.xz; do [ -e "$f" ] && tar -xJf "$f" -C "$sys"; done
lib=$sys/usr/lib/x86_64-linux-gnu
for so in "$lib"/*.so; do
  if [ -L "$so" ] && [ ! -e "$so" ]; then
    target=$(basename "$(readlink "$so")")
    real=$(ls /usr/lib/x86_64-linux-gnu/"${target%%.so*}".so.* 2>/dev/null | head -1 || true)
    [ -n "$real" ] || { echo "gpu_build: no runtime library for $so on this machine" >&2; exit 1; }
    ln -sf "$real" "$so"
  fi
done
for pc in "$lib"/pkgconfig/*.pc "$sys"/usr/share/pkgconfig/*.pc; do
  [ -e "$pc" ] && sed -i "s|^prefix=.*|prefix=$sys/usr|; s|=/usr/|=$sys/usr/|g" "$pc"
done
export PKG_CONFIG_PATH=$lib/pkgconfig:$sys/usr/share/pkgconfig
export CPATH=$sys/usr/include:$sys/usr/include/x86_64-linux-gnu${CPATH:+:$CPATH}
export LIBRARY_PATH=$lib${LIBRARY_PATH:+:$LIBRARY_PATH}
export PATH=/usr/local/cuda/bin:$PATH
cmake -S . -B "$build" -G Ninja -DCMAKE_BUILD_TYPE=Release -DGEMMLAB_BUILD_TESTS=ON -DCMAKE_CUDA_ARCHITECTURES="${GEMMLAB_CUDA_ARCHS:-90a}" \
  -DCMAKE_PREFIX_PATH="$sys/usr" -DOPENSSL_ROOT_DIR="$sys/usr" -DOPENSSL_CRYPTO_LIBRARY="$lib/libcrypto.so" \
  -DOPENSSL_INCLUDE_DIR="$sys/usr/include" >"$build.configure.log" 2>&1 || { tail -30 "$build.configure.log"; exit 1; }
cmake --build "$build" -j "$(nproc)" --target "${targets[@]}" >"$build.build.log" 2>&1 || { grep -E 'error|Error' "$build.build.log" | head -30; exit 1; }
echo "gpu_build: built ${targets[*]} in $build"
