// The inverse-Gaussian CUDA backend's host side: copies host arrays to the device through pinned
// chunks on two streams of the call's own, runs the launchers of fused.cu and naive.cu, and
// copies the results back. Device-array calls run on the caller's stream.
#include <algorithm>
#include <cstring>
#include <utility>
#include <vector>

#include "common/cuda_check.hpp"
#include "common/cuda_memory.hpp"
#include "common/cuda_stream.hpp"
#include "common/nvtx.hpp"
#include "cuda_launchers.hpp"

namespace hpcml::detail::invgauss {

namespace {

// Host arrays go through pinned memory in chunks of kChunk elements, two in flight on two
// streams: while the GPU copies and computes one chunk, the CPU fills the pinned inputs of the
// next and empties the outputs of the one before, and one stream's copies overlap the other's
// kernel. (From pageable memory the driver stages every copy itself, synchronously.)
constexpr std::size_t kChunk = std::size_t{1} << 20;

// One of the two: its stream, the event after its last download, its device and pinned buffers
// (the inputs that vary per element, packed x, mu, lambda at kChunk-element offsets), and the
// chunk whose results it still holds.
template <class T>
struct Slot {
    Slot(MemoryTracker& tracker, std::size_t inputs, std::size_t chunk)
        : device_in(tracker, inputs * chunk, stream.get(), "invgauss inputs on device"),
          device_out(tracker, chunk, stream.get(), "invgauss output on device"),
          host_in(tracker, inputs * chunk, "invgauss pinned inputs"),
          host_out(tracker, chunk, "invgauss pinned output") {}
    ~Slot() { (void)cudaStreamSynchronize(stream.get()); }  // nothing in flight into freed memory
    Stream stream;
    Event done;
    DeviceBuffer<T> device_in, device_out;
    PinnedBuffer<T> host_in, host_out;
    std::size_t first = 0, count = 0;
};

// Runs launch(device view, stream) over a host elementwise problem (x only when with_x), chunk
// by chunk, into h.out. Broadcast parameters (step 0) are uploaded once.
template <class T, class Launch>
void run_on_device_copy(const Elementwise<T>& h, std::size_t mu_count, std::size_t lam_count, bool with_x,
                        const Context& context, MemoryTracker& tracker, Launch&& launch) {
    if (h.n == 0) return;  // nothing to copy (and mu / lambda may be null with a count of 1)
    const DeviceGuard guard(context.device);
    // Both slots busy even for a short call, which then holds about n elements in all, as one copy would.
    const std::size_t chunk = std::min(kChunk, (h.n + 1) / 2), chunks = (h.n + chunk - 1) / chunk;
    // The arrays that travel per chunk, at their offset in a slot's inputs.
    struct Input {
        const T* host;
        std::size_t offset;
    };
    std::vector<Input> inputs;
    for (const auto& [host, each] :
         {std::pair{h.x, with_x}, std::pair{h.mu, h.mu_step != 0}, std::pair{h.lam, h.lam_step != 0}})
        if (each) inputs.push_back({host, inputs.size() * chunk});
    Slot<T> slots[2] = {Slot<T>(tracker, inputs.size(), chunk), Slot<T>(tracker, inputs.size(), chunk)};
    const cudaStream_t first_stream = slots[0].stream.get();
    DeviceBuffer<T> mu_one(tracker, h.mu_step == 0 ? mu_count : 0, first_stream, "invgauss mu on device");
    DeviceBuffer<T> lam_one(tracker, h.lam_step == 0 ? lam_count : 0, first_stream, "invgauss lambda on device");
    if (h.mu_step == 0)
        HPCML_CUDA_CHECK(cudaMemcpyAsync(mu_one.data(), h.mu, mu_one.bytes(), cudaMemcpyHostToDevice, first_stream));
    if (h.lam_step == 0)
        HPCML_CUDA_CHECK(cudaMemcpyAsync(lam_one.data(), h.lam, lam_one.bytes(), cudaMemcpyHostToDevice, first_stream));
    HPCML_CUDA_CHECK(cudaStreamSynchronize(first_stream));  // the broadcast values, for both streams
    struct Drain {  // destroyed first: no stream still reads the broadcast values when they are freed
        Slot<T>* slots;
        ~Drain() {
            for (int k = 0; k < 2; ++k) (void)cudaStreamSynchronize(slots[k].stream.get());
        }
    } drain{slots};

    const auto collect = [&](Slot<T>& slot) {  // the slot's previous chunk, into h.out
        if (slot.count == 0) return;
        HPCML_CUDA_CHECK(cudaEventSynchronize(slot.done.get()));
        std::memcpy(h.out + slot.first, slot.host_out.data(), slot.count * sizeof(T));
        slot.count = 0;
    };
    for (std::size_t k = 0; k < chunks; ++k) {
        Slot<T>& slot = slots[k % 2];
        const cudaStream_t s = slot.stream.get();
        collect(slot);
        const std::size_t first = k * chunk, count = std::min(chunk, h.n - first);
        const NvtxRange range(
            [&] { return "hpcml::invgauss chunk " + std::to_string(k + 1) + " of " + std::to_string(chunks); });
        for (const Input& in : inputs) {
            std::memcpy(slot.host_in.data() + in.offset, in.host + first, count * sizeof(T));
            HPCML_CUDA_CHECK(cudaMemcpyAsync(slot.device_in.data() + in.offset, slot.host_in.data() + in.offset,
                                             count * sizeof(T), cudaMemcpyHostToDevice, s));
        }
        const auto device_input = [&](const T* host, const T* broadcast, bool each) -> const T* {
            if (!each) return broadcast;
            for (const Input& in : inputs)
                if (in.host == host) return slot.device_in.data() + in.offset;
            return nullptr;
        };
        Elementwise<T> view{device_input(h.x, nullptr, with_x),
                            count,
                            device_input(h.mu, mu_one.data(), h.mu_step != 0),
                            device_input(h.lam, lam_one.data(), h.lam_step != 0),
                            h.mu_step,
                            h.lam_step,
                            slot.device_out.data()};
        view.first = h.first + first;
        launch(view, s);
        HPCML_CUDA_CHECK(cudaMemcpyAsync(slot.host_out.data(), slot.device_out.data(), count * sizeof(T),
                                         cudaMemcpyDeviceToHost, s));
        HPCML_CUDA_CHECK(cudaEventRecord(slot.done.get(), s));
        slot.first = first;
        slot.count = count;
    }
    collect(slots[chunks % 2]);  // the older of the last two first
    collect(slots[(chunks + 1) % 2]);
}

}  // namespace

template <class T>
void cuda_evaluate_host(Function f, const Elementwise<T>& e, std::size_t mu_count, std::size_t lam_count,
                        const Context& context, MemoryTracker& tracker) {
    run_on_device_copy(e, mu_count, lam_count, true, context, tracker,
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
void cuda_sample_host(const Elementwise<T>& e, std::size_t mu_count, std::size_t lam_count, std::uint64_t seed,
                      const Context& context, MemoryTracker& tracker) {
    run_on_device_copy(e, mu_count, lam_count, false, context, tracker,
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
    if (method == Method::Fused) {
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

#define HPCML_INSTANTIATE(T)                                                                                          \
    template void cuda_evaluate_host<T>(Function, const Elementwise<T>&, std::size_t, std::size_t, const Context&,    \
                                        MemoryTracker&);                                                              \
    template void cuda_evaluate_device<T>(Function, const Elementwise<T>&, const Context&);                           \
    template void cuda_sample_device<T>(const Elementwise<T>&, std::uint64_t, const Context&);                        \
    template void cuda_sample_host<T>(const Elementwise<T>&, std::size_t, std::size_t, std::uint64_t, const Context&, \
                                      MemoryTracker&);
HPCML_INSTANTIATE(float)
HPCML_INSTANTIATE(double)
#undef HPCML_INSTANTIATE

}  // namespace hpcml::detail::invgauss
