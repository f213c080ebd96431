#include "host_staging.hpp"

#include <algorithm>

namespace hpcml::detail::similarity {

std::vector<Region> launch_regions(const TilePlan& plan, std::size_t group) {
    std::vector<Region> regions;
    plan.tiles.for_each_band(group, [&](const SimilarityPlannedTile& band) { regions.push_back(region_of(band)); });
    return regions;
}

std::vector<Region> mirrored_bands(std::size_t n, std::size_t m, SimilarityOutput output, std::size_t band) {
    const SimilarityTilePlan rows = similarity_tile_plan(n, m, band, output, false);
    return launch_regions(TilePlan(rows), rows.col_blocks.size());  // a band: every column
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
