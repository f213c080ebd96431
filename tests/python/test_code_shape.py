"""The code's shape, kept where the house rules put it: no function over 80 lines in kernels/,
include/, tools/ and python/src (the bindings' module definition included), measured by lizard
(CUDA files read as C++), and hpcml-similarity's main.cpp under 400 lines."""

import os
import pathlib
import shutil
import tempfile

import pytest

lizard = pytest.importorskip("lizard")

ROOT = pathlib.Path(__file__).resolve().parents[2]
FOLDERS = ("kernels", "include", "tools", "python/src")
SUFFIXES = (".cpp", ".hpp", ".cu", ".cuh", ".h")
MOST_LINES = 80


def sources():
    for folder in FOLDERS:
        for path in sorted((ROOT / folder).rglob("*")):
            if path.suffix in SUFFIXES:
                yield path


def test_no_function_is_over_80_lines():
    long = []
    with tempfile.TemporaryDirectory() as scratch:
        for path in sources():
            read = path
            if path.suffix in (".cu", ".cuh"):  # lizard knows CUDA's C++ by a C++ name
                read = pathlib.Path(scratch) / (path.name + ".cpp")
                shutil.copyfile(path, read)
            for f in lizard.analyze_file(str(read)).function_list:
                if f.length > MOST_LINES:
                    long.append(f"{path.relative_to(ROOT)}:{f.start_line} {f.name}: {f.length} lines")
    assert sum(1 for _ in sources()) > 100  # the folders were read
    assert not long, "functions over 80 lines:\n" + "\n".join(long)


def test_the_command_lines_main_is_under_400_lines():
    lines = len((ROOT / "tools/similarity/main.cpp").read_text(encoding="utf-8").splitlines())
    assert lines < 400, f"tools/similarity/main.cpp has {lines} lines"
