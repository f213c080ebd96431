#include "pairs.hpp"

#include <algorithm>
#include <bit>
#include <cstring>
#include <utility>
#include <vector>

#include "math.hpp"

namespace hpcml::detail::similarity {

static_assert(std::endian::native == std::endian::little,
              "a Bitmask row read 8 bytes at a time: byte k's bit b is column 8k + b");

namespace {

// Whether any of bytes[0 .. n) is nonzero (8 bytes at a time, ORed: a loop GCC vectorises).
bool any_bit(const unsigned char* bytes, std::size_t n) {
    std::uint64_t any = 0;
    std::size_t k = 0;
    for (; k + 8 <= n; k += 8) {
        std::uint64_t word;
        std::memcpy(&word, bytes + k, sizeof word);
        any |= word;
    }
    for (; k < n; ++k) any |= bytes[k];
    return any != 0;
}

}  // namespace

void PairList::add_tile(const SimilarityTile& tile, std::int32_t least, bool mirrored) {
    const bool bitmask = tile.output == SimilarityOutput::Bitmask;
    const std::size_t row_bytes = detail::similarity::row_bytes(tile.cols, tile.output);  // Bitmask or Int32
    for (std::size_t r = 0; r < tile.rows; ++r) {
        const auto* row = static_cast<const unsigned char*>(tile.data) + r * tile.row_stride_bytes;
        if (bitmask && !any_bit(row, row_bytes)) continue;  // most rows of a sparse result: one vector pass
        // 64 columns at a time as a word of pass bits, visited set bit by set bit: a sparse
        // result costs a load and a test per 64 columns.
        for (std::size_t c0 = 0; c0 < tile.cols; c0 += 64) {
            const std::size_t width = std::min<std::size_t>(64, tile.cols - c0);
            std::uint64_t passing = 0;
            std::int32_t counts[64];
            if (bitmask) {
                std::memcpy(&passing, row + c0 / 8, std::min<std::size_t>(8, row_bytes - c0 / 8));
            } else {
                std::memcpy(counts, row + c0 * sizeof(std::int32_t), width * sizeof(std::int32_t));
                for (std::size_t b = 0; b < width; ++b) passing |= std::uint64_t{counts[b] >= least} << b;
            }
            for (; passing; passing &= passing - 1) {
                const auto b = static_cast<std::size_t>(std::countr_zero(passing));
                const std::int32_t count = bitmask ? 0 : counts[b];
                add(tile.row0 + r, tile.col0 + c0 + b, count);
                if (mirrored) add(tile.col0 + c0 + b, tile.row0 + r, count);
            }
        }
    }
}

SimilarityPairs PairList::finish() {
    if (ordered_) return std::move(pairs_);
    const std::size_t total = pairs_.i.size();
    // Stable counting sort on the row: each row's pairs keep their arrival order.
    std::vector<std::size_t> start(rows_ + 1, 0);
    for (const std::uint64_t i : pairs_.i) ++start[i + 1];
    for (std::size_t r = 0; r < rows_; ++r) start[r + 1] += start[r];
    SimilarityPairs sorted;
    sorted.stats = pairs_.stats;
    sorted.j.resize(total);
    if (counts_) sorted.count.resize(total);
    {
        std::vector<std::size_t> next(start.begin(), start.end() - 1);
        for (std::size_t k = 0; k < total; ++k) {
            const std::size_t to = next[pairs_.i[k]]++;
            sorted.j[to] = pairs_.j[k];
            if (counts_) sorted.count[to] = pairs_.count[k];
        }
    }
    pairs_ = {};  // the unsorted lists' memory back before the row indices are written
    sorted.i.resize(total);
    for (std::size_t r = 0; r < rows_; ++r) {
        std::fill(sorted.i.begin() + start[r], sorted.i.begin() + start[r + 1], r);
        const auto first = sorted.j.begin() + start[r], last = sorted.j.begin() + start[r + 1];
        if (std::is_sorted(first, last)) continue;
        std::vector<std::pair<std::uint64_t, std::int32_t>> row(last - first);
        for (std::size_t k = 0; k < row.size(); ++k) row[k] = {first[k], counts_ ? sorted.count[start[r] + k] : 0};
        std::sort(row.begin(), row.end());
        for (std::size_t k = 0; k < row.size(); ++k) {
            first[k] = row[k].first;
            if (counts_) sorted.count[start[r] + k] = row[k].second;
        }
    }
    return sorted;
}

}  // namespace hpcml::detail::similarity
