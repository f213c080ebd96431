#include "host_staging.hpp"

#include <algorithm>

namespace hpcml::detail::similarity {

std::vector<Region> launch_regions(const Problem& p, const TilePlan& plan, std::size_t group) {
    std::vector<Region> regions;
    const std::size_t width = plan.tile_cols * group;
    for (std::size_t r = 0; r < p.n; r += plan.tile_rows)
        for (std::size_t c = 0; c < p.m; c += width)
            regions.push_back({r, c, std::min(plan.tile_rows, p.n - r), std::min(width, p.m - c)});
    return regions;
}

std::vector<Region> mirrored_bands(std::size_t n, std::size_t m, std::size_t band) {
    std::vector<Region> bands;
    for (std::size_t r = 0; r < n; r += band) bands.push_back({r, 0, std::min(band, n - r), m});
    return bands;
}

void hand_on(const Region& region, const unsigned char* staged, SimilarityOutput output, const TilePlan& plan,
             const HostDestination& to) {
    const std::size_t stride = row_bytes(region.cols, output);
    if (to.sink) {
        for (std::size_t c = 0; c < region.cols; c += plan.tile_cols)
            (*to.sink)(SimilarityTile{region.row0, region.col0 + c, region.rows,
                                      std::min(plan.tile_cols, region.cols - c), staged + row_bytes(c, output), stride,
                                      output});
    } else if (to.staged()) {
        detail::host_copy_rows(to.out + region.row0 * to.out_row_bytes + row_bytes(region.col0, output),
                               to.out_row_bytes, staged, stride, stride, region.rows);
    }
    if (to.delivered) (*to.delivered)(std::uint64_t{region.rows} * region.cols);
}

}  // namespace hpcml::detail::similarity
