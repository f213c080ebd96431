#!/usr/bin/env bash
# The CPU backend under the sanitizers (CUDA left out: the sanitizers see host code only):
#   1. AddressSanitizer + UndefinedBehaviorSanitizer: the C++ suites (ctest) and the Python
#      tests, the extension built with the same flags and run with libasan preloaded;
#   2. ThreadSanitizer over the parts with threads of their own and no OpenMP (TSan does not
#      understand libgomp): the telemetry sampler, the tile sink pipeline, the command-line
#      parser. Built without OpenMP, so the kernels run on one thread there.
# Any report fails the run (-fno-sanitize-recover, halt_on_error). Build trees: build-asan/
# (the Python module too), build-tsan/. Usage: scripts/sanitize.sh [asan|tsan|all]   (default all)
set -euo pipefail
cd "$(dirname "$0")/.."
what="${1:-all}"
python="${PYTHON:-python3}"
export HPCML_QUIET=1
jobs="$(nproc)"
# GCC 12's ASan and TSan runtimes need at most 28 bits of mmap randomisation (newer kernels
# default to more, and the instrumented programs then crash at start).
if [ "$(cat /proc/sys/vm/mmap_rnd_bits 2>/dev/null || echo 28)" -gt 28 ]; then
  echo "sanitize: vm.mmap_rnd_bits is above 28, which GCC 12's sanitizers cannot run under;" \
       "set it with: sysctl -w vm.mmap_rnd_bits=28 (skipped)"
  exit 0
fi
# -O1 -g1: a third less compile time than -O2 -g, still fast enough to run every suite.
common=(-G Ninja -DCMAKE_BUILD_TYPE=Release "-DCMAKE_CXX_FLAGS_RELEASE=-O1 -g1 -DNDEBUG" -DHPCML_ENABLE_CUDA=OFF -DHPCML_BUILD_BENCHMARKS=OFF -DHPCML_INSTALL=OFF)

if [ "$what" = asan ] || [ "$what" = all ]; then
  flags="-fsanitize=address,undefined -fno-sanitize-recover=all -fno-omit-frame-pointer"
  export ASAN_OPTIONS="detect_leaks=1:halt_on_error=1:abort_on_error=0:detect_stack_use_after_return=1"
  export UBSAN_OPTIONS="print_stacktrace=1:halt_on_error=1"
  echo "sanitize: AddressSanitizer + UndefinedBehaviorSanitizer: C++ suites"
  # The Python module in the same tree, with the same flags.
  cmake -S . -B build-asan "${common[@]}" -DCMAKE_CXX_FLAGS="$flags" -DCMAKE_EXE_LINKER_FLAGS="$flags" \
        -DCMAKE_SHARED_LINKER_FLAGS="$flags" -DHPCML_BUILD_PYTHON=ON -DHPCML_PYTHON_STUB=OFF \
        -DPython_EXECUTABLE="$(command -v "$python")" >/dev/null
  cmake --build build-asan
  ctest --test-dir build-asan --output-on-failure -j "$jobs" -E find_package_consumer  # an outside build, without the flags

  echo "sanitize: AddressSanitizer + UndefinedBehaviorSanitizer: Python tests"
  staged=build-asan/python/package
  rm -rf "$staged" && mkdir -p "$staged/hpcml"
  cp -r python/hpcml/. "$staged/hpcml/" && cp build-asan/python/_hpcml*.so "$staged/hpcml/"
  # The interpreter is not built with ASan: preload the runtime, and leave leak checking to the
  # C++ suites (CPython keeps its own allocations to the end). hpcml.dask's tests are left out:
  # they call hpcml as the others do, from worker processes that would load pandas and pyarrow,
  # whose own allocators are not the sanitizer's concern, under the preloaded runtime.
  # The module links the tree's shared libhpcml, which the staged copy finds on LD_LIBRARY_PATH.
  LD_PRELOAD="$(gcc -print-file-name=libasan.so):$(gcc -print-file-name=libubsan.so)" \
  LD_LIBRARY_PATH="$PWD/build-asan/kernels${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}" \
  ASAN_OPTIONS="detect_leaks=0:halt_on_error=1" PYTHONPATH="$PWD/$staged" HPCML_BIN_DIR="$PWD/build-asan/bin" \
    "$python" -m pytest tests/python -q -p no:cacheprovider --ignore=tests/python/test_dask.py
fi

if [ "$what" = tsan ] || [ "$what" = all ]; then
  flags="-fsanitize=thread -fno-omit-frame-pointer"
  export TSAN_OPTIONS="halt_on_error=1"
  echo "sanitize: ThreadSanitizer: telemetry sampler, tile sinks, command line"
  cmake -S . -B build-tsan "${common[@]}" -DCMAKE_DISABLE_FIND_PACKAGE_OpenMP=ON -DHPCML_WITH_MPI=OFF \
        -DCMAKE_CXX_FLAGS="$flags" -DCMAKE_EXE_LINKER_FLAGS="$flags" -DCMAKE_SHARED_LINKER_FLAGS="$flags" >/dev/null
  # test_telemetry_fake: the sampler thread end to end, against the fake NVML (when its header was found)
  targets=(test_telemetry test_similarity test_cli)
  cmake --build build-tsan --target help | grep -q "test_telemetry_fake" && targets+=(test_telemetry_fake)
  cmake --build build-tsan --target "${targets[@]}"
  ctest --test-dir build-tsan --output-on-failure -j "$jobs" -R 'test_telemetry|Sampler|Trace|Sink|Tile|AtOnce|Flags'
fi
echo "sanitize: clean"
