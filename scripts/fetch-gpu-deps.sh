#!/usr/bin/env bash
# Prepares .deps/ for the lent GPU machine, which has no network and lacks gtest, Google
# Benchmark, Eigen and Random123: downloads their Debian packages and unpacks them into
# .deps/root, and the Python build backend's and nvml.h's wheels into .deps/wheels. (Boost's headers are
# 170 MB, over the carry limit of 64 MiB: tests that need Boost.Math skip where it is absent.) Run it here, then
# name .deps in the device tool's `carry` (see README, "On a GPU machine").
set -euo pipefail
cd "$(dirname "$0")/.."
rm -rf .deps && mkdir -p .deps/debs .deps/root .deps/wheels
(cd .deps/debs && apt-get download -q \
    googletest libgtest-dev libgmock-dev libbenchmark-dev libbenchmark1debian \
    libeigen3-dev librandom123-dev >/dev/null 2>&1)
for deb in .deps/debs/*.deb; do dpkg -x "$deb" .deps/root; done
python3 -m pip download -q --no-deps -d .deps/wheels scikit-build-core packaging pathspec nvidia-nvml-dev >/dev/null
rm -rf .deps/debs .deps/root/usr/share/doc .deps/root/usr/src
du -sh .deps
