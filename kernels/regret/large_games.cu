// Regret matching on the GPU for large games, several per launch; small games are
// batched.cu's. It runs the schedule of math.hpp: its observe() and play() are the per-entry
// arithmetic, so the kernels supply only utilities and sums.
//
// Large games: per turn the dual GEMV of dual_gemv.cu gives the moving players' utilities,
// then the move's kernels here. Several games share every launch (the game is the grid's z or
// y index), and the iteration is captured in a CUDA graph and replayed (cuda_large.cpp), so
// mid-sized games are not launch-bound either. This file contracts multiplies and adds (FMA):
// its sums are not the CPU's to the bit anyway (the batched kernel's are, and batched.cu does
// not contract).
#include <cub/block/block_reduce.cuh>
#include <cub/block/block_scan.cuh>
#include <cuda/functional>

#include <algorithm>
#include <cfloat>
#include <climits>

#include "common/cuda_check.hpp"
#include "cuda_launchers.hpp"

namespace hpcml::detail::regret {

namespace {

constexpr int kMoveThreads = kGpu.move_threads;
using BlockSum = cub::BlockReduce<double, kMoveThreads>;

// A block-wide reduction, the same value returned to every thread.
template <class Op>
__device__ double block_reduce(double v, Op op, BlockSum::TempStorage& storage, double& broadcast) {
    const double total = BlockSum(storage).Reduce(v, op);
    if (threadIdx.x == 0) broadcast = total;
    __syncthreads();  // the total is visible to all
    const double out = broadcast;
    __syncthreads();  // storage and broadcast may be reused
    return out;
}

__device__ PlayerDevice game_row(const PlayerDevice& p, std::size_t game) {
    const std::size_t e = game * p.n;
    return {p.R + e, p.Q + e, p.sum + e, p.s + e, p.u + e, p.n};
}

__global__ void reset_kernel(const PlayerDevice p, std::size_t entries) {
    for (std::size_t e = blockIdx.x * static_cast<std::size_t>(blockDim.x) + threadIdx.x; e < entries;
         e += static_cast<std::size_t>(gridDim.x) * blockDim.x) {
        p.R[e] = p.Q[e] = p.sum[e] = p.u[e] = 0.0;
        p.s[e] = 1.0 / p.n;
    }
}

// The move of math.hpp, spread over many blocks: block (b, q, g) owns entries
// [b * kGpu.move_block_entries, (b + 1) * kGpu.move_block_entries) of moving player q (args.players[q]) in
// game g, kMovePerThread per thread, strided by the block so that loads coalesce. The player's
// two sums (the baseline <u, s> and the numerators' total) are per-block partials added in block
// order by every block that needs them (the same total everywhere, whatever the scheduling):
//   move_baseline_kernel  baseline partials (full information only; sampled: u[own action])
//   move_observe_kernel   observe() per entry, the numerator z into s (u stays: a sampled
//                         baseline is read from it by other blocks), z's partials
//   move_play_kernel      s = play(z, total)
// Each thread loads all its entries' state before it stores any (the arrays are distinct:
// __restrict__), so an entry costs one memory round trip, not one per field. Floor: 72 bytes per
// entry (observe) and 24 (play) at HBM bandwidth, nothing at these sizes; the cost is latency:
// three launches of one to three round trips each (the report reads 3 for observe, 1 for play,
// no load after a store), a few microseconds per move where one block per player took tens
// (predicted: docs/machine-code.md).
constexpr int kMovePerThread = kGpu.move_block_entries / kMoveThreads;
static_assert(kMovePerThread * kMoveThreads == kGpu.move_block_entries, "whole entries per thread");

struct MoveBlock {
    double* __restrict__ R;
    double* __restrict__ Q;
    double* __restrict__ sum;
    double* __restrict__ s;
    const double* __restrict__ u;
    int n, begin;        // the player's entries, and this block's first
    double* partial;     // [2][count][games][blocks]: the baseline's, then the total's
    std::size_t stride;  // between the two halves of partial
    int blocks;          // the player's blocks

