#!/usr/bin/env bash
# Builds here (nvcc needs no GPU) everything scripts/gpu-suite.sh runs on a GPU machine, so that
# a short GPU window goes to running, not compiling (docs/gpu-suite.md), into .gpu/bundle.tar.xz
# (git-ignored; it travels to the GPU machine with the checkout, in the same place):
#   build/       the library, tests, benchmarks, tools and the Python module for sm_90, without
#                MPI (the GPU machine has no libmpi), from one build tree (build-gpu/ here);
#   wheels/      hpcml's wheel (scripts/wheel.sh) for the GPU machine's Python 3.12, made from
#                that same tree; also left in .gpu/wheels/ for scripts/test-wheel.sh;
#   lib/         libbenchmark, the one shared library of ours the GPU machine lacks (found by ldd);
#   bundle-info.txt  the commit, whether the tree had uncommitted changes, and how it was built;
#   relocate.list    the text files (CTest files, install scripts) in which this machine's paths
#                were replaced by placeholders, which gpu-suite.sh fills in where it unpacks.
# The binaries name no path of this machine (RPATHs relative to $ORIGIN, __FILE__ relative to the source root;
# only -lineinfo's source file names remain in the device code, for the sanitizers' and
# profilers' reports); this script fails if the build root is anywhere in it.
# Usage: scripts/gpu-prepare.sh   (PYTHON312=/path/to/python3.12; HPCML_GPU_ARCHITECTURES, default 90)
set -euo pipefail
cd "$(dirname "$0")/.."
root="$PWD"
build="$root/build-gpu"
architectures="${HPCML_GPU_ARCHITECTURES:-90}"
export PIP_ROOT_USER_ACTION=ignore

python312="$(scripts/find-python312.sh)"
# nvidia-cuda-cuobjdump: for the kernel_images test (the configuring Python's site-packages are searched).
"$python312" -m pip install -q -c "$root/constraints.txt" nvidia-cuda-cuobjdump

# One tree for everything, configured and built by scripts/wheel.sh as it builds any wheel
# (without MPI: the GPU machine has no libmpi), with the tests: the wheel is made from it,
# compiling nothing again. Its binaries find libhpcml by $ORIGIN and name no folder of this
# machine; libbenchmark and CUDA's libraries are found where the suite looks for them.
stage="$root/.gpu/stage"
rm -rf "$stage" && mkdir -p "$stage/wheels" "$stage/lib"
HPCML_WHEEL_BUILD_DIR="$build" PYTHON="$python312" HPCML_CUDA_ARCHITECTURES="$architectures" HPCML_WHEEL_TESTS=ON \
  scripts/wheel.sh "$stage/wheels"
[ -x "$build/bin/hpcml-devicequery" ] ||  # built only with the CUDA backend
  { echo "gpu-prepare: this build has no CUDA backend (is nvcc installed?)" >&2; exit 1; }
# The wheel stays beside the bundle for scripts/test-wheel.sh.
rm -rf "$root/.gpu/wheels" && cp -r "$stage/wheels" "$root/.gpu/wheels"
libbenchmark="$(ldd "$build/bin/bench_similarity" | awk '$1 ~ /^libbenchmark/ {print $3}')"
[ -f "$libbenchmark" ] || { echo "gpu-prepare: ldd finds no libbenchmark for bench_similarity" >&2; exit 1; }
cp -L "$libbenchmark" "$stage/lib/"
# The machine-code report of this build's sm_90 code (bench/sass_report.py), which the suite
# prints beside what the GPU measures.
if [[ ";$architectures;" == *";90;"* || ";$architectures;" == *";90-real;"* ]]; then
  python3 bench/sass_report.py --objects "$build/kernels/CMakeFiles/hpcml.dir" --json "$stage/sass_report.json" >/dev/null
fi

