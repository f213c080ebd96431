#!/usr/bin/env bash
# The GPU suite: what hpcml can only learn on a GPU, in two calls shaped for a GPU machine lent
# for a short window (docs/gpu-suite.md: the procedure, the parts, the cut list), from the bundle
# scripts/gpu-prepare.sh built (.gpu/bundle.tar.xz, beside scripts/). Each call works on a bare
# machine by itself: it unpacks the bundle into .gpu/bundle (filling in this checkout's paths),
# installs the wheel into .gpu/site, finds CUDA's libraries, records the environment, then runs
# its parts in order, most wanted first, each under a time limit derived from the call's budget.
#
#   scripts/gpu-suite.sh first   270 s: devicequery; the C++ GPU cases; the main job; the
#                                similarity kernel, regret and the inverse Gaussian against their
#                                floors, and the machine-code report's predictions beside them;
#                                the Python GPU cases; compute-sanitizer memcheck over
#                                similarity's and regret's GPU cases
#   scripts/gpu-suite.sh second  270 s: racecheck, synccheck, initcheck of the rest; memcheck over
#                                the rest; the pair list; the seed's regret program beside hpcml;
#                                the main job under hpcml-trace; the examples
#   scripts/gpu-suite.sh extra   270 s: the benchmarks cut from the two, the real case to a bitmask
#                                file and beside the seed's program, and test_regret's racecheck,
#                                synccheck and initcheck, for a window with time left after both
#   scripts/gpu-suite.sh CALL [--results DIR] [--archive DIR]
#   scripts/gpu-suite.sh --budgets   each call's budget, a machine start's cost and every part's
#                                    minimum, in seconds (scripts/gpu-rehearse.sh checks that they fit)
#
# Results go to bench/results/gpu-<date>-<commit>/ (--results DIR to choose): a log per part, JSON
# per benchmark, environment-CALL.txt and summary-CALL.txt. --archive DIR: the results folder is
# packed into DIR/gpu-results-CALL.tgz after every part, so a call cut short still returns every
# part it finished (name the folder your GPU machine sends back). A part's limit is its weight's
# share of what is left of the budget, at least its minimum, and never so much that a later part
# would get less than its own; a part whose minimum no longer fits is NOT RUN. Exit 0 when every
# part passed (or was skipped for a stated reason).
#
# For the rehearsal on a machine without a GPU (scripts/gpu-rehearse.sh):
#   HPCML_GPU_SUITE_SCALE=tiny      every program at a tiny size: proves it loads and starts
#   HPCML_GPU_SUITE_EXPECT_GPU=0    a part that ends with "no CUDA device" is a skip, not a failure
set -uo pipefail
cd "$(dirname "$0")/.." || exit 1
root="$PWD"
budget_seconds=270  # each call's budget: two calls and two machine starts fit a 15-minute window
start_seconds=150   # a machine start, with the idle wait before an unused machine goes back
pack_seconds=15     # kept at the end of a call to pack its results
usage() { sed -n '2,34p' "$0"; }
call=""
results=""
archive=""
budgets=0
while [ $# -gt 0 ]; do
  case "$1" in
    --results) results="${2:?--results needs a folder}"; shift 2 ;;
    --archive) archive="${2:?--archive needs a folder}"; shift 2 ;;
    first|second|extra) [ -z "$call" ] || { echo "gpu-suite: one call at a time" >&2; exit 1; }; call="$1"; shift ;;
    --budgets) budgets=1; shift ;;
    -h|--help) usage; exit 0 ;;
    *) echo "gpu-suite: unknown call or option '$1' (see --help)" >&2; exit 1 ;;
  esac
done
[ -n "$call" ] || [ "$budgets" = 1 ] || { usage; exit 1; }
scale="${HPCML_GPU_SUITE_SCALE:-full}"
expect_gpu="${HPCML_GPU_SUITE_EXPECT_GPU:-1}"
[ "$scale" = full ] || [ "$scale" = tiny ] || { echo "gpu-suite: HPCML_GPU_SUITE_SCALE is full or tiny" >&2; exit 1; }

