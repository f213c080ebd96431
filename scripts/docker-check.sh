#!/usr/bin/env bash
# docker/Dockerfile built and run without Docker or the nvidia/cuda images: podman (runc, and a
# containers.conf without default ulimits, which this sandbox refuses), stand-in base images made
# from Debian packages (mmdebstrap: a runtime stand-in with Python and no compiler), and the
# image's prebuilt-wheel path (WHEELS_FROM=prebuilt) with a wheel built for that Python. In the
# image it runs hpcml-devicequery (exit 2 and its reason: no GPU), the main job, a call of each
# family against NumPy, and the find_package consumer in an image derived from it that adds
# CMake and a compiler; it checks that the runtime image holds no compiler and prints its size.
# With --compile (the test command's choice where a CUDA toolkit is installed) it takes the
# image's default path instead: a devel stand-in with this machine's CUDA toolkit copied in, in
# which the image compiles hpcml (for sm_90) and runs its CPU tests, then the same checks, the
# prebuilt path from the wheel the build stage made, and the build stage's size beside the
# runtime image's (about 10 minutes on 2 cores).
# Usage: scripts/docker-check.sh WHEEL_DIR   (a folder with the hpcml wheel for Debian 12's Python 3.11)
#        scripts/docker-check.sh --compile
set -euo pipefail
cd "$(dirname "$0")/.."
root="$PWD"
compile=0
if [ "${1:-}" = --compile ]; then
  compile=1
else
  wheels="$(cd "${1:?usage: scripts/docker-check.sh WHEEL_DIR | --compile}" && pwd)"
  ls "$wheels"/hpcml-*-cp311-*.whl > /dev/null || { echo "docker-check: no cp311 hpcml wheel in $1" >&2; exit 1; }
fi
work="$(mktemp -d)"
printf '[containers]\ndefault_ulimits = []\n' > "$work/containers.conf"
export CONTAINERS_CONF="$work/containers.conf"
podman() { command podman --runtime runc "$@"; }
tag="localhost/hpcml-check-$$"
cleanup() {
  podman rmi -f "$tag:runtime-base" "$tag:image" "$tag:consumer" "$tag:prebuilt" "$tag:build" "$tag:devel-base" \
    > /dev/null 2>&1 || true
  rm -rf "$work" "$root/.docker-wheels"
}
trap cleanup EXIT
fail() { echo "docker-check: FAILED: $*" >&2; exit 1; }

start=$SECONDS
mmdebstrap --quiet --variant=minbase --include=python3,python3-venv,ca-certificates bookworm "$work/runtime.tar"
podman import --quiet "$work/runtime.tar" "$tag:runtime-base" > /dev/null
echo "docker-check: runtime stand-in (Debian 12 minbase, Python 3.11) in $((SECONDS - start)) s"

# The registries as the host reaches them: its pip configuration and CA bundle (a machine behind a
# proxy that re-signs TLS has its CA there), where it has them, lent to the build's RUN steps.
host_trust=()
for file in /etc/pip.conf /etc/ssl/certs/ca-certificates.crt; do
  [ -f "$file" ] && host_trust+=(--volume "$file:$file:ro")
done
# The image from the wheels in the build context's .docker-wheels (outside .dockerignore): the
# prebuilt path (WHEELS_FROM=prebuilt), which compiles nothing.
build_prebuilt() {
  podman build --quiet --network host "${host_trust[@]}" -f docker/Dockerfile -t "$1" \
    --build-arg BASE_RUNTIME="$tag:runtime-base" --build-arg BASE_DEVEL="$tag:runtime-base" \
    --build-arg WHEELS_FROM=prebuilt --build-arg WHEELS=.docker-wheels . > /dev/null
}
run() { podman run --rm --network host "$@"; }

