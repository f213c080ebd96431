// The regret-matching family's kernel launchers (batched.cu, dual_gemv.cu, large_games.cu, naive.cu),
// which cuda_driver.cpp and cuda_large.cpp call; pointers are device pointers. Every kernel follows
// the schedule of math.hpp; none of them asks which variant runs.
#pragma once

#include <cuda_runtime.h>

#include <cstddef>
#include <cstdint>
#include <vector>

#include "backends.hpp"
#include "common/cuda_check.hpp"
#include "common/memory.hpp"
#include "math.hpp"

namespace hpcml::detail::regret {

// Games up to kMaxBatchedActions (backends.hpp) actions per player are solved by the batched
// kernel (a group of lanes per game, payoffs in shared memory); larger ones by the large-game path.
static_assert(kMaxBatchedActions <= kTileRows && kMaxBatchedActions <= kTileColumns,
              "the batched kernel equals the CPU to the bit only for games within one CPU tile");

// The GPU solvers' values (as CUB's tuning policies). Those marked "order" fix a summation order,
// so results depend on them: the same on every GPU (tests compare with the CPU to 1e-9); the
// others change speed and memory only. H200 is the run of bench/results/gpu-2026-11-28-819e2213487f/.
struct GpuPolicy {
    int gemv_threads;         // order: a dual GEMV block's threads (dual_gemv.cu)
    int columns_per_thread;   // order: each a band of gemv_threads x columns_per_thread columns
    int rows_in_flight;       // rows of loads a GEMV thread issues before it waits
    int split_blocks_per_sm;  // order: row splits for about this many GEMV blocks per SM
    int move_block_entries;   // order: a move's partial sums go per block of this many entries
    int move_threads;         // a move block's threads (large_games.cu)
    int graph_iterations;     // a large game's captured graphs: of this many iterations, and of 1
    std::size_t chunk_games;  // batched games per chunk (cuda_driver.cpp)
    std::size_t chunk_bytes;  // payoffs per chunk of games (cuda_results.hpp)
};
inline constexpr GpuPolicy kGpu{
    .gemv_threads = 256,         // 16384^2, 20 iterations: 0.798 of the HBM floor (H200); no other size timed
    .columns_per_thread = 4,     // one 128-bit load a row (the machine-code budget's); no other width timed
    .rows_in_flight = 4,         // 64 bytes in flight a thread: one memory round trip a step (predicted); not timed
    .split_blocks_per_sm = 4,    // not timed
    .move_block_entries = 1024,  // a few µs a move, against tens at 16 blocks for n = 16384 (predicted); not timed
    .move_threads = 256,         // 4 entries a thread loaded before any store (predicted); not timed
    .graph_iterations = 8,       // not timed
    .chunk_games = std::size_t{1} << 20,  // 131072 warps of 3 x 3 games fill any GPU; 1e5 3 x 3 games: 58.9 ms (H200)
    .chunk_bytes = std::size_t{1} << 30,  // bounds the buffers (a memory cap, not timed)
};

// The naive baseline (naive.cu): the seed's eager program, float32 state, one launch per
// operation (cuBLAS GEMVs, dots and asums, elementwise kernels), fresh temporaries every
// iteration, one game after another with one cuBLAS handle for the call.
std::vector<GameSolution> naive_solve(const float* A, std::size_t batch, std::size_t n1, std::size_t n2,
                                      const Schedule& schedule, cudaStream_t stream, MemoryTracker& tracker);

// ---- launchers (device pointers) ----

// The batched kernel: games x n1 x n2 payoffs, every iteration inside one launch.
struct BatchedArgs {
    const float* A;  // games x n1 x n2
    int games, n1, n2;
    std::uint64_t first_game;  // the number of game 0 in the caller's batch: keys the sampled draws
    Schedule schedule;
    double* row_strategy;  // games x n1
    double* col_strategy;  // games x n2
    double* value;         // games
    double* gap;           // games
    double* max_regret;    // games: max over both players of the true cumulative regret
    double* curve;         // games x schedule.records(): the gaps before the last (which is `gap`)
};
void launch_batched(const BatchedArgs& args, cudaStream_t stream);
// max_regret[g] = 2 max_regret[g] / iterations: the seed's eps bound, in place.
void launch_eps_bound(double* max_regret, std::size_t games, int iterations, cudaStream_t stream);

// Grids of the large-game path's elementwise kernels: at most 4096 blocks (grid-stride loops).
inline unsigned grid_for(std::size_t n) { return blocks_for(n, 256, 4096); }

// The large-game path's state for one player: each field holds `games` rows of n entries.
struct PlayerDevice {
    double *R, *Q, *sum, *s, *u;
    int n;
};

// Zero regrets, accumulators and sums; uniform strategies.
void launch_reset(const PlayerDevice& p, int games, cudaStream_t stream);

// For every game g (A + g n1 n2): u1 = A y (when u1 is non-null) and u2 = -(x^T A) (when u2 is
// non-null), in one pass over A when both are asked for; x, y, u1, u2 hold a row per game.
// Partial sums go through u1_partial (games x row_partials x n1 doubles) and u2_partial
// (games x row_splits x n2 doubles), which the caller allocates for the plan.
struct DualGemv {
    int games, n1, n2, row_splits, row_partials;
    double *u1_partial, *u2_partial;
};
DualGemv plan_dual_gemv(int games, int n1, int n2, int multiprocessors);
void launch_dual_gemv(const DualGemv& plan, const float* A, const double* x, const double* y, double* u1, double* u2,
                      cudaStream_t stream);

// A turn's move for the players that move, on iteration *t (in device memory, so that a
// captured graph replays unchanged). actions: null for full information, else the turn's sampled
// actions (game g: actions[2 g + player]), whose own entry is the baseline. The move runs in
// blocks of kGpu.move_block_entries entries per player and game, whose partial sums go through
// `partial` (2 x count x games x move_blocks doubles, move_blocks = move_blocks(the larger n)).
HPCML_HD inline int move_blocks(int n) { return (n + kGpu.move_block_entries - 1) / kGpu.move_block_entries; }
struct MoveArgs {
    PlayerDevice players[2];
    int player[2];  // which player each block row is (0 = row player)
    int count, games;
    Schedule schedule;
    const int* t;
    const int* actions;
    double* partial;
    int move_blocks;
};
void launch_move(const MoveArgs& args, cudaStream_t stream);
void launch_advance(int* t, cudaStream_t stream);

// The turn's sampled actions of both players in every game: actions[2 g + p] ~ strategy p,
// drawn with the CPU's Philox keys (game first_game + g, iteration *t, draw_key(turn, p)).
struct SampleArgs {
    const double* strategy[2];
    int n[2], games, turn;
    std::uint64_t first_game;
    Schedule schedule;
    const int* t;
    int* actions;
};
void launch_sample(const SampleArgs& args, cudaStream_t stream);
// u1 = A[:, j] (when u1 is non-null) and u2 = -A[i, :] (when u2 is non-null) for the sampled
// (i, j) of each game.
void launch_gather_utilities(const float* A, int games, int n1, int n2, const int* actions, double* u1, double* u2,
                             cudaStream_t stream);

// x = p1.sum / weight, y = p2.sum / weight, every game.
void launch_averages(const PlayerDevice& p1, const PlayerDevice& p2, int games, double weight, double* x, double* y,
                     cudaStream_t stream);
// With u1 = A y and u2 = -(x^T A), per game g: value[g] = x^T A y (when value is non-null) and
// gap[g * gap_stride] = max(u1) + max(u2), the exact Nash gap.
void launch_evaluate(const double* x, const double* u1, int n1, const double* u2, int n2, int games, double* value,
                     double* gap, int gap_stride, cudaStream_t stream);
// max_regret[g] = the largest true cumulative regret of either player in game g.
void launch_max_regret(const PlayerDevice& p1, const PlayerDevice& p2, int games, double* max_regret,
                       cudaStream_t stream);

}  // namespace hpcml::detail::regret