# --- the parts ---------------------------------------------------------------------------------
# part WEIGHT MINIMUM NAME LOG COMMAND...: MINIMUM is the seconds below which the part cannot give
# a result on an H100 (a process's CUDA start, a compile, the data it must make), estimated until
# a GPU run measures it; WEIGHT shares out the rest of the budget. Later issues that add a GPU
# case or benchmark add it here, and the rehearsal checks that first still fits.

# The sizes: the real ones, or tiny ones for the rehearsal (every program still starts).
if [ "$scale" = full ]; then
  main_job=(--tile 1000)
  sim_large=(--dim 16384 --tile 4096)
  sim_all=(--dim 20000 --tile 4096)
  real=(256 270725) real_bands=2
  regret_large=(--actions 16384 --iterations 20) regret_batch=(--actions 3 --batch 100000 --iterations 1000)
  torch_regret_batch=(--actions 3 --batch 100000 --iterations 100)  # 200 outlasted 53 s (the compile)
  invgauss=(--elements 20000000 --params 1000 --grid 100000)  # 1e8 elements and 1e9 points outlasted 20 s
else
  main_job=(--samples 16 --dim 64 --tile 16)
  sim_large=(--samples 16 --dim 128 --tile 64)
  sim_all=(--samples 16 --dim 160 --tile 64)
  real=(16 2500) real_bands=1
  regret_large=(--actions 64 --iterations 2) regret_batch=(--actions 3 --batch 100 --iterations 10)
  torch_regret_batch=(--actions 3 --batch 100 --iterations 10)
  invgauss=(--elements 10000 --params 10 --grid 100)
fi
gpu_case_filter='*/cuda:*Cuda*'  # every C++ GPU case (the CPU cases run in CI on every commit)
gpu_case_programs="test_core test_similarity test_regret test_invgauss test_telemetry"
build="" common=()  # set once the bundle is unpacked (--budgets only lists the parts)