start=$SECONDS
if [ "$compile" = 1 ]; then
  # The devel stand-in: the build stage's Debian packages and this machine's CUDA toolkit, with
  # nvcc on PATH as in the nvidia/cuda devel images.
  nvcc="$(command -v nvcc || echo "${CUDA_HOME:-/usr/local/cuda}/bin/nvcc")"
  # The toolkit is where nvcc itself says it is (its TOP), not next to the nvcc on PATH: that can
  # be a wrapper script in /usr/local/bin, as on CI's machines.
  cuda="$(cd "$work" && "$nvcc" --dryrun -x cu -c /dev/null -o /dev/null 2>&1 | sed -n 's/^#\$ TOP=//p')"
  cuda="$(readlink -f "${cuda:-$(dirname "$nvcc")/..}")"
  [ -x "$cuda/bin/nvcc" ] || fail "--compile needs a CUDA toolkit (no nvcc in $cuda)"
  mmdebstrap --quiet --variant=minbase --include=build-essential,cmake,ninja-build,git,python3,python3-dev,python3-venv,ca-certificates \
    --customize-hook "copy-in $cuda /usr/local" --customize-hook "chroot \"\$1\" ln -s /usr/local/${cuda##*/} /usr/local/cuda" \
    bookworm "$work/devel.tar"
  podman import --quiet --change "ENV PATH=/usr/local/cuda/bin:/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin" \
    "$work/devel.tar" "$tag:devel-base" > /dev/null
  rm "$work/devel.tar"
  echo "docker-check: devel stand-in (Debian 12 minbase, CUDA from $cuda) in $((SECONDS - start)) s"
  # podman leaves out a stage named only through an ARG (WHEELS_FROM) unless told to run every one.
  build=(--skip-unused-stages=false --network host "${host_trust[@]}" -f docker/Dockerfile
         --build-arg BASE_RUNTIME="$tag:runtime-base" --build-arg BASE_DEVEL="$tag:devel-base"
         --build-arg CUDA_ARCHITECTURES=90)
  start=$SECONDS
  podman build "${build[@]}" --target build -t "$tag:build" . > "$work/build.log" 2>&1 ||
    { tail -n 60 "$work/build.log"; fail "the compiling build"; }
  echo "docker-check: build stage compiled (sm_90), its CPU tests run, in $((SECONDS - start)) s"
  podman build --quiet "${build[@]}" -t "$tag:image" . > /dev/null  # the build stage's layers are cached
  # The prebuilt path too, from the wheel the build stage made.
  rm -rf .docker-wheels && mkdir .docker-wheels
  container="$(podman create "$tag:build" true)"  # a command: the stand-in base image has none
  podman cp "$container:/wheels/." .docker-wheels/ || fail "the build stage's /wheels could not be copied out"
  podman rm "$container" > /dev/null
  build_prebuilt "$tag:prebuilt"
  run -v "$root/tests/install:/check:ro" "$tag:prebuilt" python /check/check_module.py > "$work/prebuilt.txt" 2>&1 ||
    { cat "$work/prebuilt.txt"; fail "the image from the build stage's wheel (WHEELS_FROM=prebuilt): a call of each family against NumPy"; }
  echo "docker-check: the same image from the build stage's wheel (WHEELS_FROM=prebuilt) passes the module check"
else
  rm -rf .docker-wheels && mkdir .docker-wheels && cp "$wheels"/hpcml-*-cp311-*.whl .docker-wheels/
  build_prebuilt "$tag:image"
  echo "docker-check: image built from the prebuilt wheel in $((SECONDS - start)) s"
fi

compilers="$(run "$tag:image" sh -c 'for c in cc gcc g++ c++ clang nvcc; do command -v "$c"; done; true')"
[ -z "$compilers" ] || fail "the runtime image holds a compiler: $compilers"

status=0
run "$tag:image" > "$work/devicequery.txt" 2>&1 || status=$?
[ "$status" = 2 ] || { cat "$work/devicequery.txt"; fail "hpcml-devicequery exited $status, not 2 (no GPU)"; }
echo "docker-check: hpcml-devicequery (the image's command) exits 2: $(grep -m1 -iE 'no (usable )?(cuda|nvidia|driver)' "$work/devicequery.txt" || head -n 1 "$work/devicequery.txt")"

run "$tag:image" bench_similarity --tile 1000 > "$work/bench.txt" 2>&1 || { cat "$work/bench.txt"; fail "bench_similarity --tile 1000"; }
grep -q 'summary: fused .* \(faster\|slower\)' "$work/bench.txt" || { cat "$work/bench.txt"; fail "no summary"; }
echo "docker-check: $(grep -o 'summary: fused [^;]*' "$work/bench.txt")"

run -v "$root/tests/install:/check:ro" "$tag:image" python /check/check_module.py 2>/dev/null ||
  fail "a call of each family against NumPy"

# The C++ package from a project outside the image's: CMake and a compiler added on top.
printf 'FROM %s\nUSER root\nRUN apt-get update -qq && apt-get install -y -qq --no-install-recommends cmake g++ make > /dev/null\nUSER hpcml\n' \
  "$tag:image" > "$work/Containerfile.consumer"
podman build --quiet --network host "${host_trust[@]}" -f "$work/Containerfile.consumer" -t "$tag:consumer" "$work" \
  > "$work/consumer-build.log" 2>&1 || { cat "$work/consumer-build.log"; fail "the consumer image (CMake and g++ added)"; }
run -v "$root/tests/consumer:/src:ro" "$tag:consumer" sh -c \
  'cmake -S /src -B /tmp/consumer -DCMAKE_BUILD_TYPE=Release > /tmp/cmake.log && cmake --build /tmp/consumer > /tmp/build.log && /tmp/consumer/consumer' \
  > "$work/consumer.txt" 2>&1 || { cat "$work/consumer.txt"; fail "the find_package consumer"; }
grep -q "^hpcml [0-9]" "$work/consumer.txt" || { cat "$work/consumer.txt"; fail "the consumer printed no version"; }
echo "docker-check: the find_package consumer ran: $(head -n 1 "$work/consumer.txt")"

size() { podman image inspect --format '{{.Size}}' "$1" | awk '{printf "%.0f MB", $1 / 1e6}'; }
echo "docker-check: sizes: runtime image $(size "$tag:image") (its stand-in base $(size "$tag:runtime-base")); with CMake and g++ added $(size "$tag:consumer")"
[ "$compile" = 0 ] || echo "docker-check: sizes: build stage $(size "$tag:build") (its devel stand-in base $(size "$tag:devel-base"))"
echo "docker-check: passed"
