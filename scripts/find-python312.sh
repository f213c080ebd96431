#!/usr/bin/env bash
# Prints a Python 3.12 interpreter (the GPU machines' python3 is 3.12): PYTHON312 if set, else
# python3.12 on PATH or pyenv's; exits 1 saying how to set it. For gpu-prepare.sh and gpu-rehearse.sh.
for candidate in "${PYTHON312:-}" python3.12 "$HOME"/.pyenv/versions/3.12*/bin/python3; do
  if [ -n "$candidate" ] && "$candidate" -c 'import sys; assert sys.version_info[:2] == (3, 12)' 2>/dev/null; then
    command -v "$candidate"
    exit 0
  fi
done
echo "no Python 3.12 here (set PYTHON312): the GPU machine's python3 is 3.12" >&2
exit 1
