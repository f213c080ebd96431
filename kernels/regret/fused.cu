// Regret matching on the GPU.
//
// Batched small games (regret_batched_kernel): one warp per game, the game's payoffs in shared
// memory, every iteration inside the kernel; lane l owns actions l and l + 32 of each player,
// whose state (accumulator, true regret, prediction, average sum, strategy, utility) lives in
// registers in double precision. Per iteration a warp reads n1 * n2 floats from shared memory
// twice (A y and x^T A) and does a handful of warp reductions: launch-free, shared-memory bound.
//
// One large game: per iteration a dual GEMV reads A (4 n1 n2 bytes) once for both players'
// utilities when they update simultaneously (twice when alternating: player 2 needs player 1's
// new strategy), then O(n1 + n2) update kernels. The floor is one pass over A per iteration at
// memory bandwidth: 16384^2 floats = 1.07 GB, about 0.32 ms on an H100 SXM (3.35 TB/s). The
// iteration is captured in a CUDA graph and replayed (cuda_driver.cpp), so 4096^2 games (67 MB,
// ~20 us per pass) are not launch-bound.
//
// dual_gemv_kernel layout: a block owns 1024 columns (4 per thread, strided by 256 so every
// load is coalesced) of a band of rows. x^T A is complete per column over the band, so bands
// write partials (finished by finish_column_utilities_kernel); each warp reduces A y over its
// 128 columns per row with shuffles and writes a partial per row (finished by
// finish_row_utilities_kernel). Partials are summed in a fixed order: results do not depend on
// scheduling.
#include <cub/block/block_reduce.cuh>
#include <cub/block/block_scan.cuh>
#include <cuda/functional>

#include <cfloat>
#include <climits>

#include "common/cuda_check.hpp"
#include "cuda.hpp"
#include "math.hpp"

