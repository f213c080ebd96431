// Similarity on the CPU: the fused kernel (the default where no GPU exists) and the naive
// broadcast baseline with NumPy's memory behaviour.
//
// Fused layout and cost: for each 16-column panel of y the samples are packed into a
// contiguous [chunk][16] block (NaN-padded past the region edge; NaN never counts), then each
// 4-row block of x streams over the samples with 8 vector accumulators: per sample, 4
// broadcasts, and per 8 pairs a subtract, an abs (and-mask), a compare and an integer add.
// That is 4 vector instructions per 8 pairs; on AVX2 at ~3 IPC for these ports, about 6 pairs
// per cycle per core. Nothing but the output and a few KiB per thread is written.
#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>

#ifdef _OPENMP
#include <omp.h>
#endif

#include "backends.hpp"
#include "math.hpp"

namespace hpcml::detail::similarity {

namespace {

constexpr std::size_t kBlockRows = 4;     // x features per micro-kernel
constexpr std::size_t kPanelCols = 16;    // y features per micro-kernel (two 8-float vectors)
constexpr std::size_t kItemRows = 128;    // x features per work item (threads share items)
constexpr std::size_t kSampleChunk = 512; // samples packed at a time (32 KiB of y panel)

using f8 = float __attribute__((vector_size(32)));
using i8 = std::int32_t __attribute__((vector_size(32)));

// counts[a][b] += #{s < samples : |x_a[s * ldx] - ypack[s][b]| < t} for a < 4, b < 16.
// With stop_when_dead (All mode), returns early once no pair has passed every sample so far
// (`seen` samples were counted before this call); returns whether any pair is still alive.
// Cloned for AVX2 and baseline x86-64 and picked at load time, so one binary runs anywhere.
HPCML_AVX2_CLONES bool count_block_4x16(
    const float* x0, const float* x1, const float* x2, const float* x3, std::size_t ldx,
    const float* ypack, std::size_t samples, float threshold, std::int32_t* counts,
    bool stop_when_dead, std::int32_t seen) {
    const float* xs[kBlockRows] = {x0, x1, x2, x3};
    const f8 t = f8{} + threshold;
    const i8 abs_mask = i8{} + 0x7fffffff;
    i8 c[kBlockRows][2];
    std::memcpy(c, counts, sizeof c);
    for (std::size_t s = 0; s < samples; ++s) {
        f8 y0, y1;
        std::memcpy(&y0, ypack + s * kPanelCols, sizeof y0);
        std::memcpy(&y1, ypack + s * kPanelCols + 8, sizeof y1);
#pragma GCC unroll 4
        for (std::size_t a = 0; a < kBlockRows; ++a) {
            const f8 xa = f8{} + xs[a][s * ldx];
            const f8 d0 = (f8)((i8)(xa - y0) & abs_mask);
            const f8 d1 = (f8)((i8)(xa - y1) & abs_mask);
            c[a][0] -= (d0 < t);  // a true comparison is -1
            c[a][1] -= (d1 < t);
        }
        if (stop_when_dead && (s & 15) == 15) {
            const i8 full = i8{} + (seen + static_cast<std::int32_t>(s) + 1);
            i8 alive = i8{};
            for (std::size_t a = 0; a < kBlockRows; ++a) alive |= (c[a][0] == full) | (c[a][1] == full);
            bool any = false;
            for (int k = 0; k < 8; ++k) any |= alive[k] != 0;
            if (!any) {
                std::memcpy(counts, c, sizeof c);
                return false;
            }
        }
    }
    std::memcpy(counts, c, sizeof c);
    return true;
}

template <class T>
void store_typed(const auto* counts, std::size_t ldc, std::size_t rows, std::size_t cols,
                 std::size_t r, std::size_t c, const RegionOutput& out, auto&& encode) {
    for (std::size_t a = 0; a < rows; ++a) {
        T* row = reinterpret_cast<T*>(static_cast<char*>(out.data) + (r + a) * out.row_stride_bytes) + c;
        for (std::size_t b = 0; b < cols; ++b) row[b] = encode(counts[a * ldc + b]);
    }
}

// Writes a rows x cols block of counts (row stride ldc) at (r, c) of `out`, encoded as
// problem.output (for All: count == samples). For Bitmask, c is a multiple of 8.
template <class Count>
void store_counts(const Count* counts, std::size_t ldc, std::size_t rows, std::size_t cols,
                  std::size_t r, std::size_t c, const Problem& problem, const RegionOutput& out) {
    const auto samples = static_cast<std::uint32_t>(problem.samples);
    auto pass = [samples](Count v) { return all_within(static_cast<std::uint32_t>(v), samples); };
    switch (problem.output) {
        case SimilarityOutput::Int32:
            store_typed<std::int32_t>(counts, ldc, rows, cols, r, c, out,
                                      [](Count v) { return encode_count<std::int32_t>(v); });
            break;
        case SimilarityOutput::UInt16:
            store_typed<std::uint16_t>(counts, ldc, rows, cols, r, c, out,
                                       [](Count v) { return encode_count<std::uint16_t>(v); });
            break;
        case SimilarityOutput::UInt8:
            store_typed<std::uint8_t>(counts, ldc, rows, cols, r, c, out,
                                      [](Count v) { return encode_count<std::uint8_t>(v); });
            break;
        case SimilarityOutput::Bool:
            store_typed<std::uint8_t>(counts, ldc, rows, cols, r, c, out, [&](Count v) { return encode_bool(pass(v)); });
            break;
        case SimilarityOutput::Bitmask:
            for (std::size_t a = 0; a < rows; ++a) {
                const Count* row_counts = counts + a * ldc;
                auto* row = static_cast<std::uint8_t*>(out.data) + (r + a) * out.row_stride_bytes + c / 8;
                for (std::size_t b0 = 0; b0 < cols; b0 += 8) {
                    row[b0 / 8] = encode_bitmask_byte([&](unsigned b) { return pass(row_counts[b0 + b]); },
                                                      static_cast<unsigned>(std::min<std::size_t>(8, cols - b0)));
                }
            }
            break;
        case SimilarityOutput::Default:
            break;
    }
}

// Element access for mirroring, by count type (a template parameter, so the loops below
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

template <class Visit>
void with_count_type(SimilarityOutput output, Visit&& visit) {
    switch (output) {
        case SimilarityOutput::Int32: return visit(std::int32_t{});
        case SimilarityOutput::UInt16: return visit(std::uint16_t{});
        default: return visit(std::uint8_t{});  // UInt8 (symmetry is used in mode Count only)
    }
}

// dst(a, b) = src(b, a) for a < cols, b < rows, in 32 x 32 blocks so that the column reads
// stay in cache. Threads own destination rows; the source is another region, only read.
template <class T>
void transpose(const RegionOutput& src, std::size_t rows, std::size_t cols, const RegionOutput& dst) {
    constexpr std::size_t kBlock = 32;
#pragma omp parallel for schedule(static)
    for (std::size_t a0 = 0; a0 < cols; a0 += kBlock)
        for (std::size_t b0 = 0; b0 < rows; b0 += kBlock)
            for (std::size_t a = a0; a < std::min(a0 + kBlock, cols); ++a)
                for (std::size_t b = b0; b < std::min(b0 + kBlock, rows); ++b) put<T>(dst, a, b, get<T>(src, b, a));
}

// The lower triangle of a square region on the diagonal from its upper triangle, in 32 x 32
// blocks. Threads own rows: row i writes its elements j < i and reads (j, i), above the
// diagonal, which no thread writes.
template <class T>
void mirror_lower(std::size_t size, const RegionOutput& out) {
    constexpr std::size_t kBlock = 32;
#pragma omp parallel for schedule(dynamic)
    for (std::size_t i0 = 0; i0 < size; i0 += kBlock)
        for (std::size_t j0 = 0; j0 <= i0; j0 += kBlock)
            for (std::size_t i = i0; i < std::min(i0 + kBlock, size); ++i)
                for (std::size_t j = j0; j < std::min({j0 + kBlock, size, i}); ++j) put<T>(out, i, j, get<T>(out, j, i));
}

}  // namespace

void cpu_fused(const Problem& p, const Region& region, const RegionOutput& out,
               detail::MemoryTracker& tracker) {
    if (region.rows == 0 || region.cols == 0) return;
    const std::size_t panels = (region.cols + kPanelCols - 1) / kPanelCols;
    const std::size_t row_items = (region.rows + kItemRows - 1) / kItemRows;
    const std::size_t items = panels * row_items;
#ifdef _OPENMP
    const int threads = static_cast<int>(std::min<std::size_t>(items, omp_get_max_threads()));
#else
    const int threads = 1;
#endif
    const std::size_t chunk = std::min(kSampleChunk, std::max<std::size_t>(p.samples, 1));
    detail::HostBuffer<float> ypacks(tracker, threads * chunk * kPanelCols, "similarity cpu y panels");
    detail::HostBuffer<std::int32_t> accumulators(tracker, threads * kItemRows * kPanelCols,
                                                  "similarity cpu accumulators");
    const bool all_mode = p.mode == SimilarityMode::All;
    const float nan = std::numeric_limits<float>::quiet_NaN();
    // y is x and this region straddles the diagonal: items on and above it only (~half the work).
    const bool diagonal = p.symmetric && region.row0 == region.col0 && region.rows == region.cols;

#pragma omp parallel for schedule(dynamic) num_threads(threads)
    for (std::size_t item = 0; item < items; ++item) {
#ifdef _OPENMP
        const std::size_t thread = static_cast<std::size_t>(omp_get_thread_num());
#else
        const std::size_t thread = 0;
#endif
        float* ypack = ypacks.data() + thread * chunk * kPanelCols;
        std::int32_t* acc = accumulators.data() + thread * kItemRows * kPanelCols;
        const std::size_t j0 = (item % panels) * kPanelCols;
        const std::size_t i0 = (item / panels) * kItemRows;
        const std::size_t jn = std::min(kPanelCols, region.cols - j0);
        const std::size_t in = std::min(kItemRows, region.rows - i0);
        if (diagonal && j0 + jn <= i0) continue;  // below the diagonal: mirrored afterwards
        const std::size_t blocks = (in + kBlockRows - 1) / kBlockRows;
        bool alive[kItemRows / kBlockRows];
        std::fill(alive, alive + blocks, true);
        std::fill(acc, acc + blocks * kBlockRows * kPanelCols, 0);

        for (std::size_t s0 = 0; s0 < p.samples; s0 += chunk) {
            const std::size_t sc = std::min(chunk, p.samples - s0);
            for (std::size_t s = 0; s < sc; ++s) {
                const float* y_row = p.y + (s0 + s) * p.ldy + region.col0 + j0;
                for (std::size_t b = 0; b < kPanelCols; ++b) ypack[s * kPanelCols + b] = b < jn ? y_row[b] : nan;
            }
            for (std::size_t block = 0; block < blocks; ++block) {
                if (!alive[block]) continue;
                if (diagonal && i0 + block * kBlockRows >= j0 + jn) continue;  // all below: mirrored
                const float* x_rows[kBlockRows];
                for (std::size_t a = 0; a < kBlockRows; ++a) {
                    // Rows past the edge repeat the last one; their counts are never stored.
                    const std::size_t i = std::min(block * kBlockRows + a, in - 1);
                    x_rows[a] = p.x + s0 * p.ldx + region.row0 + i0 + i;
                }
                alive[block] = count_block_4x16(x_rows[0], x_rows[1], x_rows[2], x_rows[3], p.ldx, ypack, sc,
                                                p.threshold, acc + block * kBlockRows * kPanelCols, all_mode,
                                                static_cast<std::int32_t>(s0));
            }
        }
        store_counts(acc, kPanelCols, in, jn, i0, j0, p, out);
    }
    if (diagonal) with_count_type(p.output, [&](auto type) { mirror_lower<decltype(type)>(region.rows, out); });
}

void cpu_transpose(const Problem& p, const RegionOutput& src, std::size_t rows, std::size_t cols, const RegionOutput& dst) {
    with_count_type(p.output, [&](auto type) { transpose<decltype(type)>(src, rows, cols, dst); });
}

void cpu_naive(const Problem& p, const Region& region, const RegionOutput& out,
               detail::MemoryTracker& tracker) {
    const std::size_t pairs = detail::checked_mul(region.rows, region.cols, "similarity naive");
    const std::size_t elements = detail::checked_mul(p.samples, pairs, "similarity naive");
    // x[:, :, None] - y[:, None, :] (float32), abs(.) < t (bool), .sum(0) or .all(0) (int64).
    detail::ensure_host_fits(detail::checked_mul(elements, sizeof(float) + 1, "similarity naive") +
                                 pairs * sizeof(std::int64_t),
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
