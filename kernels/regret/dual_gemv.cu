// The large-game path's dual GEMV (the rest of the path is large_games.cu): per turn it reads A
// (4 n1 n2 bytes) once for both players' utilities when they move simultaneously (twice per
// iteration when alternating). The floor is one pass over A per simultaneous iteration at
// memory bandwidth: 16384^2 floats = 1.07 GB, about 0.32 ms on an H100 SXM (3.35 TB/s). This
// file contracts multiplies and adds (FMA): its sums are not the CPU's to the bit anyway.
//
// dual_gemv_kernel layout: a block owns 1024 columns (4 consecutive per thread, one 16-byte load
// where the rows allow) of a band of rows of one game, and each thread issues the loads of 4 rows
// before it uses the first: 64 bytes in flight. x^T A is complete per column over the band, so
// bands write partials; each warp reduces A y over its 128 columns per row with shuffles and
// writes a partial per row. finish_utilities_kernel sums the partials in a fixed order, so
// results do not depend on scheduling. The machine-code report (bench/sass_report.py) reads one
// memory round trip per 4 rows and 144 bytes in flight per thread at 24 warps per SM: enough to
// keep HBM busy (predicted: docs/machine-code.md).
#include <algorithm>

#include "common/cuda_check.hpp"
#include "cuda_launchers.hpp"

