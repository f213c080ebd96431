#!/usr/bin/env bash
# Rehearses the GPU suite's calls here, as a GPU machine runs them, but without a GPU
# (docs/gpu-suite.md), so that the first real GPU window does not end on a missing file, module,
# library or tool, or on a budget that does not fit the window:
#   - in a scratch folder holding only what travels: the files git would send (tracked, and
#     untracked but not ignored) and .gpu/bundle.tar.xz;
#   - in a clean environment: PATH holds the system's folders and a stand-in folder only, no
#     LD_LIBRARY_PATH or PYTHONPATH, python3 is Python 3.12 (the GPU machines') and cannot import
#     hpcml until the suite installs the bundle's wheel;
#   - with a stand-in compute-sanitizer that runs the program it is given;
#   - every program at a tiny size (HPCML_GPU_SUITE_SCALE=tiny), the GPU parts asking for the CUDA
#     backend, so that here they end with "no CUDA device" (HPCML_GPU_SUITE_EXPECT_GPU=0).
# Every part must pass or be skipped with "no CUDA device"; the bundle must name no path of this
# machine (the build root nowhere, the checkout in no text file); and the budgets must fit the
# window: each call at most 270 s, the two calls and two machine starts at most 840 s, and
# first's parts' minimums with the unpacking and installing that this rehearsal measures within
# first's budget. Exit 0 when all hold.
# Usage: scripts/gpu-rehearse.sh    (after scripts/gpu-prepare.sh; PYTHON312 as there)
#        scripts/gpu-rehearse.sh --check-budgets SETUP_SECONDS < BUDGETS
#            only the budget check, of a listing like gpu-suite.sh --budgets prints
set -euo pipefail
cd "$(dirname "$0")/.."
root="$PWD"

# check_budgets SETUP_SECONDS < BUDGETS: the budgets (gpu-suite.sh --budgets) fit the window.
check_budgets() {
  awk -v setup="$1" '
    $1 == "call" { budget[$2] = $3; if ($3 > 270) bad = bad " call " $2 " has " $3 " s, over 270;" }
    $1 == "start" { start = $2 }
    $1 == "pack" { pack = $2 }
    $1 == "part" { minimums[$2] += $3 }
    END {
      if (!("first" in budget) || !("second" in budget)) bad = bad " no first or second call;"
      window = budget["first"] + budget["second"] + 2 * start
      if (window > 840) bad = bad " first, second and two starts take " window " s, over 840;"
      for (call in budget) {  # every call, so that a part moved between them still fits
        need[call] = minimums[call] + setup + pack
        if (need[call] > budget[call])
          bad = bad " " call " needs " need[call] " s (its parts\047 minimums " minimums[call] ", setup " setup ", packing " pack "), over its " budget[call] ";"
      }
      if (bad) { print "gpu-rehearse: the budgets do not fit the window:" bad > "/dev/stderr"; exit 1 }
      printf "gpu-rehearse: budgets fit: first and second %d s with two starts (at most 840); first needs %d s of its %d, second %d, extra %d\n", window, need["first"], budget["first"], need["second"], need["extra"]
    }'
}
if [ "${1:-}" = --check-budgets ]; then
  check_budgets "${2:?--check-budgets needs the setup seconds}"
  exit
fi
[ -f .gpu/bundle.tar.xz ] || { echo "gpu-rehearse: no .gpu/bundle.tar.xz: run scripts/gpu-prepare.sh first" >&2; exit 1; }
python312="$(scripts/find-python312.sh)"
# What the GPU machine's Python has and the suite uses (torch and CuPy are left out: the parts
# that need them stop at "no CUDA device" first, and their tests skip without them).
PIP_ROOT_USER_ACTION=ignore "$python312" -m pip install -q -c constraints.txt numpy scipy pytest hypothesis mpmath matplotlib

scratch="$(mktemp -d "${TMPDIR:-/tmp}/gpu-rehearse.XXXXXX")"
fail() { echo "gpu-rehearse: $*; the scratch folder stays: $scratch" >&2; exit 1; }

# 1. The bundle names no path of this machine.
mkdir -p "$scratch/inspect"
tar -xJf .gpu/bundle.tar.xz -C "$scratch/inspect"
leftover="$( (grep -rlF -e "$root/build-gpu" "$scratch/inspect"; grep -rlIF -e "$root" -e "$HOME/" -e "$(command -v cmake)" "$scratch/inspect") || true)"
[ -z "$leftover" ] || fail "the bundle names paths of this machine in: $(echo "$leftover" | sed "s|$scratch/inspect/||" | tr '\n' ' ')"
rm -rf "$scratch/inspect"

