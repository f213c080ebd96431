// Similarity on the CPU: the fused kernel (the default where no GPU exists) and the naive
// broadcast baseline with NumPy's memory behaviour.
//
// Fused layout and cost: x's rows and y's columns of a region are first packed as
// [panel of 16 features][sample][16] (Packed, below); a work item is then a band of 128 rows
// against a group of 8 column panels, and each 4 x 16 block of it streams over a chunk of
// samples with 8 vector accumulators (AVX2): per sample, 4 broadcasts, and per 8 pairs a
// subtract, an abs (and-mask), a compare and an integer add. Floor: 4 vector instructions per
// 8 pair-samples; with 4 vector pipes (Zen 3) 8 pair-samples per cycle per core, with 3 (Intel
// server cores) 6. Where the CPU has AVX-512 a panel is one 16-float vector and the compare
// feeds a masked add: 4 instructions per 16 pair-samples (16 per cycle on Zen 5's four
// full-width pipes). Without AVX2, the same with 4-float vectors, two rows at a time. Besides the output, memory is the
// packed region, samples x (rows + cols) floats, and 64 KiB of accumulators per thread.
#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <limits>
#include <type_traits>

#if defined(__SSE2__)
#include <immintrin.h>
#endif

#ifdef _OPENMP
#include <omp.h>
#endif

#include "backends.hpp"
#include "math.hpp"

