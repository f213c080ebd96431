// The CPU's pass over A for large games (cpu_large.cpp), with fused multiply-adds: for rows
// [i0, i1) and columns [j0, j1) of a tile, u1_part[i] = sum_j A[i, j] y[j] and
// u2_part[j] = sum_i x_i A[i, j] (either may be null; both are overwritten, not added to).
#pragma once

#include <cstddef>

#include "backends.hpp"

namespace hpcml::detail::regret {

using LargeTileSums = void (*)(const Game& game, const double* x, const double* y, std::size_t i0, std::size_t i1,
                               std::size_t j0, std::size_t j1, double* u1_part, double* u2_part);

// The kernel for hpcml::cpu_kernel()'s instruction set (AVX2 with FMA, or AVX-512), or null for
// the baseline: then the small games' exact tile sums serve large games too.
LargeTileSums large_tile_sums();

}  // namespace hpcml::detail::regret
