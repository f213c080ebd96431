#!/usr/bin/env bash
# Prepares, here (nvcc needs no GPU), everything scripts/gpu-suite.sh runs on a lent H100/H200,
# so that the GPU machine's minutes go to running, not compiling:
#   build-gpu/   the library, tests, benchmarks and tools for sm_90 (Hopper), without MPI (the
#                GPU machine has no libmpi), with its CTest files;
#   a wheel of the Python package for the GPU machine's Python 3.12 (same sm_90 build);
#   libbenchmark (the benchmarks' one shared library the GPU machine lacks).
# All of it goes into .gpu/bundle.tar.xz (git-ignored): name ".gpu" in the device tool's carry.
# Usage: scripts/gpu-prepare.sh      (PYTHON312=/path/to/python3.12 to choose the interpreter)
set -euo pipefail
cd "$(dirname "$0")/.."

cmake -S . -B build-gpu -G Ninja -DCMAKE_BUILD_TYPE=Release -DCMAKE_CUDA_ARCHITECTURES=90 -DHPCML_WITH_MPI=OFF >/dev/null
cmake --build build-gpu

python312=""
for candidate in "${PYTHON312:-}" python3.12 "$HOME"/.pyenv/versions/3.12*/bin/python3; do
  if [ -n "$candidate" ] && "$candidate" -c 'import sys; assert sys.version_info[:2] == (3, 12)' 2>/dev/null; then
    python312="$candidate"
    break
  fi
done
if [ -z "$python312" ]; then
  echo "gpu-prepare: no Python 3.12 here (set PYTHON312): the GPU machine's python3 is 3.12" >&2
  exit 1
fi
"$python312" -m pip install -q nanobind scikit-build-core
rm -rf .gpu && mkdir -p .gpu/wheels .gpu/lib
CMAKE_ARGS="-DCMAKE_CUDA_ARCHITECTURES=90" PIP_ROOT_USER_ACTION=ignore \
  "$python312" -m pip wheel -q --no-build-isolation --no-deps -w .gpu/wheels \
  "-Cbuild-dir=build/gpu-{wheel_tag}" ./python  # its own build folder: sm_90 must not stick to pip install's
cp -L "$(ldconfig -p | awk '/libbenchmark\.so/ {print $NF; exit}')" .gpu/lib/
# Object files are not needed to run; the static library is (the find_package consumer test).
tar -cJf .gpu/bundle.tar.xz --exclude='*.o' --exclude='.ninja_*' build-gpu .gpu/wheels .gpu/lib
rm -rf .gpu/wheels .gpu/lib
echo "gpu-prepare: $(du -h .gpu/bundle.tar.xz | cut -f1) in .gpu/bundle.tar.xz (commit $(git rev-parse --short HEAD)$(git diff --quiet || echo ', uncommitted changes'))"