# 2. What travels, in a checkout of its own.
mkdir -p "$scratch/checkout/.gpu" "$scratch/bin" "$scratch/home" "$scratch/tmp" "$scratch/out"
git ls-files -z -co --exclude-standard | tar --null -T - --ignore-failed-read -cf - 2>/dev/null | tar -xf - -C "$scratch/checkout"
cp .gpu/bundle.tar.xz "$scratch/checkout/.gpu/"

# 3. The stand-ins: python3 is 3.12; cuobjdump is the one the bundle was built with (the GPU
# machine's toolkit has its own); compute-sanitizer drops its options (each takes a value) and
# runs the program.
ln -s "$python312" "$scratch/bin/python3"
ln -s "$python312" "$scratch/bin/python"
cuobjdump="$(sed -n 's/^HPCML_CUOBJDUMP:FILEPATH=//p' build-gpu/CMakeCache.txt 2>/dev/null)"
[ -x "$cuobjdump" ] && ln -s "$cuobjdump" "$scratch/bin/cuobjdump"
cat > "$scratch/bin/compute-sanitizer" <<'EOF'
#!/usr/bin/env bash
# A stand-in: checks its options against compute-sanitizer's (a misspelt one would end the real
# run), then runs the program; HPCML_REHEARSE_REFUSE=1 answers as a machine that refuses it.
[ "${1:-}" = --version ] && { echo "compute-sanitizer stand-in (gpu-rehearse.sh)"; exit 0; }
while [ $# -gt 0 ] && [ "${1#--}" != "$1" ]; do
  option="${1%%=*}"; value="${1#*=}"
  if [ "$value" = "$1" ]; then value="${2:-}"; shift; fi
  shift
  case "$option=$value" in
    --tool=memcheck|--tool=racecheck|--tool=synccheck|--tool=initcheck) ;;
    --report-api-errors=all|--report-api-errors=explicit|--report-api-errors=no) ;;
    --require-cuda-init=yes|--require-cuda-init=no|--leak-check=full|--leak-check=no) ;;
    --track-stream-ordered-races=all|--track-stream-ordered-races=use-before-alloc) ;;
    --track-stream-ordered-races=use-after-free|--track-stream-ordered-races=no) ;;
    --error-exitcode=[0-9]*) ;;
    *) echo "compute-sanitizer stand-in: unknown option or value: $option $value" >&2; exit 9 ;;
  esac
done
if [ "${HPCML_REHEARSE_REFUSE:-0}" = 1 ]; then
  echo "========= COMPUTE-SANITIZER"
  echo "========= Error: Device not supported. Please refer to the \"Supported Devices\" section of the sanitizer documentation"
  exit 1
fi
exec "$@"
EOF
chmod +x "$scratch/bin/compute-sanitizer"
clean_env=(env -i "HOME=$scratch/home" "TMPDIR=$scratch/tmp" LANG=C.UTF-8
           "PATH=$scratch/bin:/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin")
if "${clean_env[@]}" python3 -c "import hpcml" 2>/dev/null; then
  fail "python3 (3.12) imports an hpcml of this machine's: $("${clean_env[@]}" python3 -c 'import hpcml; print(hpcml.__file__)')"
fi

# 4. The budgets fit the window before anything runs (the setup time is added once measured).
bash scripts/gpu-suite.sh --budgets > "$scratch/budgets.txt"
check_budgets 0 < "$scratch/budgets.txt" || fail "see above"

