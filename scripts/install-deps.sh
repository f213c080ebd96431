#!/usr/bin/env bash
# Installs everything hpcml builds and tests with, from Debian and PyPI only.
# Idempotent: re-running it on a prepared machine is quick.  Needs root (or sudo) for apt.
set -euo pipefail
export PIP_ROOT_USER_ACTION=ignore PIP_DISABLE_PIP_VERSION_CHECK=1

debian_packages=(
  build-essential cmake ninja-build git pkg-config
  libgtest-dev libgmock-dev libbenchmark-dev libbenchmark-tools
  libeigen3-dev libboost-math-dev librandom123-dev libopenmpi-dev openmpi-bin
  clang libclang-rt-dev
  doxygen  # the C++ API reference (scripts/api-docs.sh)
  podman runc mmdebstrap  # the Docker image built and run without Docker (scripts/docker-check.sh)
)
python_packages=(
  "numpy>=1.24" "scipy>=1.10" "nanobind>=2.4" "scikit-build-core>=0.10"
  "pytest>=7" "hypothesis>=6.100" "matplotlib>=3.7" "mpmath>=1.3" "nvidia-nvml-dev" "nvidia-cuda-cuobjdump"
  "nvidia-cuda-nvdisasm"  # with cuobjdump: the machine-code report (bench/sass_report.py)
  "pandas>=2" "nvidia-ml-py>=12"  # the seed programs in examples/ (their pandas code, pyNVML)
  "mypy"  # the package's types: tests/typing (scripts/test.sh)
  "lizard"  # functions' lengths (tests/python/test_code_shape.py)
  "pdoc"  # the Python API reference (scripts/api-docs.sh)
  "sybil"  # the docs' code blocks run as tests (tests/docs)
  "dask[array,dataframe]" "distributed" "zarr" "pyarrow"  # hpcml.dask (pip install hpcml[dask]) and its tests
)

sudo_cmd=()
[ "$(id -u)" -eq 0 ] || sudo_cmd=(sudo)

missing=()
for p in "${debian_packages[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if [ ${#missing[@]} -gt 0 ]; then
  echo "install-deps: apt-get install ${missing[*]}"
  "${sudo_cmd[@]}" apt-get update -qq
  DEBIAN_FRONTEND=noninteractive "${sudo_cmd[@]}" apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
fi

python="${PYTHON:-python3}"
# Every Python tool at its version in constraints.txt (pip does nothing where they already are).
constraints="$(cd "$(dirname "$0")/.." && pwd)/constraints.txt"
"$python" -m pip install -q -c "$constraints" "${python_packages[@]}"

# PyTorch, for hpcml.torch and its tests (optional: hpcml never needs it). Pinned to the 2.11
# series of the GPU machines' image; about 2.6 GB with the CUDA libraries it brings. Where it
# cannot be installed, the torch tests skip, saying so.
if ! "$python" -c "import torch, sys; sys.exit(not torch.__version__.startswith('2.11.'))" 2>/dev/null; then
  echo "install-deps: pip install torch (constraints.txt: 2.11)"
  "$python" -m pip install -q -c "$constraints" torch ||
    echo "install-deps: torch could not be installed; the torch tests will skip" >&2
fi

# CodeCarbon, whose emissions.csv the tests check hpcml's rows against (optional: they skip without it).
if ! "$python" -c "import codecarbon, sys; sys.exit(not codecarbon.__version__.startswith('3.3.'))" 2>/dev/null; then
  echo "install-deps: pip install codecarbon (constraints.txt: 3.3)"
  "$python" -m pip install -q -c "$constraints" codecarbon ||
    echo "install-deps: codecarbon could not be installed; the emissions comparison will skip" >&2
fi

if command -v nvcc >/dev/null 2>&1 || [ -x /usr/local/cuda/bin/nvcc ]; then
  echo "install-deps: CUDA toolkit found; the CUDA backend will be built."
else
  echo "install-deps: no CUDA toolkit; hpcml will build CPU-only."
fi
echo "install-deps: done."
