#!/usr/bin/env bash
# The CPU backend on 64-bit Arm (Grace, Graviton), checked from an x86-64 machine: builds
# libhpcml and its C++ suites with Debian's aarch64 cross compiler (CUDA, tools and benchmarks
# left out) and runs the suites under qemu. There the similarity kernel is the baseline one,
# invgauss has no libmvec, and the Boost.Math comparison is left out (its headers are the
# host's). Installs g++-aarch64-linux-gnu and qemu-user if missing (root or sudo). Build tree:
# build-arm64/ (GoogleTest is built from Debian's sources into build-arm64/sysroot).
# Usage: scripts/arm64.sh   (about a minute on 2 cores once installed; scripts/test.sh runs it)
set -euo pipefail
cd "$(dirname "$0")/.."
root="$PWD/build-arm64"
sudo=""
[ "$(id -u)" -eq 0 ] || sudo="sudo"
# The toolchain is optional: where it cannot be installed the check is skipped, saying why.
if ! command -v aarch64-linux-gnu-g++ >/dev/null || ! command -v qemu-aarch64 >/dev/null ||
   [ ! -d /usr/src/googletest ] || [ ! -f /usr/include/Random123/philox.h ] || [ ! -d /usr/include/eigen3 ]; then
  if ! $sudo apt-get install -y --no-install-recommends g++-aarch64-linux-gnu qemu-user googletest librandom123-dev libeigen3-dev; then
    echo "arm64: skipped: the aarch64 cross compiler, qemu-user, googletest, librandom123-dev or libeigen3-dev could not be installed"
    exit 0
  fi
fi
mkdir -p "$root/include"
cp -r /usr/include/Random123 /usr/include/eigen3 "$root/include/"  # header-only: the same for every target
cat > "$root/toolchain.cmake" <<EOF
set(CMAKE_SYSTEM_NAME Linux)
set(CMAKE_SYSTEM_PROCESSOR aarch64)
set(CMAKE_C_COMPILER aarch64-linux-gnu-gcc)
set(CMAKE_CXX_COMPILER aarch64-linux-gnu-g++)
set(CMAKE_FIND_ROOT_PATH /usr/aarch64-linux-gnu $root/sysroot)
set(CMAKE_FIND_ROOT_PATH_MODE_PROGRAM NEVER)
set(CMAKE_FIND_ROOT_PATH_MODE_LIBRARY ONLY)
set(CMAKE_FIND_ROOT_PATH_MODE_INCLUDE ONLY)
set(CMAKE_FIND_ROOT_PATH_MODE_PACKAGE ONLY)
set(CMAKE_CROSSCOMPILING_EMULATOR qemu-aarch64;-L;/usr/aarch64-linux-gnu)
EOF
cross=(-G Ninja -DCMAKE_TOOLCHAIN_FILE="$root/toolchain.cmake" -DCMAKE_BUILD_TYPE=Release)
if [ ! -f "$root/sysroot/lib/libgtest.a" ]; then
  cmake -S /usr/src/googletest -B "$root/googletest" "${cross[@]}" -DCMAKE_INSTALL_PREFIX="$root/sysroot" >/dev/null
  cmake --build "$root/googletest" >/dev/null
  cmake --install "$root/googletest" >/dev/null
fi
cmake -S . -B "$root/build" "${cross[@]}" -DHPCML_ENABLE_CUDA=OFF -DHPCML_BUILD_BENCHMARKS=OFF -DHPCML_BUILD_TOOLS=OFF \
  -DHPCML_INSTALL=OFF -DRANDOM123_INCLUDE_DIR="$root/include" -DEIGEN3_INCLUDE_DIR="$root/include/eigen3" >/dev/null
suites=(test_core test_similarity test_regret test_invgauss)
cmake --build "$root/build" --target "${suites[@]}"
for t in "${suites[@]}"; do
  echo "arm64: $t"
  HPCML_QUIET=1 qemu-aarch64 -L /usr/aarch64-linux-gnu "$root/build/bin/$t" --gtest_brief=1
done
echo "arm64: every suite passed"
