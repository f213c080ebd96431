"""The command-line programs a wheel carries in hpcml/bin (beside libhpcml in hpcml/lib), started
by the scripts pip puts on the PATH: each replaces this Python process with the program."""

import os
import sys
from pathlib import Path

_BIN = Path(__file__).resolve().parent / "bin"


def _run(name: str) -> None:
    program = _BIN / name
    if not program.is_file():
        why = " (it is CUDA code: this build has no CUDA backend)" if name == "hpcml-devicequery" else ""
        sys.exit(f"{name}: this installation of hpcml has no such program{why}; looked in {_BIN}")
    os.execv(program, [name, *sys.argv[1:]])


def similarity() -> None:
    _run("hpcml-similarity")


def trace() -> None:
    _run("hpcml-trace")


def devicequery() -> None:
    _run("hpcml-devicequery")


def bench_similarity() -> None:
    _run("bench_similarity")


def bench_regret() -> None:
    _run("bench_regret")


def bench_invgauss() -> None:
    _run("bench_invgauss")
