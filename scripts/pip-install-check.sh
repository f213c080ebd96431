#!/usr/bin/env bash
# The README's Python path as a user walks it: `pip install ./python` in a fresh virtual
# environment, with pip's build isolation (the build tools and headers come from the package's
# [build-system] requires, not from this machine's Python) and a fresh build folder (a reused one
# would keep what an earlier configure found), then one call of each family against NumPy
# (tests/install/check_module.py) from outside the source tree.
# Usage: scripts/pip-install-check.sh [PYTHON]   (default python3)
#   HPCML_CUDA_ARCHITECTURES  the CUDA architectures to build (CI: 90; unset: CMake's default list)
set -euo pipefail
cd "$(dirname "$0")/.."
python="$(command -v "${1:-python3}")"
work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT
export PIP_ROOT_USER_ACTION=ignore PIP_DISABLE_PIP_VERSION_CHECK=1 HPCML_QUIET=1
if [ -n "${HPCML_CUDA_ARCHITECTURES:-}" ]; then
  export CMAKE_ARGS="-DCMAKE_CUDA_ARCHITECTURES=$HPCML_CUDA_ARCHITECTURES"
else
  unset CMAKE_ARGS
fi

"$python" -m venv "$work/venv"
start=$SECONDS
"$work/venv/bin/python" -m pip install -q ./python "--config-settings=build-dir=$work/build" ||
  { echo "pip-install-check: FAILED: pip install ./python" >&2; exit 1; }
echo "pip-install-check: pip install ./python built and installed in $((SECONDS - start)) s (build isolation, fresh build folder)"
cd "$work"
"$work/venv/bin/python" "$OLDPWD/tests/install/check_module.py"
echo "pip-install-check: passed"
