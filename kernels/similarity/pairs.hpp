// The pair list of similarity_pairs (api.cpp): pairs collected tile by tile, in whatever order
// the backend finishes them, and returned in row-major order without a global sort.
#pragma once

#include <hpcml/similarity.hpp>

#include <cstddef>
#include <cstdint>

namespace hpcml::detail::similarity {

class PairList {
public:
    // rows: S's row count; counts: keep each pair's count (mode Count).
    PairList(std::size_t rows, bool counts) : rows_(rows), counts_(counts) {}

    // The passing elements of a finished host tile: set bits of a Bitmask tile, or counts >= least
    // of an Int32 one; with mirrored (y is x and the tile is above the diagonal) each pair's
    // mirror (j, i) too, so that the tile below the diagonal is never computed nor stored.
    void add_tile(const SimilarityTile& tile, std::int32_t least, bool mirrored);
    void add(std::uint64_t i, std::uint64_t j, std::int32_t count) {
        if (!pairs_.i.empty() && (i < pairs_.i.back() || (i == pairs_.i.back() && j <= pairs_.j.back())))
            ordered_ = false;
        pairs_.i.push_back(i);
        pairs_.j.push_back(j);
        if (counts_) pairs_.count.push_back(count);
    }

    // The pairs in row-major order: as added where they arrived so, else by a stable counting
    // sort on the row (linear), and a sort of the few rows whose columns still arrived out of
    // order (a row's columns arrive in order where its tiles come left to right, as the CPU's do).
    SimilarityPairs finish();

private:
    std::size_t rows_;
    bool counts_;
    bool ordered_ = true;
    SimilarityPairs pairs_;
};

}  // namespace hpcml::detail::similarity
