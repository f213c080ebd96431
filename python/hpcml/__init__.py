"""hpcml: fused numerical kernels for CUDA and the CPU, each beside its naive broadcast baseline.

Errors: invalid arguments raise ValueError, allocations that would not fit raise MemoryError
(the message gives the bytes needed and free), CUDA problems raise RuntimeError.
"""

from . import _hpcml
from ._library import (backends, cpu_kernel, cpu_kernel_names, cpu_kernel_pair_samples_per_cycle, cuda_status,
                       devices, release_cached_memory, resolve_backend)
from ._regret import GameSolution, solve_matrix_game, solve_matrix_games
from ._similarity import similarity, similarity_pairs
from . import invgauss, telemetry
from ._install import cmake_dir, include_dir

__version__: str = getattr(_hpcml, "__version__")  # the C++ library's (hpcml::version())

__all__ = ["__version__", "backends", "cpu_kernel", "cpu_kernel_names", "cpu_kernel_pair_samples_per_cycle",
           "cuda_status", "devices", "release_cached_memory", "resolve_backend",
           "similarity", "similarity_pairs", "GameSolution", "solve_matrix_game", "solve_matrix_games", "invgauss", "telemetry", "cmake_dir", "include_dir"]