parts_first() {  # in the order of what matters most
  part 1 5 "devicequery and the host link" devicequery.txt devicequery
  part 8 30 "C++ GPU cases" cpp_gpu_cases.log cpp_gpu_cases
  part 2 10 "main job" bench_similarity_tile1000.log "$build/bin/bench_similarity" "${main_job[@]}" --backend cuda \
    "${common[@]}" --benchmark_out="$results/bench_similarity_tile1000.json"
  part 2 10 "similarity kernel floor" bench_similarity_large_device.log "$build/bin/bench_similarity" \
    "${sim_large[@]}" --where device --method fused --backend cuda "${common[@]}" \
    --benchmark_out="$results/bench_similarity_large_device.json"
  part 2 10 "similarity sorted kernel" bench_similarity_large_sorted.log "$build/bin/bench_similarity" \
    "${sim_large[@]}" --where device --method sorted --backend cuda "${common[@]}" \
    --benchmark_out="$results/bench_similarity_large_sorted.json"
  # The same kernel built for one block per SM (8 warps, no spilled planes) against the policy's 2.
  part 1 10 "sorted kernel, one block per SM" bench_similarity_large_sorted_one_block.log \
    env HPCML_SORTED_GPU_BLOCKS_PER_SM=1 "$build/bin/bench_similarity" "${sim_large[@]}" --where device \
    --method sorted --backend cuda "${common[@]}" --benchmark_out="$results/bench_similarity_large_sorted_one_block.json"
  # Mode all at 256 x 20000 (y = x, device arrays), fused beside sorted: with the two parts above
  # and the main job, the shapes where a GPU's auto will choose by measurement.
  part 2 10 "similarity mode all" bench_similarity_all_device.log "$build/bin/bench_similarity" \
    "${sim_all[@]}" --mode all --symmetric on --where device --method every --benchmark_filter='fused|sorted' \
    --backend cuda "${common[@]}" --benchmark_out="$results/bench_similarity_all_device.json"
  part 2 10 "regret 16384^2" bench_regret_large.log "$build/bin/bench_regret" "${regret_large[@]}" --alternating false \
    --where device --method fused --backend cuda "${common[@]}" --benchmark_out="$results/bench_regret_large.json"
  part 2 8 "invgauss 2e7" bench_invgauss.log "$build/bin/bench_invgauss" "${invgauss[@]}" --backend cuda "${common[@]}" \
    --benchmark_out="$results/bench_invgauss.json"
  part 1 2 "predicted beside measured" sass_measured.log sass_measured
  # Where the sorted kernel's time goes: it ran 7x below its prediction (docs/similarity.md).
  part 1 15 "profile of the sorted kernel" ncu_sorted.log ncu_profile sorted
  part 6 40 "Python GPU cases" pytest_gpu_cases.log python3 -m pytest tests/python -m cuda -v -rs -p no:cacheprovider
  part 3 20 "memcheck test_similarity" memcheck_test_similarity.log sanitize memcheck test_similarity
  part 3 20 "memcheck test_regret" memcheck_test_regret.log sanitize memcheck test_regret
}
parts_second() {
  part 2 10 "memcheck test_invgauss" memcheck_test_invgauss.log sanitize memcheck test_invgauss
  part 1 5 "memcheck test_core" memcheck_test_core.log sanitize memcheck test_core
  part 1 5 "memcheck test_telemetry" memcheck_test_telemetry.log sanitize memcheck test_telemetry
  part 3 15 "racecheck test_similarity" racecheck_test_similarity.log sanitize racecheck test_similarity
  part 2 10 "synccheck test_similarity" synccheck_test_similarity.log sanitize synccheck test_similarity
  part 2 10 "initcheck test_similarity" initcheck_test_similarity.log sanitize initcheck test_similarity
  part 1 5 "initcheck test_invgauss" initcheck_test_invgauss.log sanitize initcheck test_invgauss
  # The issue's command (tile 8192), auto (fused on a GPU until one has measured both) beside sorted.
  part 3 15 "real case: pair list" real_case_pairs.log real_case "${real[@]}" --methods "auto sorted" --pairs --tile 8192
  part 3 20 "regret 16384^2: the seed's program" compare_torch_regret_large.log python3 bench/compare_torch_regret.py \
    "${regret_large[@]}"
  part 2 10 "main job under hpcml-trace" trace.log "$build/bin/hpcml-trace" --strict --output "$results/trace_main_job.csv" -- \
    "$build/bin/bench_similarity" "${main_job[@]}" --backend cuda --benchmark_min_time=1
  part 2 20 "examples: figure, query, traces" examples.log examples
  # The seeds' torch.compile programs compile first: with the others before them in one part of
  # 91 s on an H200 (2026-11-28), the similarity example had not finished.
  part 4 110 "examples: the compiled seeds" examples_compiled.log examples_compiled
}
parts_extra() {
  # The host side of a call: the main job on device arrays (kernels only, beside first's
  # host-array run), and a call so small that it is all overhead.
  part 1 5 "main job on device arrays" bench_similarity_tile1000_device.log "$build/bin/bench_similarity" "${main_job[@]}" \
    --where device --method fused --backend cuda "${common[@]}" --benchmark_out="$results/bench_similarity_tile1000_device.json"
  part 1 5 "similarity per-call overhead" bench_similarity_overhead.log "$build/bin/bench_similarity" --samples 16 --dim 128 \
    --method fused --symmetric on --backend cuda "${common[@]}" --benchmark_out="$results/bench_similarity_overhead.json"
  part 3 30 "similarity beside torch.compile" compare_torch.log python3 bench/compare_torch.py "${sim_large[@]}" --skip-eager
  part 2 10 "regret 1e5 games of 3x3" bench_regret_batch.log "$build/bin/bench_regret" "${regret_batch[@]}" --method fused \
    --backend cuda "${common[@]}" --benchmark_out="$results/bench_regret_batch.json"
  part 3 25 "regret 1e5 x 3x3 beside PyTorch" compare_torch_regret_batch.log python3 bench/compare_torch_regret.py \
    "${torch_regret_batch[@]}"
  # From host arrays (the 1 GiB copy included, most of the fused call's time on an H200), fused beside naive.
  part 1 10 "regret 16384^2 from the host" bench_regret_large_host.log "$build/bin/bench_regret" "${regret_large[@]}" \
    --alternating false --backend cuda "${common[@]}" --benchmark_out="$results/bench_regret_large_host.json"
  # The real case end to end: 9.2 GB of bitmask, 54 s on an H200 machine (2026-11-28); the seed's
  # program compiles for about 35 s first.
  part 4 60 "real case: bitmask file" real_case_bitmask.log real_case "${real[@]}" --dtype bitmask
  part 3 60 "real case: the seed's program" compare_torch_real_case.log python3 bench/compare_torch_real_case.py \
    --samples "${real[0]}" --dim "${real[1]}" --bands "$real_bands"
  part 2 15 "profile of the fused kernel" ncu_fused.log ncu_profile fused
  # test_regret under the other sanitizers outlasted 20, 10 and 11 s in second (2026-11-28, H200).
  part 2 10 "racecheck test_regret" racecheck_test_regret.log sanitize racecheck test_regret
  part 1 5 "synccheck test_regret" synccheck_test_regret.log sanitize synccheck test_regret
  part 1 5 "initcheck test_regret" initcheck_test_regret.log sanitize initcheck test_regret
}

