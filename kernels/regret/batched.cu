// Regret matching on the GPU for many small games at once (regret_batched_kernel); the large-game
// path is large_games.cu. It runs the schedule of math.hpp: its observe() and play() are the
// per-entry arithmetic, so the kernel supplies only utilities and sums.
//
// A group of `size` lanes per game (the larger action count, or half of it above 32 actions, so
// that a warp holds 32 / size games: ten 3 x 3 games), the game's payoffs in shared memory, every
// iteration inside the kernel. Lane l of a group owns actions l and l + size (P = 2 only for
// 33..64 actions) of both players, whose state (true regret,
// accumulator, average sum, strategy, utility) lives in registers in double precision. Payoff
// rows are stored with an odd stride (n2 | 1) so the lanes of a group, reading A[l][j] for one
// j, hit distinct banks. Per iteration a group reads n1 n2 floats from shared memory once per
// player that moves: launch-free. Every sum is taken in the CPU backend's
// order (math.hpp's dot for A y, the CPU's four-row groups for x^T A, entry order for the
// expected utility, the strategy total and the value, each entry shuffled from its lane) and this
// file is compiled without FMA contraction, so this kernel gives the CPU's results to the bit:
// the dynamics of small games can be chaotic and would amplify any other rounding. It is
// latency-bound (no floor is stated): the machine-code report (bench/sass_report.py) reads, for
// one iteration of a game on one lane, 1674 instructions (inner loops counted once), 246
// shared-memory accesses and 103 registers: two 8-warp blocks per SM, 160 resident 3 x 3 games,
// where power-of-two groups of 4 lanes (86 registers, also two blocks) held 128.
#include <algorithm>
#include <cfloat>
#include <climits>

#include "common/cuda_check.hpp"
#include "cuda_launchers.hpp"

