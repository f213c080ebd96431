// Regret matching on the CPU, every variant, in double precision over float32 payoffs.
//
// Cost per iteration: one pass over A (4 * n1 * n2 bytes) for simultaneous variants with the
// fused method, two passes for alternating variants (player 2 needs player 1's new strategy)
// and for the naive method; O(n1 + n2) for the strategy updates. Memory-bound for large games.
#include <algorithm>
#include <limits>
#include <vector>

#ifdef _OPENMP
#include <omp.h>
#endif

#include "common/memory.hpp"
#include "math.hpp"
#include "regret_impl.hpp"

namespace hpcml::detail::regret {

namespace {

using Vector = HostBuffer<double>;

// sum_j row[j] * y[j] in 8 interleaved partial sums, combined in a fixed order: vectorisable
// without reassociating, and the same on every thread layout.
inline double dot(const float* row, const double* y, std::size_t n) {
    double lanes[8] = {};
    std::size_t j = 0;
    for (; j + 8 <= n; j += 8)
        for (int l = 0; l < 8; ++l) lanes[l] += row[j + l] * y[j + l];
    for (; j < n; ++j) lanes[j % 8] += row[j] * y[j];
    return ((lanes[0] + lanes[4]) + (lanes[1] + lanes[5])) + ((lanes[2] + lanes[6]) + (lanes[3] + lanes[7]));
}

Vector zeros(MemoryTracker& tracker, std::size_t n, double value = 0.0) {
    Vector v(tracker, n, "regret matching state");
    std::fill(v.data(), v.data() + n, value);
    return v;
}

// u1 = A y when u1 is non-null and u2 = -(x^T A) when u2 is non-null. Every entry is summed in
// the same order (j ascending for u1, i ascending for u2) whatever the threading, so results do
// not depend on it. Serial: one pass over A for both. Parallel: rows for u1, then column strips
// for u2 (two passes, each thread owning whole outputs: no reduction between threads).
void utilities(const Game& g, const double* x, const double* y, double* u1, double* u2, bool parallel) {
    if (!parallel) {
        if (u2) std::fill(u2, u2 + g.n2, 0.0);
        for (std::size_t i = 0; i < g.n1; ++i) {
            const float* row = g.A + i * g.n2;
            if (u1) u1[i] = dot(row, y, g.n2);
            if (u2 && x[i] != 0.0)
                for (std::size_t j = 0; j < g.n2; ++j) u2[j] -= x[i] * row[j];
        }
        return;
    }
    if (u1) {
#pragma omp parallel for schedule(static)
        for (std::size_t i = 0; i < g.n1; ++i) u1[i] = dot(g.A + i * g.n2, y, g.n2);
    }
    if (u2) {
        constexpr std::size_t kStrip = 256;  // columns per task: 1 KiB of each row
#pragma omp parallel for schedule(static)
        for (std::size_t j0 = 0; j0 < g.n2; j0 += kStrip) {
            const std::size_t j1 = std::min(g.n2, j0 + kStrip);
            std::fill(u2 + j0, u2 + j1, 0.0);
            for (std::size_t i = 0; i < g.n1; ++i) {
                if (x[i] == 0.0) continue;
                const float* row = g.A + i * g.n2;
                for (std::size_t j = j0; j < j1; ++j) u2[j] -= x[i] * row[j];
            }
        }
    }
}

struct Player {
    Player(MemoryTracker& tracker, std::size_t n)
        : R(zeros(tracker, n)), Q(zeros(tracker, n)), sum(zeros(tracker, n)),
          s(zeros(tracker, n, 1.0 / static_cast<double>(n))), u(zeros(tracker, n)), z(zeros(tracker, n)) {}
    Vector R, Q, sum, s, u, z;  // the schedule's state (math.hpp); z: the next strategy's numerators

    std::size_t size() const { return s.size(); }
    double expected() const {
        double e = 0.0;
        for (std::size_t k = 0; k < size(); ++k) e += u[k] * s[k];
        return e;
    }
    void move(const Schedule& sc, int t, double baseline) {
        double total = 0.0;
        for (std::size_t k = 0; k < size(); ++k) total += z[k] = sc.observe(t, u[k], baseline, s[k], R[k], Q[k], sum[k]);
        for (std::size_t k = 0; k < size(); ++k) s[k] = sc.play(t, z[k], total, size(), sum[k]);
    }
    std::vector<double> average(const Schedule& sc, int t) const {
        std::vector<double> out(size());
        for (std::size_t k = 0; k < size(); ++k) out[k] = sum[k] / sc.total_weight(t);
        return out;
    }
};

}  // namespace

Evaluation evaluate(const Game& g, const double* x, const double* y, bool parallel, MemoryTracker& tracker) {
    Vector ay = zeros(tracker, g.n1), xa = zeros(tracker, g.n2);
    utilities(g, x, y, ay.data(), xa.data(), parallel);  // xa = -(x^T A)
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

GameSolution cpu_solve(const Game& g, const RegretOptions& o, bool parallel, MemoryTracker& tracker) {
    const Schedule sc = make_schedule(o);
    Player p[2] = {Player(tracker, g.n1), Player(tracker, g.n2)};
    const bool fused = o.method == Method::Fused;
    // One player's utilities in a pass of their own: the naive method's lands in a fresh
    // temporary first, as the eager program's GEMV result does.
    auto pass = [&](int player) {
        Vector fresh = fused ? Vector() : zeros(tracker, p[player].size());
        double* u = fused ? p[player].u.data() : fresh.data();
        if (player == 0) utilities(g, nullptr, p[1].s.data(), u, nullptr, parallel);
        if (player == 1) utilities(g, p[0].s.data(), nullptr, nullptr, u, parallel);
        if (!fused) std::copy(u, u + p[player].size(), p[player].u.data());
    };
    GameSolution out;
    for (int t = 1; t <= sc.iterations; ++t) {
        for (int turn = 0; turn < sc.turns(); ++turn) {
            const bool moves[2] = {sc.moves(turn, 0), sc.moves(turn, 1)};
            std::size_t action[2] = {0, 0};
            if (sc.sampled) {
                for (int q = 0; q < 2; ++q)
                    action[q] = sample(p[q].s.data(), p[q].size(), uniform_draw(sc.rng_seed, g.index, t, sc.draw_key(turn, q)));
                if (moves[0])
                    for (std::size_t i = 0; i < g.n1; ++i) p[0].u[i] = g.A[i * g.n2 + action[1]];
                if (moves[1])
                    for (std::size_t j = 0; j < g.n2; ++j) p[1].u[j] = -static_cast<double>(g.A[action[0] * g.n2 + j]);
            } else if (moves[0] && moves[1] && fused) {
                utilities(g, p[0].s.data(), p[1].s.data(), p[0].u.data(), p[1].u.data(), parallel);
            } else {
                for (int q = 0; q < 2; ++q)
                    if (moves[q]) pass(q);
            }
            for (int q = 0; q < 2; ++q)
                if (moves[q]) p[q].move(sc, t, sc.sampled ? p[q].u[action[q]] : p[q].expected());
        }
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