namespace hpcml::detail::regret {

namespace {

__device__ inline double warp_sum(double v) {
    for (int offset = 16; offset > 0; offset >>= 1) v += __shfl_xor_sync(0xffffffffu, v, offset);
    return v;
}

__device__ inline double warp_max(double v) {
    for (int offset = 16; offset > 0; offset >>= 1) v = fmax(v, __shfl_xor_sync(0xffffffffu, v, offset));
    return v;
}

// Sum of averaging weights over iterations 1..t, as the CPU accumulates it.
__host__ __device__ inline double total_weight(RegretVariant variant, Averaging averaging, int t) {
    const double T = t;
    if (variant == RegretVariant::Seed || averaging == Averaging::Uniform) return T;
    if (averaging == Averaging::Linear) return T * (T + 1) / 2;
    return T * (T + 1) * (2 * T + 1) / 6;
}

// ---------------------------------------------------------------------------------------------
// Batched small games: a warp per game.

template <int P>  // actions per lane: 1 (n <= 32) or 2 (n <= 64)
struct WarpPlayer {
    double q[P], r[P], m[P], sum[P], s[P], u[P];
    int n;
};

template <int P>
__device__ void warp_init(WarpPlayer<P>& p, int n, int lane) {
    p.n = n;
    for (int k = 0; k < P; ++k) {
        p.q[k] = p.r[k] = p.m[k] = p.sum[k] = p.u[k] = 0.0;
        p.s[k] = lane + 32 * k < n ? 1.0 / n : 0.0;
    }
}

template <int P>
__device__ void warp_play(WarpPlayer<P>& p, RegretVariant variant, int lane) {
    double z[P], total = 0.0;
    for (int k = 0; k < P; ++k) {
        const double v = lane + 32 * k < p.n ? (variant == RegretVariant::PredictiveRMPlus ? p.q[k] + p.m[k] : p.q[k]) : 0.0;
        z[k] = v > 0 ? v : 0.0;
        total += z[k];
    }
    total = warp_sum(total);
    for (int k = 0; k < P; ++k)
        p.s[k] = lane + 32 * k < p.n ? (total > 0 ? z[k] / total : 1.0 / p.n) : 0.0;
}

template <int P>
__device__ void warp_observe(WarpPlayer<P>& p, RegretVariant variant, int t, int lane) {
    double expected = 0.0;
    for (int k = 0; k < P; ++k)
        if (lane + 32 * k < p.n) expected += p.u[k] * p.s[k];
    expected = warp_sum(expected);
    for (int k = 0; k < P; ++k) {
        if (lane + 32 * k >= p.n) continue;
        const double r = p.u[k] - expected;
        p.r[k] += r;
        p.q[k] = variant == RegretVariant::Seed ? p.r[k] : accumulate(variant, p.q[k], r, t);
        p.m[k] = r;
    }
}

template <int P>
__device__ void warp_average(WarpPlayer<P>& p, double w) {
    for (int k = 0; k < P; ++k) p.sum[k] += w * p.s[k];
}

template <int P>
__device__ void warp_store(const double (&v)[P], int n, double* dst, int lane) {
    for (int k = 0; k < P; ++k)
        if (lane + 32 * k < n) dst[lane + 32 * k] = v[k];
}

// u1[i] = sum_j a[i][j] y[j] for the lane's rows.
template <int P>
__device__ void warp_row_utilities(const float* a, int n1, int n2, const double* y, double (&u1)[P], int lane) {
    for (int k = 0; k < P; ++k) {
        const int i = lane + 32 * k;
        if (i >= n1) continue;
        double acc = 0.0;
        for (int j = 0; j < n2; ++j) acc += a[i * n2 + j] * y[j];
        u1[k] = acc;
    }
}

// u2[j] = -sum_i x[i] a[i][j] for the lane's columns.
template <int P>
__device__ void warp_column_utilities(const float* a, int n1, int n2, const double* x, double (&u2)[P], int lane) {
    for (int k = 0; k < P; ++k) {
        const int j = lane + 32 * k;
        if (j >= n2) continue;
        double acc = 0.0;
        for (int i = 0; i < n1; ++i) acc += x[i] * a[i * n2 + j];
        u2[k] = -acc;
    }
}

// The opponent's sampled action, drawn by lane 0 from the strategy in shared memory.
__device__ int warp_sample(const double* s, int n, const BatchedArgs& a, int game, int t, int player, int lane) {
    int action = 0;
    if (lane == 0) action = static_cast<int>(sample(s, static_cast<std::size_t>(n), uniform_draw(a.rng_seed, game, t, player)));
    return __shfl_sync(0xffffffffu, action, 0);
}

// The averages' value and exact gap; uses sx, sy as scratch.
template <int P>
__device__ void warp_evaluate(const WarpPlayer<P>& p1, const WarpPlayer<P>& p2, double weight, const float* a,
                              double* sx, double* sy, int lane, double& value, double& gap) {
    double x[P], y[P], u1[P] = {}, u2[P] = {};
    for (int k = 0; k < P; ++k) {
        x[k] = p1.sum[k] / weight;
        y[k] = p2.sum[k] / weight;
    }
    __syncwarp();  // every lane is done with the previous contents of sx, sy
    warp_store(x, p1.n, sx, lane);
    warp_store(y, p2.n, sy, lane);
    __syncwarp();
    warp_row_utilities(a, p1.n, p2.n, sy, u1, lane);
    warp_column_utilities(a, p1.n, p2.n, sx, u2, lane);
    double v = 0.0, best_row = -DBL_MAX, best_col = -DBL_MAX;
    for (int k = 0; k < P; ++k) {
        if (lane + 32 * k < p1.n) {
            v += x[k] * u1[k];
            best_row = fmax(best_row, u1[k]);
        }
        if (lane + 32 * k < p2.n) best_col = fmax(best_col, u2[k]);
    }
    value = warp_sum(v);
    gap = fmax(0.0, warp_max(best_row) + warp_max(best_col));
}

template <int P>
__global__ void regret_batched_kernel(const BatchedArgs a) {
    extern __shared__ double shared[];
    const int warps = static_cast<int>(blockDim.x) / 32;
    const int warp = static_cast<int>(threadIdx.x) / 32, lane = static_cast<int>(threadIdx.x) % 32;
    const int game = static_cast<int>(blockIdx.x) * warps + warp;
    if (game >= a.batch) return;  // whole warps leave; nothing below synchronises the block

    // This warp's shared memory: x and y strategies (doubles), then the payoffs (floats).
    const int per_warp = a.n1 + a.n2 + (a.n1 * a.n2 + 1) / 2;  // in doubles
    double* sx = shared + warp * per_warp;
    double* sy = sx + a.n1;
    float* pay = reinterpret_cast<float*>(sy + a.n2);
    const float* A = a.A + static_cast<std::size_t>(game) * a.n1 * a.n2;
    for (int e = lane; e < a.n1 * a.n2; e += 32) pay[e] = A[e];
    __syncwarp();

    WarpPlayer<P> p1, p2;
    warp_init(p1, a.n1, lane);
    warp_init(p2, a.n2, lane);
    const bool seed = a.variant == RegretVariant::Seed;
    const bool simultaneous = seed || !a.alternating;
    double value = 0.0, gap = 0.0;

    for (int t = 1; t <= a.iterations; ++t) {
        const double w = seed ? 1.0 : average_weight<double>(a.averaging, t);
        if (!seed) {
            warp_play(p1, a.variant, lane);
            warp_play(p2, a.variant, lane);
        }
        __syncwarp();  // the previous iteration's reads of sx, sy are done
        if (simultaneous) {
            warp_store(p1.s, a.n1, sx, lane);
            warp_store(p2.s, a.n2, sy, lane);
            __syncwarp();
            if (a.sampled) {
                const int i = warp_sample(sx, a.n1, a, game, t, 0, lane);
                const int j = warp_sample(sy, a.n2, a, game, t, 1, lane);
                for (int k = 0; k < P; ++k) {
                    if (lane + 32 * k < a.n1) p1.u[k] = pay[(lane + 32 * k) * a.n2 + j];
                    if (lane + 32 * k < a.n2) p2.u[k] = -static_cast<double>(pay[i * a.n2 + lane + 32 * k]);
                }
            } else {
                warp_row_utilities(pay, a.n1, a.n2, sy, p1.u, lane);
                warp_column_utilities(pay, a.n1, a.n2, sx, p2.u, lane);
            }
            warp_observe(p1, a.variant, t, lane);
            warp_observe(p2, a.variant, t, lane);
            if (seed) {  // the seed averages the strategies it computes after each update
                warp_play(p1, a.variant, lane);
                warp_play(p2, a.variant, lane);
            }
            warp_average(p1, w);
            warp_average(p2, w);
        } else {
            // Player 1 answers y_t; player 2 answers player 1's new strategy x_{t+1}.
            warp_store(p2.s, a.n2, sy, lane);
            __syncwarp();
            if (a.sampled) {
                const int j = warp_sample(sy, a.n2, a, game, t, 1, lane);
                for (int k = 0; k < P; ++k)
                    if (lane + 32 * k < a.n1) p1.u[k] = pay[(lane + 32 * k) * a.n2 + j];
            } else {
                warp_row_utilities(pay, a.n1, a.n2, sy, p1.u, lane);
            }
            warp_observe(p1, a.variant, t, lane);
            warp_average(p1, w);
            warp_play(p1, a.variant, lane);
            warp_store(p1.s, a.n1, sx, lane);
            __syncwarp();
            if (a.sampled) {
                const int i = warp_sample(sx, a.n1, a, game, t, 0, lane);
                for (int k = 0; k < P; ++k)
                    if (lane + 32 * k < a.n2) p2.u[k] = -static_cast<double>(pay[i * a.n2 + lane + 32 * k]);
            } else {
                warp_column_utilities(pay, a.n1, a.n2, sx, p2.u, lane);
            }
            warp_observe(p2, a.variant, t, lane);
            warp_average(p2, w);
        }
        if (a.record_every > 0 && t % a.record_every == 0 && t != a.iterations) {
            warp_evaluate(p1, p2, total_weight(a.variant, a.averaging, t), pay, sx, sy, lane, value, gap);
            if (lane == 0) a.curve[static_cast<std::size_t>(game) * a.records + t / a.record_every - 1] = gap;
        }
    }

    const double weight = total_weight(a.variant, a.averaging, a.iterations);
    warp_evaluate(p1, p2, weight, pay, sx, sy, lane, value, gap);
    double max_regret = -DBL_MAX;
    for (int k = 0; k < P; ++k) {
        if (lane + 32 * k < a.n1) {
            a.row_strategy[static_cast<std::size_t>(game) * a.n1 + lane + 32 * k] = p1.sum[k] / weight;
            max_regret = fmax(max_regret, p1.r[k]);
        }
        if (lane + 32 * k < a.n2) {
            a.col_strategy[static_cast<std::size_t>(game) * a.n2 + lane + 32 * k] = p2.sum[k] / weight;
            max_regret = fmax(max_regret, p2.r[k]);
        }
    }
    max_regret = warp_max(max_regret);
    if (lane == 0) {
        a.value[game] = value;
        a.gap[game] = gap;
        a.max_regret[game] = max_regret;
        if (a.record_every > 0) a.curve[static_cast<std::size_t>(game) * a.records + a.records - 1] = gap;
    }
}

// ---------------------------------------------------------------------------------------------
// One large game.

constexpr int kGemvThreads = 256;
constexpr int kColumnsPerThread = 4;
constexpr int kBandColumns = kGemvThreads * kColumnsPerThread;  // 1024
constexpr int kWarpsPerBlock = kGemvThreads / 32;

template <bool RowUtilities, bool ColumnUtilities>
__global__ void __launch_bounds__(kGemvThreads) dual_gemv_kernel(const float* __restrict__ A, int n1, int n2,
                                                                  int rows_per_split, const double* __restrict__ x,
                                                                  const double* __restrict__ y,
                                                                  double* __restrict__ u1_partial,
                                                                  double* __restrict__ u2_partial) {
    const int lane = static_cast<int>(threadIdx.x) % 32, warp = static_cast<int>(threadIdx.x) / 32;
    const int c0 = static_cast<int>(blockIdx.x) * kBandColumns + static_cast<int>(threadIdx.x);
    const int r0 = static_cast<int>(blockIdx.y) * rows_per_split;
    const int r1 = min(n1, r0 + rows_per_split);
    double yj[kColumnsPerThread], u2[kColumnsPerThread] = {};
#pragma unroll
    for (int k = 0; k < kColumnsPerThread; ++k) {
        const int j = c0 + k * kGemvThreads;
        yj[k] = RowUtilities && j < n2 ? y[j] : 0.0;
    }
    // Warp w of band b writes its per-row partials to u1_partial[b * 8 + w][i].
    double* row_partial = u1_partial + (static_cast<std::size_t>(blockIdx.x) * kWarpsPerBlock + warp) * n1;
    for (int i = r0; i < r1; ++i) {
        const float* row = A + static_cast<std::size_t>(i) * n2;
        const double xi = ColumnUtilities ? x[i] : 0.0;
        double dot = 0.0;
#pragma unroll
        for (int k = 0; k < kColumnsPerThread; ++k) {
            const int j = c0 + k * kGemvThreads;
            const double a = j < n2 ? static_cast<double>(row[j]) : 0.0;
            if (RowUtilities) dot += a * yj[k];
            if (ColumnUtilities) u2[k] += xi * a;
        }
        if (RowUtilities) {
            dot = warp_sum(dot);
            if (lane == 0) row_partial[i] = dot;
        }
    }
    if (ColumnUtilities) {
#pragma unroll
        for (int k = 0; k < kColumnsPerThread; ++k) {
            const int j = c0 + k * kGemvThreads;
            if (j < n2) u2_partial[static_cast<std::size_t>(blockIdx.y) * n2 + j] = u2[k];
        }
    }
}

__global__ void finish_row_utilities_kernel(const double* u1_partial, int partials, int n1, double* u1) {
    for (int i = blockIdx.x * blockDim.x + threadIdx.x; i < n1; i += gridDim.x * blockDim.x) {
        double acc = 0.0;
        for (int p = 0; p < partials; ++p) acc += u1_partial[static_cast<std::size_t>(p) * n1 + i];
        u1[i] = acc;
    }
}

__global__ void finish_column_utilities_kernel(const double* u2_partial, int splits, int n2, double* u2) {
    for (int j = blockIdx.x * blockDim.x + threadIdx.x; j < n2; j += gridDim.x * blockDim.x) {
        double acc = 0.0;
        for (int p = 0; p < splits; ++p) acc += u2_partial[static_cast<std::size_t>(p) * n2 + j];
        u2[j] = -acc;
    }
}

constexpr int kUpdateThreads = 1024;
using BlockSum = cub::BlockReduce<double, kUpdateThreads>;

// A block-wide sum, the same value returned to every thread.
__device__ double block_sum(double v, BlockSum::TempStorage& storage, double& broadcast) {
    const double total = BlockSum(storage).Sum(v);
    if (threadIdx.x == 0) broadcast = total;
    __syncthreads();  // the total is visible to all
    const double out = broadcast;
    __syncthreads();  // storage and broadcast may be reused
    return out;
}

__global__ void __launch_bounds__(kUpdateThreads) update_kernel(const UpdateArgs a) {
    __shared__ BlockSum::TempStorage storage;
    __shared__ double broadcast;
    const PlayerDevice p = a.players[blockIdx.x];
    const int t = *a.t;
    const bool seed = a.variant == RegretVariant::Seed;

    double expected = 0.0;
    for (int k = threadIdx.x; k < p.n; k += kUpdateThreads) expected += p.u[k] * p.s[k];
    expected = block_sum(expected, storage, broadcast);
    const double w = seed ? 1.0 : average_weight<double>(a.averaging, t);
    double positive = 0.0;
    for (int k = threadIdx.x; k < p.n; k += kUpdateThreads) {
        const double r = p.u[k] - expected;
        p.r_total[k] += r;
        const double q = seed ? p.r_total[k] : accumulate(a.variant, p.q[k], r, t);
        p.q[k] = q;
        p.m[k] = r;
        if (!seed) p.sum[k] += w * p.s[k];  // the strategy played this iteration
        const double z = a.variant == RegretVariant::PredictiveRMPlus ? q + r : q;
        positive += z > 0 ? z : 0.0;
    }
    positive = block_sum(positive, storage, broadcast);
    for (int k = threadIdx.x; k < p.n; k += kUpdateThreads) {
        const double z = a.variant == RegretVariant::PredictiveRMPlus ? p.q[k] + p.m[k] : p.q[k];
        const double s = positive > 0 ? (z > 0 ? z / positive : 0.0) : 1.0 / p.n;
        p.s[k] = s;
        if (seed) p.sum[k] += s;  // the seed averages the updated strategy
    }
}

__global__ void advance_kernel(int* t) { ++*t; }

using BlockScan = cub::BlockScan<double, kUpdateThreads>;
using BlockMax = cub::BlockReduce<int, kUpdateThreads>;

// action = the first k (skipping zero-probability entries) with u < cdf(k), as the CPU's sample().
__global__ void __launch_bounds__(kUpdateThreads) sample_kernel(const SampleArgs a) {
    __shared__ typename BlockScan::TempStorage scan_storage;
    __shared__ typename BlockMax::TempStorage max_storage;
    __shared__ int found;
    const double* s = a.strategy[blockIdx.x];
    const int n = a.n[blockIdx.x];
    const double u = uniform_draw(a.seed, a.game, *a.t, a.player[blockIdx.x]);
    const int chunk = (n + kUpdateThreads - 1) / kUpdateThreads;
    const int begin = min(n, static_cast<int>(threadIdx.x) * chunk), end = min(n, begin + chunk);
    double local = 0.0;
    int last_positive = -1;
    for (int k = begin; k < end; ++k) {
        if (s[k] > 0) {
            local += s[k];
            last_positive = k;
        }
    }
    double prefix = 0.0;
    BlockScan(scan_storage).ExclusiveSum(local, prefix);
    const int last = BlockMax(max_storage).Reduce(last_positive, cuda::maximum<>{});
    if (threadIdx.x == 0) found = INT_MAX;
    __syncthreads();  // found is reset before any thread claims it
    // Every chunk whose (rounded) cdf passes u claims, the first wins: no race when two chunks'
    // rounded bounds overlap, and no gap falling through to `last` when they do not meet.
    if (local > 0 && u < prefix + local) {
        int pick = last_positive;  // u beyond this chunk's sequential cdf (rounding)
        double cdf = prefix;
        for (int k = begin; k < end; ++k) {
            if (s[k] <= 0) continue;
            cdf += s[k];
            if (u < cdf) {
                pick = k;
                break;
            }
        }
        atomicMin(&found, pick);
    }
    __syncthreads();  // the claims are visible
    if (threadIdx.x == 0) a.action[blockIdx.x] = found != INT_MAX ? found : last;
}

__global__ void gather_row_utilities_kernel(const float* A, int n1, int n2, const int* column, double* u1) {
    const int j = *column;
    for (int i = blockIdx.x * blockDim.x + threadIdx.x; i < n1; i += gridDim.x * blockDim.x)
        u1[i] = A[static_cast<std::size_t>(i) * n2 + j];
}

__global__ void gather_column_utilities_kernel(const float* A, int n2, const int* row, double* u2) {
    const float* r = A + static_cast<std::size_t>(*row) * n2;
    for (int j = blockIdx.x * blockDim.x + threadIdx.x; j < n2; j += gridDim.x * blockDim.x) u2[j] = -static_cast<double>(r[j]);
}

__global__ void averages_kernel(const double* sum1, int n1, const double* sum2, int n2, double weight, double* x, double* y) {
    for (int k = blockIdx.x * blockDim.x + threadIdx.x; k < n1 + n2; k += gridDim.x * blockDim.x) {
        if (k < n1) {
            x[k] = sum1[k] / weight;
        } else {
            y[k - n1] = sum2[k - n1] / weight;
        }
    }
}

__global__ void __launch_bounds__(kUpdateThreads) evaluate_kernel(const double* x, const double* u1, int n1,
                                                                   const double* u2, int n2, double* out) {
    __shared__ BlockSum::TempStorage storage;
    __shared__ double broadcast;
    double value = 0.0, best_row = -DBL_MAX, best_col = -DBL_MAX;
    for (int i = threadIdx.x; i < n1; i += kUpdateThreads) {
        value += x[i] * u1[i];
        best_row = fmax(best_row, u1[i]);
    }
    for (int j = threadIdx.x; j < n2; j += kUpdateThreads) best_col = fmax(best_col, u2[j]);
    value = block_sum(value, storage, broadcast);
    const double row = BlockSum(storage).Reduce(best_row, cuda::maximum<>{});
    __syncthreads();  // storage is reused
    const double col = BlockSum(storage).Reduce(best_col, cuda::maximum<>{});
    if (threadIdx.x == 0) {
        out[0] = value;
        out[1] = fmax(0.0, row + col);
    }
}

unsigned grid_for(int n, int threads = 256) { return static_cast<unsigned>(std::min((n + threads - 1) / threads, 4096)); }

// Row splits so that bands x splits gives about four blocks per SM on a 132-SM part.
int row_splits(int n1, int n2) {
    const int bands = (n2 + kBandColumns - 1) / kBandColumns;
    const int wanted = (4 * 132 + bands - 1) / bands;
    return std::max(1, std::min(n1, wanted));
}

}  // namespace

void launch_batched(const BatchedArgs& args, cudaStream_t stream) {
    const int per_warp_bytes = static_cast<int>((args.n1 + args.n2 + (args.n1 * args.n2 + 1) / 2) * sizeof(double));
    const int warps = std::max(1, std::min(8, (48 * 1024) / per_warp_bytes));
    const unsigned blocks = static_cast<unsigned>((args.batch + warps - 1) / warps);
    const std::size_t shared = static_cast<std::size_t>(warps) * per_warp_bytes;
    if (std::max(args.n1, args.n2) <= 32) {
        regret_batched_kernel<1><<<blocks, warps * 32, shared, stream>>>(args);
    } else {
        regret_batched_kernel<2><<<blocks, warps * 32, shared, stream>>>(args);
    }
    HPCML_LAUNCH_CHECK("regret_batched_kernel");
}

int dual_gemv_row_blocks(int n1, int n2) { return row_splits(n1, n2); }
int dual_gemv_row_partials(int n2) { return (n2 + kBandColumns - 1) / kBandColumns * kWarpsPerBlock; }

void launch_dual_gemv(const float* A, int n1, int n2, const double* x, const double* y, double* u1,
                      double* u2, double* u1_partial, double* u2_partial, cudaStream_t stream) {
    const int splits = row_splits(n1, n2);
    const int rows_per_split = (n1 + splits - 1) / splits;
    const dim3 grid(static_cast<unsigned>((n2 + kBandColumns - 1) / kBandColumns), static_cast<unsigned>(splits));
    if (u1 && u2) {
        dual_gemv_kernel<true, true><<<grid, kGemvThreads, 0, stream>>>(A, n1, n2, rows_per_split, x, y, u1_partial, u2_partial);
    } else if (u1) {
        dual_gemv_kernel<true, false><<<grid, kGemvThreads, 0, stream>>>(A, n1, n2, rows_per_split, x, y, u1_partial, u2_partial);
    } else {
        dual_gemv_kernel<false, true><<<grid, kGemvThreads, 0, stream>>>(A, n1, n2, rows_per_split, x, y, u1_partial, u2_partial);
    }
    HPCML_LAUNCH_CHECK("dual_gemv_kernel");
    if (u1) {
        finish_row_utilities_kernel<<<grid_for(n1), 256, 0, stream>>>(u1_partial, dual_gemv_row_partials(n2), n1, u1);
        HPCML_LAUNCH_CHECK("finish_row_utilities_kernel");
    }
    if (u2) {
        finish_column_utilities_kernel<<<grid_for(n2), 256, 0, stream>>>(u2_partial, splits, n2, u2);
        HPCML_LAUNCH_CHECK("finish_column_utilities_kernel");
    }
}

void launch_update(const UpdateArgs& args, cudaStream_t stream) {
    update_kernel<<<static_cast<unsigned>(args.count), kUpdateThreads, 0, stream>>>(args);
    HPCML_LAUNCH_CHECK("update_kernel");
}

void launch_advance(int* t, cudaStream_t stream) {
    advance_kernel<<<1, 1, 0, stream>>>(t);
    HPCML_LAUNCH_CHECK("advance_kernel");
}

void launch_sample(const SampleArgs& args, cudaStream_t stream) {
    sample_kernel<<<static_cast<unsigned>(args.count), kUpdateThreads, 0, stream>>>(args);
    HPCML_LAUNCH_CHECK("sample_kernel");
}

void launch_gather_row_utilities(const float* A, int n1, int n2, const int* column, double* u1, cudaStream_t stream) {
    gather_row_utilities_kernel<<<grid_for(n1), 256, 0, stream>>>(A, n1, n2, column, u1);
    HPCML_LAUNCH_CHECK("gather_row_utilities_kernel");
}

void launch_gather_column_utilities(const float* A, int n1, int n2, const int* row, double* u2, cudaStream_t stream) {
    (void)n1;
    gather_column_utilities_kernel<<<grid_for(n2), 256, 0, stream>>>(A, n2, row, u2);
    HPCML_LAUNCH_CHECK("gather_column_utilities_kernel");
}

void launch_averages(const PlayerDevice& p1, const PlayerDevice& p2, double weight, double* x, double* y,
                     cudaStream_t stream) {
    averages_kernel<<<grid_for(p1.n + p2.n), 256, 0, stream>>>(p1.sum, p1.n, p2.sum, p2.n, weight, x, y);
    HPCML_LAUNCH_CHECK("averages_kernel");
}

void launch_evaluate(const double* x, const double* u1, int n1, const double* u2, int n2, double* out,
                     cudaStream_t stream) {
    evaluate_kernel<<<1, kUpdateThreads, 0, stream>>>(x, u1, n1, u2, n2, out);
    HPCML_LAUNCH_CHECK("evaluate_kernel");
}

double averaging_total(RegretVariant variant, Averaging averaging, int t) { return total_weight(variant, averaging, t); }

}  // namespace hpcml::detail::regret
