// The CPU's naive similarity: NumPy's broadcast, x[:, :, None] - y[:, None, :], abs() < t,
// sum(0) or all(0), each step materialised (checked against available memory first).
#include <cmath>

#include "cpu_common.hpp"

namespace hpcml::detail::similarity {

void cpu_naive(const Problem& p, const Region& region, const RegionOutput& out, detail::MemoryTracker& tracker,
               detail::Progress* progress, const RegionOutput* mirror) {
    if (mirror) detail::raise(ErrorKind::Internal, "similarity: the naive method writes no mirror");
    const std::size_t pairs = detail::checked_mul(region.rows, region.cols, "similarity naive");
    const std::size_t elements = detail::checked_mul(p.samples, pairs, "similarity naive");
    // x[:, :, None] - y[:, None, :] (float32), abs(.) < t (bool), .sum(0) or .all(0) (int64).
    detail::ensure_host_fits(
        detail::checked_mul(elements, sizeof(float) + 1, "similarity naive") + pairs * sizeof(std::int64_t),
        "naive similarity (samples x rows x cols float32 differences + bool mask)");
    detail::HostBuffer<float> diff(tracker, elements, "naive similarity differences", detail::HostBlock::Fresh);
    for (std::size_t s = 0; s < p.samples; ++s)
        for (std::size_t i = 0; i < region.rows; ++i)
            for (std::size_t j = 0; j < region.cols; ++j)
                diff[(s * region.rows + i) * region.cols + j] =
                    p.x[s * p.ldx + region.row0 + i] - p.y[s * p.ldy + region.col0 + j];
    detail::HostBuffer<std::uint8_t> mask(tracker, elements, "naive similarity mask", detail::HostBlock::Fresh);
    for (std::size_t e = 0; e < elements; ++e) mask[e] = std::fabs(diff[e]) < p.threshold;
    detail::HostBuffer<std::int64_t> reduced(tracker, pairs, "naive similarity reduction", detail::HostBlock::Fresh);
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
    cpu::store_counts(reduced.data(), region.cols, region.rows, region.cols, 0, 0, p, out);
    if (progress) progress->add(pairs);
}

}  // namespace hpcml::detail::similarity
