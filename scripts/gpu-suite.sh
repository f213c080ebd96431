#!/usr/bin/env bash
# The GPU suite, run on a lent H100/H200 from the bundle that scripts/gpu-prepare.sh made on the
# development machine (carry ".gpu"). Nothing is compiled here except the find_package
# consumer test's small project. It runs in steps, each well inside the device tool's 10 minutes
# a command; each step writes its logs and results under RESULTS (default bench/results/
# gpu-<date>) and, under the device tool, packs them into $OUT/gpu-results.tgz after every part
# (the tool returns at most 8 files, and what a killed command left). It ends with a summary
# line per part.
#
#   scripts/gpu-suite.sh tests           devicequery, ctest: every C++ test, the GPU ones included
#   scripts/gpu-suite.sh memcheck        compute-sanitizer memcheck (leaks too) over every C++ suite's GPU cases
#   scripts/gpu-suite.sh racecheck       racecheck and synccheck over similarity's and regret's GPU cases
#   scripts/gpu-suite.sh initcheck       initcheck over every C++ suite's GPU cases
#   scripts/gpu-suite.sh python          pytest with the carried wheel (CuPy and torch arrays included)
#   scripts/gpu-suite.sh bench           bench_similarity (main job, 16384^2 count and all, on device arrays with and
#                                        without symmetry), bench_regret 16384^2
#   scripts/gpu-suite.sh trace           bench_regret 1e5 x 3x3, bench_invgauss, the main job under hpcml-trace,
#                                        the main job's host-side cost (host arrays against device arrays)
#   scripts/gpu-suite.sh compare         the real similarity case end to end, PyTorch side by side
#   scripts/gpu-suite.sh compare-regret  the seed's regret matching in PyTorch beside hpcml
#   scripts/gpu-suite.sh STEP... [--results DIR]
#
# Each step's parts add up to at most 500 s of limits; a part that outlives its own limit is
# stopped and reported as such, and the step goes on.
set -uo pipefail
cd "$(dirname "$0")/.." || exit 1
steps=()
results=""
while [ $# -gt 0 ]; do
  case "$1" in
    --results) results="$2"; shift 2 ;;
    tests|memcheck|racecheck|initcheck|python|bench|trace|compare|compare-regret) steps+=("$1"); shift ;;
    -h|--help) sed -n '2,24p' "$0"; exit 0 ;;
    *) echo "gpu-suite: unknown step or option '$1' (see --help)" >&2; exit 1 ;;
  esac
