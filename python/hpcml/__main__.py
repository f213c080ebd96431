"""python -m hpcml --cmake-dir | --include-dir | --version: what a C++ build needs from an
installed wheel."""

import argparse

from . import __version__, cmake_dir, include_dir

parser = argparse.ArgumentParser(prog="python -m hpcml", description=__doc__.split(":")[0] + ".")
group = parser.add_mutually_exclusive_group(required=True)
group.add_argument("--cmake-dir", action="store_true", help="print the folder for -Dhpcml_DIR=")
group.add_argument("--include-dir", action="store_true", help="print the folder of the C++ headers")
group.add_argument("--version", action="store_true", help="print hpcml's version")
arguments = parser.parse_args()
print(cmake_dir() if arguments.cmake_dir else include_dir() if arguments.include_dir else __version__)
