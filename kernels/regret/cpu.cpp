// Regret matching on the CPU, every variant, in double precision over float32 payoffs.
//
// Cost per iteration: one pass over A (4 * n1 * n2 bytes) for simultaneous variants with the
// fused method, two passes for alternating variants (player 2 needs player 1's new strategy)
// and for the naive method; O(n1 + n2) for the strategy updates. Memory-bound for large games
// (about 1/16 of A's bytes more for the partials of games over 64 x 4096).
#include <algorithm>
#include <limits>
#include <vector>

#ifdef _OPENMP
#include <omp.h>
#endif

#include "backends.hpp"
#include "common/memory.hpp"
#include "cpu_large.hpp"
#include "math.hpp"

namespace hpcml::detail::regret {

namespace {

using Vector = HostBuffer<double>;

Vector zeros(MemoryTracker& tracker, std::size_t n, double value = 0.0, HostBlock kind = HostBlock::Kept) {
    Vector v(tracker, n, "regret matching state", kind);
    std::fill(v.data(), v.data() + n, value);
    return v;
}

// The pass over A is cut into tiles of kTileRows rows by kTileColumns columns. A tile adds its
// rows' dot products over its columns into a row partial (one per column strip) and x_i A[i, j]
// over its rows into a column partial (one per row block); the partials are then summed in a
// fixed order. Every sum's order depends on the game's shape only, never on threads: one pass
// over A for both players, in parallel, with the same results as serially.
std::size_t tiles_over(std::size_t n, std::size_t tile) { return (n + tile - 1) / tile; }

// out[q] = dot(r[q] + j0, y + j0, j1 - j0) for four rows, to the bit (each row keeps math.hpp's
// eight lanes and their order); interleaving the rows hides the additions' latency and shares
// the loads of y.
inline void dot4(const float* const (&r)[4], std::size_t j0, std::size_t j1, const double* y, double* out) {
    double lanes[4][8] = {};
    std::size_t j = j0;
    for (; j + 8 <= j1; j += 8)
        for (int q = 0; q < 4; ++q)
            for (int l = 0; l < 8; ++l) lanes[q][l] += r[q][j + l] * y[j + l];
    for (int l = 0; l < 8; ++l)
        if (j + l < j1)
            for (int q = 0; q < 4; ++q) lanes[q][l] += r[q][j + l] * y[j + l];
    for (int q = 0; q < 4; ++q) {
        const double* a = lanes[q];
        out[q] = ((a[0] + a[4]) + (a[1] + a[5])) + ((a[2] + a[6]) + (a[3] + a[7]));
    }
}

// One tile: u1_part[i] = sum_j A[i, j] y[j] and u2_part[j] = sum_i x_i A[i, j] over the tile
// (either may be null).
inline void tile_sums(const Game& g, const double* x, const double* y, std::size_t block, std::size_t strip,
                      double* u1_part, double* u2_part) {
    const std::size_t i0 = block * kTileRows, i1 = std::min(g.n1, i0 + kTileRows);
    const std::size_t j0 = strip * kTileColumns, j1 = std::min(g.n2, j0 + kTileColumns);
    if (u2_part) std::fill(u2_part + j0, u2_part + j1, 0.0);
    // Four rows at a time, while they are in cache: their dot products, then one sweep of the
    // column partial for all four (a quarter of its loads and stores), skipped when their
    // weights are all zero (strategies are often sparse; a skipped term would add zeros). The
    // GPU's batched kernel sums its columns in this order too (lane_column_utilities).
    std::size_t i = i0;
    for (; i + 4 <= i1; i += 4) {
        const float* r[4] = {g.A + i * g.n2, g.A + (i + 1) * g.n2, g.A + (i + 2) * g.n2, g.A + (i + 3) * g.n2};
        if (u1_part) dot4(r, j0, j1, y, u1_part + i);
        if (!u2_part) continue;
        const double x0 = x[i], x1 = x[i + 1], x2 = x[i + 2], x3 = x[i + 3];
        if (x0 == 0.0 && x1 == 0.0 && x2 == 0.0 && x3 == 0.0) continue;
        for (std::size_t j = j0; j < j1; ++j)
            u2_part[j] += (x0 * r[0][j] + x1 * r[1][j]) + (x2 * r[2][j] + x3 * r[3][j]);
    }
    for (; i < i1; ++i) {
        const float* row = g.A + i * g.n2;
        if (u1_part) u1_part[i] = dot(row + j0, y + j0, j1 - j0);
        if (!u2_part) continue;
        const double xi = x[i];
        for (std::size_t j = j0; j < j1; ++j) u2_part[j] += xi * row[j];
    }
}

// u1 = A y when u1 is non-null and u2 = -(x^T A) when u2 is non-null, by tiles (above).
class Utilities {
public:
    Utilities(const Game& g, bool parallel, MemoryTracker& tracker)
        : g_(g),
          parallel_(parallel),
          // Games of more than one tile have over 64 actions: FMA sums (cpu_large.cpp), at the
          // avx2 and avx512 levels (cpu_kernel.hpp), over blocks of large_rows() rows (fewer
          // column partials to add up).
          large_(tiles_over(g.n1, kTileRows) * tiles_over(g.n2, kTileColumns) > 1 ? large_tile_sums() : nullptr),
          rows_(large_ ? large_rows(g.n1) : kTileRows),
          blocks_(tiles_over(g.n1, rows_)),
          strips_(tiles_over(g.n2, kTileColumns)),
          // A one-tile game sums straight into its outputs: no partials.
          row_partials_(tracker, single_tile() ? 0 : strips_ * g.n1, "regret row partials"),
          column_partials_(tracker, single_tile() ? 0 : blocks_ * g.n2, "regret column partials") {}

