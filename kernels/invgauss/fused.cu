// The inverse Gaussian on the GPU.
//
// invgauss_elementwise_kernel: one grid-stride pass, out[i] = f(x[i], mu, lambda) with the
// parameters per element or broadcast. Memory-bound: (8 or 16 or 24 bytes read + 8 written)
// per double element; the floor on an H100 SXM (3.35 TB/s) for pdf of 1e8 doubles with scalar
// parameters is 1.6 GB / 3.35 TB/s = 0.48 ms. The per-element math (two erfcx, an exp, a log for
// the cdf) is ~100 instructions, under the memory time; but the cdf's upper tail far right of
// the mean (x > 5 mu) integrates -erfcx' with 8 continued fractions, thousands of instructions,
// so data mostly there is compute-bound.
// invgauss_sample_kernel: one Philox4x32-10 draw per element (no state, no sequence).
// invgauss_distance_kernel: one 256-thread block per parameter pair walks the grid, each thread
// accumulating its share of the trapezoid sum and the maximum, reduced with CUB at the end:
// nothing of size pairs x grid is stored, and the work is G evaluations per pair.
#include <cub/block/block_reduce.cuh>
#include <cuda/functional>

#include "common/cuda_check.hpp"
#include "common/cuda_memory.hpp"
#include "common/cuda_stream.hpp"
#include "cuda.hpp"

