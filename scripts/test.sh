#!/usr/bin/env bash
# Runs every hpcml test: builds (incrementally) into ./build, runs the C++ suites through ctest
# (GoogleTest, the device-query contract, the find_package consumer), then installs the Python
# package and runs pytest, then the GPU suite's rehearsal, the wheel in a fresh environment,
# `pip install ./python` with build isolation, the sanitizer builds, the fuzz targets and the C++
# suites built for 64-bit Arm under qemu. GPU tests skip with a message where no device exists.
set -euo pipefail
cd "$(dirname "$0")/.."
build="${HPCML_BUILD_DIR:-build}"
python="${PYTHON:-python3}"
export PIP_ROOT_USER_ACTION=ignore HPCML_QUIET=1

# HPCML_CUDA_ARCHITECTURES (CI sets 90): one CUDA architecture for a quicker build, in ./build
# and in the Python package; unset, the default list (every generation from 7.5).
cuda_arch=()
if [ -n "${HPCML_CUDA_ARCHITECTURES:-}" ]; then
  cuda_arch=("-DCMAKE_CUDA_ARCHITECTURES=$HPCML_CUDA_ARCHITECTURES")
  export CMAKE_ARGS="${CMAKE_ARGS:-} -DCMAKE_CUDA_ARCHITECTURES=$HPCML_CUDA_ARCHITECTURES"
fi
# The Python module is built in the same tree, and pip makes the package from that tree:
# nothing is compiled twice.
cmake -S . -B "$build" -G Ninja -DCMAKE_BUILD_TYPE=Release "${cuda_arch[@]}" \
      -DHPCML_BUILD_PYTHON=ON -DPython_EXECUTABLE="$(command -v "$python")"
cmake --build "$build"
ctest --test-dir "$build" --output-on-failure -j "$(nproc)"

"$python" -m pip install --no-build-isolation -q ./python "--config-settings=build-dir=$PWD/$build"
# The fake NVML the C++ tests built lets pytest exercise tracing end to end.
HPCML_BIN_DIR="$(cd "$build/bin" && pwd)"  # the tools the Python tests run (hpcml-similarity)
export HPCML_BIN_DIR
if [ -f "$build/tests/libfake_nvml.so" ]; then
  HPCML_FAKE_NVML="$(cd "$build/tests" && pwd)/libfake_nvml.so"
  export HPCML_FAKE_NVML
fi
# The Python tests, and the code blocks of README.md and docs/ run as a user would (tests/docs).
"$python" -m pytest tests/python tests/docs -q
# The package's types as a user's type checker reads them (py.typed, the annotations and the
# extension's generated stub): a user's typed calls and the examples' own files under mypy
# --strict (one at a time: the examples' files share names), and mypy's stubtest of the stubs
# against the installed module (tests/typing).
(files=("$PWD"/tests/typing/usage.py "$PWD"/examples/*/run.py "$PWD"/examples/invgauss/with_hpcml.py) &&
 root="$PWD" && cd "$(mktemp -d)" &&
 for file in "${files[@]}"; do
   "$python" -m mypy --config-file "$root/tests/typing/mypy.ini" "$file" > mypy.log ||
     { cat mypy.log; echo "test: mypy --strict: $file" >&2; exit 1; }
 done &&
 "$python" -m mypy.stubtest hpcml --allowlist "$root/tests/typing/stubtest-allowlist.txt")
# The API reference (C++ and Python), whose build fails on an undocumented public declaration.
PYTHON="$python" ./scripts/api-docs.sh "$build/api"

# The GPU suite rehearsed as a GPU machine runs it, without a GPU (docs/gpu-suite.md), the
# wheel, `pip install ./python` as a user runs it, then the sanitizer builds, the fuzz targets and the Arm cross-build under qemu (README "Reliability");
# HPCML_TEST_QUICK=1 skips them.
if [ "${HPCML_TEST_QUICK:-0}" != 1 ]; then
  # The wheel, installed into a fresh environment (scripts/test-wheel.sh): the GPU bundle's,
  # which is made as every wheel is, or a CPU-only one without a CUDA toolkit.
  if command -v nvcc >/dev/null 2>&1 || [ -x /usr/local/cuda/bin/nvcc ]; then
    ./scripts/gpu-prepare.sh
    ./scripts/gpu-rehearse.sh
    HPCML_WHEEL_ARCHITECTURES="${HPCML_GPU_ARCHITECTURES:-90}" \
      ./scripts/test-wheel.sh "$(ls .gpu/wheels/hpcml-*.whl)" "$(scripts/find-python312.sh)"
  else
    echo "test: no CUDA toolkit: the GPU suite's rehearsal (which needs the CUDA bundle) is skipped"
    rm -rf .wheel-test && ./scripts/wheel.sh .wheel-test
    ./scripts/test-wheel.sh "$(ls .wheel-test/hpcml-*.whl)" "$python"
  fi
  # The README's `pip install ./python`, with build isolation, in a fresh environment and folder.
  HPCML_CUDA_ARCHITECTURES="${HPCML_CUDA_ARCHITECTURES:-90}" ./scripts/pip-install-check.sh "$python"
  # The Docker image, built with podman on stand-in base images (Debian 12): with a CUDA toolkit,
  # compiled in the image's build stage as a user's docker build does (then also from that
  # stage's wheel); without one, from the CPU-only wheel the path above made (Python 3.11).
  if command -v nvcc >/dev/null 2>&1 || [ -x /usr/local/cuda/bin/nvcc ]; then
    ./scripts/docker-check.sh --compile
  else
    ./scripts/docker-check.sh .wheel-test
  fi
  ./scripts/sanitize.sh
  FUZZ_SECONDS="${FUZZ_SECONDS:-20}" ./scripts/fuzz.sh
  ./scripts/arm64.sh
fi
