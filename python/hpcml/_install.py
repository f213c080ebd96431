"""Where an installed wheel keeps the C++ library's CMake package and headers, for
find_package(hpcml): cmake -Dhpcml_DIR="$(python -m hpcml --cmake-dir)" (as nanobind and pybind11
offer), or CMAKE_PREFIX_PATH set to it."""

from pathlib import Path

_PACKAGE = Path(__file__).resolve().parent


def _existing(path: Path, what: str) -> str:
    if not path.is_dir():
        raise FileNotFoundError(
            f"this hpcml installation has no {what} ({path} is missing): it comes with the wheel "
            "(pip install of a built wheel, or pip install ./python), not with a module copied by hand")
    return str(path)


def cmake_dir() -> str:
    """The folder holding hpcmlConfig.cmake: pass it as hpcml_DIR to find_package(hpcml)."""
    return _existing(_PACKAGE / "lib" / "cmake" / "hpcml", "CMake package")


def include_dir() -> str:
    """The folder holding hpcml/hpcml.hpp and the other public headers."""
    return _existing(_PACKAGE / "include", "C++ headers")
