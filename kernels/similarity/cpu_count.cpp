// The CPU's similarity block kernels, one per instruction set, and the choice among them: a
// 4 x 16 block of counts over a chunk of samples, from packed panels (cpu.cpp, whose header
// gives the instruction counts and floors).
#include <cstring>

#include "common/cpu_kernel.hpp"
#include "cpu_common.hpp"

namespace hpcml::detail::similarity::cpu {

namespace {

using f4 = float __attribute__((vector_size(16)));
using i4 = std::int32_t __attribute__((vector_size(16)));

// BlockKernel (cpu_common.hpp).
//
// This one for any CPU, with 16-byte vectors (x86-64's SSE2, Arm's NEON): two rows at a time,
// so that the 8 accumulators and the panel's 4 vectors fit SSE2's 16 registers. (The AVX2
// kernel's 8-lane vectors, compiled without AVX, are kept in memory by GCC: 20x slower.)
bool count_block_4x16_baseline(const float* x_panel, const float* ypack, std::size_t samples, float threshold,
                               std::int32_t* counts, bool stop_when_dead, std::int32_t seen) {
    const f4 t = {threshold, threshold, threshold, threshold};
    const i4 abs_mask = i4{} + 0x7fffffff;
    bool any_alive = false;
    for (std::size_t a0 = 0; a0 < kBlockRows; a0 += 2) {
        i4 c00, c01, c02, c03, c10, c11, c12, c13;  // named, not an array (see count_block_4x16_avx2)
        i4* const c[8] = {&c00, &c01, &c02, &c03, &c10, &c11, &c12, &c13};
        std::int32_t* const rows = counts + a0 * kPanelCols;  // two rows of 16 counts
        for (std::size_t k = 0; k < 8; ++k) std::memcpy(c[k], rows + k * 4, sizeof(i4));
        auto alive_after = [&](std::int32_t done) {
            const i4 full = i4{} + done;
            const i4 alive = (c00 == full) | (c01 == full) | (c02 == full) | (c03 == full) | (c10 == full) |
                             (c11 == full) | (c12 == full) | (c13 == full);
            std::uint64_t words[2];
            std::memcpy(words, &alive, sizeof words);
            return (words[0] | words[1]) != 0;
        };
        for (std::size_t s = 0; s < samples; ++s) {
            f4 y0, y1, y2, y3;
            std::memcpy(&y0, ypack + s * kPanelCols, sizeof y0);
            std::memcpy(&y1, ypack + s * kPanelCols + 4, sizeof y1);
            std::memcpy(&y2, ypack + s * kPanelCols + 8, sizeof y2);
            std::memcpy(&y3, ypack + s * kPanelCols + 12, sizeof y3);
            auto count = [&](i4& k0, i4& k1, i4& k2, i4& k3, float x) {
                const f4 xa = {x, x, x, x};
                k0 -= (f4)((i4)(xa - y0) & abs_mask) < t;  // a true comparison is -1
                k1 -= (f4)((i4)(xa - y1) & abs_mask) < t;
                k2 -= (f4)((i4)(xa - y2) & abs_mask) < t;
                k3 -= (f4)((i4)(xa - y3) & abs_mask) < t;
            };
            const float* xs = x_panel + s * kPanelCols + a0;
            count(c00, c01, c02, c03, xs[0]);
            count(c10, c11, c12, c13, xs[1]);
            if (stop_when_dead && (s & 15) == 15 && !alive_after(seen + static_cast<std::int32_t>(s) + 1)) break;
        }
        for (std::size_t k = 0; k < 8; ++k) std::memcpy(rows + k * 4, c[k], sizeof(i4));
        any_alive = any_alive || !stop_when_dead || alive_after(seen + static_cast<std::int32_t>(samples));
    }
    return any_alive;
}

#if defined(__GNUC__) && defined(__x86_64__)
using f8 = float __attribute__((vector_size(32)));
using i8 = std::int32_t __attribute__((vector_size(32)));

// count_block_4x16_baseline where the CPU has AVX2: a 4 x 16 block at once, per sample 4
// broadcasts and per 8 pairs a subtract, an abs (and-mask), a compare and an integer add.
[[gnu::target("avx2")]] bool count_block_4x16_avx2(const float* x_panel, const float* ypack, std::size_t samples,
                                                   float threshold, std::int32_t* counts, bool stop_when_dead,
                                                   std::int32_t seen) {
    const f8 t = {threshold, threshold, threshold, threshold, threshold, threshold, threshold, threshold};
    const i8 abs_mask = i8{} + 0x7fffffff;
    // Eight named accumulators, not an array: GCC keeps an array that is copied in and out in
    // memory, which puts a load and a store beside every add of the loop.
    i8 c00, c01, c10, c11, c20, c21, c30, c31;
    i8* const c[kBlockRows][2] = {{&c00, &c01}, {&c10, &c11}, {&c20, &c21}, {&c30, &c31}};
    for (std::size_t a = 0; a < kBlockRows; ++a)
        for (std::size_t k = 0; k < 2; ++k) std::memcpy(c[a][k], counts + (a * 2 + k) * 8, sizeof(i8));
    // Whether any pair passed each of the first `done` samples (vector compares, one test).
    auto alive_after = [&](std::int32_t done) {
        const i8 full = i8{} + done;
        const i8 alive = (c00 == full) | (c01 == full) | (c10 == full) | (c11 == full) | (c20 == full) | (c21 == full) |
                         (c30 == full) | (c31 == full);
        std::uint64_t words[4];
        std::memcpy(words, &alive, sizeof words);
        return (words[0] | words[1] | words[2] | words[3]) != 0;
    };
    for (std::size_t s = 0; s < samples; ++s) {
        f8 y0, y1;
        std::memcpy(&y0, ypack + s * kPanelCols, sizeof y0);
        std::memcpy(&y1, ypack + s * kPanelCols + 8, sizeof y1);
        auto count = [&](i8& lo, i8& hi, float x) {
            const f8 xa = {x, x, x, x, x, x, x, x};    // a broadcast (f8{} + x would add 0.0f)
            lo -= (f8)((i8)(xa - y0) & abs_mask) < t;  // a true comparison is -1
            hi -= (f8)((i8)(xa - y1) & abs_mask) < t;
        };
        const float* xs = x_panel + s * kPanelCols;
        count(c00, c01, xs[0]);
        count(c10, c11, xs[1]);
        count(c20, c21, xs[2]);
        count(c30, c31, xs[3]);
        if (stop_when_dead && (s & 15) == 15 && !alive_after(seen + static_cast<std::int32_t>(s) + 1)) break;
    }
    for (std::size_t a = 0; a < kBlockRows; ++a)
        for (std::size_t k = 0; k < 2; ++k) std::memcpy(counts + (a * 2 + k) * 8, c[a][k], sizeof(i8));
    return !stop_when_dead || alive_after(seen + static_cast<std::int32_t>(samples));
}

// count_block_4x16_baseline where the CPU has AVX-512: a panel's 16 columns are one 16-float vector,
// and the compare writes a mask register that a masked add takes, so the AVX2 loop's 4
// instructions per 8 pairs become 4 per 16 (subtract with the x value broadcast from memory,
// abs, compare, masked add).
// c[k] += 1 where |x - y[k]| < t (ordered: NaN differences never count).
[[gnu::target("avx512f")]] inline __m512i add_within_avx512(__m512i c, float x, __m512 y, __m512 t) {
    const __mmask16 within = _mm512_cmp_ps_mask(_mm512_abs_ps(_mm512_sub_ps(_mm512_set1_ps(x), y)), t, _CMP_LT_OQ);
    return _mm512_mask_add_epi32(c, within, c, _mm512_set1_epi32(1));
}

[[gnu::target("avx512f")]] inline bool any_equal_avx512(__m512i c0, __m512i c1, __m512i c2, __m512i c3,
                                                        std::int32_t done) {
    const __m512i full = _mm512_set1_epi32(done);
    return (_mm512_cmpeq_epi32_mask(c0, full) | _mm512_cmpeq_epi32_mask(c1, full) | _mm512_cmpeq_epi32_mask(c2, full) |
            _mm512_cmpeq_epi32_mask(c3, full)) != 0;
}

[[gnu::target("avx512f")]] bool count_block_4x16_avx512(const float* x_panel, const float* ypack, std::size_t samples,
                                                        float threshold, std::int32_t* counts, bool stop_when_dead,
                                                        std::int32_t seen) {
    const __m512 t = _mm512_set1_ps(threshold);
    __m512i c0 = _mm512_loadu_si512(counts), c1 = _mm512_loadu_si512(counts + 16), c2 = _mm512_loadu_si512(counts + 32),
            c3 = _mm512_loadu_si512(counts + 48);
    // Steps of 16 samples (then the rest), with the All mode's test between steps.
    for (std::size_t s0 = 0; s0 < samples; s0 += 16) {
        const std::size_t end = std::min(samples, s0 + 16);
        for (std::size_t s = s0; s < end; ++s) {
            const __m512 y = _mm512_loadu_ps(ypack + s * kPanelCols);
            const float* xs = x_panel + s * kPanelCols;
            c0 = add_within_avx512(c0, xs[0], y, t);
            c1 = add_within_avx512(c1, xs[1], y, t);
            c2 = add_within_avx512(c2, xs[2], y, t);
            c3 = add_within_avx512(c3, xs[3], y, t);
        }
        if (stop_when_dead && end == s0 + 16 &&
            !any_equal_avx512(c0, c1, c2, c3, seen + static_cast<std::int32_t>(end)))
            break;
    }
    _mm512_storeu_si512(counts, c0);
    _mm512_storeu_si512(counts + 16, c1);
    _mm512_storeu_si512(counts + 32, c2);
    _mm512_storeu_si512(counts + 48, c3);
    return !stop_when_dead || any_equal_avx512(c0, c1, c2, c3, seen + static_cast<std::int32_t>(samples));
}
#else
constexpr BlockKernel count_block_4x16_avx512 = nullptr, count_block_4x16_avx2 = nullptr;  // not built here
#endif

}  // namespace

BlockKernel block_kernel() {
    return best_kernel<BlockKernel, 3>(cpu_kernel_level(), {{{Avx512Level::value, count_block_4x16_avx512},
                                                             {Avx2Level::value, count_block_4x16_avx2},
                                                             {BaselineLevel::value, count_block_4x16_baseline}}});
}

}  // namespace hpcml::detail::similarity::cpu
