"""The library-wide calls (backends, devices, the CPU kernel, the caches) as Python functions, so
that type checkers and the API reference read their signatures; each one's docstring is the
extension's own, written once in python/src/module.cpp."""

from __future__ import annotations

from typing import Any, Callable, TypeVar

from . import _hpcml

_F = TypeVar("_F", bound=Callable[..., Any])


def _documented(native: Any) -> Callable[[_F], _F]:
    """Gives the decorated function `native`'s docstring, less nanobind's signature line."""
    def give(function: _F) -> _F:
        text = native.__doc__ or ""
        head, _, rest = text.partition("\n\n")
        function.__doc__ = rest if head.startswith(f"{native.__name__}(") else text
        return function
    return give


@_documented(_hpcml.backends)
def backends() -> list[str]:
    return list(_hpcml.backends())


@_documented(_hpcml.cpu_kernel)
def cpu_kernel() -> str:
    return str(_hpcml.cpu_kernel())


@_documented(_hpcml.cpu_kernel_names)
def cpu_kernel_names() -> list[str]:
    return list(_hpcml.cpu_kernel_names())


@_documented(_hpcml.cpu_kernel_pair_samples_per_cycle)
def cpu_kernel_pair_samples_per_cycle() -> float:
    return float(_hpcml.cpu_kernel_pair_samples_per_cycle())


@_documented(_hpcml.cuda_status)
def cuda_status() -> dict[str, Any]:
    return dict(_hpcml.cuda_status())


@_documented(_hpcml.devices)
def devices() -> list[dict[str, Any]]:
    return list(_hpcml.devices())


@_documented(_hpcml.release_cached_memory)
def release_cached_memory() -> None:
    _hpcml.release_cached_memory()


@_documented(_hpcml.resolve_backend)
def resolve_backend(backend: str = "auto", device: int = 0) -> str:
    return str(_hpcml.resolve_backend(backend, device))