namespace hpcml::detail::regret {

namespace {

constexpr unsigned kFullMask = 0xffffffffu;

// kGpu's values under the names the kernel's index arithmetic uses.
constexpr int kGemvThreads = kGpu.gemv_threads;
constexpr int kColumnsPerThread = kGpu.columns_per_thread;
constexpr int kBandColumns = kGemvThreads * kColumnsPerThread;  // 1024
constexpr int kWarpsPerBlock = kGemvThreads / 32;
constexpr int kRowsInFlight = kGpu.rows_in_flight;  // 64 bytes a thread

__device__ inline double warp_sum(double v) {
    for (int offset = 16; offset > 0; offset >>= 1) v += __shfl_xor_sync(kFullMask, v, offset);
    return v;
}

// Four consecutive floats of a row from column c, zeros past n2 or for a row past the band's end
// (a zero adds nothing to either sum); one 16-byte load where the row allows (Vec4).
template <bool Vec4>
__device__ __forceinline__ float4 load_columns(const float* __restrict__ row, int c, int n2, bool in_band) {
    if (!in_band) return make_float4(0.f, 0.f, 0.f, 0.f);
    if (Vec4 && c + 3 < n2) return *reinterpret_cast<const float4*>(row + c);
    return make_float4(c < n2 ? row[c] : 0.f, c + 1 < n2 ? row[c + 1] : 0.f, c + 2 < n2 ? row[c + 2] : 0.f,
                       c + 3 < n2 ? row[c + 3] : 0.f);
}

template <bool RowUtilities, bool ColumnUtilities, bool Vec4>
__global__ void __launch_bounds__(kGemvThreads)
    dual_gemv_kernel(const DualGemv plan, const float* __restrict__ A, const double* __restrict__ x,
                     const double* __restrict__ y) {
    const int lane = static_cast<int>(threadIdx.x) % 32, warp = static_cast<int>(threadIdx.x) / 32;
    const int n1 = plan.n1, n2 = plan.n2, game = static_cast<int>(blockIdx.z);
    const int rows_per_split = (n1 + plan.row_splits - 1) / plan.row_splits;
    const int c0 = static_cast<int>(blockIdx.x) * kBandColumns + static_cast<int>(threadIdx.x) * kColumnsPerThread;
    const int r0 = static_cast<int>(blockIdx.y) * rows_per_split;
    const int r1 = min(n1, r0 + rows_per_split);
    A += static_cast<std::size_t>(game) * n1 * n2;
    x += static_cast<std::size_t>(game) * n1;
    y += static_cast<std::size_t>(game) * n2;
    double yj[kColumnsPerThread], u2[kColumnsPerThread] = {};
#pragma unroll
    for (int k = 0; k < kColumnsPerThread; ++k) yj[k] = RowUtilities && c0 + k < n2 ? y[c0 + k] : 0.0;
    // Warp w of band b writes its per-row partials to row b * 8 + w of the game's partials.
    double* row_partial =
        plan.u1_partial +
        (static_cast<std::size_t>(game) * plan.row_partials + blockIdx.x * kWarpsPerBlock + warp) * n1;
    for (int i0 = r0; i0 < r1; i0 += kRowsInFlight) {
        // Every row's load issued before the first is used.
        float4 a[kRowsInFlight];
        double xi[kRowsInFlight];
#pragma unroll
        for (int r = 0; r < kRowsInFlight; ++r) {
            const int i = i0 + r;
            a[r] = load_columns<Vec4>(A + static_cast<std::size_t>(i) * n2, c0, n2, i < r1);
            xi[r] = ColumnUtilities && i < r1 ? x[i] : 0.0;
        }
#pragma unroll
        for (int r = 0; r < kRowsInFlight; ++r) {
            const double v[kColumnsPerThread] = {a[r].x, a[r].y, a[r].z, a[r].w};
            double dot = 0.0;
#pragma unroll
            for (int k = 0; k < kColumnsPerThread; ++k) {
                if (RowUtilities) dot += v[k] * yj[k];
                if (ColumnUtilities) u2[k] += xi[r] * v[k];
            }
            if (RowUtilities) {  // i0 + r is the same on every lane: the whole warp reduces
                dot = warp_sum(dot);
                if (lane == 0 && i0 + r < r1) row_partial[i0 + r] = dot;
            }
        }
    }
    if (ColumnUtilities) {
        double* column_partial = plan.u2_partial + (static_cast<std::size_t>(game) * plan.row_splits + blockIdx.y) * n2;
#pragma unroll
        for (int k = 0; k < kColumnsPerThread; ++k)
            if (c0 + k < n2) column_partial[c0 + k] = u2[k];
    }
}

// out[g][k] = sign * sum_p partial[g][p][k], p ascending, for k < n (grid.y: the game).
__global__ void finish_utilities_kernel(const double* partial, int partials, int n, double sign, double* out) {
    const std::size_t game = blockIdx.y;
    partial += game * partials * n;
    for (int k = blockIdx.x * blockDim.x + threadIdx.x; k < n; k += gridDim.x * blockDim.x) {
        double acc = 0.0;
        for (int p = 0; p < partials; ++p) acc += partial[static_cast<std::size_t>(p) * n + k];
        out[game * n + k] = sign * acc;
    }
}

}  // namespace

DualGemv plan_dual_gemv(int games, int n1, int n2, int multiprocessors) {
    // Row splits so that bands x splits x games gives about kGpu.split_blocks_per_sm blocks per SM. Not the
    // kernel's occupancy: each split sums its rows of x^T A and the splits are added in order,
    // so the split count sets the rounding, and an occupancy (nvcc's register count) would
    // change results between builds.
    constexpr long long kSplitBlocksPerSM = kGpu.split_blocks_per_sm;
    const int bands = (n2 + kBandColumns - 1) / kBandColumns;
    const long long wanted = (kSplitBlocksPerSM * multiprocessors + static_cast<long long>(bands) * games - 1) /
                             (static_cast<long long>(bands) * games);
    const int splits = static_cast<int>(std::max<long long>(1, std::min<long long>(n1, wanted)));
    return {games, n1, n2, splits, bands * kWarpsPerBlock, nullptr, nullptr};
}

void launch_dual_gemv(const DualGemv& plan, const float* A, const double* x, const double* y, double* u1, double* u2,
                      cudaStream_t stream) {
    const dim3 grid(static_cast<unsigned>((plan.n2 + kBandColumns - 1) / kBandColumns),
                    static_cast<unsigned>(plan.row_splits), static_cast<unsigned>(plan.games));
    // 16-byte loads where every row starts on 16 bytes.
    const bool vec4 = plan.n2 % 4 == 0 && reinterpret_cast<std::uintptr_t>(A) % 16 == 0;
    const auto launch = [&](auto kernel) { kernel<<<grid, kGemvThreads, 0, stream>>>(plan, A, x, y); };
    if (u1 && u2) {
        launch(vec4 ? dual_gemv_kernel<true, true, true> : dual_gemv_kernel<true, true, false>);
    } else if (u1) {
        launch(vec4 ? dual_gemv_kernel<true, false, true> : dual_gemv_kernel<true, false, false>);
    } else {
        launch(vec4 ? dual_gemv_kernel<false, true, true> : dual_gemv_kernel<false, true, false>);
    }
    HPCML_LAUNCH_CHECK("dual_gemv_kernel");
    if (u1) {
        const dim3 finish(grid_for(plan.n1), static_cast<unsigned>(plan.games));
        finish_utilities_kernel<<<finish, 256, 0, stream>>>(plan.u1_partial, plan.row_partials, plan.n1, 1.0, u1);
        HPCML_LAUNCH_CHECK("finish_utilities_kernel");
    }
    if (u2) {
        const dim3 finish(grid_for(plan.n2), static_cast<unsigned>(plan.games));
        finish_utilities_kernel<<<finish, 256, 0, stream>>>(plan.u2_partial, plan.row_splits, plan.n2, -1.0, u2);
        HPCML_LAUNCH_CHECK("finish_utilities_kernel");
    }
}

}  // namespace hpcml::detail::regret