namespace hpcml::detail::invgauss {

namespace {

unsigned grid_for(std::size_t n) {
    const std::size_t blocks = (n + 255) / 256;
    return static_cast<unsigned>(blocks < 65536u * 8 ? (blocks ? blocks : 1) : 65536u * 8);
}

template <class T, class F>
__global__ void invgauss_elementwise_kernel(const Elementwise<T> e, F fn) {
    for (std::size_t i = blockIdx.x * std::size_t{blockDim.x} + threadIdx.x; i < e.n; i += std::size_t{gridDim.x} * blockDim.x)
        e.out[i] = fn(e.x[i], e.mu[i * e.mu_step], e.lam[i * e.lam_step]);
}

template <class T>
__global__ void invgauss_sample_kernel(const Elementwise<T> e, std::uint64_t seed) {
    for (std::size_t i = blockIdx.x * std::size_t{blockDim.x} + threadIdx.x; i < e.n; i += std::size_t{gridDim.x} * blockDim.x)
        e.out[i] = static_cast<T>(sample(seed, i, static_cast<double>(e.mu[i * e.mu_step]), static_cast<double>(e.lam[i * e.lam_step])));
}

constexpr int kDistanceThreads = 256;

__global__ void __launch_bounds__(kDistanceThreads) invgauss_distance_kernel(const DistanceProblem p) {
    using Reduce = cub::BlockReduce<double, kDistanceThreads>;
    __shared__ typename Reduce::TempStorage storage;
    const std::size_t k = blockIdx.x;
    const Standardized s(p.mu[k], p.lam[k]);
    double tv = 0.0, ks = 0.0;
    for (std::size_t g = threadIdx.x; g < p.grid.points; g += kDistanceThreads) {
        const double y = p.grid.at(g);
        if (p.tv) tv += p.grid.weight(g) * fabs(s.pdf_minus_normal(y, normal_pdf(y)));
        if (p.ks) ks = fmax(ks, fabs(s.cdf_minus_normal(y, normal_cdf(y))));
    }
    const double tv_total = Reduce(storage).Sum(tv);
    __syncthreads();  // storage is reused
    const double ks_total = Reduce(storage).Reduce(ks, cuda::maximum<>{});
    if (threadIdx.x == 0) {
        if (p.tv) p.total_variation[k] = 0.5 * tv_total;
        if (p.ks) p.kolmogorov[k] = ks_total;
    }
}

// Device copies of a host elementwise problem; returns the device view.
template <class T>
struct DeviceElementwise {
    DeviceElementwise(const Elementwise<T>& h, std::size_t mu_count, std::size_t lam_count, bool with_x,
                      MemoryTracker& tracker, cudaStream_t stream)
        : x(tracker, with_x ? h.n : 0, stream, "invgauss x on device"),
          mu(tracker, mu_count, stream, "invgauss mu on device"),
          lam(tracker, lam_count, stream, "invgauss lambda on device"),
          out(tracker, h.n, stream, "invgauss output on device") {
        if (with_x && h.n) HPCML_CUDA_CHECK(cudaMemcpyAsync(x.data(), h.x, x.bytes(), cudaMemcpyHostToDevice, stream));
        if (mu_count) HPCML_CUDA_CHECK(cudaMemcpyAsync(mu.data(), h.mu, mu.bytes(), cudaMemcpyHostToDevice, stream));
        if (lam_count) HPCML_CUDA_CHECK(cudaMemcpyAsync(lam.data(), h.lam, lam.bytes(), cudaMemcpyHostToDevice, stream));
        view = {x.data(), h.n, mu.data(), lam.data(), h.mu_step, h.lam_step, out.data()};
    }
    DeviceBuffer<T> x, mu, lam, out;
    Elementwise<T> view;
};

template <class T>
void launch_evaluate(Function f, const Elementwise<T>& e, cudaStream_t stream) {
    if (e.n == 0) return;
    with_function<T>(f, [&](auto fn) {
        invgauss_elementwise_kernel<<<grid_for(e.n), 256, 0, stream>>>(e, fn);
    });
    HPCML_LAUNCH_CHECK("invgauss_elementwise_kernel");
}

}  // namespace

template <class T>
void cuda_evaluate_host(Function f, const Elementwise<T>& e, std::size_t mu_count, std::size_t lam_count,
                        const Context& context, MemoryTracker& tracker) {
    if (e.n == 0) return;  // nothing to copy (and mu / lambda may be null with a count of 1)
    const DeviceGuard guard(context.device);
    Stream stream;
    DeviceElementwise<T> d(e, mu_count, lam_count, true, tracker, stream.get());
    launch_evaluate(f, d.view, stream.get());
    if (e.n) HPCML_CUDA_CHECK(cudaMemcpyAsync(e.out, d.out.data(), d.out.bytes(), cudaMemcpyDeviceToHost, stream.get()));
    HPCML_CUDA_CHECK(cudaStreamSynchronize(stream.get()));
}

template <class T>
void cuda_evaluate_device(Function f, const Elementwise<T>& e, const Context& context) {
    const DeviceGuard guard(context.device);
    const cudaStream_t stream = static_cast<cudaStream_t>(context.stream);
    launch_evaluate(f, e, stream);
    HPCML_CUDA_CHECK(cudaStreamSynchronize(stream));
}

template <class T>
void cuda_sample_host(const Elementwise<T>& e, std::size_t mu_count, std::size_t lam_count, std::uint64_t seed,
                      const Context& context, MemoryTracker& tracker) {
    if (e.n == 0) return;  // as cuda_evaluate_host
    const DeviceGuard guard(context.device);
    Stream stream;
    DeviceElementwise<T> d(e, mu_count, lam_count, false, tracker, stream.get());
    if (e.n) {
        invgauss_sample_kernel<<<grid_for(e.n), 256, 0, stream.get()>>>(d.view, seed);
        HPCML_LAUNCH_CHECK("invgauss_sample_kernel");
        HPCML_CUDA_CHECK(cudaMemcpyAsync(e.out, d.out.data(), d.out.bytes(), cudaMemcpyDeviceToHost, stream.get()));
    }
    HPCML_CUDA_CHECK(cudaStreamSynchronize(stream.get()));
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
    HPCML_CUDA_CHECK(cudaMemcpyAsync(params.data() + p.pairs, p.lam, p.pairs * sizeof(double), cudaMemcpyHostToDevice, s));
    DistanceProblem d = p;
    d.mu = params.data();
    d.lam = params.data() + p.pairs;
    d.total_variation = results.data();
    d.kolmogorov = results.data() + p.pairs;
    if (method == Method::Fused) {
        invgauss_distance_kernel<<<static_cast<unsigned>(p.pairs), kDistanceThreads, 0, s>>>(d);
        HPCML_LAUNCH_CHECK("invgauss_distance_kernel");
    } else {
        launch_distances_naive(d, tracker, s);
    }
    if (p.tv) HPCML_CUDA_CHECK(cudaMemcpyAsync(p.total_variation, d.total_variation, p.pairs * sizeof(double), cudaMemcpyDeviceToHost, s));
    if (p.ks) HPCML_CUDA_CHECK(cudaMemcpyAsync(p.kolmogorov, d.kolmogorov, p.pairs * sizeof(double), cudaMemcpyDeviceToHost, s));
    HPCML_CUDA_CHECK(cudaStreamSynchronize(s));
}

#define HPCML_INSTANTIATE(T)                                                                                    \
    template void cuda_evaluate_host<T>(Function, const Elementwise<T>&, std::size_t, std::size_t, const Context&, \
                                        MemoryTracker&);                                                         \
    template void cuda_evaluate_device<T>(Function, const Elementwise<T>&, const Context&);                      \
    template void cuda_sample_host<T>(const Elementwise<T>&, std::size_t, std::size_t, std::uint64_t, const Context&, \
                                      MemoryTracker&);
HPCML_INSTANTIATE(float)
HPCML_INSTANTIATE(double)
#undef HPCML_INSTANTIATE

}  // namespace hpcml::detail::invgauss