    void operator()(const double* x, const double* y, double* u1, double* u2) {
        if (single_tile()) {  // a small game: its one tile sums straight into the outputs
            tile_sums(g_, x, y, 0, 0, u1, u2);
            if (u2)
                for (std::size_t j = 0; j < g_.n2; ++j) u2[j] = -u2[j];
            return;
        }
        // Then the partials, in chunks of outputs: u1's first, then u2's.
        constexpr std::size_t kChunk = 4096;
        const std::size_t chunks1 = u1 ? tiles_over(g_.n1, kChunk) : 0, chunks2 = u2 ? tiles_over(g_.n2, kChunk) : 0;
        two_phases(
            blocks_ * strips_,
            [&](std::size_t tile) {
                const std::size_t block = tile / strips_, strip = tile % strips_;
                double* u1_part = u1 ? row_partials_.data() + strip * g_.n1 : nullptr;
                double* u2_part = u2 ? column_partials_.data() + block * g_.n2 : nullptr;
                if (large_) {
                    large_(g_, x, y, block * rows_, std::min(g_.n1, (block + 1) * rows_), strip * kTileColumns,
                           std::min(g_.n2, (strip + 1) * kTileColumns), u1_part, u2_part);
                } else {
                    tile_sums(g_, x, y, block, strip, u1_part, u2_part);
                }
            },
            chunks1 + chunks2,
            [&](std::size_t chunk) {
                if (chunk < chunks1) {
                    finish(row_partials_.data(), strips_, g_.n1, 1.0, u1, chunk * kChunk, (chunk + 1) * kChunk);
                } else {
                    chunk -= chunks1;
                    finish(column_partials_.data(), blocks_, g_.n2, -1.0, u2, chunk * kChunk, (chunk + 1) * kChunk);
                }
            });
    }

private:
    // first(0 .. n - 1), then second(0 .. m - 1), on the threads when parallel: one OpenMP region
    // per call (waking threads costs more than a small game's pass), none when serial (a batch
    // calls this thousands of times per game from its own threads).
    template <class First, class Second>
    void two_phases(std::size_t n, First&& first, std::size_t m, Second&& second) const {
        if (!parallel_) {
            for (std::size_t k = 0; k < n; ++k) first(k);
            for (std::size_t k = 0; k < m; ++k) second(k);
            return;
        }
#pragma omp parallel
        {
#pragma omp for schedule(static)
            for (std::size_t k = 0; k < n; ++k) first(k);
                // The loop's barrier: every partial is written before any is summed.
#pragma omp for schedule(static)
            for (std::size_t k = 0; k < m; ++k) second(k);
        }
    }

