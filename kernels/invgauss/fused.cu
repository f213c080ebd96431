// The inverse Gaussian on the GPU.
//
// invgauss_elementwise_kernel: one grid-stride pass, out[i] = f(x[i], mu, lambda) with the
// parameters per element or broadcast. The memory floor: (8 or 16 or 24 bytes read + 8 written)
// per double element; on an H100 SXM (3.35 TB/s), pdf of 1e8 doubles with scalar parameters
// moves 1.6 GB: 0.48 ms, 2.1e11 elements/s. The code is compute-bound instead: the machine-code
// report (bench/sass_report.py, docs/machine-code.md) counts 552 instructions per pdf element,
// 206 of them moves (every branch counted once), which predicts at least 0.29 of that floor.
// invgauss_cdf_family_kernel: the cdf family, whose far upper tail (x >= 5 mu) integrates
// -erfcx' at 8 nodes of 60-term continued fractions: it is left to a second step within each
// warp, shared among 8 lanes per element (a prediction: docs/machine-code.md).
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

// The cdf family: every element's common case (math.hpp's TailPass::Common), then, per warp, the
// far upper tail's quadratures of the elements it left NaN, up to four at a time, each spread
// over 8 lanes (one Gauss-Legendre node each) and summed by shuffles in erfcx_difference's order.
// A warp holding one tail element pays about one node's slope, not eight. The warp walks the
// elements together (a warp-strided loop), so every lane is present at each shuffle.
constexpr unsigned kFullMask = 0xffffffffu;

template <class T, class Entry>
__global__ void invgauss_cdf_family_kernel(const Elementwise<T> e) {
    const unsigned lane = threadIdx.x % 32, group = lane / 8, node = lane % 8;
    const std::size_t stride = std::size_t{gridDim.x} * blockDim.x;
    for (std::size_t base = (blockIdx.x * std::size_t{blockDim.x} + threadIdx.x) / 32 * 32; base < e.n;
         base += stride) {
        const std::size_t i = base + lane;
        const bool active = i < e.n;
        double x = 0.0, m = 1.0, l = 1.0, value = 0.0;
        if (active) {
            x = static_cast<double>(e.x[i]);
            m = static_cast<double>(e.mu[i * e.mu_step]);
            l = static_cast<double>(e.lam[i * e.lam_step]);
            value = Entry::apply_common(x, m, l);
        }
        for (unsigned pending = __ballot_sync(kFullMask, active && value != value); pending;) {
            unsigned rest = pending;  // this lane's group works on the group-th pending element
            for (unsigned k = 0; k < group; ++k) rest &= rest - 1;
            const int owner = rest ? __ffs(static_cast<int>(rest)) - 1 : static_cast<int>(lane);
            const TailArguments g = tail_arguments(__shfl_sync(kFullMask, x, owner), __shfl_sync(kFullMask, m, owner),
                                                   __shfl_sync(kFullMask, l, owner));
            const double slope = erfcx_difference_node(g.a, g.delta, static_cast<int>(node));
            const double pair = __shfl_down_sync(kFullMask, slope, 4);  // node + 4's, on nodes 0..3
            const double term = gauss_legendre8_weight(static_cast<int>(node % 4)) * (slope + pair);
            const double t1 = __shfl_down_sync(kFullMask, term, 1), t2 = __shfl_down_sync(kFullMask, term, 2),
                         t3 = __shfl_down_sync(kFullMask, term, 3);
            const double quadrature = 0.5 * g.delta * (((term + t1) + t2) + t3);  // on each group's lane 0
            const unsigned rank = __popc(pending & ((1u << lane) - 1));           // of this lane among the pending
            const double mine = __shfl_sync(kFullMask, quadrature, static_cast<int>(rank % 4) * 8);
            if ((pending >> lane & 1u) && rank < 4) value = Entry::apply_given(x, m, l, mine);
            for (int k = 0; k < 4 && pending; ++k) pending &= pending - 1;
        }
        if (active) e.out[i] = static_cast<T>(value);
    }
}

template <class Functor>
struct EntryOf;
template <class T, class Entry>
struct EntryOf<Apply<T, Entry>> {
    using type = Entry;
};

template <class T>
__global__ void invgauss_sample_kernel(const Elementwise<T> e, std::uint64_t seed) {
    for (std::size_t i = blockIdx.x * std::size_t{blockDim.x} + threadIdx.x; i < e.n;
         i += std::size_t{gridDim.x} * blockDim.x)
        e.out[i] = static_cast<T>(sample(seed, e.first + i, static_cast<double>(e.mu[i * e.mu_step]),
                                         static_cast<double>(e.lam[i * e.lam_step])));
}

constexpr int kDistanceThreads = kGpu.distance_threads;

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
    with_function<T>(f, [&](auto fn) {
        using Entry = typename EntryOf<decltype(fn)>::type;
        if constexpr (requires { Entry::apply_common(0.0, 0.0, 0.0); }) {
            invgauss_cdf_family_kernel<T, Entry><<<blocks_for(e.n), 256, 0, stream>>>(e);
        } else {
            invgauss_elementwise_kernel<<<blocks_for(e.n), 256, 0, stream>>>(e, fn);
        }
    });
    HPCML_LAUNCH_CHECK("invgauss elementwise kernel");
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
