"""hpcml's optional parts: an import that fails names the extra that brings the missing package."""

from __future__ import annotations

import importlib
from typing import Any

# The extras of python/pyproject.toml, by the package each one brings.
EXTRAS = {"matplotlib": "plots", "torch": "torch", "dask": "dask", "distributed": "dask", "zarr": "dask"}


def missing(error: ModuleNotFoundError, feature: str) -> ModuleNotFoundError:
    """What to raise for ``error``: where an optional package is missing, an error that says
    ``feature`` needs it and which ``pip install 'hpcml[EXTRA]'`` brings it; otherwise ``error``."""
    top = (error.name or "").split(".")[0]
    if top not in EXTRAS:
        return error  # an optional package is there; something it imports is not
    return ModuleNotFoundError(f"{feature} needs {top}, which is not installed: pip install 'hpcml[{EXTRAS[top]}]'",
                               name=error.name)


def need(module: str, feature: str) -> Any:
    """``module`` imported, or ``missing``'s error."""
    try:
        return importlib.import_module(module)
    except ModuleNotFoundError as e:
        raise missing(e, feature) from None


def pyplot(feature: str) -> Any:
    """matplotlib.pyplot on the file-only Agg backend (figures are written to PNG files)."""
    need("matplotlib", feature).use("Agg")
    return need("matplotlib.pyplot", feature)