    // out[k] = sign * sum_p partials[p][k], p ascending, for k in [begin, min(end, n)): partial by
    // partial, so that the additions run across k in vectors (summing each k's partials in turn
    // was a chain of dependent additions, 1.5% of a large game's time).
    static void finish(const double* partials, std::size_t count, std::size_t n, double sign, double* out,
                       std::size_t begin, std::size_t end) {
        end = std::min(n, end);
        std::copy(partials + begin, partials + end, out + begin);
        for (std::size_t p = 1; p < count; ++p)
            for (std::size_t k = begin; k < end; ++k) out[k] += partials[p * n + k];
        for (std::size_t k = begin; k < end; ++k) out[k] *= sign;  // sign is +-1: exact
    }

    bool single_tile() const { return !large_ && blocks_ * strips_ == 1; }

    // Rows per block of the large-game pass (each block's column partial is one thread's, in
    // order): at most 512, at least 64 and a multiple of 8, and at least 8 blocks where that
    // allows, so that games which fit in cache keep every core busy. From the shape alone, so
    // the sums do not depend on the number of threads.
    static std::size_t large_rows(std::size_t n1) { return std::clamp<std::size_t>(round_up(n1 / 8, 8), 64, 512); }

    const Game& g_;
    bool parallel_;
    LargeTileSums large_;
    std::size_t rows_, blocks_, strips_;
    Vector row_partials_, column_partials_;
};

struct Player {
    Player(MemoryTracker& tracker, std::size_t n)
        : R(zeros(tracker, n)),
          Q(zeros(tracker, n)),
          sum(zeros(tracker, n)),
          s(zeros(tracker, n, 1.0 / static_cast<double>(n))),
          u(zeros(tracker, n)),
          z(zeros(tracker, n)) {}
    Vector R, Q, sum, s, u, z;  // the schedule's state (math.hpp); z: the next strategy's numerators

    std::size_t size() const { return s.size(); }
    double expected() const {
        double e = 0.0;
        for (std::size_t k = 0; k < size(); ++k) e += u[k] * s[k];
        return e;
    }
    void move(const Schedule& sc, int t, double baseline) {
        double total = 0.0;
        for (std::size_t k = 0; k < size(); ++k)
            total += z[k] = sc.observe(t, u[k], baseline, s[k], R[k], Q[k], sum[k]);
        for (std::size_t k = 0; k < size(); ++k) s[k] = sc.play(t, z[k], total, size(), sum[k]);
    }
    std::vector<double> average(const Schedule& sc, int t) const {
        std::vector<double> out(size());
        const double weight = sc.total_weight(t);
        for (std::size_t k = 0; k < size(); ++k) out[k] = sum[k] / weight;
        return out;
    }
};

// The CPU's side of iterate() (math.hpp).
struct CpuIteration {
    const Game& g;
    const Schedule& sc;
    Player (&p)[2];
    Utilities& pass_over_a;
    bool fused;
    MemoryTracker& tracker;
    std::size_t action[2] = {0, 0};  // the turn's sampled actions

