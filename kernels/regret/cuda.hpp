// The regret-matching family's CUDA side (fused.cu, naive.cu, cuda_driver.cpp).
#pragma once

#include <cuda_runtime.h>

#include <vector>

#include "common/memory.hpp"
#include "regret_impl.hpp"

namespace hpcml::detail::regret {

// Games up to this many actions per player are solved by the batched kernel (a warp per game,
// payoffs in shared memory); larger ones by the large-game path, one game at a time.
constexpr std::size_t kMaxBatchedActions = 64;

// Solves `batch` games of n1 x n2 (host payoffs) on context's device.
std::vector<GameSolution> cuda_solve(const float* A, std::size_t batch, std::size_t n1, std::size_t n2,
                                     const RegretOptions& options, const Context& context, MemoryTracker& tracker);

// The naive baseline (naive.cu): the seed's eager program on one game, float32 state, one
// launch per operation (cuBLAS GEMVs, dots and axpys, elementwise kernels) and fresh
// temporaries every iteration. `index` is the game's number in its batch (sampled draws).
GameSolution naive_solve(const float* A, std::size_t n1, std::size_t n2, std::size_t index, const RegretOptions& options,
                         cudaStream_t stream, MemoryTracker& tracker);

// ---- launchers (device pointers) ----

// Options and per-game outputs of the batched kernel.
struct BatchedArgs {
    const float* A;  // batch x n1 x n2
    int batch, n1, n2;
    RegretVariant variant;
    bool alternating, sampled;
    Averaging averaging;
    int iterations, record_every, records;
    unsigned long long rng_seed;
    double* row_strategy;  // batch x n1
    double* col_strategy;  // batch x n2
    double* value;         // batch
    double* gap;           // batch
    double* max_regret;    // batch: max over both players of the cumulative regret
    double* curve;         // batch x records
};
void launch_batched(const BatchedArgs& args, cudaStream_t stream);

// The large-game path's device state for one player.
struct PlayerDevice {
    double *q, *r_total, *m, *sum, *s, *u;
    int n;
};

// u1 = A y (when u1 is non-null) and u2 = -(x^T A) (when u2 is non-null), in one pass over A
// when both are asked for. Partial sums go through u1_partial (dual_gemv_row_partials(n2) x n1
// doubles) and u2_partial (dual_gemv_row_blocks(n1, n2) x n2 doubles).
void launch_dual_gemv(const float* A, int n1, int n2, const double* x, const double* y, double* u1, double* u2,
                      double* u1_partial, double* u2_partial, cudaStream_t stream);
int dual_gemv_row_blocks(int n1, int n2);
int dual_gemv_row_partials(int n2);

// Sum of the averaging weights of iterations 1..t.
double averaging_total(RegretVariant variant, Averaging averaging, int t);

// One regret-matching step for up to two players on iteration *t (1-based, in device memory so
// that a captured graph replays unchanged): observe u, then average and play the next strategy
// in the variant's order (the seed averages after playing).
struct UpdateArgs {
    PlayerDevice players[2];
    int count;
    RegretVariant variant;
    Averaging averaging;
    const int* t;
};
void launch_update(const UpdateArgs& args, cudaStream_t stream);
void launch_advance(int* t, cudaStream_t stream);

// Sampled variant: action[k] ~ strategy[k] for up to two players, with the CPU's Philox keys
// (game 0, iteration *t, player[k]).
struct SampleArgs {
    const double* strategy[2];
    int n[2], player[2], count;
    unsigned long long seed, game;
    const int* t;
    int* action;
};
void launch_sample(const SampleArgs& args, cudaStream_t stream);
// u1 = A[:, *column] and u2 = -A[*row, :].
void launch_gather_row_utilities(const float* A, int n1, int n2, const int* column, double* u1, cudaStream_t stream);
void launch_gather_column_utilities(const float* A, int n1, int n2, const int* row, double* u2, cudaStream_t stream);

// x = p1.sum / weight, y = p2.sum / weight.
void launch_averages(const PlayerDevice& p1, const PlayerDevice& p2, double weight, double* x, double* y,
                     cudaStream_t stream);
// With u1 = A y and u2 = -(x^T A): out[0] = x^T A y, out[1] = max(u1) + max(u2) (the gap).
void launch_evaluate(const double* x, const double* u1, int n1, const double* u2, int n2, double* out,
                     cudaStream_t stream);

}  // namespace hpcml::detail::regret
