// The naive distances on the GPU: the seed's broadcast. For each metric, a P x G matrix of the
// inverse-Gaussian values, a P x G matrix of the normal's (broadcast over P, as NumPy does),
// their absolute difference, then a reduction per row (the trapezoid weights applied first for
// TV): one kernel per operation, as eager PyTorch would run them, the row reduction CUB's
// segmented reduce; 3 P x G double matrices per metric (24 bytes per cell), checked against
// free memory first.
#include <cub/device/device_segmented_reduce.cuh>

#include <algorithm>
#include <climits>
#include <cstdint>

#include "common/cuda_check.hpp"
#include "common/cuda_memory.hpp"
#include "cuda_launchers.hpp"

namespace hpcml::detail::invgauss {

namespace {

__global__ void ig_matrix_kernel(const DistanceProblem p, bool cdf_matrix, double* out) {
    const std::size_t cells = p.pairs * p.grid.points;
    for (std::size_t c = blockIdx.x * std::size_t{blockDim.x} + threadIdx.x; c < cells;
         c += std::size_t{gridDim.x} * blockDim.x) {
        const std::size_t k = c / p.grid.points;
        const double y = p.grid.at(c % p.grid.points), m = p.mu[k], l = p.lam[k];
        out[c] = cdf_matrix ? cdf(m + y * m * sqrt(m / l), m, l) : standardized_pdf(y, m, l);
    }
}

__global__ void normal_matrix_kernel(const DistanceProblem p, bool cdf_matrix, double* out) {
    const std::size_t cells = p.pairs * p.grid.points;
    for (std::size_t c = blockIdx.x * std::size_t{blockDim.x} + threadIdx.x; c < cells;
         c += std::size_t{gridDim.x} * blockDim.x) {
        const double y = p.grid.at(c % p.grid.points);
        out[c] = cdf_matrix ? normal_cdf(y) : normal_pdf(y);
    }
}

__global__ void abs_difference_kernel(const double* a, const double* b, std::size_t cells, double* out) {
    for (std::size_t c = blockIdx.x * std::size_t{blockDim.x} + threadIdx.x; c < cells;
         c += std::size_t{gridDim.x} * blockDim.x)
        out[c] = fabs(a[c] - b[c]);
}

// TV = 1/2 sum_g w_g |d_g|: the weights (and the 1/2) in place, before the row sums.
__global__ void trapezoid_weights_kernel(double* diff, const DistanceProblem p) {
    for (std::size_t k = blockIdx.y; k < p.pairs; k += gridDim.y)
        for (std::size_t g = blockIdx.x * std::size_t{blockDim.x} + threadIdx.x; g < p.grid.points;
             g += std::size_t{gridDim.x} * blockDim.x)
            diff[k * p.grid.points + g] *= 0.5 * p.grid.weight(g);
}

// Row k of the P x G matrices starts at k G: the segments of the row reduction.
__global__ void row_offsets_kernel(std::int64_t* offsets, std::size_t rows, std::size_t points) {
    for (std::size_t k = blockIdx.x * std::size_t{blockDim.x} + threadIdx.x; k <= rows;
         k += std::size_t{gridDim.x} * blockDim.x)
        offsets[k] = static_cast<std::int64_t>(k * points);
}

}  // namespace

void launch_distances_naive(const DistanceProblem& p, MemoryTracker& tracker, cudaStream_t stream) {
    const std::size_t cells = checked_mul(p.pairs, p.grid.points, "distance grid");
    ensure_device_fits(checked_mul(cells, 3 * sizeof(double), "naive distances"),
                       "naive distances (P x G matrices of the IG, the normal and their difference)");
    require(p.pairs <= static_cast<std::size_t>(INT_MAX),
            "mu: at most 2^31 - 1 pairs for the naive distances on the GPU");
    const int rows = static_cast<int>(p.pairs);
    DeviceBuffer<std::int64_t> offsets(tracker, p.pairs + 1, stream, "naive row offsets");
    row_offsets_kernel<<<blocks_for(p.pairs + 1), 256, 0, stream>>>(offsets.data(), p.pairs, p.grid.points);
    HPCML_LAUNCH_CHECK("row_offsets_kernel");
    for (bool ks : {false, true}) {
        if (ks ? !p.ks : !p.tv) continue;
        DeviceBuffer<double> ig(tracker, cells, stream, "naive IG matrix");
        DeviceBuffer<double> normal(tracker, cells, stream, "naive normal matrix");
        DeviceBuffer<double> diff(tracker, cells, stream, "naive difference matrix");
        ig_matrix_kernel<<<blocks_for(cells), 256, 0, stream>>>(p, ks, ig.data());
        HPCML_LAUNCH_CHECK("ig_matrix_kernel");
        normal_matrix_kernel<<<blocks_for(cells), 256, 0, stream>>>(p, ks, normal.data());
        HPCML_LAUNCH_CHECK("normal_matrix_kernel");
        abs_difference_kernel<<<blocks_for(cells), 256, 0, stream>>>(ig.data(), normal.data(), cells, diff.data());
        HPCML_LAUNCH_CHECK("abs_difference_kernel");
        if (!ks) {
            const dim3 grid(blocks_for(p.grid.points), static_cast<unsigned>(std::min<std::size_t>(p.pairs, 65535)));
            trapezoid_weights_kernel<<<grid, 256, 0, stream>>>(diff.data(), p);
            HPCML_LAUNCH_CHECK("trapezoid_weights_kernel");
        }
        double* out = ks ? p.kolmogorov : p.total_variation;
        auto reduce = [&](void* temp, std::size_t& bytes) {  // CUB's two calls: size, then work
            return ks ? cub::DeviceSegmentedReduce::Max(temp, bytes, diff.data(), out, rows, offsets.data(),
                                                        offsets.data() + 1, stream)
                      : cub::DeviceSegmentedReduce::Sum(temp, bytes, diff.data(), out, rows, offsets.data(),
                                                        offsets.data() + 1, stream);
        };
        std::size_t temp_bytes = 0;
        HPCML_CUDA_CHECK(reduce(nullptr, temp_bytes));
        DeviceBuffer<unsigned char> temp(tracker, temp_bytes, stream, "naive row reduction");
        HPCML_CUDA_CHECK(reduce(temp.data(), temp_bytes));
    }
}

}  // namespace hpcml::detail::invgauss