    void utilities(int t, int turn, const bool* moves) {
        if (sc.sampled) {
            for (int q = 0; q < 2; ++q)
                action[q] = sample(p[q].s.data(), p[q].size(),
                                   uniform_draw(sc.rng_seed, sc.game_key(g.index), t, sc.draw_key(turn, q)));
            if (moves[0])
                for (std::size_t i = 0; i < g.n1; ++i) p[0].u[i] = g.A[i * g.n2 + action[1]];
            if (moves[1])
                for (std::size_t j = 0; j < g.n2; ++j) p[1].u[j] = -static_cast<double>(g.A[action[0] * g.n2 + j]);
        } else if (moves[0] && moves[1] && fused) {
            pass_over_a(p[0].s.data(), p[1].s.data(), p[0].u.data(), p[1].u.data());
        } else {
            for (int q = 0; q < 2; ++q)
                if (moves[q]) own_pass(q);
        }
    }
    void move(int t, const bool* moves) {
        for (int q = 0; q < 2; ++q)
            if (moves[q]) p[q].move(sc, t, sc.sampled ? p[q].u[action[q]] : p[q].expected());
    }

    // One player's utilities in a pass of their own: the naive method's lands in a fresh
    // temporary first, as the eager program's GEMV result does.
    void own_pass(int q) {
        Vector fresh = fused ? Vector() : zeros(tracker, p[q].size(), 0.0, HostBlock::Fresh);
        double* u = fused ? p[q].u.data() : fresh.data();
        if (q == 0) pass_over_a(nullptr, p[1].s.data(), u, nullptr);
        if (q == 1) pass_over_a(p[0].s.data(), nullptr, nullptr, u);
        if (!fused) std::copy(u, u + p[q].size(), p[q].u.data());
    }
};

}  // namespace

Evaluation evaluate(const Game& g, const double* x, const double* y, bool parallel, MemoryTracker& tracker) {
    Vector ay = zeros(tracker, g.n1), xa = zeros(tracker, g.n2);
    Utilities(g, parallel, tracker)(x, y, ay.data(), xa.data());  // xa = -(x^T A)
    Evaluation e;
    double best_row = -std::numeric_limits<double>::infinity(), best_col = -std::numeric_limits<double>::infinity();
    for (std::size_t i = 0; i < g.n1; ++i) {
        best_row = std::max(best_row, ay[i]);
        e.value += x[i] * ay[i];
    }
    for (std::size_t j = 0; j < g.n2; ++j) best_col = std::max(best_col, xa[j]);  // -min(x^T A)
    e.gap = std::max(0.0, best_row + best_col);
    return e;
}

GameSolution cpu_solve(const Game& g, const RegretOptions& o, bool parallel, MemoryTracker& tracker,
                       Progress* progress) {
    const Schedule sc = make_schedule(o);
    Player p[2] = {Player(tracker, g.n1), Player(tracker, g.n2)};
    Utilities pass_over_a(g, parallel, tracker);
    CpuIteration backend{g, sc, p, pass_over_a, o.method != Method::Naive, tracker};
    GameSolution out;
    for (int t = 1; t <= sc.iterations; ++t) {
        iterate(sc, t, backend);
        if (progress) progress->add(1);
        if (sc.records_at(t)) {
            const std::vector<double> x = p[0].average(sc, t), y = p[1].average(sc, t);
            out.curve.push_back({t, evaluate(g, x.data(), y.data(), parallel, tracker).gap});
        }
    }

    out.row_strategy = p[0].average(sc, sc.iterations);
    out.col_strategy = p[1].average(sc, sc.iterations);
    const Evaluation e = evaluate(g, out.row_strategy.data(), out.col_strategy.data(), parallel, tracker);
    out.value = e.value;
    out.gap = e.gap;
    if (sc.records() > 0) out.curve.push_back({sc.iterations, e.gap});
    const double max_regret = std::max(*std::max_element(p[0].R.data(), p[0].R.data() + g.n1),
                                       *std::max_element(p[1].R.data(), p[1].R.data() + g.n2));
    out.eps_bound = 2.0 * max_regret / sc.iterations;
    return out;
}

}  // namespace hpcml::detail::regret
