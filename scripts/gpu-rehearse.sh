#!/usr/bin/env bash
# Rehearses the GPU suite's three calls here, as a lent GPU machine runs them, but without a GPU
# (docs/gpu-suite.md), so that the first real GPU window does not end on a missing file, module,
# library or tool:
#   - in a scratch folder holding only what travels: the files git would send (tracked, and
#     untracked but not ignored) and .gpu/bundle.tar.xz;
#   - in a clean environment: PATH holds the system's folders and a stand-in folder only, no
#     LD_LIBRARY_PATH or PYTHONPATH, python3 is Python 3.12 (the GPU machines') and cannot import
#     hpcml until the suite installs the bundle's wheel;
#   - with a stand-in compute-sanitizer that runs the program it is given;
#   - every program at a tiny size (HPCML_GPU_SUITE_SCALE=tiny), the GPU parts asking for the CUDA
#     backend, so that here they end with "no CUDA device" (HPCML_GPU_SUITE_EXPECT_GPU=0).
# Every part must pass or be skipped with "no CUDA device"; and the bundle must name no path of
# this machine (the build root nowhere, the checkout in no text file). Exit 0 when all hold.
# Usage: scripts/gpu-rehearse.sh    (after scripts/gpu-prepare.sh; PYTHON312 as there)
set -euo pipefail
cd "$(dirname "$0")/.."
root="$PWD"
[ -f .gpu/bundle.tar.xz ] || { echo "gpu-rehearse: no .gpu/bundle.tar.xz: run scripts/gpu-prepare.sh first" >&2; exit 1; }
python312="$(scripts/find-python312.sh)"
# What the GPU machine's Python has and the suite uses (torch and CuPy are left out: the parts
# that need them stop at "no CUDA device" first, and their tests skip without them).
if ! "$python312" -c "import numpy, scipy, pytest, hypothesis, mpmath, matplotlib" 2>/dev/null; then
  PIP_ROOT_USER_ACTION=ignore "$python312" -m pip install -q numpy scipy pytest hypothesis mpmath matplotlib
fi

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

# 4. The budgets fit one device session: three calls of at most 25 minutes together, the first
# at most 8 (its results alone are worth committing), each within the device tool's 10 minutes.
bash scripts/gpu-suite.sh --budgets | awk '
  { total += $2; if ($2 > 600) bad = bad " " $1 " over 600 s;"; if (NR == 1 && $2 > 480) bad = bad " the first over 480 s;" }
  END { if (NR != 3) bad = bad " not three calls;"; if (total > 1500) bad = bad " over 1500 s together;";
        if (bad) { print "gpu-rehearse: the budgets do not fit:" bad > "/dev/stderr"; exit 1 } }' || fail "see above"

# 5. The three calls, each on a bare machine (nothing left by the one before), as the device tool
# runs them (at most 600 s a command); then the sanitizers on a machine that refuses them.
commit="$(tar -xJOf .gpu/bundle.tar.xz ./bundle-info.txt | sed -n 's/^commit: //p')"
status=0
for run in tests sanitize bench sanitize-refused; do
  call="${run%-refused}"
  refuse=0
  [ "$run" = "$call" ] || refuse=1
  echo "gpu-rehearse: scripts/gpu-suite.sh $call$([ $refuse = 0 ] || echo ', compute-sanitizer refusing the device')"
  rm -rf "$scratch/checkout/.gpu/bundle" "$scratch/checkout/.gpu/site" "$scratch/checkout/.gpu/unpacked" "$scratch/results"
  mkdir -p "$scratch/out/$run"
  set +e
  (cd "$scratch/checkout" && "${clean_env[@]}" "OUT=$scratch/out/$run" HPCML_GPU_SUITE_SCALE=tiny HPCML_GPU_SUITE_EXPECT_GPU=0 \
     "HPCML_REHEARSE_REFUSE=$refuse" timeout 600 bash scripts/gpu-suite.sh "$call" --results "$scratch/results") \
     > "$scratch/$run.log" 2>&1
  rc=$?
  set -e
  summary="$scratch/results/summary-$call.txt"
  if [ $rc -ne 0 ] || [ ! -f "$summary" ] || [ ! -f "$scratch/out/$run/gpu-results-$call.tgz" ]; then
    echo "gpu-rehearse: the $run call failed (exit $rc); its output ends:" >&2
    tail -n 25 "$scratch/$run.log" >&2
    status=1
    continue
  fi
  # Every part passed or was skipped for the absent GPU (or the refusing sanitizer), no other way.
  expected='pass|skip \(no CUDA device\)'
  [ $refuse = 0 ] || expected='skip \(compute-sanitizer: .*Device not supported.*\)'
  if grep -v '^#' "$summary" | grep -vE "^.{37}($expected) "; then
    echo "gpu-rehearse: the parts above of the $run call did not end as expected ($expected)" >&2
    status=1
  fi
  grep -v '^#' "$summary"
  # Every carried binary finds its libraries on the path the suite built (LD_LIBRARY_PATH), not
  # through this machine's loader cache, which lists CUDA's folder where a GPU machine may not.
  if [ "$run" = tests ]; then
    ld_path="$(sed -n 's/^LD_LIBRARY_PATH: //p' "$scratch/results/environment-tests.txt")"
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
echo "gpu-rehearse: every part of the three calls passed or skipped with 'no CUDA device'; the bundle is relocatable"
