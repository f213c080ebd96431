// The regret-matching iteration, written once for every backend (CPU, the batched GPU kernel,
// the large-game GPU path, the naive GPU baseline): the schedule of a variant and the per-entry
// arithmetic of a move, as host+device code. A backend supplies only how it computes utilities,
// the two sums of a move, and where the state lives; it never asks which variant runs.
//
// Iteration t (1-based) is turns() turns: one when the players update simultaneously, two when
// they alternate (player 1 moves, then player 2 answers player 1's new strategy). At a turn, the
// utilities of the players that move are computed first, from both strategies as they stand
// (u1 = A y, u2 = -(x^T A); sampled: u1 = A[:, j], u2 = -A[i, :] for the actions i ~ x, j ~ y
// drawn at that turn). Then each moving player moves:
//   b   = <u, s>, or u[own sampled action] when sampled (the seed's stochastic variant)
//   z_k = observe(...)    per entry: r = u - b, R += r, the accumulator Q absorbs r, the average
//                         absorbs the strategy just played; z is the next strategy's numerator
//   s_k = play(z_k, sum_k z_k)
// The seed is *lagged*: its next strategy comes from Q as it was before this iteration's regret,
// and the strategy it averages is that new one (the seed program's order, kept exactly).
#pragma once

#include <hpcml/regret.hpp>

#include <Random123/philox.h>

#include <array>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <string_view>

#include "common/hd.hpp"
#include "common/names.hpp"

namespace hpcml::detail::regret {

// How a player's accumulator Q absorbs an iteration's regret r.
enum class Accumulator {
    Sum,        // Q += r
    Clamped,    // Q = [Q + r]+
    Discounted  // DCFR(1.5, 0): Q = Q * (t^1.5 / (t^1.5 + 1) where Q > 0, else 1/2) + r
};

struct Schedule {
    Accumulator accumulator = Accumulator::Sum;
    bool predictive = false;    // plays [Q + m]+ with the prediction m = the last regret
    bool lagged = false;        // the seed's order (above)
    bool simultaneous = false;  // else alternating
    bool sampled = false;
    Averaging averaging = Averaging::Uniform;
    int iterations = 0;
    int record_every = 0;
    std::uint64_t rng_seed = 0;
    std::uint64_t first_game = 0;  // RegretOptions::first_game

    HPCML_HD int turns() const { return simultaneous ? 1 : 2; }
    HPCML_HD bool moves(int turn, int player) const { return simultaneous || turn == player; }
    // The Philox stream of player `player`'s sampled action at `turn` (uniform_draw's last word).
    HPCML_HD int draw_key(int turn, int player) const { return 2 * turn + player; }
    // The Philox key word of game `game` of the call's batch: its number in the caller's batch.
    HPCML_HD std::uint64_t game_key(std::uint64_t game) const { return first_game + game; }

    // The averaging weight of iteration t, and the sum of the weights of iterations 1..t.
    template <class T>
    HPCML_HD T weight(int t) const {
        switch (averaging) {
            case Averaging::Linear:
                return static_cast<T>(t);
            case Averaging::Quadratic:
                return static_cast<T>(t) * static_cast<T>(t);
            default:
                return T(1);
        }
    }
    HPCML_HD double total_weight(int t) const {
        const double T = t;
        switch (averaging) {
            case Averaging::Linear:
                return T * (T + 1) / 2;
            case Averaging::Quadratic:
                return T * (T + 1) * (2 * T + 1) / 6;
            default:
                return T;
        }
    }

    // The exact gap of the running average is recorded after iteration t when records_at(t),
    // and after the last iteration: records() points in all, point k after record_iteration(k).
    HPCML_HD bool records_at(int t) const { return record_every > 0 && t % record_every == 0 && t != iterations; }
    HPCML_HD int records() const { return record_every > 0 ? (iterations - 1) / record_every + 1 : 0; }
    HPCML_HD int record_iteration(int k) const { return k + 1 < records() ? (k + 1) * record_every : iterations; }

    // 2 max(max R1, max R2) / T bounds the exact gap only for simultaneous, unlagged,
    // full-information updates with the uniform average of the strategies played: then
    // T * gap = max R1 + max R2.
    bool eps_bound_valid() const { return simultaneous && !lagged && !sampled && averaging == Averaging::Uniform; }

    template <class T>
    HPCML_HD T accumulate(T q, T r, int t) const {
        switch (accumulator) {
            case Accumulator::Clamped:
                return q + r > 0 ? q + r : T(0);
            case Accumulator::Discounted: {
                const T p = static_cast<T>(t) * sqrt(static_cast<T>(t));
                return q * (q > 0 ? p / (p + 1) : T(0.5)) + r;
            }
            default:
                return q + r;
        }
    }

    // The first half of a move, for one entry: u its utility, b the player's baseline, s the
    // strategy it was observed with, R, Q and sum its true cumulative regret, accumulator and
    // average sum. Returns the entry's numerator of the next strategy (>= 0).
    template <class T>
    HPCML_HD T observe(int t, T u, T b, T s, T& R, T& Q, T& sum) const {
        const T r = u - b;
        R += r;
        const T before = Q;
        Q = accumulate(Q, r, t);
        if (lagged) return positive(before);
        sum += weight<T>(t) * s;
        return positive(predictive ? Q + r : Q);
    }

    // The second half: the entry's next strategy from its numerator and the player's total.
    template <class T>
    HPCML_HD T play(int t, T z, T total, std::size_t n, T& sum) const {
        const T s = total > 0 ? z / total : T(1) / static_cast<T>(n);
        if (lagged) sum += weight<T>(t) * s;
        return s;
    }

