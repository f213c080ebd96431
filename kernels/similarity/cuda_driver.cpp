// The CUDA backend's host side: copies inputs in, groups output tiles into launches large
// enough to fill the GPU, and streams finished tiles back to the host on two streams, so that
// one group's device-to-host copy (and the host's work on the group before it) overlaps the
// next group's kernel: into the caller's page-locked output directly, else through two pinned
// buffers.
#include <algorithm>
#include <array>
#include <cstdint>
#include <cstring>
#include <functional>
#include <optional>
#include <vector>

#include "common/cuda_check.hpp"
#include "common/cuda_memory.hpp"
#include "common/cuda_stream.hpp"
#include "common/error.hpp"
#include "common/nvtx.hpp"
#include "common/pipeline.hpp"
#include "cuda_launchers.hpp"
#include "cuda_methods.hpp"
#include "host_staging.hpp"

namespace hpcml::detail::similarity {

namespace {

using detail::Event;
using detail::Stream;

// How many tiles of one row band go into one launch: enough of the method's blocks for two full
// waves of its kernel (what the device runs at once, twice), so that one wave's tail overlaps
// the next. The naive baseline goes tile by tile, as the seed did, or its intermediate would
// grow with the group. Results do not depend on the grouping.
std::size_t tiles_per_launch(const Problem& p, const TilePlan& plan, Method method) {
    if (method == Method::Naive) return 1;
    constexpr std::size_t kWaves = 2;
    const LaunchBlocks blocks = method == Method::Sorted ? sorted_blocks(p) : fused_blocks(p);
    const std::size_t blocks_per_tile =
        detail::ceil_div(plan.tile_rows, blocks.rows) * detail::ceil_div(plan.tile_cols, blocks.cols);
    const std::size_t wanted = detail::ceil_div(kWaves * blocks.resident, blocks_per_tile);
    const std::size_t tiles_in_row = (p.m + plan.tile_cols - 1) / plan.tile_cols;
    return std::clamp<std::size_t>(wanted, 1, std::max<std::size_t>(tiles_in_row, 1));
}

// Waits for its streams when it goes out of scope (a throw included): declared after the
// buffers they use, it runs before those are freed.
struct Drain {
    std::vector<cudaStream_t> streams;  // 0, the default stream, included
    ~Drain() {
        for (cudaStream_t s : streams) (void)cudaStreamSynchronize(s);
    }
};

// x and y copied to the device once, packed: a view of a column block of a wider matrix copies
// only its columns. y is not copied when it is x, or a prefix of x's columns. `problem` is the
// host problem with its pointers on the device.
struct DeviceInputs {
    detail::DeviceBuffer<float> x, y;
    Problem problem;
};

DeviceInputs upload(const Problem& host, cudaStream_t stream, detail::MemoryTracker& tracker) {
    const detail::NvtxRange range([&] {
        return "hpcml::similarity upload " + std::to_string(host.samples) + "x" + std::to_string(host.n) +
               (host.y == host.x ? "" : " and y");
    });
    auto copy = [&](const float* data, std::size_t ld, std::size_t cols, const char* what) {
        detail::DeviceBuffer<float> buffer(tracker, detail::checked_mul(host.samples, cols, what), stream, what);
        if (buffer.size())
            HPCML_CUDA_CHECK(cudaMemcpy2DAsync(buffer.data(), cols * sizeof(float), data, ld * sizeof(float),
                                               cols * sizeof(float), host.samples, cudaMemcpyHostToDevice, stream));
        return buffer;
    };
    const bool self = host.y == host.x && host.ldy == host.ldx && host.m <= host.n;
    DeviceInputs in;
    in.x = copy(host.x, host.ldx, host.n, "similarity x on device");
    if (!self) in.y = copy(host.y, host.ldy, host.m, "similarity y on device");
    HPCML_CUDA_CHECK(cudaStreamSynchronize(stream));
    in.problem = host.with_operands(in.x.data(), host.n, self ? in.x.data() : in.y.data(), self ? host.n : host.m);
    return in;
}

void launch(const Problem& p, const Region& region, const RegionOutput& out, Method method,
            detail::MemoryTracker& tracker, cudaStream_t stream) {
    if (method == Method::Fused) {
        launch_fused(p, region, out, stream);
    } else if (method == Method::Sorted) {
        launch_sorted(p, region, out, tracker, stream);
    } else {
        launch_naive(p, region, out, tracker, stream);
    }
}

}  // namespace

std::size_t cuda_max_shared_per_block(int device) {
    int bytes = 0;
    HPCML_CUDA_CHECK(cudaDeviceGetAttribute(&bytes, cudaDevAttrMaxSharedMemoryPerBlockOptin, device));
    return static_cast<std::size_t>(bytes);
}

namespace {

// Whether `out` is host memory (pageable, or page-locked), not device or managed memory
// (require_output_pointer has refused a pointer the runtime cannot place).
bool host_memory(const void* out) {
    cudaPointerAttributes attributes;
    HPCML_CUDA_CHECK(detail::query_pointer(out, attributes));
    return attributes.type == cudaMemoryTypeUnregistered || attributes.type == cudaMemoryTypeHost;
}

// Whether the whole n x m output may live on the device for the mirrored path: at most half
// the memory free now, so that the call's other buffers and the caller's work keep room.
bool whole_output_fits(std::size_t bytes) {
    std::size_t free = 0, total = 0;
    HPCML_CUDA_CHECK(cudaMemGetInfo(&free, &total));
    return bytes <= free / 2;
}

// The host path: x and y uploaded once, then steps on two streams in turn (two_slot_pipeline),
// each step's output copied to the host on its stream while the host hands on the step before
// (on the calling thread: the sink's tiles, the copy-out, the progress).
//
// Steps: groups of tiles (launch_regions), each computed into its slot's device buffer; or,
// where y is x (the fused method, an `out`, the output within whole_output_fits), row bands of
// whole 128-row blocks into one device copy of the output, each computed from its diagonal on
// and its part below the diagonal mirrored on the device from the bands above (2 bytes moved
// per mirrored byte at the device's memory rate, against `samples` compare-counts per element;
// never a read of host memory over the link). A sink is given the plan's tiles, which bands of
// whole blocks do not follow, so it gets the groups.
// With inputs_on_device, x and y are device memory already, written on context.stream, which
// both streams follow.
void run_host(const Problem& host, const TilePlan& plan, Method method, const HostDestination& to,
              const Context& context, detail::MemoryTracker& tracker, bool inputs_on_device = false) {
    if (host.n == 0 || host.m == 0) return;
    const detail::DeviceGuard guard(context.device);
    std::array<Stream, 2> streams;
    std::array<Event, 2> computed, copied;

    DeviceInputs inputs;
    if (inputs_on_device) {
        inputs.problem = host;
        const Event written;
        HPCML_CUDA_CHECK(cudaEventRecord(written.get(), static_cast<cudaStream_t>(context.stream)));
        for (const Stream& s : streams) HPCML_CUDA_CHECK(cudaStreamWaitEvent(s.get(), written.get(), 0));
    } else {
        inputs = upload(host, streams[0].get(), tracker);
    }
    const Problem& dev = inputs.problem;

    const std::size_t out_row_bytes = row_bytes(host.m, host.output);
    const bool mirrored = to.out && method == Method::Fused && uses_symmetry(dev, method) &&
                          whole_output_fits(detail::checked_mul(host.n, out_row_bytes, "similarity output"));
    const std::vector<Region> steps =
        mirrored ? mirrored_bands(host.n, host.m, detail::round_up(plan.tile_rows, kFusedBlockRows))
                 : launch_regions(host, plan, tiles_per_launch(dev, plan, method));
    std::size_t slot_bytes = 0;
    for (const Region& r : steps) slot_bytes = std::max(slot_bytes, r.rows * row_bytes(r.cols, host.output));
    detail::DeviceBuffer<unsigned char> whole;  // the mirrored path's output
    std::array<detail::DeviceBuffer<unsigned char>, 2> device_out;
    std::array<detail::PinnedBuffer<unsigned char>, 2> staged;
    // On every exit (a throwing sink or launch included), both streams finish before the
    // buffers above are freed: a kernel may still read x_dev on the other stream, and a copy
    // may still be writing into a pinned buffer.
    const Drain drain{{streams[0].get(), streams[1].get()}};
    if (mirrored)
        whole = detail::DeviceBuffer<unsigned char>(tracker, host.n * out_row_bytes, streams[0].get(),
                                                    "similarity output on device");
    for (int slot = 0; slot < 2 && static_cast<std::size_t>(slot) < steps.size(); ++slot) {
        if (!mirrored)
            device_out[slot] = detail::DeviceBuffer<unsigned char>(tracker, slot_bytes, streams[slot].get(),
                                                                   "similarity output tiles");
        if (to.staged())
            staged[slot] = detail::PinnedBuffer<unsigned char>(tracker, slot_bytes, "similarity pinned output tiles");
    }
    if (mirrored)  // the other stream's first band writes into `whole` too
        HPCML_CUDA_CHECK(cudaStreamSynchronize(streams[0].get()));

    // Step k's kernels, then its copy to the host. Same-stream order makes the previous copy
    // out of this slot finish before the kernel overwrites it; the host handed that slot on
    // (step k - 2) before getting here.
    auto issue = [&](std::size_t k, int slot) {
        const cudaStream_t stream = streams[slot].get();
        const Region& region = steps[k];
        const std::size_t stride = row_bytes(region.cols, host.output);
        const unsigned char* result = nullptr;
        {
            const detail::NvtxRange range([&] {
                return "hpcml::similarity kernels, step " + std::to_string(k) + " of " + std::to_string(steps.size());
            });
            if (mirrored) {
                // Its mirror reads the bands above, the last of them computed on the other stream.
                if (k > 0) HPCML_CUDA_CHECK(cudaStreamWaitEvent(stream, computed[1 - slot].get(), 0));
                const std::size_t r = region.row0;
                unsigned char* band = whole.data() + r * out_row_bytes;
                launch_fused(dev, Region{r, r, region.rows, host.m - r},
                             RegionOutput{band + row_bytes(r, host.output), out_row_bytes}, stream, true);
                launch_mirror_lower(dev, whole.data(), out_row_bytes, r, r + region.rows, stream);
                HPCML_CUDA_CHECK(cudaEventRecord(computed[slot].get(), stream));
                result = band;
            } else {
                launch(dev, region, RegionOutput{device_out[slot].data(), stride}, method, tracker, stream);
                result = device_out[slot].data();
            }
        }
        if (to.staged()) {
            HPCML_CUDA_CHECK(
                cudaMemcpyAsync(staged[slot].data(), result, region.rows * stride, cudaMemcpyDeviceToHost, stream));
        } else if (stride == to.out_row_bytes) {  // whole rows: one block
            HPCML_CUDA_CHECK(cudaMemcpyAsync(to.out + region.row0 * to.out_row_bytes, result, region.rows * stride,
                                             cudaMemcpyDeviceToHost, stream));
        } else {
            HPCML_CUDA_CHECK(cudaMemcpy2DAsync(
                to.out + region.row0 * to.out_row_bytes + row_bytes(region.col0, host.output), to.out_row_bytes, result,
                stride, stride, region.rows, cudaMemcpyDeviceToHost, stream));
        }
        HPCML_CUDA_CHECK(cudaEventRecord(copied[slot].get(), stream));
    };
    auto retire = [&](std::size_t k, int slot) {
        const detail::NvtxRange range(
            [&] { return "hpcml::similarity download and hand-on, step " + std::to_string(k); });
        HPCML_CUDA_CHECK(cudaEventSynchronize(copied[slot].get()));
        hand_on(steps[k], staged[slot].data(), host.output, plan, to);
    };
    detail::two_slot_pipeline(steps.size(), issue, retire);
}

}  // namespace

void cuda_run_host(const Problem& host, const TilePlan& plan, Method method, const SimilarityTileSink& sink,
                   const Context& context, detail::MemoryTracker& tracker) {
    run_host(host, plan, method, HostDestination{.sink = &sink}, context, tracker);
}

void cuda_run_host_into(const Problem& host, const TilePlan& plan, Method method, unsigned char* out,
                        const std::function<void(std::uint64_t)>& delivered, const Context& context,
                        detail::MemoryTracker& tracker) {
    if (host.n == 0 || host.m == 0) return;
    const std::size_t out_row_bytes = row_bytes(host.m, host.output);
    const detail::DeviceGuard guard(context.device);  // the pointer query runs in the call's context
    run_host(host, plan, method,
             HostDestination{.out = out,
                             .out_row_bytes = out_row_bytes,
                             .out_page_locked = detail::page_locked(out, host.n * out_row_bytes),
                             .delivered = &delivered},
             context, tracker);
}

void cuda_run_device(const Problem& p, const TilePlan& plan, Method method, void* out, const Context& context,
                     detail::MemoryTracker& tracker) {
    if (p.n == 0 || p.m == 0) return;
    const detail::DeviceGuard guard(context.device);
    const cudaStream_t stream = static_cast<cudaStream_t>(context.stream);
    if (host_memory(out)) {
        // A host result: computed tile group by tile group on the host path's two streams and
        // copied into `out` (straight where it is page-locked), never written or read over the
        // link by a kernel. The call returns with `out` filled, so a stream being captured into
        // a graph cannot take it.
        cudaStreamCaptureStatus capture = cudaStreamCaptureStatusNone;
        HPCML_CUDA_CHECK(cudaStreamIsCapturing(stream, &capture));
        if (capture != cudaStreamCaptureStatusNone)
            raise(ErrorKind::InvalidArgument,
                  "out: host memory cannot take a result while the stream is being captured into a CUDA graph "
                  "(the call would return before the graph runs); pass device memory");
        auto* host_out = static_cast<unsigned char*>(out);
        const std::size_t out_bytes = p.n * row_bytes(p.m, p.output);
        run_host(p, plan, method,
                 HostDestination{.out = host_out,
                                 .out_row_bytes = row_bytes(p.m, p.output),
                                 .out_page_locked = detail::page_locked(host_out, out_bytes)},
                 context, tracker, true);
        return;
    }
    const std::size_t out_row_bytes = row_bytes(p.m, p.output);
    auto at = [&](std::size_t row0, std::size_t col0) {
        return RegionOutput{static_cast<unsigned char*>(out) + row0 * out_row_bytes + row_bytes(col0, p.output),
                            out_row_bytes};
    };
    // Where y is x (the fused method): row bands of whole 128-row blocks, each from its diagonal to the last
    // column with the blocks below the diagonal skipped, then one mirror of everything below
    // it. The output is on the device, so the mirror costs a read and a write per element
    // instead of `samples` compare-counts.
    if (method == Method::Fused && uses_symmetry(p, method)) {
        const std::size_t band = detail::round_up(plan.tile_rows, kFusedBlockRows);
        for (std::size_t r = 0; r < p.n; r += band)
            launch_fused(p, Region{r, r, std::min(band, p.n - r), p.m - r}, at(r, r), stream, true);
        launch_mirror_lower(p, out, out_row_bytes, 0, p.n, stream);
    } else {
        for (const Region& region : launch_regions(p, plan, tiles_per_launch(p, plan, method)))
            launch(p, region, at(region.row0, region.col0), method, tracker, stream);
    }
    synchronize_unless_capturing(stream);
}

void cuda_run_pairs(const Problem& host, bool on_device, const TilePlan& plan, Method method, std::int32_t min_count,
                    const PassingSink& sink, const Context& context, detail::MemoryTracker& tracker) {
    if (host.n == 0 || host.m == 0) return;
    const detail::DeviceGuard guard(context.device);
    std::optional<Stream> own;  // host inputs: a stream of the call's own
    if (!on_device) own.emplace();
    const cudaStream_t stream = own ? own->get() : static_cast<cudaStream_t>(context.stream);
    std::optional<DeviceInputs> uploaded;
    if (!on_device) uploaded.emplace(upload(host, stream, tracker));
    const Problem& dev = on_device ? host : uploaded->problem;
    // A launch's selection indexes its elements in 31 bits (select_passing refuses a larger tile).
    constexpr std::size_t kMostElements = (std::size_t{1} << 31) - 1;
    const std::size_t group = std::max<std::size_t>(
        1, std::min(tiles_per_launch(dev, plan, method), kMostElements / (plan.tile_rows * plan.tile_cols)));
    const std::vector<Region> regions = launch_regions(host, plan, group);
    const std::size_t most = plan.tile_rows * std::min(plan.tile_cols * group, host.m);
    const std::size_t temp_bytes =
        select_passing(nullptr, host.output, most, min_count, nullptr, nullptr, nullptr, 0, stream);
    detail::DeviceBuffer<unsigned char> out(tracker, detail::checked_mul(most, row_bytes(1, host.output), "tile group"),
                                            stream, "similarity output tiles");
    detail::DeviceBuffer<PassingElement> selected(tracker, most, stream, "similarity selected pairs");
    detail::DeviceBuffer<unsigned long long> selected_count(tracker, 1, stream, "similarity selected count");
    // Never empty: a null scratch pointer would make the selection a size query.
    detail::DeviceBuffer<unsigned char> temp(tracker, std::max<std::size_t>(temp_bytes, 1), stream,
                                             "similarity selection scratch");
    detail::PinnedBuffer<unsigned long long> count_host(tracker, 1, "similarity selected count");
    // A region's pairs, copied at the link's rate: the first `ahead` with the count, in the same
    // wait (a sparse list needs no second one), the rest after it; grown as needed.
    const std::size_t ahead = std::min<std::size_t>(most, 65536);
    detail::PinnedBuffer<PassingElement> passing(tracker, ahead, "similarity pairs on the host");
    // What is copied ahead past the count is never read, but must be initialised memory.
    HPCML_CUDA_CHECK(cudaMemsetAsync(selected.data(), 0, ahead * sizeof(PassingElement), stream));
    // On every exit (a throwing sink included) the stream finishes before the buffers above
    // are freed: a copy may still be writing into the pinned count.
    const Drain drain{{stream}};
    for (const Region& region : regions) {
        const std::size_t elements = region.rows * region.cols;
        launch(dev, region, RegionOutput{out.data(), row_bytes(region.cols, host.output)}, method, tracker, stream);
        select_passing(out.data(), host.output, elements, min_count, selected.data(), selected_count.data(),
                       temp.data(), temp.size(), stream);
        HPCML_CUDA_CHECK(cudaMemcpyAsync(count_host.data(), selected_count.data(), sizeof(unsigned long long),
                                         cudaMemcpyDeviceToHost, stream));
        const std::size_t first = std::min(ahead, elements);
        if (first)
            HPCML_CUDA_CHECK(cudaMemcpyAsync(passing.data(), selected.data(), first * sizeof(PassingElement),
                                             cudaMemcpyDeviceToHost, stream));
        HPCML_CUDA_CHECK(cudaStreamSynchronize(stream));
        const std::size_t count = static_cast<std::size_t>(*count_host.data());
        if (count > first) {
            if (passing.size() < count) {  // the stream is idle: nothing is copying into it
                const std::size_t grown = std::min(most, std::max(count, passing.size() * 2));
                detail::PinnedBuffer<PassingElement> larger(tracker, grown, "similarity pairs on the host");
                std::memcpy(larger.data(), passing.data(), first * sizeof(PassingElement));
                passing = std::move(larger);
            }
            HPCML_CUDA_CHECK(cudaMemcpyAsync(passing.data() + first, selected.data() + first,
                                             (count - first) * sizeof(PassingElement), cudaMemcpyDeviceToHost, stream));
            HPCML_CUDA_CHECK(cudaStreamSynchronize(stream));
        }
        sink(region, passing.data(), count);
    }
}

}  // namespace hpcml::detail::similarity
