// The CUDA backend's pair lists: each launch's output reduced on the device to the elements
// that pass (select_passing), and only those copied to the host (cuda_run_pairs), or kept on the
// device as sorted keys and written where the caller's allocator says
// (cuda_run_pairs_on_device).
#include <algorithm>
#include <bit>
#include <cstdint>
#include <cstring>
#include <memory>
#include <optional>
#include <vector>

#include "common/cuda_check.hpp"
#include "common/cuda_memory.hpp"
#include "common/cuda_stream.hpp"
#include "common/error.hpp"
#include "cuda_driver.hpp"
#include "host_staging.hpp"

namespace hpcml::detail::similarity {

namespace {

// A launch's selection indexes its elements in 31 bits (select_passing refuses a larger tile).
constexpr std::size_t kMostSelected = (std::size_t{1} << 31) - 1;

// A pair list's launches and their selection on the device (select_passing): the regions, and
// for the largest the region's output, its passing elements, their count on the device and in
// pinned memory, and CUB's scratch.
struct Selection {
    Selection(const Problem& host, const TilePlan& plan, std::size_t group, std::int32_t min_count, cudaStream_t stream,
              detail::MemoryTracker& tracker)
        : regions(launch_regions(plan, group)),
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

    // Region k's output computed (with the method's state for the call's launches, `call`) and
    // reduced, and its count copied to count_host (not waited for).
    void select(const Problem& dev, std::size_t k, Method method, const CudaCall* call, detail::MemoryTracker& tracker,
                cudaStream_t stream) {
        const Region& region = regions[k];
        method_entry(method).cuda_launch(dev, region, RegionOutput{out.data(), row_bytes(region.cols, output_)}, call,
                                         tracker, stream);
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
    std::optional<detail::Stream> own;  // host inputs: a stream of the call's own
    if (!on_device) own.emplace();
    const cudaStream_t stream = own ? own->get() : static_cast<cudaStream_t>(context.stream);
    std::optional<DeviceInputs> uploaded;
    if (!on_device) uploaded.emplace(upload(host, stream, tracker));
    const Problem& dev = on_device ? host : uploaded->problem;
    const std::size_t group = std::max<std::size_t>(
        1, std::min(tiles_per_launch(dev, plan, method), kMostSelected / (plan.tile_rows * plan.tile_cols)));
    Selection selection(host, plan, group, min_count, stream, tracker);
    const std::unique_ptr<CudaCall> call = prepare_call(dev, method, selection.regions, tracker, stream);
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
        selection.select(dev, k, method, call.get(), tracker, stream);
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
    // Launches of whole rows where they fit (kCudaHost.whole_rows_elements in a launch's
    // output), so that the pairs arrive in row-major order and need no sort; else (and a method
    // of one tile a launch, whose intermediate grows with the launch) as the host's list.
    const std::size_t tiles_in_row = plan.tiles.col_blocks.size();
    const std::size_t group =
        method_entry(method).cuda_blocks && plan.tile_rows * tiles_in_row * plan.tile_cols <= kCudaHost.whole_rows_elements
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
        const std::unique_ptr<CudaCall> call = prepare_call(dev, method, selection.regions, tracker, stream);
        for (std::size_t k = 0; k < selection.regions.size(); ++k) {
            selection.select(dev, k, method, call.get(), tracker, stream);
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
