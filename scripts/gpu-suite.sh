#!/usr/bin/env bash
# The GPU suite: three calls on a lent GPU machine, from the bundle scripts/gpu-prepare.sh built
# (carry ".gpu"); docs/gpu-suite.md says how to run it and what to commit. Each call works on a
# bare machine by itself: it unpacks the bundle into .gpu/bundle (filling in this checkout's paths),
# installs the wheel into .gpu/site, finds CUDA's libraries, records the environment, then runs
# its parts, each under a time limit derived from the call's budget.
#
#   scripts/gpu-suite.sh tests     budget 450 s: devicequery, ctest (every C++ test, the GPU ones
#                                  too), pytest (CuPy and torch arrays included), the main job
#   scripts/gpu-suite.sh sanitize  budget 540 s: compute-sanitizer memcheck (leaks, stream-ordered
#                                  races), racecheck, synccheck, initcheck over the GPU test cases
#   scripts/gpu-suite.sh bench     budget 510 s: the similarity kernel against its floor, the real
#                                  case (bitmask and pairs) beside the seed's torch.compile program,
#                                  regret at 16384^2, the main job under hpcml-trace, comparisons
#   scripts/gpu-suite.sh CALL [--results DIR]
#   scripts/gpu-suite.sh --budgets      each call's budget in seconds (they add up to 25 minutes)
#
# Results go to bench/results/gpu-<date>-<commit>/ (--results DIR to choose): a log per part,
# JSON per benchmark, environment.txt and summary-CALL.txt; under the device tool they are packed
# into $OUT/gpu-results-CALL.tgz after every part, so a call cut short still returns its parts.
# A part's limit is its weight's share of what is left of the budget, so time a part leaves
# unused goes to the next. Exit 0 when every part passed (or was skipped for a stated reason).
#
# For the rehearsal on a machine without a GPU (scripts/gpu-rehearse.sh):
#   HPCML_GPU_SUITE_SCALE=tiny      every program at a tiny size: proves it loads and starts
#   HPCML_GPU_SUITE_EXPECT_GPU=0    a part that ends with "no CUDA device" is a skip, not a failure
set -uo pipefail
cd "$(dirname "$0")/.." || exit 1
root="$PWD"
call=""
results=""
while [ $# -gt 0 ]; do
  case "$1" in
    --results) results="${2:?--results needs a folder}"; shift 2 ;;
    tests|sanitize|bench) [ -z "$call" ] || { echo "gpu-suite: one call at a time" >&2; exit 1; }; call="$1"; shift ;;
    --budgets) echo "tests 450"; echo "sanitize 540"; echo "bench 510"; exit 0 ;;  # seconds a call may take
    -h|--help) sed -n '2,30p' "$0"; exit 0 ;;
    *) echo "gpu-suite: unknown call or option '$1' (see --help)" >&2; exit 1 ;;
  esac
done
[ -n "$call" ] || { sed -n '2,30p' "$0"; exit 1; }
budget="$("$0" --budgets | sed -n "s/^$call //p")"
scale="${HPCML_GPU_SUITE_SCALE:-full}"
expect_gpu="${HPCML_GPU_SUITE_EXPECT_GPU:-1}"
[ "$scale" = full ] || [ "$scale" = tiny ] || { echo "gpu-suite: HPCML_GPU_SUITE_SCALE is full or tiny" >&2; exit 1; }

# --- the bundle, unpacked where this checkout is ---------------------------------------------
bundle="$root/.gpu/bundle"
[ -f .gpu/bundle.tar.xz ] || { echo "gpu-suite: no .gpu/bundle.tar.xz: run scripts/gpu-prepare.sh and carry .gpu" >&2; exit 1; }
stamp="$(sha256sum .gpu/bundle.tar.xz | cut -d' ' -f1) $root"
if [ "$(cat .gpu/unpacked 2>/dev/null)" != "$stamp" ]; then  # a warm machine keeps the last one
  rm -rf "$bundle" .gpu/site && mkdir -p "$bundle" && tar -xJf .gpu/bundle.tar.xz -C "$bundle" ||
    { echo "gpu-suite: cannot unpack .gpu/bundle.tar.xz" >&2; exit 1; }
  cuobjdump="$(command -v cuobjdump || echo /usr/local/cuda/bin/cuobjdump)"
  while IFS= read -r file; do
    sed -i -e "s|@HPCML_BUILD_DIR@|$bundle/build|g" -e "s|@HPCML_SOURCE_DIR@|$root|g" \
           -e "s|@HPCML_CMAKE@|$(command -v cmake)|g" -e "s|@HPCML_CUOBJDUMP@|$cuobjdump|g" "$bundle/$file"
  done < "$bundle/relocate.list"
  echo "$stamp" > .gpu/unpacked
