"""The code blocks of README.md and docs/*.md, run as a user would (Sybil parses the pages).

- ```python blocks run in order, one namespace per page, in a fresh folder; a page's hidden setup
  is an `<!-- invisible-code-block: python ... -->` comment before the block that needs it, and a
  block that cannot run here is preceded by `<!-- skip: next "why" -->` (or `if(condition,
  "why")`, evaluated in the page's namespace).
- ```cpp blocks are compiled with g++ against the installed package (`python -m hpcml
  --include-dir`, its libhpcml) and run: statements go inside main(), #include lines above it, and
  a page's hidden `<!-- invisible-code-block: cpp ... -->` (the names a fragment leaves undefined)
  goes first in main(). A device call where there is no GPU ends the program as hpcml's NoDevice
  error (the host part has run); where there is a GPU, a block with device pointers is compiled
  only (its pointers are placeholders).
- ```sh and ```cmake blocks are not run here: each must be preceded by a skip naming the script
  or test that runs it (the build, the wheel, Docker, the GPU suite).
A block of another language, or one of these without what it needs, fails: a new block must be
made to run or say why not. The session's summary line counts the blocks run and skipped.
"""

from __future__ import annotations

import functools
import os
import pathlib
import subprocess
import sys
import unittest
from collections import Counter

import pytest
from sybil import Sybil
from sybil.parsers.markdown import CodeBlockParser, PythonCodeBlockParser, SkipParser

ROOT = pathlib.Path(__file__).resolve().parents[2]
PAGES = [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]
COUNTS: Counter = Counter()


def _not_run(example):
    raise AssertionError(f"{example.path}:{example.line}: a ```{example.region.lexemes.get('arguments')} block "
                         "that is not run: precede it with <!-- skip: next \"why, and what runs it\" -->")


@functools.cache
def _installed_package():
    """The installed package's header and library folders (asked once)."""
    include = subprocess.run([sys.executable, "-m", "hpcml", "--include-dir"], capture_output=True, text=True,
                             check=True).stdout.strip()
    return include, str(pathlib.Path(include).parent / "lib")


class _Cpp:
    """```cpp blocks: compiled against the installed package and run."""

    def __init__(self):
        self.prelude: dict = {}  # page -> hidden code for its next block

    def __call__(self, example):
        source = example.parsed
        if example.region.lexemes.get("directive"):  # invisible-code-block: the next block's setup
            self.prelude[example.path] = source
            return
        body, includes = [], ["#include <hpcml/hpcml.hpp>", "#include <cstdint>", "#include <iostream>",
                              "#include <vector>"]
        for line in source.splitlines():
            (includes if line.startswith("#include") else body).append(line)
        program = "\n".join(includes) + f"""
int main() {{
    try {{
{self.prelude.pop(example.path, "")}
{chr(10).join(body)}
    }} catch (const hpcml::Error& e) {{
        if (e.kind() == hpcml::ErrorKind::NoDevice) {{ std::cout << "no CUDA device: " << e.what() << "\\n"; return 0; }}
        std::cerr << e.what() << "\\n";
        return 1;
    }}
    return 0;
}}
"""
        work = pathlib.Path(example.namespace["_folder"])
        cpp, exe = work / f"block{example.line}.cpp", work / f"block{example.line}"
        cpp.write_text(program)
        include, lib = _installed_package()
        built = subprocess.run(["g++", "-std=c++20", "-w", "-O0", "-I", include, str(cpp), "-o", str(exe), "-L", lib,
                                "-lhpcml", f"-Wl,-rpath,{lib}"], capture_output=True, text=True, timeout=300)
        assert built.returncode == 0, f"{example.path}:{example.line}: does not compile\n{built.stderr}\n{program}"
        has_gpu = bool(example.namespace["hpcml"].devices())
        if has_gpu and "_device" in source:
            COUNTS["cpp blocks compiled only (device placeholders, a GPU here)"] += 1
            return
        ran = subprocess.run([str(exe)], capture_output=True, text=True, timeout=300,
                             env=dict(os.environ, HPCML_QUIET="1"))
        assert ran.returncode == 0, f"{example.path}:{example.line}: exited {ran.returncode}\n{ran.stderr}"


SYBIL = Sybil(parsers=[PythonCodeBlockParser(), CodeBlockParser(language="cpp", evaluator=_Cpp()),
                       CodeBlockParser(language="sh", evaluator=_not_run),
                       CodeBlockParser(language="cmake", evaluator=_not_run), SkipParser()],
              path=str(ROOT))


def _languages(page: pathlib.Path):
    """Every fenced block's language on the page ('' for output and text blocks, which are not code)."""
    fence = False
    for line in page.read_text().splitlines():
        if line.startswith("```"):
            if not fence:
                yield line[3:].strip()
            fence = not fence


@pytest.mark.parametrize("page", PAGES, ids=[str(p.relative_to(ROOT)) for p in PAGES])
def test_every_block_of_the_page_runs_or_says_why_not(page, tmp_path, monkeypatch):
    unknown = sorted(set(_languages(page)) - {"", "python", "cpp", "sh", "cmake"})
    assert not unknown, f"{page}: blocks in {unknown}, which nothing runs: run them here or make them text"
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("HPCML_QUIET", "1")
    document = SYBIL.parse(page)
    import hpcml
    document.namespace.update(_folder=str(tmp_path), _root=str(ROOT), hpcml=hpcml)
    for example in document.examples():
        lexemes = example.region.lexemes
        what = (f"hidden {lexemes['arguments']} setups" if lexemes.get("directive")
                else f"{lexemes['arguments']} blocks" if "arguments" in lexemes else None)
        try:
            example.evaluate()
        except unittest.SkipTest:  # Sybil's skip parser: the block says why it does not run here
            COUNTS[f"{what} skipped"] += 1
            continue
        if what:
            COUNTS[f"{what} run"] += 1



def test_an_unmarked_or_broken_block_fails(tmp_path, monkeypatch):
    page = tmp_path / "page.md"
    for text, error, message in [("```sh\nls\n```\n", AssertionError, "that is not run"),
                                 ("```python\nundefined_name\n```\n", NameError, "undefined_name"),
                                 ("```cpp\nint x = undefined_name;\n```\n", AssertionError, "does not compile"),
                                 ("```js\n1\n```\n", AssertionError, "which nothing runs")]:
        page.write_text(text)
        with pytest.raises(error, match=message):
            test_every_block_of_the_page_runs_or_says_why_not(page, tmp_path, monkeypatch)
