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
// This file holds the kernels and their launchers; cuda_driver.cpp moves the data.
#include <cub/block/block_reduce.cuh>
#include <cuda/functional>

#include "common/cuda_check.hpp"
#include "cuda_launchers.hpp"

namespace hpcml::detail::invgauss {

namespace {

template <class T, class F>
__global__ void invgauss_elementwise_kernel(const Elementwise<T> e, F fn) {
    for (std::size_t i = blockIdx.x * std::size_t{blockDim.x} + threadIdx.x; i < e.n;
         i += std::size_t{gridDim.x} * blockDim.x)
        e.out[i] = fn(e.x[i], e.mu[i * e.mu_step], e.lam[i * e.lam_step]);
}

template <class T>
__global__ void invgauss_sample_kernel(const Elementwise<T> e, std::uint64_t seed) {
    for (std::size_t i = blockIdx.x * std::size_t{blockDim.x} + threadIdx.x; i < e.n;
         i += std::size_t{gridDim.x} * blockDim.x)
        e.out[i] = static_cast<T>(
            sample(seed, i, static_cast<double>(e.mu[i * e.mu_step]), static_cast<double>(e.lam[i * e.lam_step])));
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

}  // namespace

template <class T>
void launch_evaluate(Function f, const Elementwise<T>& e, cudaStream_t stream) {
    if (e.n == 0) return;
    with_function<T>(f, [&](auto fn) { invgauss_elementwise_kernel<<<blocks_for(e.n), 256, 0, stream>>>(e, fn); });
    HPCML_LAUNCH_CHECK("invgauss_elementwise_kernel");
}

template <class T>
void launch_sample(const Elementwise<T>& e, std::uint64_t seed, cudaStream_t stream) {
    if (e.n == 0) return;
    invgauss_sample_kernel<<<blocks_for(e.n), 256, 0, stream>>>(e, seed);
    HPCML_LAUNCH_CHECK("invgauss_sample_kernel");
}

void launch_distances_fused(const DistanceProblem& p, cudaStream_t stream) {
    if (p.pairs == 0) return;
    invgauss_distance_kernel<<<static_cast<unsigned>(p.pairs), kDistanceThreads, 0, stream>>>(p);
    HPCML_LAUNCH_CHECK("invgauss_distance_kernel");
}

#define HPCML_INSTANTIATE(T)                                                         \
    template void launch_evaluate<T>(Function, const Elementwise<T>&, cudaStream_t); \
    template void launch_sample<T>(const Elementwise<T>&, std::uint64_t, cudaStream_t);
HPCML_INSTANTIATE(float)
HPCML_INSTANTIATE(double)
#undef HPCML_INSTANTIATE

}  // namespace hpcml::detail::invgauss
