// The CPU backend's shared pieces (cpu.cpp: packing and the fused method; cpu_count.cpp: the
// SIMD block kernels; cpu_transpose.cpp: mirrors; cpu_naive.cpp: the broadcast baseline): the
// blocking, the block kernel's interface and the store of counts in the output's encoding.
#pragma once

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <type_traits>

#if defined(__SSE2__)
#include <immintrin.h>
#endif

#include "backends.hpp"
#include "math.hpp"

namespace hpcml::detail::similarity::cpu {

// The micro-kernel's block (the packed layout and the SIMD kernels of cpu_count.cpp are written
// for it: a layout, not a tuning knob).
constexpr std::size_t kBlockRows = 4;   // x features per micro-kernel
constexpr std::size_t kPanelCols = 16;  // y features per micro-kernel (one AVX-512 vector, two AVX2 ones)

// The fused CPU method's tuning (as CUB's tuning policies): it changes speed, never results. Each
// value with what chose it; Zen 3 and Zen 4 are the AMD EPYC machines of bench/results/, 2 cores.
struct FusedCpuPolicy {
    std::size_t band_rows;     // x features per work item
    std::size_t group_panels;  // y panels per work item
    std::size_t sample_chunk;  // samples per pass over an item (its band and panels stay in L2)
    // Elements below which packing and mirroring stay on the calling thread: a parallel region
    // costs a few microseconds, and milliseconds where the cores are busy with other work (each
    // region waits for all its threads), which small tiles would pay thousands of times.
    std::size_t parallel_min;
};
inline constexpr FusedCpuPolicy kFusedCpu{
    .band_rows = 128,       // items of 128 x 128: no other size timed
    .group_panels = 8,      // 128 columns, as band_rows; the mirror's buffer is 16 x 128 (4e3ead6): not timed
    .sample_chunk = 256,    // 256 KiB of band and panels in L2; was 512 before e4198e2 (36-41 ms vs 58-60, whole commit)
    .parallel_min = 1 << 16,  // tile 1 on a busy CPU: 60-110 s threaded, 0.4 s on one thread (25f94fd); others untried
};

// memcpy(dst, src, bytes) with non-temporal stores where the CPU has them (SSE2's); call
// stream_fence() before the memory is handed on.
inline void stream_bytes(const void* src, std::size_t bytes, void* dst) {
    const auto* from = static_cast<const unsigned char*>(src);
    auto* to = static_cast<unsigned char*>(dst);
    std::size_t k = 0;
#if defined(__SSE2__)
    const std::size_t head = std::min(bytes, (16 - reinterpret_cast<std::uintptr_t>(to) % 16) % 16);
    std::memcpy(to, from, head);
    for (k = head; k + 16 <= bytes; k += 16)
        _mm_stream_si128(reinterpret_cast<__m128i*>(to + k), _mm_loadu_si128(reinterpret_cast<const __m128i*>(from + k)));
#endif
    std::memcpy(to + k, from + k, bytes - k);
}
inline void stream_fence() {
#if defined(__SSE2__)
    _mm_sfence();
#endif
}

// The 64 x 64 bit matrix a (bit c of a[k] is element (k, c)) transposed in place: Hacker's
// Delight's six swap stages, each exchanging the off-diagonal blocks of every 2j x 2j block.
inline void transpose_64x64_bits(std::uint64_t* a) {
    std::uint64_t m = 0x00000000FFFFFFFFull;
    for (unsigned j = 32; j != 0; j >>= 1, m ^= m << j)
        for (unsigned k = 0; k < 64; k = ((k | j) + 1) & ~j) {
            const std::uint64_t t = ((a[k] >> j) ^ a[k | j]) & m;
            a[k] ^= t << j;
            a[k | j] ^= t;
        }
}

// The block kernel for hpcml::cpu_kernel()'s instruction set (cpu_count.cpp; HPCML_CPU_KERNEL
// caps it, so that the tests cover every kernel on one machine): avx512 counts 16 pairs per
// vector instruction, avx2 8, baseline 4. count(x_panel, ypack, samples, threshold, counts,
// stop_when_dead, seen):
// counts[a][b] += #{s < samples : |x_panel[s * 16 + a] - ypack[s * 16 + b]| < t} for a < 4,
// b < 16; with stop_when_dead (All mode) it returns early once no pair has passed every sample
// so far (`seen` samples were counted before), and returns whether any pair is still alive.
using BlockKernel = bool (*)(const float*, const float*, std::size_t, float, std::int32_t*, bool, std::int32_t);
BlockKernel block_kernel();

template <class T>
void store_typed(const auto* counts, std::size_t ldc, std::size_t rows, std::size_t cols, std::size_t r, std::size_t c,
                 const RegionOutput& out, auto&& encode) {
    for (std::size_t a = 0; a < rows; ++a) {
        T* row = reinterpret_cast<T*>(static_cast<char*>(out.data) + (r + a) * out.row_stride_bytes) + c;
        for (std::size_t b = 0; b < cols; ++b) row[b] = encode(counts[a * ldc + b]);
    }
}

// Writes a rows x cols block of counts (row stride ldc) at (r, c) of `out`, encoded as
// problem.output (for All: count == samples). For Bitmask, c is a multiple of 8.
template <class Count>
void store_counts(const Count* counts, std::size_t ldc, std::size_t rows, std::size_t cols, std::size_t r,
                  std::size_t c, const Problem& problem, const RegionOutput& out) {
    const auto samples = static_cast<std::uint32_t>(problem.samples);
    auto pass = [samples](Count v) { return all_within(static_cast<std::uint32_t>(v), samples); };
    Outputs::visit(problem.output, [&](auto entry) {
        using Out = decltype(entry);
        if constexpr (!Out::bits) {
            store_typed<typename Out::Element>(counts, ldc, rows, cols, r, c, out, [samples](Count v) {
                return Out::encode(static_cast<std::uint32_t>(v), samples);
            });
            return;
        }
        for (std::size_t a = 0; a < rows; ++a) {
            const Count* row_counts = counts + a * ldc;
            auto* row = static_cast<std::uint8_t*>(out.data) + (r + a) * out.row_stride_bytes + c / 8;
            for (std::size_t b0 = 0; b0 < cols; b0 += 8) {
                const auto bit = [&](unsigned b) { return pass(row_counts[b0 + b]); };
                if (cols - b0 < 8) {
                    row[b0 / 8] = encode_bitmask_byte(bit, static_cast<unsigned>(cols - b0));
                    continue;
                }
#if defined(__SSE2__)
                if constexpr (std::is_same_v<Count, std::int32_t>) {
                    // encode_bitmask_byte for 8 counts in two compares: lane k's pass is bit k.
                    const __m128i full = _mm_set1_epi32(static_cast<std::int32_t>(samples));
                    const auto lanes = [&](std::size_t k) {
                        const __m128i v = _mm_loadu_si128(reinterpret_cast<const __m128i*>(row_counts + b0 + k));
                        return _mm_movemask_ps(_mm_castsi128_ps(_mm_cmpeq_epi32(v, full)));
                    };
                    row[b0 / 8] = static_cast<std::uint8_t>(lanes(0) | lanes(4) << 4);
                    continue;
                }
#endif
                row[b0 / 8] = encode_bitmask_byte(bit, 8);  // a constant count of bits: no test per bit once inlined
            }
        }
    });
}

}  // namespace hpcml::detail::similarity::cpu
