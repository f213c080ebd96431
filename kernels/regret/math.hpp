// Per-entry regret-matching arithmetic shared by every backend: the strategy from a regret
// accumulator, the accumulator updates of each variant, averaging weights, and the
// counter-based draws of the sampled variant (the same numbers on the CPU and the GPU).
#pragma once

#include <hpcml/regret.hpp>

#include <Random123/philox.h>

#include <cmath>
#include <cstddef>
#include <cstdint>

#include "common/hd.hpp"

namespace hpcml::detail::regret {

// s = [q]+ / sum([q]+), uniform where no entry is positive.
template <class T>
HPCML_HD inline void regret_matching(const T* q, std::size_t n, T* s) {
    T total = 0;
    for (std::size_t k = 0; k < n; ++k) total += q[k] > 0 ? q[k] : T(0);
    for (std::size_t k = 0; k < n; ++k) s[k] = total > 0 ? (q[k] > 0 ? q[k] / total : T(0)) : T(1) / T(n);
}

// The strategy a player plays from its accumulator q and prediction m (predictive RM+ only:
// [q + m]+; every other variant ignores m).
template <class T>
HPCML_HD inline void play(RegretVariant variant, const T* q, const T* m, std::size_t n, T* s, T* scratch) {
    if (variant != RegretVariant::PredictiveRMPlus) {
        regret_matching(q, n, s);
        return;
    }
    for (std::size_t k = 0; k < n; ++k) scratch[k] = q[k] + m[k];
    regret_matching(scratch, n, s);
}

// The accumulator after iteration t (1-based) adds regret r.
template <class T>
HPCML_HD inline T accumulate(RegretVariant variant, T q, T r, int t) {
    switch (variant) {
        case RegretVariant::RMPlus:
        case RegretVariant::PredictiveRMPlus: {
            const T v = q + r;
            return v > 0 ? v : T(0);
        }
        case RegretVariant::DCFR: {
            // DCFR(alpha = 1.5, beta = 0): earlier positive regret discounted by
            // t^1.5 / (t^1.5 + 1), negative by t^0 / (t^0 + 1) = 1/2, before adding r.
            const T p = static_cast<T>(t) * sqrt(static_cast<T>(t));
            return q * (q > 0 ? p / (p + 1) : T(0.5)) + r;
        }
        default:  // Seed, RM
            return q + r;
    }
}

template <class T>
HPCML_HD inline T average_weight(Averaging averaging, int t) {
    switch (averaging) {
        case Averaging::Linear: return static_cast<T>(t);
        case Averaging::Quadratic: return static_cast<T>(t) * static_cast<T>(t);
        default: return T(1);
    }
}

// A uniform draw in [0, 1) for (game, iteration, player), from Philox4x32-10 keyed by seed.
HPCML_HD inline double uniform_draw(std::uint64_t seed, std::uint64_t game, int iteration, int player) {
    r123::Philox4x32 philox;
    const r123::Philox4x32::ctr_type counter = {{static_cast<std::uint32_t>(game), static_cast<std::uint32_t>(game >> 32),
                                                static_cast<std::uint32_t>(iteration), static_cast<std::uint32_t>(player)}};
    const r123::Philox4x32::key_type key = {{static_cast<std::uint32_t>(seed), static_cast<std::uint32_t>(seed >> 32)}};
    const r123::Philox4x32::ctr_type bits = philox(counter, key);
    // 53 random bits -> a double in [0, 1).
    const std::uint64_t word = (static_cast<std::uint64_t>(bits[0]) << 21) ^ (bits[1] >> 11);
    return static_cast<double>(word & ((std::uint64_t{1} << 53) - 1)) * 0x1p-53;
}

// The action k with cdf(k - 1) <= u < cdf(k); never one of probability zero.
template <class T>
HPCML_HD inline std::size_t sample(const T* s, std::size_t n, double u) {
    double cdf = 0;
    std::size_t last = 0;
    for (std::size_t k = 0; k < n; ++k) {
        if (s[k] <= 0) continue;
        last = k;
        cdf += static_cast<double>(s[k]);
        if (u < cdf) return k;
    }
    return last;  // u beyond a cdf that rounded below 1
}

}  // namespace hpcml::detail::regret
