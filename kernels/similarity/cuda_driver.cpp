// The CUDA backend's host side for dense results (pair lists: cuda_pairs.cpp): copies inputs in,
// groups output tiles into launches large enough to fill the GPU, and streams finished tiles back
// to the host on two streams, so that one group's device-to-host copy (and the host's work on the
// group before it) overlaps the next group's kernel: into the caller's page-locked output
// directly, else through two pinned buffers.
#include <algorithm>
#include <array>
#include <cstdint>
#include <functional>
#include <memory>
#include <vector>

#include "common/cuda_check.hpp"
#include "common/cuda_memory.hpp"
#include "common/cuda_stream.hpp"
#include "common/error.hpp"
#include "common/nvtx.hpp"
#include "common/pipeline.hpp"
#include "cuda_driver.hpp"
#include "host_staging.hpp"

namespace hpcml::detail::similarity {

std::size_t tiles_per_launch(const Problem& p, const TilePlan& plan, Method method) {
    const auto launch_shape = method_entry(method).cuda_blocks;
    if (!launch_shape) return 1;
    const LaunchBlocks blocks = launch_shape(p);
    const std::size_t blocks_per_tile =
        detail::ceil_div(plan.tile_rows, blocks.rows) * detail::ceil_div(plan.tile_cols, blocks.cols);
    const std::size_t wanted = detail::ceil_div(kCudaHost.waves * blocks.resident, blocks_per_tile);
    return std::clamp<std::size_t>(wanted, 1, plan.tiles.col_blocks.size());
}

std::unique_ptr<CudaCall> prepare_call(const Problem& dev, Method method, const std::vector<Region>& launches,
                                       detail::MemoryTracker& tracker, cudaStream_t stream) {
    const auto make = method_entry(method).cuda_prepare;
    return make ? make(dev, launches, tracker, stream) : nullptr;
}

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

std::size_t cuda_max_shared_per_block(int device) {
    int bytes = 0;
    HPCML_CUDA_CHECK(cudaDeviceGetAttribute(&bytes, cudaDevAttrMaxSharedMemoryPerBlockOptin, device));
    return static_cast<std::size_t>(bytes);
}

namespace {

using detail::Event;
using detail::Stream;

// Whether `out` is host memory (pageable, or page-locked), not device or managed memory
// (require_output_pointer has refused a pointer the runtime cannot place).
bool host_memory(const void* out) {
    cudaPointerAttributes attributes;
    HPCML_CUDA_CHECK(detail::query_pointer(out, attributes));
    return attributes.type == cudaMemoryTypeUnregistered || attributes.type == cudaMemoryTypeHost;
}

// Whether the whole n x m output may live on the device for the mirrored path: at most half
// the memory free now.
bool whole_output_fits(std::size_t bytes) { return detail::within_free_device_memory(bytes, 2); }

// The mirrored paths' bands: `rows` rounded up to whole blocks of the method (128 rows fused,
// 256 sorted: then every band starts on the segments of x's one sorted run, sorted_runs.hpp).
std::size_t mirrored_band_rows(const Problem& p, Method method, std::size_t rows) {
    return detail::round_up(rows, method_entry(method).cuda_blocks(p).rows);
}

// What a mirrored band launches: its rows from the diagonal to the last column.
Region upper_launch(const Region& band, std::size_t m) { return {band.row0, band.row0, band.rows, m - band.row0}; }

// The launches' regions of a call's steps, for the method's cuda_prepare.
std::vector<Region> launched(const std::vector<Region>& steps, bool mirrored, std::size_t m) {
    std::vector<Region> regions = steps;
    if (mirrored)
        for (Region& r : regions) r = upper_launch(r, m);
    return regions;
}

// The mirrored path's band `region` (rows of whole blocks, every column) in `whole`, the n x m
// output on the device: its blocks from the diagonal on, then, once `above` (the band before, on
// the other stream; null for the first) is done, its part below the diagonal mirrored from the
// bands above; `done` recorded after. Returns the band's first row.
unsigned char* launch_mirrored_band(const Problem& dev, Method method, const Region& region, const CudaCall* call,
                                    unsigned char* whole, cudaEvent_t above, cudaEvent_t done,
                                    detail::MemoryTracker& tracker, cudaStream_t stream) {
    const std::size_t r = region.row0, out_row_bytes = row_bytes(dev.m, dev.output);
    unsigned char* band = whole + r * out_row_bytes;
    method_entry(method).cuda_launch_upper(dev, upper_launch(region, dev.m),
                                           RegionOutput{band + row_bytes(r, dev.output), out_row_bytes}, call, tracker,
                                           stream);
    if (above) HPCML_CUDA_CHECK(cudaStreamWaitEvent(stream, above, 0));
    launch_mirror_lower(dev, whole, out_row_bytes, r, r + region.rows, stream);
    HPCML_CUDA_CHECK(cudaEventRecord(done, stream));
    return band;
}

// A step's rows (`result` on the device, packed) copied on `stream` to where they go: its slot's
// pinned buffer `staged`, or straight into a page-locked `out` (one block for whole rows).
void download(const Region& region, const unsigned char* result, SimilarityOutput output, unsigned char* staged,
              const HostDestination& to, cudaStream_t stream) {
    const std::size_t stride = row_bytes(region.cols, output);
    if (to.staged()) {
        HPCML_CUDA_CHECK(cudaMemcpyAsync(staged, result, region.rows * stride, cudaMemcpyDeviceToHost, stream));
    } else if (stride == to.out_row_bytes) {
        HPCML_CUDA_CHECK(cudaMemcpyAsync(to.out + region.row0 * to.out_row_bytes, result, region.rows * stride,
                                         cudaMemcpyDeviceToHost, stream));
    } else {
        HPCML_CUDA_CHECK(cudaMemcpy2DAsync(to.out + region.row0 * to.out_row_bytes + row_bytes(region.col0, output),
                                           to.out_row_bytes, result, stride, stride, region.rows,
                                           cudaMemcpyDeviceToHost, stream));
    }
}

// The host path's steps: groups of tiles, or the mirrored path's bands, each from its diagonal
// on; a staged band is at most kCudaHost.staged_band_bytes (pinned, twice) where rows allow (the plan's
// tiles bound the groups' staging, whole rows do not).
std::vector<Region> host_steps(const Problem& dev, const TilePlan& plan, Method method, bool mirrored, bool staged) {
    if (!mirrored) return launch_regions(plan, tiles_per_launch(dev, plan, method));
    const std::size_t out_row_bytes = row_bytes(dev.m, dev.output);
    const std::size_t band_rows =
        staged ? std::min(plan.tile_rows, std::max<std::size_t>(1, kCudaHost.staged_band_bytes / out_row_bytes)) : plan.tile_rows;
    return mirrored_bands(dev.n, dev.m, dev.output, mirrored_band_rows(dev, method, band_rows));
}

// The host path: x and y uploaded once, then steps on two streams in turn (two_slot_pipeline),
// each step's output copied to the host on its stream while the host hands on the step before
// (on the calling thread: the sink's tiles, the copy-out, the progress).
//
// Steps: groups of tiles (launch_regions), each computed into its slot's device buffer; or,
// where y is x (a method with an upper launch, an `out`, the output within whole_output_fits), row bands of
// whole blocks of the method into one device copy of the output, each computed from its diagonal on
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
    const bool mirrored = to.out && method_entry(method).cuda_launch_upper && uses_symmetry(dev, method) &&
                          whole_output_fits(detail::checked_mul(host.n, out_row_bytes, "similarity output"));
    const std::vector<Region> steps = host_steps(dev, plan, method, mirrored, to.staged());
    std::size_t slot_bytes = 0;
    for (const Region& r : steps) slot_bytes = std::max(slot_bytes, r.rows * row_bytes(r.cols, host.output));
    detail::DeviceBuffer<unsigned char> whole;  // the mirrored path's output
    std::unique_ptr<CudaCall> call;             // the method's state for the launches
    std::array<detail::DeviceBuffer<unsigned char>, 2> device_out;
    std::array<detail::PinnedBuffer<unsigned char>, 2> staged;
    // On every exit (a throwing sink or launch included), both streams finish before the
    // buffers above are freed: a kernel may still read x_dev on the other stream, and a copy
    // may still be writing into a pinned buffer.
    const Drain drain{{streams[0].get(), streams[1].get()}};
    // The whole output and the method's state made on the first stream, before the second's work.
    if (mirrored)
        whole = detail::DeviceBuffer<unsigned char>(tracker, host.n * out_row_bytes, streams[0].get(),
                                                    "similarity output on device");
    call = prepare_call(dev, method, launched(steps, mirrored, dev.m), tracker, streams[0].get());
    HPCML_CUDA_CHECK(cudaEventRecord(computed[0].get(), streams[0].get()));
    HPCML_CUDA_CHECK(cudaStreamWaitEvent(streams[1].get(), computed[0].get(), 0));
    for (int slot = 0; slot < 2 && static_cast<std::size_t>(slot) < steps.size(); ++slot) {
        if (!mirrored)
            device_out[slot] = detail::DeviceBuffer<unsigned char>(tracker, slot_bytes, streams[slot].get(),
                                                                   "similarity output tiles");
        if (to.staged())
            staged[slot] = detail::PinnedBuffer<unsigned char>(tracker, slot_bytes, "similarity pinned output tiles");
    }

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
                result = launch_mirrored_band(dev, method, region, call.get(), whole.data(),
                                              k > 0 ? computed[1 - slot].get() : nullptr, computed[slot].get(), tracker,
                                              stream);
            } else {
                method_entry(method).cuda_launch(dev, region, RegionOutput{device_out[slot].data(), stride}, call.get(),
                                                 tracker, stream);
                result = device_out[slot].data();
            }
        }
        download(region, result, host.output, staged[slot].data(), to, stream);
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
        if (detail::capturing(stream))
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
    // Where y is x (a method with an upper launch): row bands of whole blocks, each from
    // its diagonal to the last column with the blocks below the diagonal skipped, then one mirror
    // of everything below it. The output is on the device, so the mirror costs a read and a
    // write per element instead of `samples` compare-counts.
    const MethodEntry& entry = method_entry(method);
    const bool mirrored = entry.cuda_launch_upper && uses_symmetry(p, method);
    const std::vector<Region> launches =
        mirrored
            ? launched(mirrored_bands(p.n, p.m, p.output, mirrored_band_rows(p, method, plan.tile_rows)), true, p.m)
            : launch_regions(plan, tiles_per_launch(p, plan, method));
    const std::unique_ptr<CudaCall> call = prepare_call(p, method, launches, tracker, stream);  // freed stream-ordered
    for (const Region& region : launches)
        (mirrored ? entry.cuda_launch_upper : entry.cuda_launch)(p, region, at(region.row0, region.col0), call.get(),
                                                                 tracker, stream);
    if (mirrored) launch_mirror_lower(p, out, out_row_bytes, 0, p.n, stream);
    synchronize_unless_capturing(stream);
}

}  // namespace hpcml::detail::similarity
