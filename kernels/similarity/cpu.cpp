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
#pragma omp parallel for schedule(static) if (samples * count >= kFusedCpu.parallel_min)
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

// How a region is cut into work items (a band of kFusedCpu.band_rows rows against a group of kFusedCpu.group_panels
// column panels), and what each thread holds.
struct FusedPlan {
    FusedPlan(const Problem& p, const Region& region)
        : panels(ceil_div(region.cols, kPanelCols)),
          groups(ceil_div(panels, kFusedCpu.group_panels)),
          items(ceil_div(region.rows, kFusedCpu.band_rows) * groups),
          symmetric(symmetry_pays(p)),
          // y is x and this region straddles the diagonal: blocks on and above it only (~half the work).
          diagonal(symmetric && region.row0 == region.col0 && region.rows == region.cols),
          chunk(std::min(kFusedCpu.sample_chunk, std::max<std::size_t>(p.samples, 1))),
          band_rows(std::min(kFusedCpu.band_rows, round_up(region.rows, kBlockRows))),
          acc_size(std::min(kFusedCpu.group_panels, panels) * band_rows * kPanelCols) {
#ifdef _OPENMP
        threads = static_cast<int>(std::min<std::size_t>(items, omp_get_max_threads()));
#endif
    }
    std::size_t panels, groups, items;
    bool symmetric, diagonal;
    std::size_t chunk, band_rows, acc_size;
    int threads = 1;
};

// One work item: rows [i0, i0 + in) of the region against panels [first_panel, first_panel +
// group_panels), with the thread's accumulators (acc) and transposition block (across).
struct FusedItem {
    FusedItem(const FusedPlan& plan, const Region& region, std::size_t item, std::int32_t* acc, std::int32_t* across)
        : i0((item / plan.groups) * kFusedCpu.band_rows),
          in(std::min(kFusedCpu.band_rows, region.rows - i0)),
          first_panel((item % plan.groups) * kFusedCpu.group_panels),
          group_panels(std::min(kFusedCpu.group_panels, plan.panels - first_panel)),
          blocks(ceil_div(in, kBlockRows)),
          region_cols(region.cols),
          diagonal(plan.diagonal),
          acc(acc),
          across(across) {}
    std::size_t i0, in, first_panel, group_panels, blocks, region_cols;
    bool diagonal;
    std::int32_t *acc, *across;

    // Columns [j0, j0 + jn) of a panel of the group.
    std::pair<std::size_t, std::size_t> panel_cols(std::size_t panel) const {
        const std::size_t j0 = (first_panel + panel) * kPanelCols;
        return {j0, std::min(kPanelCols, region_cols - j0)};
    }
    // Below the diagonal (written as mirrors): the panel's columns end at or before first_row.
    bool below(std::size_t panel, std::size_t first_row) const {
        const auto [j0, jn] = panel_cols(panel);
        return diagonal && j0 + jn <= first_row;
    }
};

// The item's counts into item.acc: chunks of samples outermost, so that the band's and a panel's
// packed samples stay in cache; a block whose pairs have all failed (mode all) stops.
void count_item(const Problem& p, const FusedPlan& plan, const FusedItem& item, const Packed& xsource,
                const Packed& ypacked, BlockKernel count_block) {
    constexpr std::size_t kBandBlocks = kFusedCpu.band_rows / kBlockRows;
    bool alive[kFusedCpu.group_panels][kBandBlocks];
    for (auto& panel_alive : alive) std::fill(panel_alive, panel_alive + kBandBlocks, true);
    std::fill(item.acc, item.acc + item.group_panels * plan.band_rows * kPanelCols, 0);
    const bool all_mode = p.mode == SimilarityMode::All;
    for (std::size_t s0 = 0; s0 < p.samples; s0 += plan.chunk) {
        const std::size_t sc = std::min(plan.chunk, p.samples - s0);
        for (std::size_t panel = 0; panel < item.group_panels; ++panel) {
            if (item.below(panel, item.i0) ||
                std::none_of(alive[panel], alive[panel] + item.blocks, [](bool a) { return a; }))
                continue;
            const float* ypanel = ypacked.panel(item.first_panel + panel, s0);
            for (std::size_t block = 0; block < item.blocks; ++block) {
                const std::size_t row = item.i0 + block * kBlockRows;  // rows past the edge are NaN: never counted
                if (!alive[panel][block] || item.below(panel, row)) continue;
                const float* xs = xsource.panel(row / kPanelCols, s0) + row % kPanelCols;
                alive[panel][block] = count_block(xs, ypanel, sc, p.threshold,
                                                  item.acc + (panel * plan.band_rows + block * kBlockRows) * kPanelCols,
                                                  all_mode, static_cast<std::int32_t>(s0));
            }
        }
    }
}

