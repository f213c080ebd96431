// The inverse-Gaussian CUDA backend's host side: copies host arrays to the device through pinned
// chunks on two streams of the call's own, runs the launchers of fused.cu and naive.cu, and
// copies the results back (into and out of the pinned chunks by several threads: host_copy).
// Device-array calls run on the caller's stream.
#include <algorithm>
#include <utility>
#include <vector>

#include "common/cuda_check.hpp"
#include "common/cuda_memory.hpp"
#include "common/cuda_stream.hpp"
#include "common/nvtx.hpp"
#include "common/pipeline.hpp"
#include "cuda_launchers.hpp"

namespace hpcml::detail::invgauss {

namespace {

// Host arrays go through pinned memory in chunks of kGpu.chunk elements, two in flight on two
// streams: while the GPU copies and computes one chunk, the CPU fills the pinned inputs of the
// next and empties the outputs of the one before, and one stream's copies overlap the other's
// kernel. (From pageable memory the driver stages every copy itself, synchronously.)
constexpr std::size_t kChunk = kGpu.chunk;

// One of the two: its stream, the event after its last download, its device and pinned buffers
// (the inputs, x, mu and lambda one after another: a chunk of each that varies per element, one
// value of each that is broadcast).
template <class T>
struct Slot {
    Slot(MemoryTracker& tracker, std::size_t inputs, std::size_t chunk)
        : device_in(tracker, inputs, stream.get(), "invgauss inputs on device"),
          device_out(tracker, chunk, stream.get(), "invgauss output on device"),
          host_in(tracker, inputs, "invgauss pinned inputs"),
          host_out(tracker, chunk, "invgauss pinned output") {}
    ~Slot() { (void)cudaStreamSynchronize(stream.get()); }  // nothing in flight into freed memory
    Stream stream;
    Event done;
    DeviceBuffer<T> device_in, device_out;
    PinnedBuffer<T> host_in, host_out;
};

// Runs launch(device view, stream) over a host elementwise problem (x only when with_x), chunk
// by chunk, into h.out. Broadcast parameters (step 0) are uploaded once per slot, on its stream.
template <class T, class Launch>
void run_on_device_copy(const Elementwise<T>& h, bool with_x, const Context& context, MemoryTracker& tracker,
                        Launch&& launch) {
    if (h.n == 0) return;  // nothing to copy (and mu / lambda may be null with a count of 1)
    const DeviceGuard guard(context.device);
    // Both slots busy even for a short call, which then holds about n elements in all, as one copy would.
    const std::size_t chunk = std::min(kChunk, (h.n + 1) / 2), chunks = (h.n + chunk - 1) / chunk;
    // x, mu, lambda: whether present, whether per element, and where in a slot's inputs.
    const T* const host[3] = {h.x, h.mu, h.lam};
    const bool present[3] = {with_x, true, true}, each[3] = {true, h.mu_step != 0, h.lam_step != 0};
    std::size_t at[3] = {}, inputs = 0;
    for (int k = 0; k < 3; ++k)
        if (present[k]) at[k] = inputs, inputs += each[k] ? chunk : 1;
    Slot<T> slots[2] = {Slot<T>(tracker, inputs, chunk), Slot<T>(tracker, inputs, chunk)};
    for (Slot<T>& slot : slots)
        for (int k = 0; k < 3; ++k)
            if (present[k] && !each[k])
                HPCML_CUDA_CHECK(cudaMemcpyAsync(slot.device_in.data() + at[k], host[k], sizeof(T),
                                                 cudaMemcpyHostToDevice, slot.stream.get()));

    // Chunk c: its inputs into pinned memory by several threads, then copied up, computed and
    // copied down on its slot's stream; once done, its results into h.out by several threads.
    auto issue = [&](std::size_t c, int which) {
        Slot<T>& slot = slots[which];
        const cudaStream_t s = slot.stream.get();
        const std::size_t first = c * chunk, count = std::min(chunk, h.n - first);
        const NvtxRange range(
            [&] { return "hpcml::invgauss chunk " + std::to_string(c + 1) + " of " + std::to_string(chunks); });
        const T* device[3] = {};
        for (int k = 0; k < 3; ++k) {
            if (!present[k]) continue;
            device[k] = slot.device_in.data() + at[k];
            if (!each[k]) continue;
            host_copy(slot.host_in.data() + at[k], host[k] + first, count * sizeof(T));
            HPCML_CUDA_CHECK(cudaMemcpyAsync(slot.device_in.data() + at[k], slot.host_in.data() + at[k],
                                             count * sizeof(T), cudaMemcpyHostToDevice, s));
        }
        Elementwise<T> view{device[0], count, device[1], device[2], h.mu_step, h.lam_step, slot.device_out.data()};
        view.first = h.first + first;
        launch(view, s);
        HPCML_CUDA_CHECK(cudaMemcpyAsync(slot.host_out.data(), slot.device_out.data(), count * sizeof(T),
                                         cudaMemcpyDeviceToHost, s));
        HPCML_CUDA_CHECK(cudaEventRecord(slot.done.get(), s));
    };
    auto retire = [&](std::size_t c, int which) {
        const std::size_t first = c * chunk, count = std::min(chunk, h.n - first);
        HPCML_CUDA_CHECK(cudaEventSynchronize(slots[which].done.get()));
        host_copy(h.out + first, slots[which].host_out.data(), count * sizeof(T));
    };
    two_slot_pipeline(chunks, issue, retire);
}

}  // namespace

template <class T>
void cuda_evaluate_host(Function f, const Elementwise<T>& e, const Context& context, MemoryTracker& tracker) {
    run_on_device_copy(e, true, context, tracker,
                       [&](const Elementwise<T>& d, cudaStream_t s) { launch_evaluate(f, d, s); });
}

template <class T>
void cuda_evaluate_device(Function f, const Elementwise<T>& e, const Context& context) {
    const DeviceGuard guard(context.device);
    const cudaStream_t stream = static_cast<cudaStream_t>(context.stream);
    launch_evaluate(f, e, stream);
    synchronize_unless_capturing(stream);
}

template <class T>
void cuda_sample_device(const Elementwise<T>& e, std::uint64_t seed, const Context& context) {
    const DeviceGuard guard(context.device);
    const cudaStream_t stream = static_cast<cudaStream_t>(context.stream);
    launch_sample(e, seed, stream);
    synchronize_unless_capturing(stream);
}

template <class T>
void cuda_sample_host(const Elementwise<T>& e, std::uint64_t seed, const Context& context, MemoryTracker& tracker) {
    run_on_device_copy(e, false, context, tracker,
                       [&](const Elementwise<T>& d, cudaStream_t s) { launch_sample(d, seed, s); });
}

void cuda_distances(const DistanceProblem& p, Method method, const Context& context, MemoryTracker& tracker) {
    if (p.pairs == 0) return;
    require(p.pairs < (std::size_t{1} << 31), "mu: at most 2^31 - 1 pairs on the GPU");
    const DeviceGuard guard(context.device);
    Stream stream;
    const cudaStream_t s = stream.get();
    DeviceBuffer<double> params(tracker, 2 * p.pairs, s, "distance parameters on device");
    DeviceBuffer<double> results(tracker, 2 * p.pairs, s, "distances on device");
    HPCML_CUDA_CHECK(cudaMemcpyAsync(params.data(), p.mu, p.pairs * sizeof(double), cudaMemcpyHostToDevice, s));
    HPCML_CUDA_CHECK(
        cudaMemcpyAsync(params.data() + p.pairs, p.lam, p.pairs * sizeof(double), cudaMemcpyHostToDevice, s));
    DistanceProblem d = p;
    d.mu = params.data();
    d.lam = params.data() + p.pairs;
    d.total_variation = results.data();
    d.kolmogorov = results.data() + p.pairs;
    if (method != Method::Naive) {
        launch_distances_fused(d, s);
    } else {
        launch_distances_naive(d, tracker, s);
    }
    if (p.tv)
        HPCML_CUDA_CHECK(
            cudaMemcpyAsync(p.total_variation, d.total_variation, p.pairs * sizeof(double), cudaMemcpyDeviceToHost, s));
    if (p.ks)
        HPCML_CUDA_CHECK(
            cudaMemcpyAsync(p.kolmogorov, d.kolmogorov, p.pairs * sizeof(double), cudaMemcpyDeviceToHost, s));
    HPCML_CUDA_CHECK(cudaStreamSynchronize(s));
}

#define HPCML_INSTANTIATE(T)                                                                              \
    template void cuda_evaluate_host<T>(Function, const Elementwise<T>&, const Context&, MemoryTracker&); \
    template void cuda_evaluate_device<T>(Function, const Elementwise<T>&, const Context&);               \
    template void cuda_sample_device<T>(const Elementwise<T>&, std::uint64_t, const Context&);            \
    template void cuda_sample_host<T>(const Elementwise<T>&, std::uint64_t, const Context&, MemoryTracker&);
HPCML_INSTANTIATE(float)
HPCML_INSTANTIATE(double)
#undef HPCML_INSTANTIATE

}  // namespace hpcml::detail::invgauss
