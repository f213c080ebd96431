// Similarity on the CPU: the fused method (the default where no GPU exists); the block kernels
// are cpu_count.cpp's, the mirrors of finished tiles cpu_transpose.cpp's and the naive baseline
// cpu_naive.cpp's.
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
#include <cstring>
#include <limits>

#ifdef _OPENMP
#include <omp.h>
#endif

#include "cpu_common.hpp"

namespace hpcml::detail::similarity {

namespace {

using namespace cpu;

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

void cpu_fused(const Problem& p, const Region& region, const RegionOutput& out, detail::MemoryTracker& tracker,
               const RegionOutput* mirror) {
    if (region.rows == 0 || region.cols == 0) return;
    const BlockKernel count_block = block_kernel();
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
        // Output elements this item accounts for: its own, and as many again off the diagonal
        // of a symmetric problem, whose mirror it writes (or the caller adds).
        const std::size_t group_cols = std::min(group_panels * kPanelCols, region.cols - first_panel * kPanelCols);
        const std::uint64_t item_elements = std::uint64_t{in} * group_cols * (p.symmetric && !diagonal ? 2 : 1);
        if (below(group_panels - 1, i0)) {
            if (p.progress) p.progress->add(item_elements);
            continue;
        }
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
        if (p.progress) p.progress->add(item_elements);
    }
}

}  // namespace hpcml::detail::similarity