namespace hpcml::detail::regret {

namespace {

constexpr unsigned kFullMask = 0xffffffffu;

// ---------------------------------------------------------------------------------------------
// Batched small games: a group of lanes per game.

// A group of `size` lanes of one warp per game: the larger action count up to 32 (3 lanes for
// a 3 x 3 game, ten games per warp), half of it (rounded up) from 33 to 64 actions, where lane l
// owns actions l and l + size (P = 2). The warp's lanes past its last whole group (32 mod size of
// them) are idle: they own no action and write nothing, but take every shuffle (each is the whole
// warp's) beside the group before them.
struct Group {
    int size, base, lane;  // the group is lanes base .. base + size - 1 of the warp; lane: this one's index in it
    bool idle;
    __device__ int entry(int k) const { return lane + size * k; }  // this lane's k-th action
    __device__ bool holds(int k, int n) const { return !idle && entry(k) < n; }
    __device__ double from(double v, int k) const { return __shfl_sync(kFullMask, v, base + k); }
    __device__ int from_first(int v) const { return __shfl_sync(kFullMask, v, base); }
    __device__ double max(double v) const {  // over the group's lanes
        double m = from(v, 0);
        for (int k = 1; k < size; ++k) m = fmax(m, from(v, k));
        return m;
    }
};

template <int P>  // actions per lane
struct LanePlayer {
    double R[P], Q[P], sum[P], s[P], u[P];
    int n;
};

template <int P>
__device__ void lane_reset(LanePlayer<P>& p, int n, const Group& g) {
    p.n = n;
    for (int k = 0; k < P; ++k) {
        p.R[k] = p.Q[k] = p.sum[k] = p.u[k] = 0.0;
        p.s[k] = g.holds(k, n) ? 1.0 / n : 0.0;
    }
}

template <int P>
__device__ void lane_store(const double (&v)[P], int n, double* dst, const Group& g) {
    for (int k = 0; k < P; ++k)
        if (g.holds(k, n)) dst[g.entry(k)] = v[k];
}

// sum_k v_k over n entries in entry order (the CPU's), entry k shuffled from the lane that
// holds it; every lane of the group gets it. n is the same for every game of the launch, so
// every lane of the warp takes each shuffle.
template <int P>
__device__ double ordered_sum(const double (&v)[P], int n, const Group& g) {
    double total = 0.0;
    for (int p = 0; p < P; ++p)
#pragma unroll 1
        for (int k = 0; k < g.size && p * g.size + k < n; ++k) total += g.from(v[p], k);
    return total;
}

// The move of math.hpp: observe every entry against the baseline, then play.
template <int P>
__device__ void lane_move(LanePlayer<P>& p, const Schedule& sc, int t, double baseline, const Group& g) {
    double z[P];
    for (int k = 0; k < P; ++k)
        z[k] = g.holds(k, p.n) ? sc.observe(t, p.u[k], baseline, p.s[k], p.R[k], p.Q[k], p.sum[k]) : 0.0;
    const double total = ordered_sum(z, p.n, g);
    for (int k = 0; k < P; ++k)
        if (g.holds(k, p.n)) p.s[k] = sc.play(t, z[k], total, static_cast<std::size_t>(p.n), p.sum[k]);
}

template <int P>
__device__ double lane_expected(const LanePlayer<P>& p, const Group& g) {
    double e[P];
    for (int k = 0; k < P; ++k) e[k] = p.u[k] * p.s[k];
    return ordered_sum(e, p.n, g);
}

// u1[i] = sum_j a[i][j] y[j] for the lane's rows i (a's rows `stride` floats apart).
template <int P>
__device__ void lane_row_utilities(const float* a, int n1, int n2, int stride, const double* y, double (&u1)[P],
                                   const Group& g) {
    for (int k = 0; k < P; ++k) {
        if (g.holds(k, n1)) u1[k] = dot(a + g.entry(k) * stride, y, static_cast<std::size_t>(n2));
    }
}

// u2[j] = -sum_i x[i] a[i][j] for the lane's columns j, in the CPU's order (utilities_tile in
// cpu.cpp): four rows at a time, ((x0 a0 + x1 a1) + (x2 a2 + x3 a3)), skipping four zero
// weights, then the remaining rows one by one.
template <int P>
__device__ void lane_column_utilities(const float* a, int n1, int n2, int stride, const double* x, double (&u2)[P],
                                      const Group& g) {
    for (int k = 0; k < P; ++k) {
        if (!g.holds(k, n2)) continue;
        const int j = g.entry(k);
        double acc = 0.0;
        int i = 0;
        for (; i + 4 <= n1; i += 4) {
            if (x[i] == 0.0 && x[i + 1] == 0.0 && x[i + 2] == 0.0 && x[i + 3] == 0.0) continue;
            const float* c = a + i * stride + j;
            acc += (x[i] * c[0] + x[i + 1] * c[stride]) + (x[i + 2] * c[2 * stride] + x[i + 3] * c[3 * stride]);
        }
        for (; i < n1; ++i) acc += x[i] * a[i * stride + j];
        u2[k] = -acc;
    }
}

// The averages' value and exact gap; uses sx and sy.
template <int P>
__device__ void lane_evaluate(const LanePlayer<P>& p1, const LanePlayer<P>& p2, double weight, const float* a,
                              int stride, double* sx, double* sy, const Group& g, double& value, double& gap) {
    double x[P], y[P], u1[P] = {}, u2[P] = {};
    for (int k = 0; k < P; ++k) {
        x[k] = p1.sum[k] / weight;
        y[k] = p2.sum[k] / weight;
    }
    __syncwarp();  // every lane is done with the previous contents of sx, sy
    lane_store(x, p1.n, sx, g);
    lane_store(y, p2.n, sy, g);
    __syncwarp();
    lane_row_utilities(a, p1.n, p2.n, stride, sy, u1, g);
    lane_column_utilities(a, p1.n, p2.n, stride, sx, u2, g);
    double v[P], best_row = -DBL_MAX, best_col = -DBL_MAX;
    for (int k = 0; k < P; ++k) {
        v[k] = x[k] * u1[k];
        if (g.holds(k, p1.n)) best_row = fmax(best_row, u1[k]);
        if (g.holds(k, p2.n)) best_col = fmax(best_col, u2[k]);
    }
    value = ordered_sum(v, p1.n, g);
    gap = fmax(0.0, g.max(best_row) + g.max(best_col));
}

// The batched kernel's side of iterate() (math.hpp): one game on a group of lanes.
template <int P>
struct GroupIteration {
    const Schedule& sc;
    Group g;
    LanePlayer<P>& p1;
    LanePlayer<P>& p2;
    const float* pay;
    int n1, n2, stride;
    double *sx, *sy;         // the strategies as they stand
    std::uint64_t key;       // the game's number in the caller's batch
    int action[2] = {0, 0};  // the turn's sampled actions