fi
build="$bundle/build"
bundle_commit="$(sed -n 's/^commit: //p' "$bundle/bundle-info.txt")"
bundle_dirty="$(sed -n 's/^uncommitted changes: //p' "$bundle/bundle-info.txt")"
commit_note="hpcml ${bundle_commit:-unknown} (uncommitted changes: ${bundle_dirty:-unknown})"  # heads every result file
results="${results:-bench/results/gpu-$(date -u +%Y-%m-%d)-${bundle_commit:0:12}}"
mkdir -p "$results" || exit 1
results="$(cd "$results" && pwd)"

# --- the environment: CUDA's libraries, the wheel ---------------------------------------------
# libcublas.so.13 and the rest: the toolkit's folders and the NVIDIA wheels of this Python
# (site-packages/nvidia/*/lib), wherever they exist here.
library_path="$bundle/lib"
for dir in /usr/local/cuda/lib64 /usr/local/cuda/lib /usr/local/cuda/targets/x86_64-linux/lib \
           $(python3 -c "import glob, site; print(' '.join(sorted({d for p in site.getsitepackages() for d in glob.glob(p + '/nvidia/*/lib')})))" 2>/dev/null); do
  [ -d "$dir" ] && library_path="$library_path:$dir"
done
export LD_LIBRARY_PATH="$library_path${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
export PATH="/usr/local/cuda/bin:$PATH" HPCML_QUIET=1 PIP_ROOT_USER_ACTION=ignore PYTHONUNBUFFERED=1
export PYTHONPATH="$root/.gpu/site" HPCML_BIN_DIR="$build/bin" HPCML_FAKE_NVML="$build/tests/libfake_nvml.so"
export HPCML_TEST_DATA="$root/tests/data"  # for test_telemetry run outside ctest (the sanitizers)
if [ ! -d .gpu/site ]; then
  echo "# $commit_note" > "$results/pip-$call.log"
  python3 -m pip install -q --no-index --no-deps --target .gpu/site "$bundle"/wheels/*.whl >> "$results/pip-$call.log" 2>&1 ||
    { echo "gpu-suite: cannot install the wheel (see $results/pip-$call.log)" >&2; exit 1; }
fi

{
  echo "# $commit_note"
  echo "date: $(date -u +%Y-%m-%dT%H:%M:%SZ)"
  echo "call: $call (scale $scale)"
  sed 's/^/bundle /' "$bundle/bundle-info.txt"
  echo "gpu: $(nvidia-smi --query-gpu=name,driver_version,memory.total,clocks.max.sm --format=csv,noheader 2>/dev/null | head -n 1 || echo none)"
  echo "python: $(python3 -c 'import sys; print(sys.version.split()[0])' 2>&1)," \
       "torch $(python3 -c 'import torch; print(torch.__version__)' 2>/dev/null || echo absent)," \
       "cupy $(python3 -c 'import cupy; print(cupy.__version__)' 2>/dev/null || echo absent)"
  echo "cmake: $(cmake --version | head -n 1); compute-sanitizer: $(compute-sanitizer --version 2>/dev/null | tail -n 1 || echo absent)"
  echo "LD_LIBRARY_PATH: $LD_LIBRARY_PATH"
  echo "--- ldd of every carried binary"
  for binary in "$build"/bin/* "$build"/tests/*.so .gpu/site/hpcml/_hpcml*.so; do
    echo "$binary:"; ldd "$binary" 2>&1 | sed 's/^/  /'
  done
} > "$results/environment-$call.txt" 2>&1

# --- parts -----------------------------------------------------------------------------------
summary=()
failed=0
no_device='no (usable )?CUDA device|no GPU telemetry'
common=(--benchmark_repetitions=3 --benchmark_report_aggregates_only=true --benchmark_out_format=json
        "--benchmark_context=hpcml_bundle_commit=${bundle_commit:-unknown}")
weights_left=0
counting=0
skip_reason=""  # set by a call whose remaining parts cannot run (compute-sanitizer refused)

# part WEIGHT NAME LOG COMMAND...: runs COMMAND with a limit of WEIGHT's share of what is left.
part() {
  local weight=$1 name=$2 log="$results/$3"; shift 3
  if [ "$counting" = 1 ]; then weights_left=$((weights_left + weight)); return 0; fi
  local left=$((budget - SECONDS - 15))  # the budget counts from the script's start; 15 s to pack up
  local limit=$((left * weight / weights_left))
  weights_left=$((weights_left - weight))
  local start=$SECONDS rc outcome
  echo "== $name (limit ${limit}s)"
  echo "# $name | $commit_note | $(date -u +%Y-%m-%dT%H:%M:%SZ) | limit ${limit}s | $*" > "$log"
  if [ -n "$skip_reason" ]; then
    echo "skipped: $skip_reason" >> "$log"
    outcome="skip ($skip_reason)"
  elif [ "$limit" -lt 5 ]; then
    echo "not run: the call's budget is spent" >> "$log"
    outcome="NOT RUN (budget spent)"; failed=1
  else
    # bash -c, so that this script's functions (exported below) run under the limit too.
    timeout --kill-after=10 "$limit" bash -c '"$@"' part "$@" >> "$log" 2>&1
    rc=$?
    if [ $rc -eq 0 ]; then
      outcome=pass
    elif [ $rc -eq 124 ] || [ $rc -eq 137 ]; then
      outcome="TIMED OUT"; failed=1
    elif [ $rc -eq 2 ] && grep -qiE "$no_device" "$log"; then
      if [ "$expect_gpu" = 1 ]; then outcome="FAIL (no CUDA device)"; failed=1; else outcome="skip (no CUDA device)"; fi
    else
      outcome="FAIL ($rc)"; failed=1
    fi
  fi
  summary+=("$(printf '%-36s %-26s %4ds  %s' "$name" "$outcome" $((SECONDS - start)) "$(basename "$log")")")
  printf '%s\n' "# $commit_note" "${summary[@]}" > "$results/summary-$call.txt"
  [ -z "${OUT:-}" ] || tar -czf "$OUT/gpu-results-$call.tgz" -C "$(dirname "$results")" "$(basename "$results")"
  tail -n 3 "$log"
}

# The sizes: the real ones, or tiny ones for the rehearsal (every program still starts).
if [ "$scale" = full ]; then
  main_job=(--tile 1000)
  sim_large=(--dim 16384 --tile 4096)
  real=(256 270725) real_bands=4
  regret_large=(--actions 16384 --iterations 20) regret_batch=(--actions 3 --batch 100000 --iterations 1000)
  torch_regret_batch=(--actions 3 --batch 100000 --iterations 200)
  invgauss=(--elements 100000000 --params 10000 --grid 100000)
else
  main_job=(--samples 16 --dim 64 --tile 16)
  sim_large=(--samples 16 --dim 128 --tile 64)
  real=(16 2500) real_bands=1
  regret_large=(--actions 64 --iterations 2) regret_batch=(--actions 3 --batch 100 --iterations 10)
  torch_regret_batch=(--actions 3 --batch 100 --iterations 10)
  invgauss=(--elements 10000 --params 10 --grid 100)
fi

gtest_gpu_cases() {  # the family suites' GPU cases (their CPU instances gain nothing under a sanitizer)
  case "$1" in
    # The 4.36 GB output test is left to ctest: under a sanitizer it would outlast its limit.
    test_similarity|test_regret|test_invgauss) echo "--gtest_filter=*/cuda:*Cuda*:-SimilarityCuda.OutputOverFourGiB" ;;
  esac
}
# sanitize TOOL PROGRAM: every test program releases hpcml's caches and resets its devices at
# its end (tests/support/teardown.cpp), so leaks are reported against a torn-down context.
# --report-api-errors no: the tests make failing CUDA calls on purpose (an impossible allocation,
# a host pointer where device memory is needed), and hpcml checks every call itself.
# --require-cuda-init yes: a program that never reached CUDA would prove nothing.
sanitize() {
  local tool=$1 program=$2
  local options=(--tool "$tool" --error-exitcode 1 --report-api-errors no --require-cuda-init yes)
  [ "$tool" = memcheck ] && options+=(--leak-check full --track-stream-ordered-races all)
  # shellcheck disable=SC2046  # the filter is one word or none
  compute-sanitizer "${options[@]}" "$build/bin/$program" --gtest_brief=1 $(gtest_gpu_cases "$program")
}
# real_case SAMPLES FEATURES OPTION...: the real case end to end on one GPU, x = randn(256, 270725)
# to a bitmask file or a pair list.
real_case() {
  local input="$TMPDIR/real_x.npy" output="$TMPDIR/real_s.npy" rc
  python3 -c "import sys, numpy as np; np.save(sys.argv[1], np.random.default_rng(0).standard_normal((int(sys.argv[2]), int(sys.argv[3]))).astype(np.float32))" \
    "$input" "$1" "$2" || return 1
  shift 2
  $([ -x /usr/bin/time ] && echo /usr/bin/time -v) "$build/bin/hpcml-similarity" "$input" --output "$output" --mode all \
    --tile 1000 --backend cuda "$@"
  rc=$?
  ls -l "$output" 2>/dev/null
  rm -rf "$input" "$output" "$output.journal"
  return $rc
}
export build TMPDIR="${TMPDIR:-/tmp}"
export -f gtest_gpu_cases sanitize real_case

