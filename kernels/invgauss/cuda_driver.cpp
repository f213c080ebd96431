// The inverse-Gaussian CUDA backend's host side: copies host arrays to the device, runs the
// launchers of fused.cu and naive.cu on one stream of the call's own, and copies the results
// back. Device-array calls run on the caller's stream.
#include "common/cuda_check.hpp"
#include "common/cuda_memory.hpp"
#include "common/cuda_stream.hpp"
#include "common/nvtx.hpp"
#include "cuda_launchers.hpp"

namespace hpcml::detail::invgauss {

namespace {

// Copies a host elementwise problem to the device (x only when with_x), calls
// launch(device view, stream) and copies the results back into h.out.
template <class T, class Launch>
void run_on_device_copy(const Elementwise<T>& h, std::size_t mu_count, std::size_t lam_count, bool with_x,
                        const Context& context, MemoryTracker& tracker, Launch&& launch) {
    if (h.n == 0) return;  // nothing to copy (and mu / lambda may be null with a count of 1)
    const DeviceGuard guard(context.device);
    Stream stream;
    const cudaStream_t s = stream.get();
    DeviceBuffer<T> x(tracker, with_x ? h.n : 0, s, "invgauss x on device");
    DeviceBuffer<T> mu(tracker, mu_count, s, "invgauss mu on device");
    DeviceBuffer<T> lam(tracker, lam_count, s, "invgauss lambda on device");
    DeviceBuffer<T> out(tracker, h.n, s, "invgauss output on device");
    {
        const NvtxRange range([&] { return "hpcml::invgauss upload " + std::to_string(h.n); });
        if (with_x) HPCML_CUDA_CHECK(cudaMemcpyAsync(x.data(), h.x, x.bytes(), cudaMemcpyHostToDevice, s));
        if (mu_count) HPCML_CUDA_CHECK(cudaMemcpyAsync(mu.data(), h.mu, mu.bytes(), cudaMemcpyHostToDevice, s));
        if (lam_count) HPCML_CUDA_CHECK(cudaMemcpyAsync(lam.data(), h.lam, lam.bytes(), cudaMemcpyHostToDevice, s));
    }
    {
        const NvtxRange range([] { return std::string("hpcml::invgauss kernel"); });
        launch(Elementwise<T>{x.data(), h.n, mu.data(), lam.data(), h.mu_step, h.lam_step, out.data()}, s);
    }
    const NvtxRange range([] { return std::string("hpcml::invgauss download"); });  // and the wait for all of it
    HPCML_CUDA_CHECK(cudaMemcpyAsync(h.out, out.data(), out.bytes(), cudaMemcpyDeviceToHost, s));
    HPCML_CUDA_CHECK(cudaStreamSynchronize(s));
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