# 5. The calls, each on a bare machine (nothing left by the one before), as a GPU machine runs
# them (at most 600 s a command); then first again on a machine that refuses compute-sanitizer.
commit="$(tar -xJOf .gpu/bundle.tar.xz ./bundle-info.txt | sed -n 's/^commit: //p')"
status=0
for run in first second extra first-refused; do
  call="${run%-refused}"
  refuse=0
  [ "$run" = "$call" ] || refuse=1
  echo "gpu-rehearse: scripts/gpu-suite.sh $call$([ $refuse = 0 ] || echo ', compute-sanitizer refusing the device')"
  rm -rf "$scratch/checkout/.gpu/bundle" "$scratch/checkout/.gpu/site" "$scratch/checkout/.gpu/unpacked" "$scratch/results"
  mkdir -p "$scratch/out/$run"
  set +e
  (cd "$scratch/checkout" && "${clean_env[@]}" HPCML_GPU_SUITE_SCALE=tiny HPCML_GPU_SUITE_EXPECT_GPU=0 \
     "HPCML_REHEARSE_REFUSE=$refuse" timeout 600 bash scripts/gpu-suite.sh "$call" --results "$scratch/results" \
     --archive "$scratch/out/$run") > "$scratch/$run.log" 2>&1
  rc=$?
  set -e
  summary="$scratch/results/summary-$call.txt"
  if [ $rc -ne 0 ] || [ ! -f "$summary" ] || [ ! -f "$scratch/out/$run/gpu-results-$call.tgz" ]; then
    echo "gpu-rehearse: the $run call failed (exit $rc); its output ends:" >&2
    tail -n 25 "$scratch/$run.log" >&2
    status=1
    continue
  fi
  # Every part passed or was skipped for the absent GPU; the sanitizers' parts, where the
  # sanitizer refuses the device, were skipped naming the refusal; no other way.
  expected='pass|skip \(no CUDA device\)'
  refused='skip \(compute-sanitizer: .*Device not supported.*\)'
  sanitizer_part='^(memcheck|racecheck|synccheck|initcheck) '
  parts="$(grep -v -e '^#' -e '^setup ' "$summary")"
  if { [ $refuse = 0 ] && grep -vE "^.{37}($expected) " <<<"$parts"; } ||
     { [ $refuse = 1 ] && { grep -E "$sanitizer_part" <<<"$parts" | grep -vE "^.{37}$refused";
                            grep -vE "$sanitizer_part" <<<"$parts" | grep -vE "^.{37}($expected) "; }; }; then
    echo "gpu-rehearse: the parts above of the $run call did not end as expected" >&2
    status=1
  fi
  grep -v "^#" "$summary"
  if [ "$run" = first ]; then
    # each call's minimums, with the setup it took here, fit its budget.
    setup="$(sed -n 's/^setup .*: \([0-9]*\)s$/\1/p' "$summary")"
    check_budgets "${setup:?no setup time in $summary}" < "$scratch/budgets.txt" || status=1
    # first runs the GPU cases only: a named CPU-only case of each suite is absent from its logs,
    # and the same case's GPU instance is there.
    for pair in "cpp_gpu_cases.log:SimilarityOnBackend.OneByOne/" \
                "pytest_gpu_cases.log:test_counts_equal_numpy[1-1-1-None-fused-"; do
      log="$scratch/results/${pair%%:*}" case="${pair#*:}"
      if grep -qF "${case}cpu" "$log" || ! grep -qF "${case}cuda" "$log"; then
        echo "gpu-rehearse: first's ${pair%%:*} should name ${case}cuda and not ${case}cpu" >&2
        status=1
      fi
    done
    # Every carried binary finds its libraries on the path the suite built (LD_LIBRARY_PATH),
    # not through this machine's loader cache, which lists CUDA's folder where a GPU machine may not.
    ld_path="$(sed -n 's/^LD_LIBRARY_PATH: //p' "$scratch/results/environment-first.txt")"
    for binary in "$scratch"/checkout/.gpu/bundle/build/bin/* "$scratch"/checkout/.gpu/site/hpcml/_hpcml*.so; do
      if LD_LIBRARY_PATH="$ld_path" LD_TRACE_LOADED_OBJECTS=1 /lib64/ld-linux-x86-64.so.2 --inhibit-cache "$binary" | grep "not found"; then
        echo "gpu-rehearse: $(basename "$binary") misses the libraries above without the loader's cache" >&2
        status=1
      fi
    done
  fi
  # Every result file names the commit it belongs to.
  unnamed="$(grep -rLF -e "$commit" "$scratch/results" || true)"
  if [ -n "$unnamed" ]; then
    echo "gpu-rehearse: these result files do not name the commit $commit: $unnamed" >&2
    status=1
  fi
done
[ $status -eq 0 ] || fail "the rehearsal failed"
rm -rf "$scratch"
echo "gpu-rehearse: every part of first, second and extra passed or skipped with 'no CUDA device'; the budgets fit; the bundle is relocatable"
