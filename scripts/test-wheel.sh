#!/usr/bin/env bash
# Tests a built wheel as a user gets it: installs it into a fresh virtual environment (numpy
# from the registry, nothing of CUDA), then checks that nothing in it needs a CUDA library,
# that its CUDA code covers the architectures it should, and runs from that environment the main
# job (bench_similarity --tile 1000 from the PATH), hpcml-similarity on a .npy file checked
# against NumPy, a CPU call of the module, and a find_package(hpcml) consumer built against the
# wheel's CMake package.
# Usage: scripts/test-wheel.sh WHEEL [PYTHON]   (the wheel's Python, default python3)
#   HPCML_WHEEL_ARCHITECTURES  the sm_XX list its libhpcml must hold (default: the build's full
#                              list, 75 80 86 89 90; CI's wheel holds 90 alone)
set -euo pipefail
cd "$(dirname "$0")/.."
root="$PWD"
wheel="$(cd "$(dirname "$1")" && pwd)/$(basename "$1")"
python="$(command -v "${2:-python3}")"
[ -f "$wheel" ] || { echo "test-wheel: no wheel at $1" >&2; exit 1; }
work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT
export PIP_ROOT_USER_ACTION=ignore PIP_DISABLE_PIP_VERSION_CHECK=1 HPCML_QUIET=1
fail() { echo "test-wheel: FAILED: $*" >&2; exit 1; }

"$python" -m venv "$work/venv"
venv="$work/venv"
"$venv/bin/python" -m pip install -q "$wheel"
export PATH="$venv/bin:$PATH"
package="$("$venv/bin/python" -c 'import hpcml, os; print(os.path.dirname(hpcml.__file__))')"
echo "test-wheel: $(basename "$wheel") installed in a fresh environment"
for typed in py.typed _hpcml.pyi; do  # what type checkers read (docs/python.md)
  [ -f "$package/$typed" ] || fail "the wheel has no hpcml/$typed"
done

# Nothing of CUDA is installed, and no file of the wheel needs a library that is not found or
# one that CUDA brings (the driver, NVML and cuBLAS are opened at run time where present).
if "$venv/bin/python" -m pip list 2>/dev/null | grep -iE '^(nvidia-|torch )'; then fail "the environment has CUDA packages"; fi
while IFS= read -r file; do
  needs="$(ldd "$file" 2>&1)"
  if grep -q "not found" <<<"$needs"; then fail "$file: $(grep 'not found' <<<"$needs")"; fi
  if grep -qE 'libcuda\.|libcudart|libcublas|libnvidia-ml' <<<"$needs"; then fail "$file links a CUDA library: $needs"; fi
done < <(find "$package" "$package/../hpcml.libs" -type f \( -name '*.so*' -o -perm -u+x \) -exec sh -c 'head -c 4 "$1" | grep -q ELF' _ {} \; -print)

# The CUDA code covers every architecture promised (cuobjdump: the toolkit's, or the registry's).
cuobjdump="$(command -v cuobjdump || true)"
[ -n "$cuobjdump" ] || [ ! -x /usr/local/cuda/bin/cuobjdump ] || cuobjdump=/usr/local/cuda/bin/cuobjdump
[ -n "$cuobjdump" ] || cuobjdump="$("$python" -c "import glob, importlib.util as u; s = u.find_spec('nvidia'); print(next(iter(sorted(g for p in (s.submodule_search_locations if s else []) for g in glob.glob(p + '/*/bin/cuobjdump'))), ''))" 2>/dev/null || true)"
if [ -x "$package/bin/hpcml-devicequery" ]; then
  [ -n "$cuobjdump" ] || fail "a CUDA wheel, and no cuobjdump to read its architectures (pip install nvidia-cuda-cuobjdump)"
  held="$("$cuobjdump" --list-elf "$package/lib/libhpcml.so" | sed -n 's/.*\.sm_\([0-9]*\)\..*/\1/p' | sort -un | tr '\n' ' ')"
  wanted="$(tr ' ' '\n' <<<"${HPCML_WHEEL_ARCHITECTURES:-75 80 86 89 90}" | sort -un | tr '\n' ' ')"
  [ "$held" = "$wanted" ] || fail "libhpcml holds machine code for sm ${held}where sm ${wanted}were wanted"
  echo "test-wheel: CUDA machine code for sm $held"
else
  echo "test-wheel: a CPU-only wheel (no hpcml-devicequery)"
fi

# The main job, from the PATH.
cd "$work"
bench_similarity --tile 1000 > bench.txt 2>&1 || { cat bench.txt; fail "bench_similarity --tile 1000"; }
grep -q 'summary: fused .* \(faster\|slower\)' bench.txt || { cat bench.txt; fail "bench_similarity printed no summary"; }
grep -o 'summary: .*' bench.txt
hpcml-devicequery > devicequery.txt 2>&1 || [ ! -x "$package/bin/hpcml-devicequery" ] || grep -q "no driver\|no CUDA" devicequery.txt ||
  { cat devicequery.txt; fail "hpcml-devicequery"; }
hpcml-trace --help > /dev/null

# hpcml-similarity on a .npy file, against NumPy's broadcast; then the module, a call of each family.
"$venv/bin/python" - <<'PY'
import subprocess
import numpy as np
rng = np.random.default_rng()
x = rng.standard_normal((37, 300)).astype(np.float32)
np.save("x.npy", x)
subprocess.run(["hpcml-similarity", "x.npy", "--output", "s.npy", "--tile", "128", "--quiet"], check=True)
expected = (np.abs(x[:, :, None] - x[:, None, :]) < 1).sum(axis=0, dtype=np.int32)
assert np.array_equal(np.load("s.npy"), expected), "hpcml-similarity differs from NumPy"
print("test-wheel: hpcml-similarity equals NumPy on 37 x 300")
PY
"$venv/bin/python" "$root/tests/install/check_module.py"

# A C++ project built against the wheel: find_package(hpcml) with hpcml_DIR from the package.
cmake -S "$root/tests/consumer" -B consumer -G Ninja -DCMAKE_BUILD_TYPE=Release \
      "-Dhpcml_DIR=$("$venv/bin/python" -m hpcml --cmake-dir)" > consumer.log 2>&1 &&
  cmake --build consumer >> consumer.log 2>&1 || { cat consumer.log; fail "the find_package consumer did not build"; }
output="$(./consumer/consumer)" || fail "the consumer failed: $output"
grep -q "^hpcml [0-9]" <<<"$output" || fail "the consumer printed: $output"
echo "test-wheel: the find_package consumer ran: $output"
echo "test-wheel: passed"
