// The one tile plan (SimilarityTilePlan, include/hpcml/similarity.hpp): how every front end cuts
// S into tiles, bands and mirrors.
#include <hpcml/similarity.hpp>

#include <algorithm>
#include <numeric>
#include <string>

#include "common/error.hpp"
#include "common/hd.hpp"

namespace hpcml {

namespace {

// Blocks of `edge` covering `extent` (one empty block where it is 0, as Dask cuts an empty axis).
std::vector<std::size_t> cut(std::size_t extent, std::size_t edge) {
    std::vector<std::size_t> blocks;
    for (std::size_t at = 0; at < extent; at += edge) blocks.push_back(std::min(edge, extent - at));
    if (blocks.empty()) blocks.push_back(0);
    return blocks;
}

std::string listed(const std::vector<std::size_t>& blocks) {
    std::string text = "(";
    for (std::size_t k = 0; k < blocks.size(); ++k) text += (k ? ", " : "") + std::to_string(blocks[k]);
    return text + (blocks.size() == 1 ? ",)" : ")");
}

void check_blocks(const std::vector<std::size_t>& blocks, std::size_t extent, std::size_t multiple,
                  std::string_view side, std::string_view argument) {
    const std::string what = std::string(argument) + ": blocks " + listed(blocks);
    const std::size_t covered = std::accumulate(blocks.begin(), blocks.end(), std::size_t{0});
    detail::require(covered == extent, what + " cover " + std::to_string(covered) + " elements, but " +
                                           std::string(side) + " has " + std::to_string(extent));
    detail::require(extent == 0 || std::find(blocks.begin(), blocks.end(), 0) == blocks.end(),
                    what + " include an empty one");
    detail::require(!blocks.empty(), what + " are none; an empty side is one empty block");
    for (std::size_t k = 0; k + 1 < blocks.size(); ++k)
        detail::require(blocks[k] % multiple == 0, what + " of " + std::string(side) +
                                                       ": each but the last must be a multiple of " +
                                                       std::to_string(multiple) + " (bitmask tiles pack " +
                                                       std::to_string(multiple) + " columns a byte)");
}

}  // namespace

SimilarityTilePlan similarity_tile_plan(std::size_t n, std::size_t m, std::size_t tile, SimilarityOutput output,
                                        bool symmetric) {
    detail::require(tile >= 1, "tile: expected an integer >= 1, got 0");
    const std::size_t per_element = similarity_output_info(output).columns_per_element;
    const std::size_t edge = std::min(tile, std::max<std::size_t>({n, m, 1}));
    const std::size_t cols = detail::round_up(edge, per_element);
    const std::size_t rows = symmetric ? cols : edge;
    SimilarityTilePlan plan = similarity_tile_plan(n, m, cut(n, rows), cut(m, cols), output, symmetric, "tile");
    plan.tile_rows = rows;
    plan.tile_cols = cols;
    return plan;
}

SimilarityTilePlan similarity_tile_plan(std::size_t n, std::size_t m, std::vector<std::size_t> row_blocks,
                                        std::vector<std::size_t> col_blocks, SimilarityOutput output, bool symmetric,
                                        std::string_view argument) {
    const std::size_t per_element = similarity_output_info(output).columns_per_element;
    detail::require(!symmetric || n == m,
                    "m: y is x, so S is square, but n is " + std::to_string(n) + " and m " + std::to_string(m));
    check_blocks(row_blocks, n, symmetric ? per_element : 1, "x", argument);
    check_blocks(col_blocks, m, per_element, symmetric ? "x" : "y", argument);
    detail::require(!symmetric || row_blocks == col_blocks,
                    std::string(argument) + ": with y = x the row and column blocks must be the same, got " +
                        listed(row_blocks) + " and " + listed(col_blocks));
    SimilarityTilePlan plan;
    plan.n = n;
    plan.m = m;
    plan.output = output;
    plan.symmetric = symmetric;
    plan.tile_rows = row_blocks.front();
    plan.tile_cols = col_blocks.front();
    plan.row_blocks = std::move(row_blocks);
    plan.col_blocks = std::move(col_blocks);
    return plan;
}

std::vector<SimilarityPlannedTile> SimilarityTilePlan::tiles() const {
    std::vector<SimilarityPlannedTile> all;
    all.reserve(row_blocks.size() * col_blocks.size());
    for (std::size_t a = 0, row0 = 0; a < row_blocks.size(); row0 += row_blocks[a++])
        for (std::size_t b = 0, col0 = 0; b < col_blocks.size(); col0 += col_blocks[b++]) {
            const SimilarityTileRole role = !symmetric ? SimilarityTileRole::Computed
                                            : a == b   ? SimilarityTileRole::Diagonal
                                            : a > b    ? SimilarityTileRole::Mirror
                                                       : SimilarityTileRole::Computed;
            all.push_back({row0, col0, row_blocks[a], col_blocks[b], a, b, role});
        }
    return all;
}

std::vector<SimilarityPlannedTile> SimilarityTilePlan::bands(std::size_t tiles_per_band) const {
    std::vector<SimilarityPlannedTile> all;
    for_each_band(tiles_per_band, [&](const SimilarityPlannedTile& band) { all.push_back(band); });
    return all;
}

std::size_t SimilarityTilePlan::row_bytes(std::size_t cols) const { return similarity_output_bytes(1, cols, output); }

std::optional<SimilarityPlannedTile> similarity_mirror_of(const SimilarityPlannedTile& tile) {
    const std::size_t first = std::max(tile.col0, tile.row0 + tile.rows);
    if (tile.role == SimilarityTileRole::Mirror || first >= tile.col0 + tile.cols) return std::nullopt;
    return SimilarityPlannedTile{first,          tile.row0,      tile.col0 + tile.cols - first, tile.rows,
                                 tile.col_block, tile.row_block, SimilarityTileRole::Mirror};
}

}  // namespace hpcml