done
[ ${#steps[@]} -gt 0 ] || { sed -n '2,24p' "$0"; exit 1; }
results="${results:-bench/results/gpu-$(date +%Y-%m-%d)}"
mkdir -p "$results"

# The bundle's absolute paths (CTest files, test data) name the development checkout,
# /work/main: make that path this checkout.
if [ "$(pwd -P)" != /work/main ]; then
  if [ -e /work/main ] && [ ! -L /work/main ]; then
    echo "gpu-suite: /work/main exists and is not this checkout: run the suite from /work/main" >&2
    exit 1
  fi
  mkdir -p /work && ln -sfn "$(pwd -P)" /work/main || { echo "gpu-suite: cannot link /work/main" >&2; exit 1; }
fi
cd /work/main || exit 1
[ -f .gpu/bundle.tar.xz ] || { echo "gpu-suite: no .gpu/bundle.tar.xz: run scripts/gpu-prepare.sh and carry .gpu" >&2; exit 1; }
# A warm machine keeps the last bundle's files: unpack again when the bundle changed.
bundle_sum="$(sha256sum .gpu/bundle.tar.xz | cut -d' ' -f1)"
if [ "$(cat .gpu/unpacked.sha256 2>/dev/null)" != "$bundle_sum" ]; then
  rm -rf build-gpu .gpu/wheels .gpu/lib
  tar -xJf .gpu/bundle.tar.xz && echo "$bundle_sum" > .gpu/unpacked.sha256
fi
build="build-gpu"
export HPCML_QUIET=1 PIP_ROOT_USER_ACTION=ignore PYTHONUNBUFFERED=1 PATH="/usr/local/cuda/bin:$PATH"
export LD_LIBRARY_PATH="/work/main/.gpu/lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
{ date -u +"date: %Y-%m-%dT%H:%M:%SZ"; echo "commit: $(git rev-parse HEAD 2>/dev/null || echo unknown)";
  nvidia-smi --query-gpu=name,driver_version,memory.total,clocks.max.sm --format=csv,noheader 2>/dev/null; } \
  > "$results/environment.txt"

summary=()
# part NAME SECONDS LOG COMMAND...: runs with a time limit, logs, records the outcome.
part() {
  local name=$1 limit=$2 log="$results/$3"; shift 3
  local start=$SECONDS rc
  echo "== $name (limit ${limit}s)"
  # bash -c, so that the step's own functions (exported below) run under the limit too.
  timeout --kill-after=10 "$limit" bash -c '"$@"' part "$@" >"$log" 2>&1
  rc=$?
  local outcome=pass
  if [ $rc -eq 124 ] || [ $rc -eq 137 ]; then outcome="TIMED OUT"; elif [ $rc -ne 0 ]; then outcome="FAIL ($rc)"; fi
  summary+=("$(printf '%-34s %-12s %4ds  %s' "$name" "$outcome" $((SECONDS - start)) "$(basename "$log")")")
  printf '%s\n' "${summary[@]}" > "$results/summary-$(IFS=-; echo "${steps[*]}").txt"
  [ -n "${OUT:-}" ] && tar -czf "$OUT/gpu-results.tgz" -C "$results" .
  tail -n 3 "$log"
}

tests=(test_core test_similarity test_regret test_invgauss test_telemetry)
sanitize() {  # sanitize TOOL BINARY...: each test binary's GPU cases under compute-sanitizer
  local tool=$1 rc=0; shift
  for t in "$@"; do
    echo "--- $tool $t"
    # The family suites' CPU instances gain nothing under the sanitizer and cost minutes.
    local only_gpu=()
    # The 4.36 GB output test is left to ctest: under a sanitizer it would outlast the limit.
    case "$t" in test_similarity|test_regret|test_invgauss) only_gpu=("--gtest_filter=*/cuda:*Cuda*:-SimilarityCuda.OutputOverFourGiB") ;; esac
    local leaks=()
    [ "$tool" = memcheck ] && leaks=(--leak-check full)
    compute-sanitizer --tool "$tool" --error-exitcode 1 "${leaks[@]}" "$build/bin/$t" --gtest_brief=1 "${only_gpu[@]}" || rc=1
  done
  return $rc
}

real_case() {  # the real similarity job end to end on one GPU: 256 x 270725, all, bitmask to a file
  python3 -c "import numpy as np; np.save('/tmp/real_x.npy', np.random.default_rng(0).standard_normal((256, 270725)).astype(np.float32))" &&
  $([ -x /usr/bin/time ] && echo /usr/bin/time -v) "$build/bin/hpcml-similarity" /tmp/real_x.npy --output /tmp/real_s.npy --mode all --dtype bitmask --tile 1000
  local rc=$?
  rm -rf /tmp/real_x.npy /tmp/real_s.npy /tmp/real_s.npy.journal
  return $rc
}
export build
export -f sanitize real_case
common=(--benchmark_repetitions=3 --benchmark_report_aggregates_only=true --benchmark_out_format=json)

for step in "${steps[@]}"; do
  case "$step" in
    tests)
      part devicequery 60 devicequery.txt "$build/bin/hpcml-devicequery"
      # default_kernel_images checks a default build's architectures, a question for the build machine.
      part ctest 420 ctest.log ctest --test-dir "$build" --output-on-failure -j 4 --timeout 300 -E default_kernel_images
      ;;
    memcheck)
      for t in "${tests[@]}"; do part "memcheck $t" 100 "memcheck_$t.log" sanitize memcheck "$t"; done
      ;;
    racecheck)
      for t in test_similarity test_regret; do
        part "racecheck $t" 130 "racecheck_$t.log" sanitize racecheck "$t"
        part "synccheck $t" 100 "synccheck_$t.log" sanitize synccheck "$t"
      done
      ;;
    initcheck)
      for t in "${tests[@]}"; do part "initcheck $t" 100 "initcheck_$t.log" sanitize initcheck "$t"; done
      ;;
    python)
      part "pip install wheel" 60 pip.log python3 -m pip install -q --no-deps --force-reinstall .gpu/wheels/*.whl
      HPCML_BIN_DIR="$PWD/$build/bin" HPCML_FAKE_NVML="$PWD/$build/tests/libfake_nvml.so" \
        part pytest 420 pytest.log python3 -m pytest tests/python -q -rs
      ;;
    bench)
      part "bench_similarity --tile 1000" 100 bench_similarity_tile1000.log \
        "$build/bin/bench_similarity" --tile 1000 "${common[@]}" --benchmark_out="$results/bench_similarity_tile1000.json"
      part "bench_similarity 16384" 150 bench_similarity_16384.log \
        "$build/bin/bench_similarity" --dim 16384 --tile 4096 "${common[@]}" --benchmark_out="$results/bench_similarity_16384.json"
      part "bench_similarity 16384 all" 90 bench_similarity_16384_all.log \
        "$build/bin/bench_similarity" --dim 16384 --tile 4096 --mode all --method fused "${common[@]}" \
        --benchmark_out="$results/bench_similarity_16384_all.json"
      part "bench_similarity 16384 device" 60 bench_similarity_16384_device.log \
        "$build/bin/bench_similarity" --dim 16384 --tile 4096 --where device --method fused "${common[@]}" \
        --benchmark_out="$results/bench_similarity_16384_device.json"
      part "bench_regret 16384" 100 bench_regret_16384.log \
        "$build/bin/bench_regret" --actions 16384 --iterations 20 --alternating false "${common[@]}" \
        --benchmark_out="$results/bench_regret_16384.json"
      ;;
    trace)
      part "bench_regret 1e5 x 3x3" 100 bench_regret_batch.log \
        "$build/bin/bench_regret" --actions 3 --batch 100000 --iterations 1000 --method fused "${common[@]}" \
        --benchmark_out="$results/bench_regret_batch.json"
      part "bench_invgauss" 150 bench_invgauss.log \
        "$build/bin/bench_invgauss" --elements 100000000 --params 10000 --grid 100000 "${common[@]}" \
        --benchmark_out="$results/bench_invgauss.json"
      part "trace of the main job" 120 trace.log \
        "$build/bin/hpcml-trace" --output "$results/trace_bench_similarity.csv" -- "$build/bin/bench_similarity" --tile 1000
      # Per-call cost of the main job beside bench's host-array run: the same call on device
      # arrays (kernels only), and a call so small that it is all overhead.
      part "main job on device arrays" 40 bench_similarity_tile1000_device.log \
        "$build/bin/bench_similarity" --tile 1000 --where device --method fused "${common[@]}" \
        --benchmark_out="$results/bench_similarity_tile1000_device.json"
      part "similarity per-call overhead" 40 bench_similarity_overhead.log \
        "$build/bin/bench_similarity" --samples 16 --dim 128 --method fused --symmetric on "${common[@]}" \
        --benchmark_out="$results/bench_similarity_overhead.json"
      ;;
    compare)
      part "similarity real case" 300 real_case.log real_case
      part "compare_torch similarity" 180 compare_torch.log python3 bench/compare_torch.py --dim 16384 --tile 4096 --skip-eager
      ;;
    compare-regret)
      part "compare_torch_regret 16384" 150 compare_torch_regret_16384.log \
        python3 bench/compare_torch_regret.py --actions 16384 --iterations 20
      part "compare_torch_regret 1e5 x 3x3" 300 compare_torch_regret_batch.log \
        python3 bench/compare_torch_regret.py --actions 3 --batch 100000 --iterations 200
      ;;
  esac
done

echo
echo "GPU suite: ${steps[*]} ($(head -n 3 "$results/environment.txt" | tr '\n' ' '))"
printf '%s\n' "${summary[@]}"
grep -h "summary:" "$results"/bench_*.log 2>/dev/null
for line in "${summary[@]}"; do case "$line" in *" pass "*) ;; *) exit 1 ;; esac; done
