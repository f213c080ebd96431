#include "blocks.hpp"

#include <algorithm>
#include <stdexcept>
#include <string>

namespace hpcml::tools {

namespace {

// Columns [col0, col0 + cols) of a samples x ld matrix at `base`, in place.
MatrixView columns(const float* base, std::size_t samples, std::size_t col0, std::size_t cols, std::size_t ld) {
    return MatrixView{samples ? base + col0 : nullptr, samples, cols, ld};
}

}  // namespace

namespace {
Block block_of(const SimilarityPlannedTile& t, bool mirrored) { return {t.row0, t.col0, t.rows, t.cols, mirrored}; }
}  // namespace

std::optional<Block> mirror_of(const Block& b) {
    if (!b.mirrored) return std::nullopt;
    const std::optional<SimilarityPlannedTile> m = similarity_mirror_of({b.r0, b.c0, b.rows, b.cols});
    return m ? std::optional<Block>(block_of(*m, false)) : std::nullopt;
}

std::vector<Block> plan_blocks(std::size_t n, std::size_t m, std::size_t tile, SimilarityOutput output, bool symmetric,
                               std::size_t budget) {
    // One block is one library call (which tiles it and, on the GPU, batches its tiles per
    // launch), and its rows go to the file in long writes: as many whole tiles of a band as fit
    // in `budget` bytes.
    const SimilarityTilePlan plan = similarity_tile_plan(n, m, tile, output, symmetric);
    const std::size_t tile_bytes = std::max<std::size_t>(plan.tile_rows * plan.row_bytes(plan.tile_cols), 1);
    std::vector<Block> blocks;
    for (const SimilarityPlannedTile& band : plan.bands(budget / tile_bytes))
        blocks.push_back(block_of(band, symmetric));
    return blocks;
}

BlockComputer::BlockComputer(const Matrix& x, const Matrix* y, const SimilarityOptions& options)
    : x_(x), y_(y ? *y : x), options_(options), output_(resolve_output(options)) {
    if (options_.backend != Backend::Cuda) return;
    // Uploaded once; their rows padded so that 270725 features still start every row on 16 bytes.
    on_device_ = true;
    device_x_ = DeviceMatrix(MatrixView{x_.data.data(), x_.rows, x_.cols}, options_.device, "x on the GPU");
    if (y) device_y_ = DeviceMatrix(MatrixView{y->data.data(), y->rows, y->cols}, options_.device, "y on the GPU");
}

// Columns of x or y, in device memory (y is x where there is no y of its own) or in host memory.
MatrixView BlockComputer::x_columns(std::size_t first, std::size_t count) const {
    if (on_device_) return device_x_.columns(first, count);
    return columns(x_.data.data(), x_.rows, first, count, x_.cols);
}
MatrixView BlockComputer::y_columns(std::size_t first, std::size_t count) const {
    if (on_device_) return (&y_ == &x_ ? device_x_ : device_y_).columns(first, count);
    return columns(y_.data.data(), y_.rows, first, count, y_.cols);
}

const unsigned char* BlockComputer::compute(const Block& b) {
    const std::size_t bytes = b.rows * similarity_output_bytes(1, b.cols, output_);
    host_out_.resize(std::max(host_out_.size(), bytes));
    // On a GPU from the inputs uploaded once, straight into host memory: the library copies each
    // group of tiles out while the next computes (docs/similarity.md, host results on the GPU).
    if (on_device_) {
        similarity_device(x_columns(b.r0, b.rows), y_columns(b.c0, b.cols), host_out_.data(), options_);
    } else {
        similarity(x_columns(b.r0, b.rows), y_columns(b.c0, b.cols), host_out_.data(), options_);
    }
    return host_out_.data();
}

void BlockComputer::pairs(const Block& b, std::size_t min_count, std::vector<std::int64_t>& pairs) {
    SimilarityOptions o = options_;
    o.tile.reset();  // the library's tiling for pairs (the block is the unit of work here)
    // On a GPU reduced on the device, so that only the pairs cross PCIe.
    const SimilarityPairs found =
        on_device_ ? similarity_pairs_device(x_columns(b.r0, b.rows), y_columns(b.c0, b.cols), o, min_count)
                   : similarity_pairs(x_columns(b.r0, b.rows), y_columns(b.c0, b.cols), o, min_count);
    for (std::size_t k = 0; k < found.i.size(); ++k) {
        pairs.push_back(static_cast<std::int64_t>(b.r0 + found.i[k]));
        pairs.push_back(static_cast<std::int64_t>(b.c0 + found.j[k]));
        if (!found.count.empty()) pairs.push_back(found.count[k]);
    }
}

const unsigned char* BlockComputer::mirror(const Block& b) {
    const std::optional<Block> m = mirror_of(b);
    if (!m) return nullptr;
    const std::size_t row_bytes = similarity_output_bytes(1, b.cols, output_);
    const std::size_t skipped = similarity_output_bytes(1, m->r0 - b.c0, output_);  // whole bytes: m->r0 - c0 is a band
    const std::size_t mirror_row_bytes = similarity_output_bytes(1, m->cols, output_);
    mirror_out_.resize(std::max(mirror_out_.size(), m->rows * mirror_row_bytes));
    similarity_transpose(SimilarityTile{b.r0, m->r0, b.rows, m->rows, host_out_.data() + skipped, row_bytes, output_},
                         mirror_out_.data(), mirror_row_bytes);
    return mirror_out_.data();
}

}  // namespace hpcml::tools