    __device__ int entry(int k) const { return begin + static_cast<int>(threadIdx.x) + k * kMoveThreads; }
    // This block's partial of one kind, from every thread's share (CUB's tree, the same each run).
    __device__ void store_partial(int kind, double share, BlockSum::TempStorage& storage) const {
        const double block = BlockSum(storage).Sum(share);
        if (threadIdx.x == 0) partial[kind * stride + blockIdx.x] = block;
    }
    // The player's sum of one kind (0: baseline, 1: total), its partials added in block order.
    __device__ double total(int kind, double& broadcast) const {
        if (threadIdx.x == 0) {
            const double* p = partial + kind * stride;
            double acc = 0.0;
            for (int b = 0; b < blocks; ++b) acc += p[b];
            broadcast = acc;
        }
        __syncthreads();
        return broadcast;
    }
};

// This block's slice of the state, or n = 0 past the player's entries.
__device__ MoveBlock move_block(const MoveArgs& a) {
    const int q = static_cast<int>(blockIdx.y);
    const std::size_t game = blockIdx.z;
    const PlayerDevice p = game_row(a.players[q], game);
    const int blocks = move_blocks(p.n);
    const std::size_t stride = static_cast<std::size_t>(a.count) * a.games * a.move_blocks;
    double* partial = a.partial + (static_cast<std::size_t>(q) * a.games + game) * a.move_blocks;
    const int begin = static_cast<int>(blockIdx.x) * kGpu.move_block_entries;
    return {p.R, p.Q, p.sum, p.s, p.u, begin < p.n ? p.n : 0, begin, partial, stride, blocks};
}

__global__ void __launch_bounds__(kMoveThreads) move_baseline_kernel(const MoveArgs a) {
    __shared__ BlockSum::TempStorage storage;
    const MoveBlock m = move_block(a);
    if (m.n == 0) return;  // the whole block: no barrier is left waiting
    double u[kMovePerThread], s[kMovePerThread];
#pragma unroll
    for (int k = 0; k < kMovePerThread; ++k) {
        const int e = m.entry(k);
        u[k] = e < m.n ? m.u[e] : 0.0;
        s[k] = e < m.n ? m.s[e] : 0.0;
    }
    double expected = 0.0;
#pragma unroll
    for (int k = 0; k < kMovePerThread; ++k) expected += u[k] * s[k];
    m.store_partial(0, expected, storage);
}

__global__ void __launch_bounds__(kMoveThreads) move_observe_kernel(const MoveArgs a) {
    __shared__ BlockSum::TempStorage storage;
    __shared__ double broadcast;
    const MoveBlock m = move_block(a);
    if (m.n == 0) return;
    const Schedule& sc = a.schedule;
    const int t = *a.t;
    const double baseline = a.actions ? m.u[a.actions[2 * blockIdx.z + a.player[blockIdx.y]]] : m.total(0, broadcast);
    double u[kMovePerThread], s[kMovePerThread], R[kMovePerThread], Q[kMovePerThread], sum[kMovePerThread];
#pragma unroll
    for (int k = 0; k < kMovePerThread; ++k) {
        const int e = m.entry(k);
        if (e < m.n) u[k] = m.u[e], s[k] = m.s[e], R[k] = m.R[e], Q[k] = m.Q[e], sum[k] = m.sum[e];
    }
    double total = 0.0;
#pragma unroll
    for (int k = 0; k < kMovePerThread; ++k) {
        const int e = m.entry(k);
        if (e >= m.n) continue;
        const double z = sc.observe(t, u[k], baseline, s[k], R[k], Q[k], sum[k]);
        m.R[e] = R[k], m.Q[e] = Q[k], m.sum[e] = sum[k], m.s[e] = z;
        total += z;
    }
    m.store_partial(1, total, storage);
}

__global__ void __launch_bounds__(kMoveThreads) move_play_kernel(const MoveArgs a) {
    __shared__ double broadcast;
    const MoveBlock m = move_block(a);
    if (m.n == 0) return;
    const Schedule& sc = a.schedule;
    const int t = *a.t;
    const double total = m.total(1, broadcast);
    double z[kMovePerThread], sum[kMovePerThread];
#pragma unroll
    for (int k = 0; k < kMovePerThread; ++k) {
        const int e = m.entry(k);
        if (e < m.n) z[k] = m.s[e], sum[k] = m.sum[e];
    }
#pragma unroll
    for (int k = 0; k < kMovePerThread; ++k) {
        const int e = m.entry(k);
        if (e >= m.n) continue;
        m.s[e] = sc.play(t, z[k], total, static_cast<std::size_t>(m.n), sum[k]);
        if (sc.lagged) m.sum[e] = sum[k];
    }
}

__global__ void advance_kernel(int* t) { ++*t; }

using BlockScan = cub::BlockScan<double, kMoveThreads>;
using BlockMaxIndex = cub::BlockReduce<int, kMoveThreads>;

// One block per (player, game): action = the first k (skipping zero-probability entries) with
// u < cdf(k), the CPU's sample() rule; the cdf is each thread's chunk summed in order from the
// block's exclusive prefix (a tree scan), so a draw within an ulp of a boundary may pick the
// neighbouring action where the CPU's in-order sum would not.
__global__ void __launch_bounds__(kMoveThreads) sample_kernel(const SampleArgs a) {
    __shared__ typename BlockScan::TempStorage scan_storage;
    __shared__ typename BlockMaxIndex::TempStorage max_storage;
    __shared__ int found;
    const int player = blockIdx.x;
    const std::size_t game = blockIdx.y;
    const int n = a.n[player];
    const double* s = a.strategy[player] + game * n;
    const double u = uniform_draw(a.schedule.rng_seed, a.schedule.game_key(a.first_game + game), *a.t,
                                  a.schedule.draw_key(a.turn, player));
    const int chunk = (n + kMoveThreads - 1) / kMoveThreads;
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
    const int last = BlockMaxIndex(max_storage).Reduce(last_positive, cuda::maximum<>{});
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
    if (threadIdx.x == 0) a.actions[2 * game + player] = found != INT_MAX ? found : last;
}

// grid.y: the game. u1 = A[:, j] and u2 = -A[i, :] for its sampled (i, j).
__global__ void gather_utilities_kernel(const float* A, int n1, int n2, const int* actions, double* u1, double* u2) {
    const std::size_t game = blockIdx.y;
    const int i = actions[2 * game], j = actions[2 * game + 1];
    A += game * n1 * n2;
    for (int k = blockIdx.x * blockDim.x + threadIdx.x; k < max(n1, n2); k += gridDim.x * blockDim.x) {
        if (u1 && k < n1) u1[game * n1 + k] = A[static_cast<std::size_t>(k) * n2 + j];
        if (u2 && k < n2) u2[game * n2 + k] = -static_cast<double>(A[static_cast<std::size_t>(i) * n2 + k]);
    }
}

__global__ void averages_kernel(const double* sum, std::size_t entries, double weight, double* out) {
    for (std::size_t e = blockIdx.x * static_cast<std::size_t>(blockDim.x) + threadIdx.x; e < entries;
         e += static_cast<std::size_t>(gridDim.x) * blockDim.x)
        out[e] = sum[e] / weight;
}

__global__ void __launch_bounds__(kMoveThreads)
    evaluate_kernel(const double* x, const double* u1, int n1, const double* u2, int n2, double* value, double* gap,
                    int gap_stride) {
    __shared__ BlockSum::TempStorage storage;
    __shared__ double broadcast;
    const std::size_t game = blockIdx.x;
    x += game * n1;
    u1 += game * n1;
    u2 += game * n2;
    double v = 0.0, best_row = -DBL_MAX, best_col = -DBL_MAX;
    for (int i = threadIdx.x; i < n1; i += kMoveThreads) {
        v += x[i] * u1[i];
        best_row = fmax(best_row, u1[i]);
    }
    for (int j = threadIdx.x; j < n2; j += kMoveThreads) best_col = fmax(best_col, u2[j]);
    v = block_reduce(v, cuda::std::plus<>{}, storage, broadcast);
    const double row = block_reduce(best_row, cuda::maximum<>{}, storage, broadcast);
    const double col = block_reduce(best_col, cuda::maximum<>{}, storage, broadcast);
    if (threadIdx.x == 0) {
        if (value) value[game] = v;
        gap[game * gap_stride] = fmax(0.0, row + col);
    }
}

__global__ void __launch_bounds__(kMoveThreads)
    max_regret_kernel(const double* R1, int n1, const double* R2, int n2, double* out) {
    __shared__ BlockSum::TempStorage storage;
    __shared__ double broadcast;
    const std::size_t game = blockIdx.x;
    double m = -DBL_MAX;
    for (int i = threadIdx.x; i < n1; i += kMoveThreads) m = fmax(m, R1[game * n1 + i]);
    for (int j = threadIdx.x; j < n2; j += kMoveThreads) m = fmax(m, R2[game * n2 + j]);
    m = block_reduce(m, cuda::maximum<>{}, storage, broadcast);
    if (threadIdx.x == 0) out[game] = m;
}

}  // namespace

void launch_reset(const PlayerDevice& p, int games, cudaStream_t stream) {
    const std::size_t entries = static_cast<std::size_t>(games) * p.n;
    reset_kernel<<<grid_for(entries), 256, 0, stream>>>(p, entries);
    HPCML_LAUNCH_CHECK("reset_kernel");
}

void launch_move(const MoveArgs& args, cudaStream_t stream) {
    const dim3 grid(static_cast<unsigned>(args.move_blocks), static_cast<unsigned>(args.count),
                    static_cast<unsigned>(args.games));
    if (!args.actions) {
        move_baseline_kernel<<<grid, kMoveThreads, 0, stream>>>(args);
        HPCML_LAUNCH_CHECK("move_baseline_kernel");
    }
    move_observe_kernel<<<grid, kMoveThreads, 0, stream>>>(args);
    HPCML_LAUNCH_CHECK("move_observe_kernel");
    move_play_kernel<<<grid, kMoveThreads, 0, stream>>>(args);
    HPCML_LAUNCH_CHECK("move_play_kernel");
}

void launch_advance(int* t, cudaStream_t stream) {
    advance_kernel<<<1, 1, 0, stream>>>(t);
    HPCML_LAUNCH_CHECK("advance_kernel");
}

void launch_sample(const SampleArgs& args, cudaStream_t stream) {
    sample_kernel<<<dim3(2, static_cast<unsigned>(args.games)), kMoveThreads, 0, stream>>>(args);
    HPCML_LAUNCH_CHECK("sample_kernel");
}

void launch_gather_utilities(const float* A, int games, int n1, int n2, const int* actions, double* u1, double* u2,
                             cudaStream_t stream) {
    const dim3 grid(grid_for(static_cast<std::size_t>(std::max(n1, n2))), static_cast<unsigned>(games));
    gather_utilities_kernel<<<grid, 256, 0, stream>>>(A, n1, n2, actions, u1, u2);
    HPCML_LAUNCH_CHECK("gather_utilities_kernel");
}

void launch_averages(const PlayerDevice& p1, const PlayerDevice& p2, int games, double weight, double* x, double* y,
                     cudaStream_t stream) {
    for (const auto& [p, out] : {std::pair{&p1, x}, std::pair{&p2, y}}) {
        const std::size_t entries = static_cast<std::size_t>(games) * p->n;
        averages_kernel<<<grid_for(entries), 256, 0, stream>>>(p->sum, entries, weight, out);
        HPCML_LAUNCH_CHECK("averages_kernel");
    }
}

void launch_evaluate(const double* x, const double* u1, int n1, const double* u2, int n2, int games, double* value,
                     double* gap, int gap_stride, cudaStream_t stream) {
    evaluate_kernel<<<static_cast<unsigned>(games), kMoveThreads, 0, stream>>>(x, u1, n1, u2, n2, value, gap,
                                                                               gap_stride);
    HPCML_LAUNCH_CHECK("evaluate_kernel");
}

void launch_max_regret(const PlayerDevice& p1, const PlayerDevice& p2, int games, double* max_regret,
                       cudaStream_t stream) {
    max_regret_kernel<<<static_cast<unsigned>(games), kMoveThreads, 0, stream>>>(p1.R, p1.n, p2.R, p2.n, max_regret);
    HPCML_LAUNCH_CHECK("max_regret_kernel");
}

}  // namespace hpcml::detail::regret