    template <class T>
    HPCML_HD static T positive(T v) {
        return v > 0 ? v : T(0);
    }
};

// One iteration t of the schedule on a backend, which supplies
//   utilities(t, turn, moves): u of each player with moves[p], from both strategies as they
//                              stand (when sampled: both players' draws for the turn first);
//   move(t, moves):            each moving player's move (observe and play, above).
// A backend that enqueues work (the large-game GPU path) may read t from the device instead.
#if defined(__CUDACC__)
#pragma nv_exec_check_disable  // device-only backends instantiate this for the device alone
#endif
template <class Backend>
HPCML_HD void iterate(const Schedule& sc, int t, Backend& backend) {
    for (int turn = 0; turn < sc.turns(); ++turn) {
        const bool moves[2] = {sc.moves(turn, 0), sc.moves(turn, 1)};
        backend.utilities(t, turn, moves);
        backend.move(t, moves);
    }
}

// The variant table: every variant's name and behaviour, here and nowhere else. `seed` is the
// seed program's schedule: simultaneous and lagged, with the uniform average, whatever the
// options say.
struct VariantRule {
    RegretVariant value;
    std::string_view name;
    Accumulator accumulator;
    bool predictive;
    bool seed;
};
inline constexpr std::array<VariantRule, 5> kVariants{{
    {RegretVariant::Seed, "seed", Accumulator::Sum, false, true},
    {RegretVariant::RM, "rm", Accumulator::Sum, false, false},
    {RegretVariant::RMPlus, "rm+", Accumulator::Clamped, false, false},
    {RegretVariant::DCFR, "dcfr", Accumulator::Discounted, false, false},
    {RegretVariant::PredictiveRMPlus, "prm+", Accumulator::Clamped, true, false},
}};
inline constexpr std::array<Named<RegretVariant>, kVariants.size()> kVariantNames = [] {
    std::array<Named<RegretVariant>, kVariants.size()> names{};
    for (std::size_t k = 0; k < kVariants.size(); ++k) names[k] = {kVariants[k].value, kVariants[k].name};
    return names;
}();
inline constexpr std::array<Named<Averaging>, 3> kAveragingNames{
    {{Averaging::Uniform, "uniform"}, {Averaging::Linear, "linear"}, {Averaging::Quadratic, "quadratic"}}};

inline Schedule make_schedule(const RegretOptions& o) {
    Schedule s;
    s.simultaneous = !o.alternating;
    s.averaging = o.averaging;
    s.sampled = o.sampled;
    s.iterations = o.iterations;
    s.record_every = o.record_every;
    s.rng_seed = o.rng_seed;
    s.first_game = o.first_game;
    for (const VariantRule& rule : kVariants) {
        if (rule.value != o.variant) continue;
        s.accumulator = rule.accumulator;
        s.predictive = rule.predictive;
        if (rule.seed) {
            s.lagged = true;
            s.simultaneous = true;
            s.averaging = Averaging::Uniform;
        }
    }
    return s;
}

// sum_j row[j] y[j] in 8 interleaved partial sums combined in a fixed order: a row player's
// utility on every backend (the CPU vectorises it without reassociating; the GPU's batched
// kernel computes it per lane), so that the CPU and the batched GPU kernel agree to the bit.
HPCML_HD inline double dot(const float* row, const double* y, std::size_t n) {
    double lanes[8] = {};
    std::size_t j = 0;
    for (; j + 8 <= n; j += 8)
        for (int l = 0; l < 8; ++l) lanes[l] += row[j + l] * y[j + l];
    for (int l = 0; l < 8; ++l)  // the tail: entry j + l into lane l (compile-time indices)
        if (j + l < n) lanes[l] += row[j + l] * y[j + l];
    return ((lanes[0] + lanes[4]) + (lanes[1] + lanes[5])) + ((lanes[2] + lanes[6]) + (lanes[3] + lanes[7]));
}

// A uniform draw in [0, 1) for (game, iteration, key), from Philox4x32-10 keyed by seed.
HPCML_HD inline double uniform_draw(std::uint64_t seed, std::uint64_t game, int iteration, int key) {
    r123::Philox4x32 philox;
    const r123::Philox4x32::ctr_type counter = {
        {static_cast<std::uint32_t>(game), static_cast<std::uint32_t>(game >> 32),
         static_cast<std::uint32_t>(iteration), static_cast<std::uint32_t>(key)}};
    const r123::Philox4x32::key_type philox_key = {
        {static_cast<std::uint32_t>(seed), static_cast<std::uint32_t>(seed >> 32)}};
    const r123::Philox4x32::ctr_type bits = philox(counter, philox_key);
    // 53 random bits -> a double in [0, 1).
    const std::uint64_t word = (static_cast<std::uint64_t>(bits[0]) << 21) ^ (bits[1] >> 11);
    return static_cast<double>(word & ((std::uint64_t{1} << 53) - 1)) * 0x1p-53;
}

// The action k with cdf(k - 1) <= u < cdf(k), the cdf summed in double from k = 0; never one of
// probability zero.
template <class T>
HPCML_HD inline std::size_t sample(const T* s, std::size_t n, double u) {
    double cdf = 0;
    std::size_t last = 0;
    for (std::size_t k = 0; k < n; ++k) {
        const double p = static_cast<double>(s[k]);
        if (p <= 0) continue;
        last = k;
        cdf += p;
        if (u < cdf) return k;
    }
    return last;  // u beyond a cdf that rounded below 1
}

}  // namespace hpcml::detail::regret