# The build tree without what only building needs: objects, dependency files, Ninja's and
# CMake's caches, and the Python module's own copy (the wheel has it; its install script stays).
tar -C "$root" -cf - --exclude='*.o' --exclude='*.o.d' --exclude='.ninja_*' --exclude='build.ninja' \
    --exclude='CMakeCache.txt' --exclude='CMakeInit.txt' --exclude='.skbuild-info.json' --exclude='*.dir' \
    --exclude='.cmake' --exclude='CMakeFiles/*.log' --exclude='CMakeFiles/CMakeTmp' --exclude='CMakeFiles/[0-9]*' \
    --exclude='build-gpu/python/*.so' --exclude='build-gpu/python/*.a' --exclude='build-gpu/Testing' \
    --exclude='build-gpu/tests/consumer' --exclude='build-gpu/tests/default-architectures' --exclude='build-gpu/tests/trace_cli' \
    build-gpu | tar -C "$stage" -xf -
mv "$stage/build-gpu" "$stage/build"

# This machine's paths in the tree's text files become placeholders, the longest first (the
# build root lies inside the source root).
cmake_path="$(command -v cmake)"
cuobjdump_path="$(sed -n 's/^HPCML_CUOBJDUMP:FILEPATH=//p' "$build/CMakeCache.txt")"
substitutions=("$build" @HPCML_BUILD_DIR@ "$root" @HPCML_SOURCE_DIR@ "$cmake_path" @HPCML_CMAKE@)
[ -n "$cuobjdump_path" ] && substitutions+=("$cuobjdump_path" @HPCML_CUOBJDUMP@)
: > "$stage/relocate.list"
while IFS= read -r -d '' file; do
  for ((k = 0; k < ${#substitutions[@]}; k += 2)); do
    sed -i "s|${substitutions[k]}|${substitutions[k + 1]}|g" "$file"
  done
  echo "${file#"$stage/"}" >> "$stage/relocate.list"
done < <(grep -rlIZF -e "$root" -e "$cmake_path" ${cuobjdump_path:+-e "$cuobjdump_path"} "$stage/build")
# Nothing may still name the build root, and no text file the checkout (binaries keep the
# device code's source file names, see above).
if leftover="$(grep -rlF -e "$build" "$stage")" || leftover="$(grep -rlIF -e "$root" -e "$HOME/" "$stage")"; then
  echo "gpu-prepare: these files still name paths of this machine:" >&2
  echo "$leftover" >&2
  exit 1
fi

dirty="no"
[ -z "$(git status --porcelain 2>/dev/null)" ] || dirty="yes ($(git status --porcelain | wc -l) paths changed or untracked)"
cat > "$stage/bundle-info.txt" <<EOF
commit: $(git rev-parse HEAD 2>/dev/null || echo unknown)
uncommitted changes: $dirty
built: $(date -u +%Y-%m-%dT%H:%M:%SZ)
cuda architectures: $architectures
nvcc: $(nvcc --version 2>/dev/null | sed -n 's/.*release \([0-9.]*\).*/\1/p' | head -n 1)
python: $("$python312" -c 'import sys; print(sys.version.split()[0])')
mpi: off
EOF
# A dictionary as large as the biggest file: the test programs each hold a copy of libhpcml's code
# (one CUDA runtime per test process, tests/CMakeLists.txt), which xz then stores once (19 MiB
# with its default 8 MiB dictionary, 9.7 MiB so).
tar -C "$stage" -cf - . | xz -T1 --lzma2=preset=6,dict=128MiB > "$root/.gpu/bundle.tar.xz"
rm -rf "$stage"
size="$(stat -c %s .gpu/bundle.tar.xz)"
# Kept small: the bundle and the checkout travel to the GPU machine at each call.
echo "gpu-prepare: .gpu/bundle.tar.xz, $((size / 1024 / 1024)) MiB ($size bytes; at most 60 MiB)," \
     "commit $(git rev-parse --short HEAD)$([ "$dirty" = no ] || echo ', with uncommitted changes')"
[ "$size" -lt $((60 * 1024 * 1024)) ] || { echo "gpu-prepare: the bundle is over 60 MiB" >&2; exit 1; }