namespace hpcml::detail::similarity {

namespace {

constexpr std::size_t kBlockRows = 4;      // x features per micro-kernel
constexpr std::size_t kPanelCols = 16;     // y features per micro-kernel (one AVX-512 vector, two AVX2 ones)
constexpr std::size_t kBandRows = 128;     // x features per work item
constexpr std::size_t kGroupPanels = 8;    // y panels per work item (128 columns)
constexpr std::size_t kSampleChunk = 256;  // samples per pass over an item (its band and panels: 256 KiB, in L2)
// Elements below which packing and mirroring stay on the calling thread: a parallel region
// costs a few microseconds, and milliseconds where the cores are busy with other work (each
// region waits for all its threads), which small tiles would pay thousands of times.
constexpr std::size_t kParallelMin = std::size_t{1} << 16;

using f4 = float __attribute__((vector_size(16)));
using i4 = std::int32_t __attribute__((vector_size(16)));

// counts[a][b] += #{s < samples : |xs[s * 16 + a] - ypack[s * 16 + b]| < t} for a < 4, b < 16:
// four features of a packed panel against a packed panel.
// With stop_when_dead (All mode), returns early once no pair has passed every sample so far
// (`seen` samples were counted before this call); returns whether any pair is still alive.
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
#endif

// The block kernel this CPU runs best, and its name. HPCML_SIMILARITY_CPU_KERNEL=avx2 or
// baseline caps the choice, for comparisons and so that the tests cover every kernel on one
// machine.
struct BlockKernel {
    bool (*count)(const float*, const float*, std::size_t, float, std::int32_t*, bool, std::int32_t);
    const char* name;
};
BlockKernel block_kernel() {
    const char* cap_variable = std::getenv("HPCML_SIMILARITY_CPU_KERNEL");
    const std::string_view cap = cap_variable && *cap_variable ? cap_variable : "avx512";
    detail::require(cap == "avx512" || cap == "avx2" || cap == "baseline",
                    "HPCML_SIMILARITY_CPU_KERNEL: must be avx512, avx2 or baseline, got '" + std::string(cap) + "'");
#if defined(__GNUC__) && defined(__x86_64__)
    if (cap == "avx512" && __builtin_cpu_supports("avx512f")) return {count_block_4x16_avx512, "avx512"};
    if (cap != "baseline" && __builtin_cpu_supports("avx2")) return {count_block_4x16_avx2, "avx2"};
#endif
    return {count_block_4x16_baseline, "baseline"};
}

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

// Element access for mirroring, by element type (a template parameter, so the loops below
// compile without a switch per element).
template <class T>
T get(const RegionOutput& o, std::size_t a, std::size_t b) {
    T v;
    std::memcpy(&v, static_cast<const unsigned char*>(o.data) + a * o.row_stride_bytes + b * sizeof(T), sizeof(T));
    return v;
}

template <class T>
void put(const RegionOutput& o, std::size_t a, std::size_t b, T v) {
    std::memcpy(static_cast<unsigned char*>(o.data) + a * o.row_stride_bytes + b * sizeof(T), &v, sizeof(T));
}

// dst(a0 + a, b0 + b) = src(b0 + b, a0 + a) for a < cols, b < rows: one block of a transpose,
// 4 x 4 at a time by SSE shuffles for 32-bit elements (a move of bits, whatever they hold),
// element by element elsewhere.
template <class T>
void transpose_block(const RegionOutput& src, std::size_t b0, std::size_t a0, std::size_t rows, std::size_t cols,
                     const RegionOutput& dst) {
    std::size_t whole_rows = 0, whole_cols = 0;  // the part done 4 x 4
#if defined(__SSE2__)
    if constexpr (sizeof(T) == 4) {
        whole_rows = rows / 4 * 4;
        whole_cols = cols / 4 * 4;
        const auto* s = static_cast<const unsigned char*>(src.data);
        auto* d = static_cast<unsigned char*>(dst.data);
        for (std::size_t b = 0; b < whole_rows; b += 4)
            for (std::size_t a = 0; a < whole_cols; a += 4) {
                __m128 r[4];
                for (int k = 0; k < 4; ++k)
                    r[k] = _mm_loadu_ps(
                        reinterpret_cast<const float*>(s + (b0 + b + k) * src.row_stride_bytes + (a0 + a) * 4));
                _MM_TRANSPOSE4_PS(r[0], r[1], r[2], r[3]);
                for (int k = 0; k < 4; ++k)
                    _mm_storeu_ps(reinterpret_cast<float*>(d + (a0 + a + k) * dst.row_stride_bytes + (b0 + b) * 4),
                                  r[k]);
            }
    }
#endif
    for (std::size_t a = 0; a < cols; ++a)
        for (std::size_t b = a < whole_cols ? whole_rows : 0; b < rows; ++b)
            put<T>(dst, a0 + a, b0 + b, get<T>(src, b0 + b, a0 + a));
}

// dst(a, b) = src(b, a) for a < cols, b < rows, in 32 x 32 blocks so that the column reads
// stay in cache. Threads own destination rows; the source is another region, only read.
template <class T>
void transpose(const RegionOutput& src, std::size_t rows, std::size_t cols, const RegionOutput& dst) {
    constexpr std::size_t kBlock = 32;
#pragma omp parallel for schedule(static) if (rows * cols >= kParallelMin)
    for (std::size_t a0 = 0; a0 < cols; a0 += kBlock)
        for (std::size_t b0 = 0; b0 < rows; b0 += kBlock)
            transpose_block<T>(src, b0, a0, std::min(kBlock, rows - b0), std::min(kBlock, cols - a0), dst);
}

// The 8 x 8 bit matrix in x (bit c of byte r is element (r, c)) transposed: Hacker's
// Delight's three swap stages.
std::uint64_t transpose_8x8_bits(std::uint64_t x) {
    std::uint64_t t = (x ^ (x >> 7)) & 0x00AA00AA00AA00AAull;
    x ^= t ^ (t << 7);
    t = (x ^ (x >> 14)) & 0x0000CCCC0000CCCCull;
    x ^= t ^ (t << 14);
    t = (x ^ (x >> 28)) & 0x00000000F0F0F0F0ull;
    return x ^ t ^ (t << 28);
}

// Bitmask element (r, c) is bit c % 8 of byte c / 8 of row r. An 8 x 8 block is the byte
// `byte` of rows r0..r0+7 (rows past `rows` read as 0).
std::uint64_t load_bit_block(const RegionOutput& o, std::size_t r0, std::size_t rows, std::size_t byte) {
    std::uint64_t block = 0;
    for (std::size_t k = 0; k < 8 && r0 + k < rows; ++k)
        block |= std::uint64_t{static_cast<const std::uint8_t*>(o.data)[(r0 + k) * o.row_stride_bytes + byte]}
                 << (8 * k);
    return block;
}

void store_bit_block(const RegionOutput& o, std::size_t r0, std::size_t rows, std::size_t byte, std::uint64_t block) {
    for (std::size_t k = 0; k < 8 && r0 + k < rows; ++k)
        static_cast<std::uint8_t*>(o.data)[(r0 + k) * o.row_stride_bytes + byte] =
            static_cast<std::uint8_t>(block >> (8 * k));
}

// Visits the 8 x 8 blocks (b0, a0) of a rows x cols bitmask (rows b0.., byte a0 / 8): threads
// over bands of 256 rows, the columns in order inside a band, so that the band's source lines
// stay in L1 while they are read one byte at a time (a band's 8-row blocks column after column
// would miss the cache on every block of a wide mask).
template <class Visit>
void for_each_bit_block(std::size_t rows, std::size_t cols, Visit&& visit) {
    constexpr std::size_t kBand = 256;
#pragma omp parallel for schedule(dynamic) if (rows * cols >= kParallelMin)
    for (std::size_t band = 0; band < rows; band += kBand)
        for (std::size_t a0 = 0; a0 < cols; a0 += 8)
            for (std::size_t b0 = band; b0 < std::min(band + kBand, rows); b0 += 8) visit(b0, a0);
}

// transpose<T> for Bitmask: dst's rows a < cols get bytes b0 / 8 for b0 < rows. The region's
// column edges are multiples of 8 or the output's edge, where the padding bits stay 0 (rows
// past `rows` read as 0).
void transpose_bits(const RegionOutput& src, std::size_t rows, std::size_t cols, const RegionOutput& dst) {
    for_each_bit_block(rows, cols, [&](std::size_t b0, std::size_t a0) {
        store_bit_block(dst, a0, cols, b0 / 8, transpose_8x8_bits(load_bit_block(src, b0, rows, a0 / 8)));
    });
}

// Features [first, first + count) of a samples x features matrix (element (s, f) at
// data[s * ld + f]), packed once per region as [panel of 16 features][sample][16], NaN past
// the last feature, 64-byte aligned: the micro-kernel's loads are then sequential, where the
// user's layout strides by a whole sample row (which, for wide inputs, maps every load of a
// panel to the same cache set and defeats the prefetcher).
class Packed {
public:
    Packed() = default;
    Packed(const float* data, std::size_t ld, std::size_t first, std::size_t count, std::size_t samples,
           detail::MemoryTracker& tracker, const char* what)
        : samples_(samples) {
        const std::size_t panels = (count + kPanelCols - 1) / kPanelCols;
        buffer_ = detail::HostBuffer<float>(tracker, panels * samples * kPanelCols + kAlignFloats, what);
        data_ = buffer_.data() +
                (kAlignFloats - reinterpret_cast<std::uintptr_t>(buffer_.data()) / sizeof(float) % kAlignFloats) %
                    kAlignFloats;
        const float nan = std::numeric_limits<float>::quiet_NaN();
#pragma omp parallel for schedule(static) if (samples * count >= kParallelMin)
        for (std::size_t s = 0; s < samples; ++s) {  // each sample row read once, in order
            const float* row = data + s * ld + first;
            for (std::size_t panel = 0; panel < panels; ++panel) {
                const std::size_t f0 = panel * kPanelCols, valid = std::min(kPanelCols, count - f0);
                float* dst = data_ + (panel * samples + s) * kPanelCols;
                std::memcpy(dst, row + f0, valid * sizeof(float));
                std::fill(dst + valid, dst + kPanelCols, nan);
            }
        }
    }
    // Samples from s0 on of a panel: [sample][16].
    const float* panel(std::size_t panel, std::size_t s0) const { return data_ + (panel * samples_ + s0) * kPanelCols; }

private:
    static constexpr std::size_t kAlignFloats = 16;  // 64 bytes: a packed sample of a panel is one cache line
    detail::HostBuffer<float> buffer_;
    float* data_ = nullptr;
    std::size_t samples_ = 0;
};

}  // namespace

std::string_view cpu_fused_kernel() { return block_kernel().name; }

void cpu_fused(const Problem& p, const Region& region, const RegionOutput& out, detail::MemoryTracker& tracker,
               const RegionOutput* mirror) {
    if (region.rows == 0 || region.cols == 0) return;
    const auto count_block = block_kernel().count;
    constexpr std::size_t kBandBlocks = kBandRows / kBlockRows;
    const std::size_t panels = (region.cols + kPanelCols - 1) / kPanelCols;
    const std::size_t groups = (panels + kGroupPanels - 1) / kGroupPanels;
    const std::size_t bands = (region.rows + kBandRows - 1) / kBandRows;
    const std::size_t items = bands * groups;
#ifdef _OPENMP
    const int threads = static_cast<int>(std::min<std::size_t>(items, omp_get_max_threads()));
#else
    const int threads = 1;
#endif
    // y is x and this region straddles the diagonal: blocks on and above it only (~half the work).
    const bool diagonal = p.symmetric && region.row0 == region.col0 && region.rows == region.cols;
    const Packed ypacked(p.y, p.ldy, region.col0, region.cols, p.samples, tracker, "similarity cpu packed y");
    const Packed xpacked =
        diagonal ? Packed{}
                 : Packed(p.x, p.ldx, region.row0, region.rows, p.samples, tracker, "similarity cpu packed x");
    const Packed& xsource = diagonal ? ypacked : xpacked;  // the same features, packed once
    const std::size_t chunk = std::min(kSampleChunk, std::max<std::size_t>(p.samples, 1));
    const std::size_t band_rows = std::min(kBandRows, (region.rows + kBlockRows - 1) / kBlockRows * kBlockRows);
    const std::size_t acc_size = std::min(kGroupPanels, panels) * band_rows * kPanelCols;
    detail::HostBuffer<std::int32_t> accumulators(tracker, threads * acc_size, "similarity cpu accumulators");
    // A panel's counts transposed, for the mirror's store.
    detail::HostBuffer<std::int32_t> transposed;
    if (diagonal || mirror)
        transposed =
            detail::HostBuffer<std::int32_t>(tracker, threads * kPanelCols * kBandRows, "similarity cpu mirror block");
    const bool all_mode = p.mode == SimilarityMode::All;

#pragma omp parallel for schedule(dynamic) num_threads(threads)
    for (std::size_t item = 0; item < items; ++item) {
#ifdef _OPENMP
        const std::size_t thread = static_cast<std::size_t>(omp_get_thread_num());
#else
        const std::size_t thread = 0;
#endif
        std::int32_t* acc = accumulators.data() + thread * acc_size;
        std::int32_t* across = transposed.size() ? transposed.data() + thread * kPanelCols * kBandRows : nullptr;
        const std::size_t i0 = (item / groups) * kBandRows;
        const std::size_t in = std::min(kBandRows, region.rows - i0);
        const std::size_t first_panel = (item % groups) * kGroupPanels;
        const std::size_t group_panels = std::min(kGroupPanels, panels - first_panel);
        const std::size_t blocks = (in + kBlockRows - 1) / kBlockRows;
        // Columns [j0, j0 + jn) of a panel; below the diagonal (written as mirrors) when
        // they end at or before the first row of the band, or of a block.
        auto panel_cols = [&](std::size_t panel) {
            const std::size_t j0 = (first_panel + panel) * kPanelCols;
            return std::pair{j0, std::min(kPanelCols, region.cols - j0)};
        };
        auto below = [&](std::size_t panel, std::size_t first_row) {
            const auto [j0, jn] = panel_cols(panel);
            return diagonal && j0 + jn <= first_row;
        };
        if (below(group_panels - 1, i0)) continue;
        bool alive[kGroupPanels][kBandBlocks];
        for (auto& panel_alive : alive) std::fill(panel_alive, panel_alive + kBandBlocks, true);
        std::fill(acc, acc + group_panels * band_rows * kPanelCols, 0);

        // Chunks of samples outermost, so that the band's and a panel's packed samples stay in cache.
        for (std::size_t s0 = 0; s0 < p.samples; s0 += chunk) {
            const std::size_t sc = std::min(chunk, p.samples - s0);
            for (std::size_t panel = 0; panel < group_panels; ++panel) {
                if (below(panel, i0) || std::none_of(alive[panel], alive[panel] + blocks, [](bool a) { return a; }))
                    continue;
                const float* ypanel = ypacked.panel(first_panel + panel, s0);
                for (std::size_t block = 0; block < blocks; ++block) {
                    const std::size_t row = i0 + block * kBlockRows;  // rows past the edge are NaN: never counted
                    if (!alive[panel][block] || below(panel, row)) continue;
                    const float* xs = xsource.panel(row / kPanelCols, s0) + row % kPanelCols;
                    alive[panel][block] = count_block(xs, ypanel, sc, p.threshold,
                                                      acc + (panel * band_rows + block * kBlockRows) * kPanelCols,
                                                      all_mode, static_cast<std::int32_t>(s0));
                }
            }
        }
        for (std::size_t panel = 0; panel < group_panels; ++panel) {
            if (below(panel, i0)) continue;
            const auto [j0, jn] = panel_cols(panel);
            const std::int32_t* counts = acc + panel * band_rows * kPanelCols;
            // On the diagonal, element (r, c) is this kernel's where c's 16-column panel is not
            // left of r's (the blocks below the diagonal it skips are 4 rows high, so it computes
            // a little more); the rest, (j, i) with i in an earlier panel than j, is written as
            // the mirror of (i, j) by the one item that holds (i, j). So no element is written twice.
            const std::size_t stored = diagonal ? std::min(in, j0 + kPanelCols - i0) : in;
            store_counts(counts, kPanelCols, stored, jn, i0, j0, p, out);
            const std::size_t mirrored = diagonal ? (j0 > i0 ? std::min(in, j0 - i0) : 0) : mirror ? in : 0;
            if (mirrored == 0) continue;
            for (std::size_t b = 0; b < jn; ++b)
                for (std::size_t a = 0; a < mirrored; ++a) across[b * mirrored + a] = counts[a * kPanelCols + b];
            store_counts(across, mirrored, jn, mirrored, j0, i0, p, diagonal ? out : *mirror);
        }
    }
}

void cpu_transpose(const Problem& p, const RegionOutput& src, std::size_t rows, std::size_t cols,
                   const RegionOutput& dst) {
    Outputs::visit(p.output, [&](auto entry) {
        using Out = decltype(entry);
        if constexpr (Out::bits) {
            transpose_bits(src, rows, cols, dst);
        } else {  // a move of elements: one instantiation per element type
            transpose<typename Out::Element>(src, rows, cols, dst);
        }
    });
}

void cpu_naive(const Problem& p, const Region& region, const RegionOutput& out, detail::MemoryTracker& tracker) {
    const std::size_t pairs = detail::checked_mul(region.rows, region.cols, "similarity naive");
    const std::size_t elements = detail::checked_mul(p.samples, pairs, "similarity naive");
    // x[:, :, None] - y[:, None, :] (float32), abs(.) < t (bool), .sum(0) or .all(0) (int64).
    detail::ensure_host_fits(
        detail::checked_mul(elements, sizeof(float) + 1, "similarity naive") + pairs * sizeof(std::int64_t),
        "naive similarity (samples x rows x cols float32 differences + bool mask)");
    detail::HostBuffer<float> diff(tracker, elements, "naive similarity differences");
    for (std::size_t s = 0; s < p.samples; ++s)
        for (std::size_t i = 0; i < region.rows; ++i)
            for (std::size_t j = 0; j < region.cols; ++j)
                diff[(s * region.rows + i) * region.cols + j] =
                    p.x[s * p.ldx + region.row0 + i] - p.y[s * p.ldy + region.col0 + j];
    detail::HostBuffer<std::uint8_t> mask(tracker, elements, "naive similarity mask");
    for (std::size_t e = 0; e < elements; ++e) mask[e] = std::fabs(diff[e]) < p.threshold;
    detail::HostBuffer<std::int64_t> reduced(tracker, pairs, "naive similarity reduction");
    const bool all_mode = p.mode == SimilarityMode::All;
    for (std::size_t e = 0; e < pairs; ++e) reduced[e] = all_mode ? 1 : 0;
    for (std::size_t s = 0; s < p.samples; ++s)
        for (std::size_t e = 0; e < pairs; ++e) {
            if (all_mode) {
                reduced[e] &= mask[s * pairs + e];
            } else {
                reduced[e] += mask[s * pairs + e];
            }
        }
    if (all_mode) {  // store_counts encodes All as count == samples
        for (std::size_t e = 0; e < pairs; ++e) reduced[e] = reduced[e] ? static_cast<std::int64_t>(p.samples) : 0;
    }
    store_counts(reduced.data(), region.cols, region.rows, region.cols, 0, 0, p, out);
}

}  // namespace hpcml::detail::similarity
