// The CUDA backend's host side: copies inputs in, groups output tiles into launches large
// enough to fill the GPU, and streams finished tiles back to the host through two pinned
// buffers on two streams, so that one group's device-to-host copy (and the sink's work on the
// group before it) overlaps the next group's kernel.
#include <algorithm>
#include <array>
#include <vector>

#include "common/cuda_check.hpp"
#include "common/cuda_memory.hpp"
#include "common/cuda_stream.hpp"
#include "cuda_launchers.hpp"

namespace hpcml::detail::similarity {

namespace {

using detail::Event;
using detail::Stream;

// How many tiles of one row band go into one launch: enough 128 x 128 blocks for two full
// waves of the fused kernel (what the device runs at once, twice), so that one wave's tail
// overlaps the next. The naive baseline goes tile by tile, as the seed did, or its
// intermediate would grow with the group. Results do not depend on the grouping.
std::size_t tiles_per_launch(const Problem& p, const TilePlan& plan, Method method) {
    if (method == Method::Naive) return 1;
    constexpr std::size_t kWaves = 2;
    const std::size_t blocks_per_tile = ((plan.tile_rows + kFusedBlockRows - 1) / kFusedBlockRows) *
                                        ((plan.tile_cols + kFusedBlockCols - 1) / kFusedBlockCols);
    const std::size_t wanted = (kWaves * fused_resident_blocks(p) + blocks_per_tile - 1) / blocks_per_tile;
    const std::size_t tiles_in_row = (p.m + plan.tile_cols - 1) / plan.tile_cols;
    return std::clamp<std::size_t>(wanted, 1, std::max<std::size_t>(tiles_in_row, 1));
}

std::vector<Region> launch_regions(const Problem& p, const TilePlan& plan, std::size_t group) {
    std::vector<Region> regions;
    const std::size_t width = plan.tile_cols * group;
    for (std::size_t r = 0; r < p.n; r += plan.tile_rows)
        for (std::size_t c = 0; c < p.m; c += width)
            regions.push_back({r, c, std::min(plan.tile_rows, p.n - r), std::min(width, p.m - c)});
    return regions;
}

void launch(const Problem& p, const Region& region, const RegionOutput& out, Method method,
            detail::MemoryTracker& tracker, cudaStream_t stream) {
    if (method == Method::Fused) {
        launch_fused(p, region, out, stream);
    } else {
        launch_naive(p, region, out, tracker, stream);
    }
}

}  // namespace

void cuda_run_host(const Problem& host, const TilePlan& plan, Method method, const SimilarityTileSink& sink,
                   const Context& context, detail::MemoryTracker& tracker) {
    if (host.n == 0 || host.m == 0) return;
    const detail::DeviceGuard guard(context.device);
    std::array<Stream, 2> streams;
    std::array<Event, 2> copied;

    // Inputs go to the device once, packed: a view of a column block of a wider matrix copies
    // only its columns. y is not copied when it is x, or a prefix of x's columns.
    Problem dev = host;
    const cudaStream_t copy_stream = streams[0].get();
    auto upload = [&](const float* data, std::size_t ld, std::size_t cols, const char* what) {
        detail::DeviceBuffer<float> buffer(tracker, detail::checked_mul(host.samples, cols, what), copy_stream, what);
        if (buffer.size())
            HPCML_CUDA_CHECK(cudaMemcpy2DAsync(buffer.data(), cols * sizeof(float), data, ld * sizeof(float), cols * sizeof(float),
                                               host.samples, cudaMemcpyHostToDevice, copy_stream));
        return buffer;
    };
    const bool self = host.y == host.x && host.ldy == host.ldx && host.m <= host.n;
    const detail::DeviceBuffer<float> x_dev = upload(host.x, host.ldx, host.n, "similarity x on device");
    const detail::DeviceBuffer<float> y_dev = self ? detail::DeviceBuffer<float>() : upload(host.y, host.ldy, host.m, "similarity y on device");
    HPCML_CUDA_CHECK(cudaStreamSynchronize(copy_stream));
    dev.x = x_dev.data();
    dev.ldx = host.n;
    dev.y = self ? x_dev.data() : y_dev.data();
    dev.ldy = self ? host.n : host.m;

    const std::size_t group = tiles_per_launch(dev, plan, method);
    const std::vector<Region> regions = launch_regions(host, plan, group);
    const std::size_t slot_bytes = detail::checked_mul(plan.tile_rows, row_bytes(plan.tile_cols * group, host.output), "tile group");
    std::array<detail::DeviceBuffer<unsigned char>, 2> device_out;
    std::array<detail::PinnedBuffer<unsigned char>, 2> staged;
    // On every exit (a throwing sink or launch included), both streams finish before the
    // buffers above are freed: a kernel may still read x_dev on the other stream, and a copy
    // may still be writing into a pinned buffer.
    struct DrainStreams {
        const std::array<Stream, 2>& streams;
        ~DrainStreams() {
            for (const Stream& s : streams) (void)cudaStreamSynchronize(s.get());
        }
    } drain{streams};
    for (int slot = 0; slot < 2 && static_cast<std::size_t>(slot) < regions.size(); ++slot) {
        device_out[slot] = detail::DeviceBuffer<unsigned char>(tracker, slot_bytes, streams[slot].get(), "similarity output tiles");
        staged[slot] = detail::PinnedBuffer<unsigned char>(tracker, slot_bytes, "similarity pinned output tiles");
    }

    // Hands the tiles of region k to the sink once its copy has landed in pinned memory.
    auto deliver = [&](std::size_t k) {
        const Region& region = regions[k];
        const int slot = static_cast<int>(k % 2);
        HPCML_CUDA_CHECK(cudaEventSynchronize(copied[slot].get()));
        const std::size_t stride = row_bytes(region.cols, host.output);
        for (std::size_t c = 0; c < region.cols; c += plan.tile_cols) {
            sink(SimilarityTile{region.row0, region.col0 + c, region.rows, std::min(plan.tile_cols, region.cols - c),
                                staged[slot].data() + row_bytes(c, host.output), stride, host.output});
        }
    };
    for (std::size_t k = 0; k < regions.size(); ++k) {
        const int slot = static_cast<int>(k % 2);
        const cudaStream_t stream = streams[slot].get();
        const Region& region = regions[k];
        const std::size_t stride = row_bytes(region.cols, host.output);
        // Same-stream order makes the previous copy out of this slot finish before the kernel
        // overwrites it; the host delivered that slot's tiles (k - 2) before getting here.
        launch(dev, region, RegionOutput{device_out[slot].data(), stride}, method, tracker, stream);
        HPCML_CUDA_CHECK(cudaMemcpyAsync(staged[slot].data(), device_out[slot].data(), region.rows * stride,
                                         cudaMemcpyDeviceToHost, stream));
        HPCML_CUDA_CHECK(cudaEventRecord(copied[slot].get(), stream));
        if (k > 0) deliver(k - 1);
    }
    if (!regions.empty()) deliver(regions.size() - 1);
}

void cuda_run_device(const Problem& p, const TilePlan& plan, Method method, void* out, const Context& context,
                     detail::MemoryTracker& tracker) {
    if (p.n == 0 || p.m == 0) return;
    const detail::DeviceGuard guard(context.device);
    const cudaStream_t stream = static_cast<cudaStream_t>(context.stream);
    const std::size_t out_row_bytes = row_bytes(p.m, p.output);
    for (const Region& region : launch_regions(p, plan, tiles_per_launch(p, plan, method))) {
        auto* base = static_cast<unsigned char*>(out) + region.row0 * out_row_bytes + row_bytes(region.col0, p.output);
        launch(p, region, RegionOutput{base, out_row_bytes}, method, tracker, stream);
    }
    HPCML_CUDA_CHECK(cudaStreamSynchronize(stream));
}

}  // namespace hpcml::detail::similarity
