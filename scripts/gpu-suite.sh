#!/usr/bin/env bash
# The GPU suite: what a session with the lent H100/H200 runs there (see README, "On a GPU
# machine"). Builds for sm_90, runs every test including the GPU ones, compute-sanitizer
# memcheck on the GPU tests, the benchmarks with JSON output, the PyTorch comparison, and
# prints a summary table last. Results go to the folder given as $1 (default
# bench/results/gpu-<date>), ready to commit.
#
# The GPU machine has nvcc, cmake, ninja and Python with torch but no network and probably no
# gtest, Google Benchmark or Eigen: scripts/fetch-gpu-deps.sh prepares .deps/ for it (carried).
set -uo pipefail
cd "$(dirname "$0")/.."
results="${1:-bench/results/gpu-$(date +%Y-%m-%d)}"
mkdir -p "$results"
build=build-gpu
export HPCML_QUIET=1 PIP_ROOT_USER_ACTION=ignore PATH="/usr/local/cuda/bin:$PATH"
if [ -d .deps/root ]; then
  export CMAKE_PREFIX_PATH="$PWD/.deps/root/usr:$PWD/.deps/root/usr/share/eigen3/cmake${CMAKE_PREFIX_PATH:+:$CMAKE_PREFIX_PATH}"
  export LD_LIBRARY_PATH="$PWD/.deps/root/usr/lib/x86_64-linux-gnu${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
  export CPATH="$PWD/.deps/root/usr/include${CPATH:+:$CPATH}"
fi
declare -A status
step() {  # step NAME LOGFILE COMMAND...: runs, logs, records pass/fail
  local name=$1 log=$2; shift 2
  echo "== $name"
  if "$@" >"$log" 2>&1; then status[$name]=pass; else status[$name]="FAIL (see $(basename "$log"))"; fi
  tail -n 5 "$log"
}

{ date -u +"date: %Y-%m-%dT%H:%M:%SZ"; echo "commit: $(git rev-parse HEAD 2>/dev/null || echo unknown)";
  nvidia-smi --query-gpu=name,driver_version,memory.total,clocks.max.sm --format=csv,noheader 2>/dev/null; } \
  > "$results/environment.txt"

# nvml.h (for the telemetry) and the Python build backend, from the carried wheels.
python3 -m pip install --no-index --find-links .deps/wheels -q nvidia-nvml-dev scikit-build-core 2>/dev/null || true
step configure "$results/build.log" cmake -S . -B "$build" -G Ninja -DCMAKE_BUILD_TYPE=Release -DCMAKE_CUDA_ARCHITECTURES=90
step build "$results/build.log" cmake --build "$build"
"$build/bin/hpcml-devicequery" > "$results/devicequery.txt" 2>&1
step ctest "$results/tests.log" ctest --test-dir "$build" --output-on-failure -j 4
memcheck() {
  for t in test_core test_similarity test_regret test_invgauss test_telemetry; do
    compute-sanitizer --tool memcheck --error-exitcode 1 --leak-check full "$build/bin/$t" \
      --gtest_filter='*Cuda*' || return 1
  done
}
step memcheck "$results/memcheck.log" memcheck
pytests() {
  python3 -m pip install --no-build-isolation --no-index --find-links .deps/wheels -q scikit-build-core 2>/dev/null || true
  python3 -m pip install --no-build-isolation -q ./python && python3 -m pytest tests/python -q
}
step pytest "$results/tests.log.python" pytests
benches() {
  local b="$build/bin/bench_similarity" common=(--benchmark_repetitions=3 --benchmark_report_aggregates_only=true --benchmark_out_format=json)
  "$b" --tile 1000 "${common[@]}" --benchmark_out="$results/bench_similarity_tile1000.json" &&
  "$b" --dim 16384 --tile 4096 "${common[@]}" --benchmark_out="$results/bench_similarity_16384.json" &&
  "$b" --dim 16384 --tile 4096 --mode all --method fused "${common[@]}" --benchmark_out="$results/bench_similarity_16384_all.json" &&
  "$b" --dim 270725 --tile 1000 --mode all --dtype bitmask --method fused --benchmark_min_time=0 \
       --benchmark_out_format=json --benchmark_out="$results/bench_similarity_real_case.json" &&
  "$b" --dim 270725 --tile 1000 --mode all --dtype bitmask --method fused --where device --benchmark_min_time=0 &&
  local r="$build/bin/bench_regret"
  "$r" --actions 16384 --iterations 20 --alternating false "${common[@]}" --benchmark_out="$results/bench_regret_16384.json" &&
  "$r" --actions 3 --batch 100000 --iterations 1000 --method fused "${common[@]}" --benchmark_out="$results/bench_regret_batch.json" &&
  "$build/bin/bench_invgauss" --elements 100000000 --params 10000 --grid 100000 "${common[@]}" \
      --benchmark_out="$results/bench_invgauss.json"
}
step bench "$results/bench.log" benches
traced() {  # the main job under the NVML tracer, and the seed's figure of the trace
  "$build/bin/hpcml-trace" --output "$results/trace_bench_similarity.csv" -- "$build/bin/bench_similarity" --tile 1000 &&
  python3 -c "import hpcml, sys; hpcml.telemetry.plot(sys.argv[1], sys.argv[2])" \
      "$results/trace_bench_similarity.csv" "$results/trace_bench_similarity.png"
}
step trace "$results/trace.log" traced
real_case() {  # the real similarity job end to end on one GPU: 256 x 270725, all, bitmask to a file
  python3 -c "import numpy as np; np.save('/tmp/real_x.npy', np.random.default_rng(0).standard_normal((256, 270725)).astype(np.float32))" &&
  /usr/bin/time -v "$build/bin/hpcml-similarity" /tmp/real_x.npy --output /tmp/real_s.npy --mode all --dtype bitmask --tile 1000
  local rc=$?
  rm -rf /tmp/real_x.npy /tmp/real_s.npy /tmp/real_s.npy.journal
  return $rc
}
step real_case "$results/real_case.log" real_case
compare_torch() {
  python3 bench/compare_torch.py --dim 16384 --tile 4096 --skip-eager &&
  python3 bench/compare_torch_regret.py --actions 16384 --iterations 20 &&
  python3 bench/compare_torch_regret.py --actions 3 --batch 100000 --iterations 200  # torch.compile unrolls the loop
}
step compare_torch "$results/compare_torch.log" compare_torch

echo
echo "GPU suite summary ($(head -n 3 "$results/environment.txt" | tr '\n' ' '))"
printf '%-14s %s\n' step result
for name in configure build ctest memcheck pytest bench trace real_case compare_torch; do printf '%-14s %s\n' "$name" "${status[$name]:-not run}"; done
grep -h "summary:" "$results/bench.log" 2>/dev/null
for name in "${!status[@]}"; do [ "${status[$name]}" = pass ] || exit 1; done
