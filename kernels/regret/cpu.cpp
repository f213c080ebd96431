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

// Sampled utilities: the opponent's sampled action picks a column (player 1) or a row (player 2).
void sampled_row_utility(const Game& g, std::size_t j, double* u1) {
    for (std::size_t i = 0; i < g.n1; ++i) u1[i] = g.A[i * g.n2 + j];
}
void sampled_col_utility(const Game& g, std::size_t i, double* u2) {
    for (std::size_t j = 0; j < g.n2; ++j) u2[j] = -static_cast<double>(g.A[i * g.n2 + j]);
}

struct Player {
    Player(MemoryTracker& tracker, std::size_t n)
        : q(zeros(tracker, n)), r_total(zeros(tracker, n)), m(zeros(tracker, n)), sum(zeros(tracker, n)),
          s(zeros(tracker, n, 1.0 / static_cast<double>(n))), u(zeros(tracker, n)), scratch(zeros(tracker, n)) {}
    Vector q, r_total, m, sum, s, u, scratch;
    double weight = 0.0;  // total averaging weight

    // Adds the instantaneous regret of this iteration's utilities u against strategy s.
    void observe(const RegretOptions& o, int t) {
        double expected = 0.0;
        for (std::size_t k = 0; k < s.size(); ++k) expected += u[k] * s[k];
        for (std::size_t k = 0; k < s.size(); ++k) {
            const double r = u[k] - expected;
            r_total[k] += r;
            q[k] = o.variant == RegretVariant::Seed ? r_total[k] : accumulate(o.variant, q[k], r, t);
            m[k] = r;
        }
    }
    void average(double w) {
        for (std::size_t k = 0; k < s.size(); ++k) sum[k] += w * s[k];
        weight += w;
    }
    void play(const RegretOptions& o) { regret::play(o.variant, q.data(), m.data(), q.size(), s.data(), scratch.data()); }
    std::vector<double> mean() const {
        std::vector<double> out(sum.size());
        for (std::size_t k = 0; k < out.size(); ++k) out[k] = sum[k] / weight;
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
    Player p1(tracker, g.n1), p2(tracker, g.n2);
    const bool seed = o.variant == RegretVariant::Seed;
    const bool simultaneous = seed || !o.alternating;
    const bool fused = o.method == Method::Fused;
    GameSolution out;
    auto record = [&](int t) {
        const std::vector<double> x = p1.mean(), y = p2.mean();
        out.curve.push_back({t, evaluate(g, x.data(), y.data(), parallel, tracker).gap});
    };

    for (int t = 1; t <= o.iterations; ++t) {
        const double w = seed ? 1.0 : average_weight<double>(o.averaging, t);
        if (!seed) {
            p1.play(o);
            p2.play(o);
        }
        if (simultaneous) {
            if (o.sampled) {
                const std::size_t i = sample(p1.s.data(), g.n1, uniform_draw(o.rng_seed, g.index, t, 0));
                const std::size_t j = sample(p2.s.data(), g.n2, uniform_draw(o.rng_seed, g.index, t, 1));
                sampled_row_utility(g, j, p1.u.data());
                sampled_col_utility(g, i, p2.u.data());
            } else if (fused) {
                utilities(g, p1.s.data(), p2.s.data(), p1.u.data(), p2.u.data(), parallel);
            } else {  // the eager program's two GEMVs, each into a fresh temporary
                Vector ay = zeros(tracker, g.n1), xa = zeros(tracker, g.n2);
                utilities(g, nullptr, p2.s.data(), ay.data(), nullptr, parallel);
                utilities(g, p1.s.data(), nullptr, nullptr, xa.data(), parallel);
                std::copy(ay.data(), ay.data() + g.n1, p1.u.data());
                std::copy(xa.data(), xa.data() + g.n2, p2.u.data());
            }
            p1.observe(o, t);
            p2.observe(o, t);
            if (seed) {  // the seed averages the strategies it computes after each update
                p1.play(o);
                p2.play(o);
            }
            p1.average(w);
            p2.average(w);
        } else {
            // Player 1 answers y_t; player 2 answers player 1's new strategy x_{t+1}.
            if (o.sampled) {
                sampled_row_utility(g, sample(p2.s.data(), g.n2, uniform_draw(o.rng_seed, g.index, t, 1)), p1.u.data());
            } else {
                utilities(g, nullptr, p2.s.data(), p1.u.data(), nullptr, parallel);
            }
            p1.observe(o, t);
            p1.average(w);
            p1.play(o);
            if (o.sampled) {
                sampled_col_utility(g, sample(p1.s.data(), g.n1, uniform_draw(o.rng_seed, g.index, t, 0)), p2.u.data());
            } else {
                utilities(g, p1.s.data(), nullptr, nullptr, p2.u.data(), parallel);
            }
            p2.observe(o, t);
            p2.average(w);
        }
        if (o.record_every > 0 && t % o.record_every == 0 && t != o.iterations) record(t);
    }

    out.row_strategy = p1.mean();
    out.col_strategy = p2.mean();
    const Evaluation e = evaluate(g, out.row_strategy.data(), out.col_strategy.data(), parallel, tracker);
    out.value = e.value;
    out.gap = e.gap;
    if (o.record_every > 0) out.curve.push_back({o.iterations, e.gap});
    const double max_regret = std::max(*std::max_element(p1.r_total.data(), p1.r_total.data() + g.n1),
                                       *std::max_element(p2.r_total.data(), p2.r_total.data() + g.n2));
    out.eps_bound = 2.0 * max_regret / o.iterations;
    return out;
}

}  // namespace hpcml::detail::regret
