#!/usr/bin/env bash
# The API reference as one static site: the C++ API from include/hpcml (Doxygen, docs/api/Doxyfile:
# every public declaration documented, a warning fails the build) and the Python API from the
# installed package's docstrings and signatures (pdoc, Python warnings as errors), under one index
# page. Run by scripts/test.sh after the package is installed; open OUT/index.html.
# Usage: scripts/api-docs.sh [OUT]   (default: build/api)   PYTHON: the Python with hpcml (python3)
set -euo pipefail
cd "$(dirname "$0")/.."
out="${1:-build/api}"
python="${PYTHON:-python3}"
rm -rf "$out" && mkdir -p "$out"
out="$(cd "$out" && pwd)"

HPCML_API_OUT="$out" doxygen docs/api/Doxyfile
# From outside the source tree, so that pdoc documents the installed package (with its extension).
(cd "$out" && "$python" -W error -m pdoc hpcml hpcml.torch hpcml.dask --docformat google --no-search -o "$out/python" \
   --footer-text "hpcml $("$python" -c 'import hpcml; print(hpcml.__version__)')")
sed "s/@VERSION@/$("$python" -c 'import hpcml; print(hpcml.__version__)')/" docs/api/index.html > "$out/index.html"
for page in cpp/index.html python/hpcml.html; do
  [ -s "$out/$page" ] || { echo "api-docs: $out/$page was not made" >&2; exit 1; }
done
echo "api-docs: $out/index.html (C++: cpp/, Python: python/)"