    __device__ void utilities(int t, int turn, const bool* moves) {
        __syncwarp();  // the previous turn's reads of sx, sy (and the payoff copy) are done
        lane_store(p1.s, n1, sx, g);
        lane_store(p2.s, n2, sy, g);
        __syncwarp();
        if (!sc.sampled) {
            if (moves[0]) lane_row_utilities(pay, n1, n2, stride, sy, p1.u, g);
            if (moves[1]) lane_column_utilities(pay, n1, n2, stride, sx, p2.u, g);
            return;
        }
        if (g.lane == 0 && !g.idle) {
            action[0] = static_cast<int>(
                sample(sx, static_cast<std::size_t>(n1), uniform_draw(sc.rng_seed, key, t, sc.draw_key(turn, 0))));
            action[1] = static_cast<int>(
                sample(sy, static_cast<std::size_t>(n2), uniform_draw(sc.rng_seed, key, t, sc.draw_key(turn, 1))));
        }
        action[0] = g.from_first(action[0]);
        action[1] = g.from_first(action[1]);
        for (int k = 0; k < P; ++k) {
            if (moves[0] && g.holds(k, n1)) p1.u[k] = pay[g.entry(k) * stride + action[1]];
            if (moves[1] && g.holds(k, n2)) p2.u[k] = -static_cast<double>(pay[action[0] * stride + g.entry(k)]);
        }
    }
    __device__ void move(int t, const bool* moves) {
        // The sampled baseline is the payoff of both draws: u1[i] = A[i][j], u2[j] = -A[i][j].
        const double drawn = sc.sampled ? pay[action[0] * stride + action[1]] : 0.0;
        if (moves[0]) lane_move(p1, sc, t, sc.sampled ? drawn : lane_expected(p1, g), g);
        if (moves[1]) lane_move(p2, sc, t, sc.sampled ? -drawn : lane_expected(p2, g), g);
    }
};

// Shared memory of one game, in doubles: x, y, then the payoffs (n1 rows of n2 | 1 floats).
__host__ __device__ inline int payoff_stride(int n2) { return n2 | 1; }
__host__ __device__ inline int game_doubles(int n1, int n2) { return n1 + n2 + (n1 * payoff_stride(n2) + 1) / 2; }

template <int P>
__global__ void regret_batched_kernel(const BatchedArgs a, int group_size) {
    extern __shared__ double shared[];
    const int lane_in_warp = static_cast<int>(threadIdx.x) % 32, warp = static_cast<int>(threadIdx.x) / 32;
    const int groups = 32 / group_size;  // games per warp
    const int group = min(lane_in_warp / group_size, groups - 1);
    const Group g{group_size, group * group_size, lane_in_warp - group * group_size,
                  lane_in_warp >= groups * group_size};
    const int slot = warp * groups + group;  // the block's game slot
    const int game_number = static_cast<int>(blockIdx.x) * (static_cast<int>(blockDim.x) / 32 * groups) + slot;
    // Groups past the last game redo the last game and write nothing: every lane of a warp
    // stays for the shuffles.
    const bool owner = !g.idle && game_number < a.games;
    const int game = min(game_number, a.games - 1);
    const Schedule& sc = a.schedule;
    const int n1 = a.n1, n2 = a.n2, stride = payoff_stride(n2);

    double* sx = shared + slot * game_doubles(n1, n2);
    double* sy = sx + n1;
    float* pay = reinterpret_cast<float*>(sy + n2);
    const float* A = a.A + static_cast<std::size_t>(game) * n1 * n2;
    if (!g.idle)
        for (int e = g.lane; e < n1 * n2; e += g.size) pay[e / n2 * stride + e % n2] = A[e];

    LanePlayer<P> p1, p2;
    lane_reset(p1, n1, g);
    lane_reset(p2, n2, g);
    const std::uint64_t key = sc.game_key(a.first_game + static_cast<std::uint64_t>(game));
    double value = 0.0, gap = 0.0;

    GroupIteration<P> backend{sc, g, p1, p2, pay, n1, n2, stride, sx, sy, key};
    for (int t = 1; t <= sc.iterations; ++t) {
        iterate(sc, t, backend);
        if (sc.records_at(t)) {
            lane_evaluate(p1, p2, sc.total_weight(t), pay, stride, sx, sy, g, value, gap);
            if (owner && g.lane == 0)
                a.curve[static_cast<std::size_t>(game) * sc.records() + t / sc.record_every - 1] = gap;
        }
    }

    const double weight = sc.total_weight(sc.iterations);
    lane_evaluate(p1, p2, weight, pay, stride, sx, sy, g, value, gap);
    double max_regret = -DBL_MAX;
    for (int k = 0; k < P; ++k) {
        const int e = g.entry(k);
        if (g.holds(k, n1)) {
            if (owner) a.row_strategy[static_cast<std::size_t>(game) * n1 + e] = p1.sum[k] / weight;
            max_regret = fmax(max_regret, p1.R[k]);
        }
        if (g.holds(k, n2)) {
            if (owner) a.col_strategy[static_cast<std::size_t>(game) * n2 + e] = p2.sum[k] / weight;
            max_regret = fmax(max_regret, p2.R[k]);
        }
    }
    max_regret = g.max(max_regret);
    if (owner && g.lane == 0) {
        a.value[game] = value;
        a.gap[game] = gap;
        a.max_regret[game] = max_regret;
    }
}

template <int P>
void launch_batched_with(const BatchedArgs& a, int group_size, cudaStream_t stream) {
    const int games_per_warp = 32 / group_size;
    const std::size_t game_bytes = static_cast<std::size_t>(game_doubles(a.n1, a.n2)) * sizeof(double);
    // Up to 8 warps per block within the default 48 KB of shared memory (a 64 x 64 game takes
    // 17 KB: two warps), no more than the games need; the SM's shared memory limits residency
    // either way.
    const std::size_t warps_needed =
        (static_cast<std::size_t>(a.games) + games_per_warp - 1) / static_cast<std::size_t>(games_per_warp);
    const int warps = static_cast<int>(std::clamp<std::size_t>((48 * 1024) / (games_per_warp * game_bytes), 1,
                                                               std::min<std::size_t>(8, warps_needed)));
    const int games_per_block = warps * games_per_warp;
    const unsigned blocks = static_cast<unsigned>((a.games + games_per_block - 1) / games_per_block);
    regret_batched_kernel<P><<<blocks, warps * 32, games_per_block * game_bytes, stream>>>(a, group_size);
    HPCML_LAUNCH_CHECK("regret_batched_kernel");
}

}  // namespace

__global__ void eps_bound_kernel(double* max_regret, std::size_t games, int iterations) {
    const std::size_t stride = static_cast<std::size_t>(gridDim.x) * blockDim.x;
    for (std::size_t g = static_cast<std::size_t>(blockIdx.x) * blockDim.x + threadIdx.x; g < games; g += stride)
        max_regret[g] = 2.0 * max_regret[g] / iterations;  // as the host path: the same bits
}

void launch_eps_bound(double* max_regret, std::size_t games, int iterations, cudaStream_t stream) {
    eps_bound_kernel<<<blocks_for(games), 256, 0, stream>>>(max_regret, games, iterations);
    HPCML_LAUNCH_CHECK("eps_bound_kernel");
}

void launch_batched(const BatchedArgs& a, cudaStream_t stream) {
    const int n = std::max(a.n1, a.n2);  // the lanes of a game's group: one action each, or two above 32
    if (n <= 32) return launch_batched_with<1>(a, n, stream);
    launch_batched_with<2>(a, (n + 1) / 2, stream);
}

}  // namespace hpcml::detail::regret
