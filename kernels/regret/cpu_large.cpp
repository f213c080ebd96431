// The CPU's pass over A for large games (more than one tile: over 64 x 4096 actions), where the
// schedule's arithmetic need not match the GPU's batched kernel bit for bit (that holds for
// games of at most 64 actions): both players' utilities from one load of each element of A,
// with fused multiply-adds in double.
//
// Per 4 columns of 8 rows (AVX2): 8 conversions to double with their loads, 8 FMAs into the rows'
// dot products (A y) and 8 into the columns' (x^T A), one load of y, one load, two adds and a store
// of the column partial, two prefetches (where LargePassPolicy asks): 41 instructions per 32
// elements of A (128 bytes) as GCC 12 compiles it. The 16 FMAs bound it: two per cycle make 16
// bytes per cycle and core, above a core's share of memory bandwidth, so the pass is meant to run
// at memory bandwidth (bench_regret's cpu_bandwidth_fraction; measurements in docs/regret.md).
// Sums are in a fixed order that depends on the game's shape only (lanes
// by column mod 4, rows in eights, even and odd rows' column sums apart), never on threads.
#include <algorithm>
#include <cmath>
#include <cstdint>

#if defined(__x86_64__) && defined(__GNUC__)
#include <immintrin.h>
#endif

#include "common/cpu_kernel.hpp"
#include "cpu_large.hpp"

