#!/usr/bin/env bash
# Builds the libFuzzer targets (tests/fuzz: the .npy reader, the journal reader, the command-line
# parsers, the similarity's sorted method against its fused one, at each CPU level) with clang, AddressSanitizer and UndefinedBehaviorSanitizer into build-fuzz/, and runs
# each for FUZZ_SECONDS (default 60) from its seed corpus (tests/fuzz/corpus/). A crash, a leak,
# undefined behaviour, a 10 s input or 2 GB of memory fails the run; the input that did it is
# left in build-fuzz/ (crash-*, leak-*, timeout-*, oom-*) to replay: build-fuzz/bin/fuzz_npy FILE.
set -euo pipefail
cd "$(dirname "$0")/.."
seconds="${FUZZ_SECONDS:-60}"
flags="-fsanitize=address,undefined -fno-sanitize-recover=all -fno-omit-frame-pointer"
CC=clang CXX=clang++ cmake -S . -B build-fuzz -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo -DHPCML_ENABLE_CUDA=OFF \
  -DHPCML_BUILD_TESTS=OFF -DHPCML_BUILD_BENCHMARKS=OFF -DHPCML_BUILD_TOOLS=OFF -DHPCML_INSTALL=OFF -DHPCML_BUILD_FUZZERS=ON \
  -DCMAKE_CXX_FLAGS="$flags" -DCMAKE_EXE_LINKER_FLAGS="$flags" >/dev/null
cmake --build build-fuzz --target fuzz_npy fuzz_journal fuzz_command_line fuzz_similarity_methods
# The sorted method's kernels are compiled per instruction-set level: its target runs at each
# (HPCML_CPU_KERNEL; where the CPU lacks a level, a lower one runs again), a share of the time each.
levels="$(sed -n 's/.*static constexpr std::string_view name = "\([a-z0-9-]*\)";.*/\1/p' kernels/common/cpu_kernel.hpp)"
runs="npy journal command_line"
for level in $levels; do runs="$runs similarity_methods:$level"; done
for run in $runs; do
  target="${run%%:*}" level="${run#*:}"
  [ "$level" = "$run" ] && level=""
  time_here="$seconds"
  [ -n "$level" ] && time_here=$(( (seconds + $(echo $levels | wc -w) - 1) / $(echo $levels | wc -w) ))
  echo "fuzz: $target${level:+ at the $level level} for ${time_here} s"
  corpus="build-fuzz/corpus/$target"
  log="fuzz_$target${level:+_$level}.log"
  mkdir -p "$corpus"
  (cd build-fuzz && env ${level:+HPCML_CPU_KERNEL=$level} "./bin/fuzz_$target" -max_total_time="$time_here" -timeout=10 \
     -rss_limit_mb=2048 -print_final_stats=1 "corpus/$target" "../tests/fuzz/corpus/$target" >"$log" 2>&1) || {
    tail -40 "build-fuzz/$log"
    echo "fuzz: fuzz_$target failed; the input is in build-fuzz/"
    exit 1
  }
  grep -E "^stat::(number_of_executed_units|new_units_added|peak_rss_mb)" "build-fuzz/$log" || true
done
echo "fuzz: clean"
