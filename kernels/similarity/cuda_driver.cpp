// The CUDA backend's host side: copies inputs in, groups output tiles into launches large
// enough to fill the GPU, and streams finished tiles back to the host on two streams, so that
// one group's device-to-host copy (and the host's work on the group before it) overlaps the
// next group's kernel: into the caller's page-locked output directly, else through two pinned
// buffers.
#include <algorithm>
#include <array>
#include <bit>
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

// The mirrored path's band `region` (rows of whole 128-row blocks, every column) in `whole`,
// the n x m output on the device: its blocks from the diagonal on, then, once `above` (the band
// before, on the other stream; null for the first) is done, its part below the diagonal mirrored
// from the bands above; `done` recorded after. Returns the band's first row.
unsigned char* launch_mirrored_band(const Problem& dev, const Region& region, unsigned char* whole, cudaEvent_t above,
                                    cudaEvent_t done, cudaStream_t stream) {
    const std::size_t r = region.row0, out_row_bytes = row_bytes(dev.m, dev.output);
    unsigned char* band = whole + r * out_row_bytes;
    launch_fused(dev, Region{r, r, region.rows, dev.m - r},
                 RegionOutput{band + row_bytes(r, dev.output), out_row_bytes}, stream, true);
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
// on; a staged band is at most kStagedBandBytes (pinned, twice) where rows allow (the plan's
// tiles bound the groups' staging, whole rows do not).
std::vector<Region> host_steps(const Problem& dev, const TilePlan& plan, Method method, bool mirrored, bool staged) {
    if (!mirrored) return launch_regions(dev, plan, tiles_per_launch(dev, plan, method));
    constexpr std::size_t kStagedBandBytes = std::size_t{64} << 20;
    const std::size_t out_row_bytes = row_bytes(dev.m, dev.output);
    const std::size_t band_rows =
        staged ? std::min(plan.tile_rows, std::max<std::size_t>(1, kStagedBandBytes / out_row_bytes)) : plan.tile_rows;
    return mirrored_bands(dev.n, dev.m, detail::round_up(band_rows, kFusedBlockRows));
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
    const std::vector<Region> steps = host_steps(dev, plan, method, mirrored, to.staged());
    std::size_t slot_bytes = 0;
    for (const Region& r : steps) slot_bytes = std::max(slot_bytes, r.rows * row_bytes(r.cols, host.output));
    detail::DeviceBuffer<unsigned char> whole;  // the mirrored path's output
    std::array<detail::DeviceBuffer<unsigned char>, 2> device_out;
    std::array<detail::PinnedBuffer<unsigned char>, 2> staged;
    // On every exit (a throwing sink or launch included), both streams finish before the
    // buffers above are freed: a kernel may still read x_dev on the other stream, and a copy
    // may still be writing into a pinned buffer.
    const Drain drain{{streams[0].get(), streams[1].get()}};
    if (mirrored) {  // allocated on the first stream, in order before the second's work
        whole = detail::DeviceBuffer<unsigned char>(tracker, host.n * out_row_bytes, streams[0].get(),
                                                    "similarity output on device");
        HPCML_CUDA_CHECK(cudaEventRecord(computed[0].get(), streams[0].get()));
        HPCML_CUDA_CHECK(cudaStreamWaitEvent(streams[1].get(), computed[0].get(), 0));
    }
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
                result = launch_mirrored_band(dev, region, whole.data(), k > 0 ? computed[1 - slot].get() : nullptr,
                                              computed[slot].get(), stream);
            } else {
                launch(dev, region, RegionOutput{device_out[slot].data(), stride}, method, tracker, stream);
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

namespace {

// A launch's selection indexes its elements in 31 bits (select_passing refuses a larger tile).
constexpr std::size_t kMostSelected = (std::size_t{1} << 31) - 1;

// A pair list's launches and their selection on the device (select_passing): the regions, and
// for the largest the region's output, its passing elements, their count on the device and in
// pinned memory, and CUB's scratch.
struct Selection {
    Selection(const Problem& host, const TilePlan& plan, std::size_t group, std::int32_t min_count, cudaStream_t stream,
              detail::MemoryTracker& tracker)
        : regions(launch_regions(host, plan, group)),
          most(plan.tile_rows * std::min(plan.tile_cols * group, host.m)),
          out(tracker, detail::checked_mul(most, row_bytes(1, host.output), "tile group"), stream,
              "similarity output tiles"),
          selected(tracker, most, stream, "similarity selected pairs"),
          selected_count(tracker, 1, stream, "similarity selected count"),
          count_host(tracker, 1, "similarity selected count"),
          min_count_(min_count),
          output_(host.output) {
        const std::size_t temp_bytes =
            select_passing(nullptr, host.output, most, min_count, nullptr, nullptr, nullptr, 0, stream);
        // Never empty: a null scratch pointer would make the selection a size query.
        temp = detail::DeviceBuffer<unsigned char>(tracker, std::max<std::size_t>(temp_bytes, 1), stream,
                                                   "similarity selection scratch");
    }

    // Region k's output computed and reduced, and its count copied to count_host (not waited for).
    void select(const Problem& dev, std::size_t k, Method method, detail::MemoryTracker& tracker, cudaStream_t stream) {
        const Region& region = regions[k];
        launch(dev, region, RegionOutput{out.data(), row_bytes(region.cols, output_)}, method, tracker, stream);
        select_passing(out.data(), output_, region.rows * region.cols, min_count_, selected.data(),
                       selected_count.data(), temp.data(), temp.size(), stream);
        HPCML_CUDA_CHECK(cudaMemcpyAsync(count_host.data(), selected_count.data(), sizeof(unsigned long long),
                                         cudaMemcpyDeviceToHost, stream));
    }

    std::vector<Region> regions;
    std::size_t most;
    detail::DeviceBuffer<unsigned char> out;
    detail::DeviceBuffer<PassingElement> selected;
    detail::DeviceBuffer<unsigned long long> selected_count;
    detail::DeviceBuffer<unsigned char> temp;
    detail::PinnedBuffer<unsigned long long> count_host;

private:
    std::int32_t min_count_;
    SimilarityOutput output_;
};

}  // namespace

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
    const std::size_t group = std::max<std::size_t>(
        1, std::min(tiles_per_launch(dev, plan, method), kMostSelected / (plan.tile_rows * plan.tile_cols)));
    Selection selection(host, plan, group, min_count, stream, tracker);
    const std::size_t most = selection.most;
    auto& selected = selection.selected;
    // A region's pairs, copied at the link's rate: the first `ahead` with the count, in the same
    // wait (a sparse list needs no second one), the rest after it; grown as needed.
    const std::size_t ahead = std::min<std::size_t>(most, 65536);
    detail::PinnedBuffer<PassingElement> passing(tracker, ahead, "similarity pairs on the host");
    // What is copied ahead past the count is never read, but must be initialised memory.
    HPCML_CUDA_CHECK(cudaMemsetAsync(selected.data(), 0, ahead * sizeof(PassingElement), stream));
    // On every exit (a throwing sink included) the stream finishes before the buffers above
    // are freed: a copy may still be writing into the pinned count.
    const Drain drain{{stream}};
    for (std::size_t k = 0; k < selection.regions.size(); ++k) {
        const Region& region = selection.regions[k];
        const std::size_t elements = region.rows * region.cols;
        selection.select(dev, k, method, tracker, stream);
        const std::size_t first = std::min(ahead, elements);
        if (first)
            HPCML_CUDA_CHECK(cudaMemcpyAsync(passing.data(), selected.data(), first * sizeof(PassingElement),
                                             cudaMemcpyDeviceToHost, stream));
        HPCML_CUDA_CHECK(cudaStreamSynchronize(stream));
        const std::size_t count = static_cast<std::size_t>(*selection.count_host.data());
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

namespace {

// The device pair list's buffers grown to hold `needed` (at least doubled), the first `total`
// keys and counts copied over on `stream`; the old buffers go back stream-ordered.
void grow(detail::DeviceBuffer<std::uint64_t>& keys, detail::DeviceBuffer<std::int32_t>& values, std::size_t total,
          std::size_t needed, bool counts, detail::MemoryTracker& tracker, cudaStream_t stream) {
    const std::size_t grown = std::max(needed, 2 * keys.size());
    detail::DeviceBuffer<std::uint64_t> more_keys(tracker, grown, stream, "similarity pairs on the device");
    detail::DeviceBuffer<std::int32_t> more_values(tracker, counts ? grown : 0, stream,
                                                   "similarity pair counts on the device");
    if (total) {
        HPCML_CUDA_CHECK(cudaMemcpyAsync(more_keys.data(), keys.data(), total * sizeof(std::uint64_t),
                                         cudaMemcpyDeviceToDevice, stream));
        if (counts)
            HPCML_CUDA_CHECK(cudaMemcpyAsync(more_values.data(), values.data(), total * sizeof(std::int32_t),
                                             cudaMemcpyDeviceToDevice, stream));
    }
    keys = std::move(more_keys);
    values = std::move(more_values);
}

// The first `total` keys (and their counts) sorted by their low `bits` bits on `stream`, left in
// `keys` and `values`; the buffers not holding the result go back (stream-ordered) at once,
// before the caller allocates.
void sort_by_key(detail::DeviceBuffer<std::uint64_t>& keys, detail::DeviceBuffer<std::int32_t>& values,
                 std::size_t total, int bits, bool counts, detail::MemoryTracker& tracker, cudaStream_t stream) {
    detail::DeviceBuffer<std::uint64_t> keys_alt(tracker, total, stream, "similarity pairs, sorted");
    detail::DeviceBuffer<std::int32_t> values_alt(tracker, counts ? total : 0, stream,
                                                  "similarity pair counts, sorted");
    bool in_alt = false;
    const std::size_t temp_bytes = sort_pair_keys(keys.data(), keys_alt.data(), counts ? values.data() : nullptr,
                                                  values_alt.data(), total, bits, in_alt, nullptr, 0, stream);
    {
        detail::DeviceBuffer<unsigned char> temp(tracker, std::max<std::size_t>(temp_bytes, 1), stream,
                                                 "similarity pair sort scratch");
        sort_pair_keys(keys.data(), keys_alt.data(), counts ? values.data() : nullptr, values_alt.data(), total, bits,
                       in_alt, temp.data(), temp.size(), stream);
    }
    if (in_alt) {
        keys = std::move(keys_alt);
        values = std::move(values_alt);
    }
}

}  // namespace

void cuda_run_pairs_on_device(const Problem& dev, const TilePlan& plan, Method method, std::int32_t min_count,
                              const SimilarityDevicePairsAllocator& allocate, const Context& context,
                              detail::MemoryTracker& tracker) {
    const detail::DeviceGuard guard(context.device);
    const cudaStream_t stream = static_cast<cudaStream_t>(context.stream);
    if (detail::capturing(stream))
        raise(ErrorKind::InvalidArgument,
              "stream: a pair list cannot be captured into a CUDA graph (its length, known only once the "
              "launches have run, sizes its memory)");
    // Launches of whole rows where they fit (at most kWholeRowsElements in a launch's output:
    // 128 MiB of counts, 256 MiB of selection), so that the pairs arrive in row-major order and
    // need no sort; else (and the naive baseline, whose intermediate grows with the launch) as
    // the host's list.
    constexpr std::size_t kWholeRowsElements = std::size_t{1} << 25;
    const std::size_t tiles_in_row = detail::ceil_div(dev.m, plan.tile_cols);
    const std::size_t group =
        method != Method::Naive && plan.tile_rows * tiles_in_row * plan.tile_cols <= kWholeRowsElements
            ? tiles_in_row
            : std::max<std::size_t>(
                  1, std::min(tiles_per_launch(dev, plan, method), kMostSelected / (plan.tile_rows * plan.tile_cols)));
    const bool ordered = group >= tiles_in_row;
    const bool counts = dev.output == SimilarityOutput::Int32;
    // The pairs so far, as keys (row * m + column) and counts, grown by doubling.
    detail::DeviceBuffer<std::uint64_t> keys;
    detail::DeviceBuffer<std::int32_t> values;
    std::size_t total = 0;
    const Drain drain{{stream}};
    {  // the selection's buffers freed before the sort and the caller's allocation
        Selection selection(dev, plan, group, min_count, stream, tracker);
        for (std::size_t k = 0; k < selection.regions.size(); ++k) {
            selection.select(dev, k, method, tracker, stream);
            HPCML_CUDA_CHECK(cudaStreamSynchronize(stream));  // the count: the only bytes that cross the link
            const std::size_t count = static_cast<std::size_t>(*selection.count_host.data());
            if (total + count > keys.size()) grow(keys, values, total, total + count, counts, tracker, stream);
            append_pair_keys(selection.selected.data(), count, selection.regions[k], dev.m, keys.data() + total,
                             counts ? values.data() + total : nullptr, stream);
            total += count;
        }
    }
    if (!ordered && total > 1)  // a row's columns came in several launches
        sort_by_key(keys, values, total, std::bit_width(std::uint64_t{dev.n} * dev.m - 1), counts, tracker, stream);
    const SimilarityDevicePairs into = allocate(total);
    if (total) {
        if (!into.i || !into.j || (counts && !into.count))
            raise(ErrorKind::InvalidArgument,
                  "allocate: returned a null pointer for " + std::to_string(total) + " pairs");
        detail::require_device_pointer(into.i, context.device, "allocate's i");
        detail::require_device_pointer(into.j, context.device, "allocate's j");
        if (counts) detail::require_device_pointer(into.count, context.device, "allocate's count");
    }
    split_pair_keys(keys.data(), values.data(), total, dev.m, into.i, into.j, counts ? into.count : nullptr, stream);
    HPCML_CUDA_CHECK(cudaStreamSynchronize(stream));
}

}  // namespace hpcml::detail::similarity
