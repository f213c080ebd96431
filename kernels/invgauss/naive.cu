// The naive distances on the GPU: the seed's broadcast. For each metric, a P x G matrix of the
// inverse-Gaussian values, a P x G matrix of the normal's (broadcast over P, as NumPy does),
// their absolute difference, then a reduction per row: one kernel per operation, 3 P x G
// double matrices per metric (24 bytes per cell), checked against free memory first.
#include "common/cuda_check.hpp"
#include "common/cuda_memory.hpp"
#include "cuda.hpp"

namespace hpcml::detail::invgauss {

namespace {

__global__ void ig_matrix_kernel(const DistanceProblem p, bool cdf_matrix, double* out) {
    const std::size_t cells = p.pairs * p.grid.points;
    for (std::size_t c = blockIdx.x * std::size_t{blockDim.x} + threadIdx.x; c < cells; c += std::size_t{gridDim.x} * blockDim.x) {
        const std::size_t k = c / p.grid.points;
        const double y = p.grid.at(c % p.grid.points), m = p.mu[k], l = p.lam[k];
        out[c] = cdf_matrix ? cdf(m + y * m * sqrt(m / l), m, l) : standardized_pdf(y, m, l);
    }
}

__global__ void normal_matrix_kernel(const DistanceProblem p, bool cdf_matrix, double* out) {
    const std::size_t cells = p.pairs * p.grid.points;
    for (std::size_t c = blockIdx.x * std::size_t{blockDim.x} + threadIdx.x; c < cells; c += std::size_t{gridDim.x} * blockDim.x) {
        const double y = p.grid.at(c % p.grid.points);
        out[c] = cdf_matrix ? normal_cdf(y) : normal_pdf(y);
    }
}

__global__ void abs_difference_kernel(const double* a, const double* b, std::size_t cells, double* out) {
    for (std::size_t c = blockIdx.x * std::size_t{blockDim.x} + threadIdx.x; c < cells; c += std::size_t{gridDim.x} * blockDim.x)
        out[c] = fabs(a[c] - b[c]);
}

// One thread per row: the trapezoid sum (TV) or the maximum (KS).
__global__ void reduce_rows_kernel(const double* diff, const DistanceProblem p, bool maximum, double* out) {
    for (std::size_t k = blockIdx.x * std::size_t{blockDim.x} + threadIdx.x; k < p.pairs; k += std::size_t{gridDim.x} * blockDim.x) {
        double acc = 0.0;
        for (std::size_t g = 0; g < p.grid.points; ++g) {
            const double d = diff[k * p.grid.points + g];
            acc = maximum ? fmax(acc, d) : acc + p.grid.weight(g) * d;
        }
        out[k] = maximum ? acc : 0.5 * acc;
    }
}

unsigned blocks_for(std::size_t n) {
    const std::size_t blocks = (n + 255) / 256;
    return static_cast<unsigned>(blocks < 65536u * 8 ? (blocks ? blocks : 1) : 65536u * 8);
}

}  // namespace

void launch_distances_naive(const DistanceProblem& p, MemoryTracker& tracker, cudaStream_t stream) {
    const std::size_t cells = checked_mul(p.pairs, p.grid.points, "distance grid");
    ensure_device_fits(checked_mul(cells, 3 * sizeof(double), "naive distances"),
                       "naive distances (P x G matrices of the IG, the normal and their difference)");
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
        reduce_rows_kernel<<<blocks_for(p.pairs), 256, 0, stream>>>(diff.data(), p, ks, ks ? p.kolmogorov : p.total_variation);
        HPCML_LAUNCH_CHECK("reduce_rows_kernel");
    }
}

}  // namespace hpcml::detail::invgauss
