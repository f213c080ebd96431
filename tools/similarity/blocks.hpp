// hpcml-similarity's unit of work: a block of the output (a band of --tile rows by as many
// columns as fit in 256 MB, whole tiles of them), computed by one library call from views of x and y. Where y is x
// only the blocks on and above the diagonal are computed, each also writing its mirror.
#pragma once

#include <hpcml/device_memory.hpp>
#include <hpcml/similarity.hpp>

#include <cstddef>
#include <optional>
#include <vector>

#include "npy.hpp"

namespace hpcml::tools {

struct Block {
    std::size_t r0 = 0, c0 = 0, rows = 0, cols = 0;
    bool mirrored = false;  // y is x: the block also writes the mirror of its columns past its rows
};

// The region a mirrored block writes besides its own (similarity_mirror_of): the transpose of
// its columns from max(c0, r0 + rows) on (those past its diagonal square), as rows of S; none
// when it has none.
std::optional<Block> mirror_of(const Block& b);

// The regions of S a block writes, in the order they are written and checksummed: its own,
// then its mirror's.
template <class Visit>
void for_each_region(const Block& b, Visit&& visit) {
    visit(b);
    if (const std::optional<Block> m = mirror_of(b)) visit(*m);
}

// The blocks of an n x m output: the library's tile plan (similarity_tile_plan) cut in bands
// of as many whole tiles as fit in `budget` bytes (SimilarityTilePlan::bands). With `symmetric`
// (y is x, n == m) a band's blocks start at its diagonal tile, and are mirrored.
std::vector<Block> plan_blocks(std::size_t n, std::size_t m, std::size_t tile, SimilarityOutput output, bool symmetric,
                               std::size_t budget);

// Where blocks lie in the output .npy: after the header, row i of S at row_bytes * i.
struct FileLayout {
    std::size_t header_bytes = 0, m = 0, row_bytes = 0;  // m: columns of S; row_bytes: of one row of S
    SimilarityOutput output{};

    // The block's byte ranges in the file, (offset, length), in the order of its packed rows:
    // one range when the block spans whole rows.
    template <class Visit>
    void for_each_range(const Block& b, Visit&& visit) const {
        const std::size_t block_row_bytes = similarity_output_bytes(1, b.cols, output);
        if (b.cols == m) {
            visit(header_bytes + b.r0 * row_bytes, b.rows * block_row_bytes);
            return;
        }
        const std::size_t column_offset = similarity_output_bytes(1, b.c0, output);
        for (std::size_t r = 0; r < b.rows; ++r)
            visit(header_bytes + (b.r0 + r) * row_bytes + column_offset, block_row_bytes);
    }
};

// Computes blocks of S = similarity(x, y) (y = x where y is null) with `options` (a resolved
// backend and device). Blocks are views of x and y, never copies; on the CUDA backend x and y
// go to the device once, here, and each block runs on device memory (similarity_device).
class BlockComputer {
public:
    BlockComputer(const Matrix& x, const Matrix* y, const SimilarityOptions& options);
    BlockComputer(const BlockComputer&) = delete;
    BlockComputer& operator=(const BlockComputer&) = delete;

    // The block's rows of S, packed (similarity_output_bytes(1, block.cols, output) bytes each),
    // valid until the next call.
    const unsigned char* compute(const Block& block);
    // The rows of mirror_of(block), packed, from the block's rows computed last; valid until
    // the next call.
    const unsigned char* mirror(const Block& block);
    // --pairs: the block's passing pairs appended to `pairs` as (i, j) or (i, j, count) rows
    // (the mode's), row-major, by the library (similarity_pairs; on a GPU similarity_pairs_device,
    // reduced on the device, so that only they cross PCIe).
    void pairs(const Block& block, std::size_t min_count, std::vector<std::int64_t>& pairs);

private:
    MatrixView x_columns(std::size_t first, std::size_t count) const;
    MatrixView y_columns(std::size_t first, std::size_t count) const;

    const Matrix& x_;
    const Matrix& y_;
    SimilarityOptions options_;
    SimilarityOutput output_;
    std::vector<unsigned char> host_out_, mirror_out_;
    // On the CUDA backend: x and y on the device (y empty where y is x).
    bool on_device_ = false;
    DeviceMatrix device_x_, device_y_;
};

}  // namespace hpcml::tools