namespace hpcml::detail::regret {

namespace {

#if defined(__x86_64__) && defined(__GNUC__)
// Rows per group, the column partial loaded and stored once per group: eight rows' loads in
// flight keep the memory busy (four ran at 0.8 of eight's speed; sixteen spill registers). A
// tile's rows stream past whole, its y and column partial staying in L2 (32 KiB each at 4096
// columns): L1-sized pieces made the hardware prefetcher start over on every piece. The groups
// set the summation order, so this is fixed for every CPU (not a LargePassPolicy field).
constexpr std::size_t kRows = 8;

// The pass's tuning by CPU class: it changes speed, never results. Each value with what was
// measured (bench_regret, 4096 x 4096 and 16384 x 4096; docs/regret.md).
struct LargePassPolicy {
    std::size_t prefetch_bytes;  // how far ahead each row's line is asked into L2 (0: none)
};
// Zen 4: 0.85 of a read-only stream with 2 KiB, 0.67 without; 1, 4 and 8 KiB or into L1 less.
constexpr LargePassPolicy kAvx512CpuPolicy{2048};
// Zen 3: 256 and 512 B as fast as none, 768 B to 2 KiB 5-20% slower.
constexpr LargePassPolicy kAvx2CpuPolicy{0};
// AVX-512 is what a program can ask that tells the classes measured apart: the CPU's own level,
// not the cap (a cap on the instruction set leaves the memory system as it is).
LargePassPolicy large_pass_policy() {
    return cpu_kernel_supported() >= Avx512Level::value ? kAvx512CpuPolicy : kAvx2CpuPolicy;
}

// Written so that the eight row accumulators keep their registers (AVX2 has 16 ymm; GCC reads
// most of the rows' weights from memory inside their FMAs instead): when an accumulator was
// spilled, its chain went through a store and a load every step, 30% slower in cache. Which sums
// are wanted is a template parameter, with no test in the loop; the column sum runs as two
// chains (even and odd rows), halving its chain of dependent FMAs.
template <bool kRowSums, bool kColumnSums>
[[gnu::target("avx2,fma")]] void sweep_avx2(const Game& g, const double* x, const double* y, std::size_t i0,
                                            std::size_t i1, std::size_t j0, std::size_t j1, double* u1_part,
                                            double* u2_part, std::size_t prefetch) {
    const std::size_t n2 = g.n2;
    const std::size_t j4 = j0 + (j1 - j0) / 4 * 4;  // columns done 4 at a time
    if (kColumnSums) std::fill(u2_part + j0, u2_part + j1, 0.0);
    for (std::size_t i = i0; i < i1; i += kRows) {
        const std::size_t rows = std::min(kRows, i1 - i);
        const float* r[kRows];
        double w[kRows];
        __m256d weight[kRows], acc[kRows];
        for (std::size_t q = 0; q < kRows; ++q) {
            r[q] = g.A + (i + std::min(q, rows - 1)) * n2;  // rows past i1 repeat the last: their weight is 0
            w[q] = kColumnSums && q < rows ? x[i + q] : 0.0;
            weight[q] = _mm256_set1_pd(w[q]);
            acc[q] = _mm256_setzero_pd();
        }
        for (std::size_t j = j0; j < j4; j += 4) {
            const __m256d yv = kRowSums ? _mm256_loadu_pd(y + j) : _mm256_setzero_pd();
            __m256d column[2] = {_mm256_setzero_pd(), _mm256_setzero_pd()};
            const std::size_t pair = j / 4 % 4 * 2;
            if (prefetch)
                for (std::size_t q : {pair, pair + 1})  // a prefetch never faults: past A's end is harmless
                    _mm_prefetch(reinterpret_cast<const char*>(reinterpret_cast<std::uintptr_t>(r[q] + j) + prefetch),
                                 _MM_HINT_T1);
            for (std::size_t q = 0; q < kRows; ++q) {
                const __m256d a = _mm256_cvtps_pd(_mm_loadu_ps(r[q] + j));
                if (kRowSums) acc[q] = _mm256_fmadd_pd(a, yv, acc[q]);
                if (kColumnSums) column[q % 2] = _mm256_fmadd_pd(a, weight[q], column[q % 2]);
            }
            if (kColumnSums)
                _mm256_storeu_pd(u2_part + j,
                                 _mm256_add_pd(_mm256_loadu_pd(u2_part + j), _mm256_add_pd(column[0], column[1])));
        }
        double dots[kRows];
        for (std::size_t q = 0; q < kRows; ++q) {
            alignas(32) double lane[4];
            _mm256_store_pd(lane, acc[q]);
            dots[q] = (lane[0] + lane[2]) + (lane[1] + lane[3]);
        }
        for (std::size_t j = j4; j < j1; ++j) {  // the last columns
            double column = 0.0;
            for (std::size_t q = 0; q < kRows; ++q) {
                const double a = r[q][j];
                if (kRowSums) dots[q] = std::fma(a, y[j], dots[q]);
                column = std::fma(a, w[q], column);
            }
            if (kColumnSums) u2_part[j] += column;
        }
        if (kRowSums)
            for (std::size_t q = 0; q < rows; ++q) u1_part[i + q] = dots[q];
    }
}

void tile_sums_avx2(const Game& g, const double* x, const double* y, std::size_t i0, std::size_t i1, std::size_t j0,
                    std::size_t j1, double* u1_part, double* u2_part) {
    const std::size_t prefetch = large_pass_policy().prefetch_bytes;
    if (u1_part && u2_part) sweep_avx2<true, true>(g, x, y, i0, i1, j0, j1, u1_part, u2_part, prefetch);
    if (u1_part && !u2_part) sweep_avx2<true, false>(g, x, y, i0, i1, j0, j1, u1_part, u2_part, prefetch);
    if (!u1_part && u2_part) sweep_avx2<false, true>(g, x, y, i0, i1, j0, j1, u1_part, u2_part, prefetch);
}
#else
constexpr LargeTileSums tile_sums_avx2 = nullptr;  // not built here
#endif

}  // namespace

// Null at the baseline: the caller's generic pass.
LargeTileSums large_tile_sums() {
    return best_kernel<LargeTileSums, 2>(cpu_kernel_level(),
                                         {{{Avx2Level::value, tile_sums_avx2}, {BaselineLevel::value, nullptr}}});
}

}  // namespace hpcml::detail::regret