# weights_left and minimums_left: what the parts after the current one weigh and need.
weights_left=0
minimums_left=0
counting=0
part() {
  local weight=$1 minimum=$2 name=$3
  if [ "$counting" = 1 ]; then
    weights_left=$((weights_left + weight)); minimums_left=$((minimums_left + minimum))
    [ "$budgets" = 0 ] || printf 'part %s %s %s\n' "$listing" "$minimum" "$name"
    return 0
  fi
  run_part "$@"
}

if [ "$budgets" = 1 ]; then
  for listing in first second extra; do echo "call $listing $budget_seconds"; done
  echo "start $start_seconds"
  echo "pack $pack_seconds"
  counting=1
  for listing in first second extra; do "parts_$listing"; done
  exit 0
fi

# --- the bundle, unpacked where this checkout is ---------------------------------------------
bundle="$root/.gpu/bundle"
[ -f .gpu/bundle.tar.xz ] || { echo "gpu-suite: no .gpu/bundle.tar.xz: run scripts/gpu-prepare.sh and copy .gpu/ here" >&2; exit 1; }
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
if [ -n "$archive" ]; then
  mkdir -p "$archive" && archive="$(cd "$archive" && pwd)" || exit 1
fi

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
export HPCML_TEST_DATA="$root/tests/data"  # for test_telemetry run outside ctest
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
  echo "--- python3 -m pip freeze (what the results ran with; constraints.txt pins CI's)"
  python3 -m pip freeze 2>&1 | sed 's/^/  /'
  echo "LD_LIBRARY_PATH: $LD_LIBRARY_PATH"
  echo "--- ldd of every carried binary"
  for binary in "$build"/bin/* "$build"/tests/*.so .gpu/site/hpcml/_hpcml*.so; do
    echo "$binary:"; ldd "$binary" 2>&1 | sed 's/^/  /'
  done
} > "$results/environment-$call.txt" 2>&1
setup_seconds=$SECONDS  # unpacking, installing and the environment: the rehearsal checks first's budget with it

# --- running a part ----------------------------------------------------------------------------
summary=("setup (unpack, install, environment): ${setup_seconds}s")
failed=0
no_device='no (usable )?CUDA device|no GPU telemetry'
common=(--benchmark_repetitions=3 --benchmark_min_time=0.1 --benchmark_report_aggregates_only=true --benchmark_out_format=json
        "--benchmark_context=hpcml_bundle_commit=${bundle_commit:-unknown}")
sanitizer_probed=0
sanitizer_refused=""  # set by the probe where compute-sanitizer cannot run here

save_results() {
  printf '%s\n' "# $commit_note" "${summary[@]}" > "$results/summary-$call.txt"
  [ -z "$archive" ] || tar -czf "$archive/gpu-results-$call.tgz" -C "$(dirname "$results")" "$(basename "$results")"
}

run_part() {
  local weight=$1 minimum=$2 name=$3 log="$results/$4"; shift 4
  weights_left=$((weights_left - weight)); minimums_left=$((minimums_left - minimum))
  if [ "$1" = sanitize ] && [ "$sanitizer_probed" = 0 ]; then probe_sanitizer; sanitizer_probed=1; fi
  local left=$((budget_seconds - SECONDS - pack_seconds))  # the budget counts from the call's start
  local limit=$((left * weight / (weights_left + weight)))
  [ "$limit" -ge "$minimum" ] || limit=$minimum
  [ "$limit" -le $((left - minimums_left)) ] || limit=$((left - minimums_left))  # the parts after it keep theirs
  local start=$SECONDS rc outcome
  echo "== $name (limit ${limit}s)"
  echo "# $name | $commit_note | $(date -u +%Y-%m-%dT%H:%M:%SZ) | limit ${limit}s | $*" > "$log"
  if [ -n "$sanitizer_refused" ] && [ "$1" = sanitize ]; then
    echo "skipped: $sanitizer_refused" >> "$log"
    outcome="skip ($sanitizer_refused)"
  elif [ "$limit" -lt "$minimum" ] || [ "$limit" -lt 2 ]; then
    echo "not run: ${limit}s of the call's budget are left for it, below its minimum of ${minimum}s" >> "$log"
    outcome="NOT RUN (budget spent)"; failed=1
  else
    # bash -c, so that this script's functions (exported below) run under the limit too.
    timeout --kill-after=10 "$limit" bash -c '"$@"' part "$@" >> "$log" 2>&1
    rc=$?
    if [ $rc -eq 124 ] || [ $rc -eq 137 ]; then
      outcome="TIMED OUT"; failed=1
    elif grep -qiE "$no_device" "$log" && { [ $rc -eq 2 ] || [ $rc -eq 0 ]; }; then
      # A program asked for the CUDA backend exits 2 saying "no CUDA device"; a test program
      # passes with its GPU cases skipped, saying the same: on a GPU machine, both are failures.
      if [ "$expect_gpu" = 1 ]; then outcome="FAIL (no CUDA device)"; failed=1; else outcome="skip (no CUDA device)"; fi
    elif [ $rc -eq 3 ] && grep -q "^skipped: " "$log"; then  # a part that cannot run here says why
      outcome="skip ($(grep -m 1 "^skipped: " "$log" | cut -c 10-))"
    elif [ $rc -eq 0 ]; then
      outcome=pass
    else
      outcome="FAIL ($rc)"; failed=1
    fi
  fi
  summary+=("$(printf '%-36s %-26s %4ds  %s' "$name" "$outcome" $((SECONDS - start)) "$(basename "$log")")")
  save_results
  tail -n 3 "$log"
}

# --- what the parts run ------------------------------------------------------------------------
devicequery() {  # the devices and their host links (every host path's floor), as text and JSON, and their contract (ctest's checks)
  "$build/bin/hpcml-devicequery" --link
  local rc=$?
  "$build/bin/hpcml-devicequery" --json  # the link measured once (a few seconds, registering included)
  ctest --test-dir "$build" --output-on-failure -R '^devicequery_' || return 1
  return $rc
}
cpp_gpu_cases() {  # each test program's GPU cases, one process each, every case named in the log
  local program status=0
  for program in $gpu_case_programs; do
    echo "=== $program --gtest_filter=$gpu_case_filter"
    "$build/bin/$program" "--gtest_filter=$gpu_case_filter" || status=1
  done
  return $status
}
# sanitize TOOL PROGRAM: the program's GPU cases under compute-sanitizer. Every test program
# releases hpcml's caches and resets its devices at its end (tests/support/teardown.cpp), through
# the one CUDA runtime it holds, so leaks are reported against a torn-down context.
# --report-api-errors no: the tests make failing CUDA calls on purpose (an impossible allocation,
# a host pointer where device memory is needed), and hpcml checks every call itself.
# --require-cuda-init yes: a program that never reached CUDA would prove nothing.
# The cases that take over a second without a sanitizer are left to the C++ GPU cases: under one,
# test_similarity's outlasted 40 s on an H100 (memcheck; racecheck, synccheck and initcheck too).
sanitizer_skips=SimilarityCuda.OutputOverFourGiB:SimilarityCuda.DevicePointersEveryOutputAndMethodOnAUserStream
sanitizer_skips+=:SimilarityCuda.PairsReducedOnTheDeviceEqualTheCpus:SimilarityCuda.NaiveOutOfDeviceMemoryIsAnError
sanitizer_skips+=:SimilarityOnBackend.ManyColumnRegionsPerRowBand/cuda:InvGaussCuda.HostArraysAcrossChunksEqualTheCpu
sanitizer_skips+=:SimilaritySortedCuda.EqualsTheCpuOnDataBuiltToBreakIt  # sorted: sanitized in the smaller cases
# 37.5M elements of output to reach the device sort of a pair list (CUB's; the keys kernels
# are sanitized in PairsLeftOnTheDeviceAndTheirRefusals).
sanitizer_skips+=:SimilarityCuda.PairsLeftOnTheDeviceSortedAcrossLaunches
# Left to memcheck alone: ten shapes, each on a stream and in a captured graph, of the kernels
# the other regret cases run (2.1 s unsanitized); the host outputs' copies (their kernels are
# the other cases').
heavy_sanitizer_skips=RegretCuda.DeviceEntryPointEqualsTheHostCalls:SimilarityCuda.HostOutputPageableOrPageLockedEqualsTheReference
heavy_sanitizer_skips+=:SimilarityCuda.DeviceInputsIntoAHostOutput
# The sorted kernel's operands sorted once per call and by each launch, 48 MB outputs: memcheck.
heavy_sanitizer_skips+=:SimilaritySortedCuda.SortedOncePerCallOrPerLaunchAlike
# Each case's line and time are logged, so a part cut at its limit names the case it was in.
sanitize() {
  local tool=$1 program=$2 skips=$sanitizer_skips
  local options=(--tool "$tool" --error-exitcode 1 --report-api-errors no --require-cuda-init yes)
  [ "$tool" = memcheck ] && options+=(--leak-check full --track-stream-ordered-races all)
  [ "$tool" = memcheck ] || skips+=":$heavy_sanitizer_skips"
  compute-sanitizer "${options[@]}" "$build/bin/$program" "--gtest_filter=$gpu_case_filter:-$skips"
}
# Some GPU machines refuse compute-sanitizer ("Device not supported"): its parts are then skips
# naming the probe's file, not failures. Probed once a call, before its first sanitizer part
# (from its time).
probe_sanitizer() {
  if ! command -v compute-sanitizer >/dev/null; then
    sanitizer_refused="compute-sanitizer is not installed"
    return
  fi
  local probe="$results/compute-sanitizer-probe.txt"
  echo "# $commit_note | compute-sanitizer --tool memcheck hpcml-devicequery" > "$probe"
  timeout 60 compute-sanitizer --tool memcheck "$build/bin/hpcml-devicequery" >> "$probe" 2>&1
  if grep -q "Device not supported" "$probe"; then  # the whole message is in the probe's file
    sanitizer_refused="compute-sanitizer: Device not supported, see $(basename "$probe")"
  fi
}
# The machine-code report's predictions (made where the bundle was built) beside what the
# benchmarks before it measured, kernel by kernel (docs/machine-code.md).
sass_measured() {
  if [ ! -f "$bundle/sass_report.json" ]; then  # gpu-prepare.sh writes it wherever sm_90 is built
    echo "no sass_report.json in $bundle/ (cuda architectures: $(sed -n 's/^cuda architectures: //p' "$bundle/bundle-info.txt"))"
    grep -qE '^cuda architectures: .*\b90(-real)?\b' "$bundle/bundle-info.txt" && return 1
    return 0
  fi
  python3 bench/sass_report.py --report "$bundle/sass_report.json" --measured "$results"
}
# real_case SAMPLES FEATURES [--methods "M ..."] OPTION...: the real case end to end on one GPU,
# x = randn(256, 270725) to a bitmask file or a pair list, once per method (auto unless named).
real_case() {
  local input="$TMPDIR/real_x.npy" output="$TMPDIR/real_s.npy" rc=0 methods=auto
  rm -rf "$output" "$output.journal"  # a part killed at its limit leaves them behind
  python3 -c "import sys, numpy as np; np.save(sys.argv[1], np.random.default_rng(0).standard_normal((int(sys.argv[2]), int(sys.argv[3]))).astype(np.float32))" \
    "$input" "$1" "$2" || return 1
  shift 2
  if [ "$1" = --methods ]; then methods="$2"; shift 2; fi
  for method in $methods; do
    echo "--- method $method"
    $([ -x /usr/bin/time ] && echo /usr/bin/time -v) "$build/bin/hpcml-similarity" "$input" --output "$output" --mode all \
      --tile 1000 --backend cuda --method "$method" "$@" || rc=$?
    ls -l "$output" 2>/dev/null
    rm -rf "$output" "$output.journal"
  done
  rm -f "$input"
  return $rc
}
# One profile of a similarity kernel (fused or sorted) at 256 x 16384 x 16384 with y apart: the
# fused kernel ran at 0.74 of the issue floor, the sorted one at 0.65x the fused (4.38x predicted,
# 2026-11-28): clock, issue activity, stall reasons, occupancy and shared-memory wavefronts and
# bank conflicts, to say where the time goes. Only the full-size call's launch (its NVTX range),
# not the check before timing. Where Nsight Compute is absent, or the GPU's counters are not
# permitted (ERR_NVGPUCTRPERM), a skip saying so.
ncu_profile() {
  "$build/bin/hpcml-devicequery" > /dev/null || { echo "no CUDA device (hpcml-devicequery)"; return 2; }
  command -v ncu > /dev/null || { echo "skipped: Nsight Compute (ncu) is not installed"; return 3; }
  local out rc
  out="$(ncu --nvtx --nvtx-include "hpcml::similarity_device cuda 256x16384x16384/" \
    --kernel-name "similarity_$1_kernel" --launch-count 1 --section SpeedOfLight --section WarpStateStats \
    --section SchedulerStats --section Occupancy --section LaunchStats --section ComputeWorkloadAnalysis \
    --section MemoryWorkloadAnalysis_Tables \
    "$build/bin/bench_similarity" --samples 256 --dim 16384 --dim-y 16384 --tile 4096 --where device \
    --method "$1" --backend cuda --benchmark_repetitions=1 --benchmark_min_time=0.001 2>&1)"
  rc=$?
  echo "$out"
  if grep -q "ERR_NVGPUCTRPERM" <<<"$out"; then
    echo "skipped: ncu: the GPU's performance counters are not permitted here (ERR_NVGPUCTRPERM)"
    return 3
  fi
  if grep -q "No kernels were profiled" <<<"$out"; then echo "ncu profiled no kernel"; return 1; fi
  return $rc
}
examples() {  # the seed programs beside their hpcml versions (examples/), on the GPU
  python3 examples/invgauss/run.py --backend cuda --output "$results/invgauss_figure.png" &&
    python3 examples/devicequery/run.py --tool "$build/bin/hpcml-devicequery" &&
    python3 examples/trace/run.py --tool "$build/bin/hpcml-trace" --seconds 5 --out-dir "$results/trace_example"
}
examples_compiled() {  # the two whose seeds are torch.compile programs (they import torch first)
  python3 -c 'import sys; sys.path.insert(0, "bench"); from cuda_check import require_cuda; require_cuda("examples")' &&
    python3 examples/similarity/run.py --device cuda --features 20000 &&
    python3 examples/regret/run.py --device cuda --iterations 100 --compile-mode default
}
export bundle build results sanitizer_skips heavy_sanitizer_skips TMPDIR="${TMPDIR:-/tmp}" gpu_case_filter gpu_case_programs
export -f devicequery cpp_gpu_cases sanitize sass_measured real_case examples examples_compiled ncu_profile

counting=1; "parts_$call"; counting=0
"parts_$call"

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