parts_tests() {
  part 1 devicequery devicequery.txt "$build/bin/hpcml-devicequery"
  # default_kernel_images checks what a default build holds, invgauss_cpu_loops_vectorised and
  # sass_budgets the build's objects (not in the bundle): questions for the build machine.
  part 12 ctest ctest.log ctest --test-dir "$build" --output-on-failure -j 4 \
    -E 'default_kernel_images|invgauss_cpu_loops_vectorised|sass_budgets'
  part 12 pytest pytest.log python3 -m pytest tests/python -q -rs -p no:cacheprovider
  part 2 "main job" bench_similarity_tile1000.log "$build/bin/bench_similarity" "${main_job[@]}" --backend cuda \
    "${common[@]}" --benchmark_out="$results/bench_similarity_tile1000.json"
}
parts_sanitize() {
  part 4 "memcheck test_similarity" memcheck_test_similarity.log sanitize memcheck test_similarity
  part 3 "memcheck test_regret" memcheck_test_regret.log sanitize memcheck test_regret
  part 2 "memcheck test_invgauss" memcheck_test_invgauss.log sanitize memcheck test_invgauss
  part 1 "memcheck test_core" memcheck_test_core.log sanitize memcheck test_core
  part 1 "memcheck test_telemetry" memcheck_test_telemetry.log sanitize memcheck test_telemetry
  part 3 "racecheck test_similarity" racecheck_test_similarity.log sanitize racecheck test_similarity
  part 2 "racecheck test_regret" racecheck_test_regret.log sanitize racecheck test_regret
  part 2 "synccheck test_similarity" synccheck_test_similarity.log sanitize synccheck test_similarity
  part 1 "synccheck test_regret" synccheck_test_regret.log sanitize synccheck test_regret
  part 2 "initcheck test_similarity" initcheck_test_similarity.log sanitize initcheck test_similarity
  part 1 "initcheck test_regret" initcheck_test_regret.log sanitize initcheck test_regret
  part 1 "initcheck test_invgauss" initcheck_test_invgauss.log sanitize initcheck test_invgauss
}
parts_bench() {  # the most wanted first
  part 2 "similarity kernel on device arrays" bench_similarity_large_device.log "$build/bin/bench_similarity" \
    "${sim_large[@]}" --where device --method fused --backend cuda "${common[@]}" \
    --benchmark_out="$results/bench_similarity_large_device.json"
  part 5 "real case: bitmask file" real_case_bitmask.log real_case "${real[@]}" --dtype bitmask
  part 4 "real case: pair list" real_case_pairs.log real_case "${real[@]}" --pairs
  part 8 "real case: the seed's program" compare_torch_real_case.log python3 bench/compare_torch_real_case.py \
    --samples "${real[0]}" --dim "${real[1]}" --bands "$real_bands"
  part 2 "regret 16384^2" bench_regret_large.log "$build/bin/bench_regret" "${regret_large[@]}" --alternating false \
    --backend cuda "${common[@]}" --benchmark_out="$results/bench_regret_large.json"
  part 4 "regret 16384^2 beside PyTorch" compare_torch_regret_large.log python3 bench/compare_torch_regret.py \
    "${regret_large[@]}"
  part 2 "main job under hpcml-trace" trace.log "$build/bin/hpcml-trace" --output "$results/trace_main_job.csv" -- \
    "$build/bin/bench_similarity" "${main_job[@]}" --backend cuda --benchmark_min_time=1
  # The host side of a call: the main job on device arrays (kernels only, beside the tests call's
  # host-array run), and a call so small that it is all overhead.
  part 1 "main job on device arrays" bench_similarity_tile1000_device.log "$build/bin/bench_similarity" "${main_job[@]}" \
    --where device --method fused --backend cuda "${common[@]}" --benchmark_out="$results/bench_similarity_tile1000_device.json"
  part 1 "similarity per-call overhead" bench_similarity_overhead.log "$build/bin/bench_similarity" --samples 16 --dim 128 \
    --method fused --symmetric on --backend cuda "${common[@]}" --benchmark_out="$results/bench_similarity_overhead.json"
  part 3 "similarity beside PyTorch" compare_torch.log python3 bench/compare_torch.py "${sim_large[@]}" --skip-eager
  part 2 "invgauss" bench_invgauss.log "$build/bin/bench_invgauss" "${invgauss[@]}" --backend cuda "${common[@]}" \
    --benchmark_out="$results/bench_invgauss.json"
  part 2 "regret 1e5 games of 3x3" bench_regret_batch.log "$build/bin/bench_regret" "${regret_batch[@]}" --method fused \
    --backend cuda "${common[@]}" --benchmark_out="$results/bench_regret_batch.json"
  part 3 "regret 1e5 x 3x3 beside PyTorch" compare_torch_regret_batch.log python3 bench/compare_torch_regret.py \
    "${torch_regret_batch[@]}"
  part 3 "examples: the seeds beside hpcml" examples.log sh -c 'python3 examples/invgauss/run.py --backend cuda \
    --output "$1/invgauss_figure.png" && python3 examples/devicequery/run.py --tool "$2/hpcml-devicequery" &&
    python3 examples/trace/run.py --tool "$2/hpcml-trace" --seconds 5 --out-dir "$1/trace_example" &&
    python3 examples/similarity/run.py --device cuda --features 20000 &&
    python3 examples/regret/run.py --device cuda --iterations 100 --compile-mode default' sh "$results" "$build/bin"
}