// The item's counts to the output, and their mirror (to the output on the diagonal, else to
// `mirror` where the caller asks for it).
void store_item(const Problem& p, const FusedPlan& plan, const FusedItem& item, const RegionOutput& out,
                const RegionOutput* mirror) {
    for (std::size_t panel = 0; panel < item.group_panels; ++panel) {
        if (item.below(panel, item.i0)) continue;
        const auto [j0, jn] = item.panel_cols(panel);
        const std::size_t i0 = item.i0, in = item.in;
        const std::int32_t* counts = item.acc + panel * plan.band_rows * kPanelCols;
        // On the diagonal, element (r, c) is this kernel's where c's 16-column panel is not
        // left of r's (the blocks below the diagonal it skips are 4 rows high, so it computes
        // a little more); the rest, (j, i) with i in an earlier panel than j, is written as
        // the mirror of (i, j) by the one item that holds (i, j). So no element is written twice.
        const std::size_t stored = item.diagonal ? std::min(in, j0 + kPanelCols - i0) : in;
        store_counts(counts, kPanelCols, stored, jn, i0, j0, p, out);
        const std::size_t mirrored = item.diagonal ? (j0 > i0 ? std::min(in, j0 - i0) : 0) : mirror ? in : 0;
        if (mirrored == 0) continue;
        for (std::size_t b = 0; b < jn; ++b)
            for (std::size_t a = 0; a < mirrored; ++a) item.across[b * mirrored + a] = counts[a * kPanelCols + b];
        store_counts(item.across, mirrored, jn, mirrored, j0, i0, p, item.diagonal ? out : *mirror);
    }
}

}  // namespace

void cpu_fused(const Problem& p, const Region& region, const RegionOutput& out, detail::MemoryTracker& tracker,
               detail::Progress* progress, const RegionOutput* mirror) {
    if (region.rows == 0 || region.cols == 0) return;
    const BlockKernel count_block = block_kernel();
    const FusedPlan plan(p, region);
    const Packed ypacked(p.y, p.ldy, region.col0, region.cols, p.samples, tracker, "similarity cpu packed y");
    const Packed xpacked =
        plan.diagonal ? Packed{}
                      : Packed(p.x, p.ldx, region.row0, region.rows, p.samples, tracker, "similarity cpu packed x");
    const Packed& xsource = plan.diagonal ? ypacked : xpacked;  // the same features, packed once
    detail::HostBuffer<std::int32_t> accumulators(tracker, plan.threads * plan.acc_size, "similarity cpu accumulators");
    // A panel's counts transposed, for the mirror's store.
    detail::HostBuffer<std::int32_t> transposed;
    if (plan.diagonal || mirror)
        transposed = detail::HostBuffer<std::int32_t>(tracker, plan.threads * kPanelCols * kFusedCpu.band_rows,
                                                      "similarity cpu mirror block");

#pragma omp parallel for schedule(dynamic) num_threads(plan.threads)
    for (std::size_t index = 0; index < plan.items; ++index) {
#ifdef _OPENMP
        const std::size_t thread = static_cast<std::size_t>(omp_get_thread_num());
#else
        const std::size_t thread = 0;
#endif
        const FusedItem item(plan, region, index, accumulators.data() + thread * plan.acc_size,
                             transposed.size() ? transposed.data() + thread * kPanelCols * kFusedCpu.band_rows : nullptr);
        // The region's elements this item accounts for (those below a diagonal too, which its
        // mirror writes; an outside mirror is its planner's to count).
        const std::size_t group_cols =
            std::min(item.group_panels * kPanelCols, region.cols - item.first_panel * kPanelCols);
        const std::uint64_t item_elements = std::uint64_t{item.in} * group_cols;
        if (!item.below(item.group_panels - 1, item.i0)) {
            count_item(p, plan, item, xsource, ypacked, count_block);
            store_item(p, plan, item, out, mirror);
        }
        if (progress) progress->add(item_elements);
    }
}

}  // namespace hpcml::detail::similarity
