#include "blocks.hpp"

#include <algorithm>
#include <stdexcept>
#include <string>

#if HPCML_WITH_CUDA
#include "common/cuda_memory.hpp"  // the library's checked DeviceArray (kernels/common)
#endif

namespace hpcml::tools {

namespace {

// Columns [col0, col0 + cols) of a samples x ld matrix at `base`, in place.
MatrixView columns(const float* base, std::size_t samples, std::size_t col0, std::size_t cols, std::size_t ld) {
    return MatrixView{samples ? base + col0 : nullptr, samples, cols, ld};
}

}  // namespace

std::optional<Block> mirror_of(const Block& b) {
    const std::size_t first = std::max(b.c0, b.r0 + b.rows);
    if (!b.mirrored || first >= b.c0 + b.cols) return std::nullopt;
    return Block{first, b.r0, b.c0 + b.cols - first, b.rows};
}

std::vector<Block> plan_blocks(std::size_t n, std::size_t m, std::size_t tile, SimilarityOutput output, bool symmetric,
                               std::size_t budget) {
    // One block is one library call (which tiles it and, on the GPU, batches its tiles per
    // launch), and its rows go to the file in long writes.
    // A tile past the output is the whole output (and no product below can overflow).
    tile = std::min(tile, std::max<std::size_t>({n, m, 1}));
    // Bit outputs (the table's Bitmask): whole bytes per block column edge.
    const std::size_t tile_cols = similarity_output_info(output).bits ? (tile + 7) / 8 * 8 : tile;
    if (symmetric) tile = tile_cols;  // a band's first row is a mirror's first column
    const std::size_t tiles_in_budget =
        budget / std::max<std::size_t>(similarity_output_bytes(tile, tile_cols, output), 1);
    const std::size_t block_cols =
        std::min(std::max<std::size_t>(m, 1), std::max<std::size_t>(tiles_in_budget, 1) * tile_cols);
    std::vector<Block> blocks;
    for (std::size_t r = 0; r < n; r += tile)
        for (std::size_t c = symmetric ? r : 0; c < m; c += block_cols)
            blocks.push_back({r, c, std::min(tile, n - r), std::min(block_cols, m - c), symmetric});
    return blocks;
}

#if HPCML_WITH_CUDA
// x and y on the device, and the device half of the block output.
struct BlockComputer::Device {
    detail::DeviceArray<float> x, y;  // y empty where y is x
    detail::DeviceArray<unsigned char> out;

    const float* y_data() const { return y.data() ? y.data() : x.data(); }
    // Rows padded to a multiple of 4 floats: the fused kernel's 16-byte loads need a leading
    // dimension that keeps every row aligned (270725 features would not).
    static std::size_t pitch(const Matrix& m) { return (m.cols + 3) / 4 * 4; }
    static detail::DeviceArray<float> upload(const Matrix& m, const char* name) {
        detail::DeviceArray<float> d(m.rows * pitch(m), std::string(name) + " on the GPU");
        HPCML_CUDA_CHECK(cudaMemset(d.data(), 0, d.bytes()));  // the padding too: no read is uninitialised
        if (d.size() > 0)
            HPCML_CUDA_CHECK(cudaMemcpy2D(d.data(), pitch(m) * sizeof(float), m.data.data(), m.cols * sizeof(float),
                                          m.cols * sizeof(float), m.rows, cudaMemcpyHostToDevice));
        return d;
    }
};
#endif

BlockComputer::BlockComputer(const Matrix& x, const Matrix* y, const SimilarityOptions& options)
    : x_(x), y_(y ? *y : x), options_(options), output_(resolve_output(options)) {
#if HPCML_WITH_CUDA
    if (options_.backend == Backend::Cuda) {
        HPCML_CUDA_CHECK(cudaSetDevice(options_.device));
        device_ = new Device;
        try {
            device_->x = Device::upload(x_, "x");
            if (y) device_->y = Device::upload(*y, "y");
        } catch (...) {
            delete device_;
            throw;
        }
    }
#endif
}

BlockComputer::~BlockComputer() {
#if HPCML_WITH_CUDA
    delete device_;
#endif
}

const unsigned char* BlockComputer::compute(const Block& b) {
    const std::size_t bytes = b.rows * similarity_output_bytes(1, b.cols, output_);
    host_out_.resize(std::max(host_out_.size(), bytes));
#if HPCML_WITH_CUDA
    if (device_) {
        if (device_->out.bytes() < bytes) {
            device_->out = {};  // freed before the larger one is allocated
            device_->out = detail::DeviceArray<unsigned char>(bytes, "the block's output on the GPU");
        }
        similarity_device(columns(device_->x.data(), x_.rows, b.r0, b.rows, Device::pitch(x_)),
                          columns(device_->y_data(), x_.rows, b.c0, b.cols, Device::pitch(y_)), device_->out.data(),
                          options_);
        HPCML_CUDA_CHECK(cudaMemcpy(host_out_.data(), device_->out.data(), bytes, cudaMemcpyDeviceToHost));
        return host_out_.data();
    }
#endif
    similarity(columns(x_.data.data(), x_.rows, b.r0, b.rows, x_.cols),
               columns(y_.data.data(), x_.rows, b.c0, b.cols, y_.cols), host_out_.data(), options_);
    return host_out_.data();
}

void BlockComputer::pairs(const Block& b, std::size_t min_count, std::vector<std::int64_t>& pairs) {
    SimilarityOptions o = options_;
    o.tile.reset();  // the library's tiling for pairs (the block is the unit of work here)
    SimilarityPairs found;
#if HPCML_WITH_CUDA
    if (device_) {
        found = similarity_pairs_device(columns(device_->x.data(), x_.rows, b.r0, b.rows, Device::pitch(x_)),
                                        columns(device_->y_data(), x_.rows, b.c0, b.cols, Device::pitch(y_)), o,
                                        min_count);
    } else
#endif
    {
        found = similarity_pairs(columns(x_.data.data(), x_.rows, b.r0, b.rows, x_.cols),
                                 columns(y_.data.data(), x_.rows, b.c0, b.cols, y_.cols), o, min_count);
    }
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