if [ "$call" = sanitize ]; then
  # Some GPU machines refuse compute-sanitizer ("Device not supported"): a skip with its message.
  if ! command -v compute-sanitizer >/dev/null; then
    skip_reason="compute-sanitizer is not installed"
  else
    probe="$results/compute-sanitizer-probe.txt"
    echo "# $commit_note | compute-sanitizer --tool memcheck hpcml-devicequery" > "$probe"
    timeout 60 compute-sanitizer --tool memcheck "$build/bin/hpcml-devicequery" >> "$probe" 2>&1
    if grep -q "Device not supported" "$probe"; then  # the whole message is in the probe's file
      skip_reason="compute-sanitizer: Device not supported, see $(basename "$probe")"
    fi
  fi
fi
counting=1; "parts_$call"; counting=0
"parts_$call"
if [ "$call" = bench ] && [ -f "$bundle/sass_report.json" ]; then
  # The machine-code report's predictions (made where the bundle was built) beside what the
  # benchmarks measured, kernel by kernel (docs/machine-code.md): a second, outside the budgets.
  { echo "# $commit_note"; python3 bench/sass_report.py --report "$bundle/sass_report.json" --measured "$results"; } \
    > "$results/sass_measured.log" 2>&1 || failed=1
  [ -z "${OUT:-}" ] || tar -czf "$OUT/gpu-results-$call.tgz" -C "$(dirname "$results")" "$(basename "$results")"
fi

echo
echo "GPU suite, $call: $commit_note; $(sed -n 's/^gpu: //p' "$results/environment-$call.txt")"
printf '%s\n' "${summary[@]}"
grep -h "summary:" "$results"/bench_*.log 2>/dev/null
grep -h -e "^[a-z].*floor:" -e "  measured:" "$results/sass_measured.log" 2>/dev/null
if grep -q "=> not found" "$results/environment-$call.txt"; then
  echo "gpu-suite: a carried binary misses a library (see environment-$call.txt):"
  grep "=> not found" "$results/environment-$call.txt" | sort -u
  failed=1
fi
exit $failed
