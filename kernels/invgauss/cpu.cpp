// The inverse Gaussian on the CPU: elementwise functions and sampling (threads over elements);
// the distances to the normal are cpu_distances.cpp's.
#include <algorithm>
#include <cmath>

#include "backends.hpp"
#include "common/cpu_kernel.hpp"
#include "libmvec.hpp"

namespace hpcml::detail::invgauss {

// One thread's share of an elementwise call, vectorised by the compiler where the function
// allows: with libmvec's vector exp, log, log1p, expm1 and erfc (libmvec.hpp) and this file's
// -fno-math-errno -fno-trapping-math (which change no value), the branches of math.hpp become
// selects. Compiled for each instruction set (run_compiled_for, which inlines the whole formula;
// otherwise GCC calls the larger ones out of the loop, scalar).
//
// Clang has no vector exp or log to call here: it leaves the loops scalar, and the pragma would
// only make it warn that it could not vectorise them.
#if defined(__clang__)
#define HPCML_SIMD_LOOP
#else
#define HPCML_SIMD_LOOP _Pragma("omp simd")
#endif
//
// Every element is computed in a full vector lane: the loops run over whole groups of kLanes,
// and the last group, padded with copies of its first element (their results dropped), runs from
// aligned arrays. libmvec's functions and scalar libm's differ in the last bits, so an element
// left to a scalar remainder loop (or peeled off to align a loop) would get other bits than the
// same element inside a longer call: a call's values would depend on where its elements start
// and end (a chunked array's blocks against one call; a sample drawn in pieces).
constexpr std::size_t kLanes = 16;  // a multiple of every level's vector width (8 doubles)

template <class T, class Fn>
void evaluate_loop(Fn fn, const Elementwise<T>& e, std::size_t begin, std::size_t end, CpuKernel level) {
    run_compiled_for(level, [&] {
        const std::size_t whole = begin + (end - begin) / kLanes * kLanes;
        if (e.mu_step == 0 && e.lam_step == 0) {  // no gathers for shared parameters
            const T m = e.mu[0], l = e.lam[0];
            HPCML_SIMD_LOOP
            for (std::size_t i = begin; i < whole; ++i) e.out[i] = fn(e.x[i], m, l);
        } else {
            HPCML_SIMD_LOOP
            for (std::size_t i = begin; i < whole; ++i)
                e.out[i] = fn(e.x[i], e.mu[i * e.mu_step], e.lam[i * e.lam_step]);
        }
        if (whole == end) return;
        alignas(64) T x[kLanes], mu[kLanes], lam[kLanes], out[kLanes];
        for (std::size_t k = 0; k < kLanes; ++k) {
            const std::size_t i = whole + k < end ? whole + k : whole;  // past the end: a copy of the first
            x[k] = e.x[i], mu[k] = e.mu[i * e.mu_step], lam[k] = e.lam[i * e.lam_step];
        }
        HPCML_SIMD_LOOP
        for (std::size_t k = 0; k < kLanes; ++k) out[k] = fn(x[k], mu[k], lam[k]);
        std::copy(out, out + (end - whole), e.out + whole);
    });
}

// The quantile's tuning on the CPU: it changes speed, never results (bench/results/ of a20527d,
// Zen 4: the AMD EPYC machine, 2 cores).
struct QuantileCpuPolicy {
    std::size_t block_elements;  // elements solved in lock step at once
    bool lock_step;              // in lock step at all (else element by element)
};
// Lock step pays where its loops are 4 or 8 wide: GCC on x86-64 with libmvec, at the avx2 level or
// above; at SSE2's 2 lanes it was 10% slower (0.95-1.00 s against 0.87 s).
inline constexpr QuantileCpuPolicy kQuantileCpu {
    .block_elements = 128,  // no other size timed; lock step as a whole 3.1-3.6x element by element
#if HPCML_HAVE_LIBMVEC && defined(__GNUC__) && !defined(__clang__) && defined(__x86_64__)
        .lock_step = true,  // 2.6-3.6x element by element at avx2 and avx512
#else
        .lock_step = false,  // no libmvec (or not GCC on x86-64): its loops would not vectorise
#endif
};

// The quantile, a block of elements at a time, solved in lock step: each step of the solve
// (quantile.hpp's quantile_step) is one vectorised loop over the block's elements still being
// solved, packed to the front whenever a quarter of them have converged (their step counts vary
// from 3 to 16, and to 70 where p < 1e-260 bisects); then each polish step is one loop over the block.
// Its loops run over whole groups of kLanes (the lanes past the elements hold values that are
// never read back), for evaluate_loop's reason.
struct QuantileBlock {
    static constexpr std::size_t kElements = kQuantileCpu.block_elements;
    static_assert(kElements % kLanes == 0, "whole groups of lanes");
    using Flag = std::int64_t;  // GCC vectorises no loop that loads a bool array
    std::size_t n = 0;
    // By element: the arguments, where the polish stands (done: it takes no more steps), and
    // the solve's result t (in t = log(x / c)).
    // 64-byte aligned, which GCC then knows: it would otherwise peel lanes off the front of a loop
    // to align it, and those lanes would run scalar.
    alignas(64) double p[kElements], mu[kElements], lam[kElements], c[kElements], t[kElements], x[kElements],
        g[kElements];
    alignas(64) Flag done[kElements];
    // The elements being solved, packed to the front: the law, the bracket, their element.
    std::size_t solving = 0, element[kElements];
    alignas(64) double m[kElements], l[kElements], log_target[kElements], lo[kElements], hi[kElements], tt[kElements];
    alignas(64) Flag upper[kElements], converged[kElements];

    template <class T>
    void load(const Elementwise<T>& e, std::size_t first, std::size_t count) {
        n = count;
        solving = 0;
        for (std::size_t k = 0; k < n; ++k) {
            const std::size_t i = first + k;
            p[k] = e.x[i], mu[k] = e.mu[i * e.mu_step], lam[k] = e.lam[i * e.lam_step], t[k] = 0.0;
            QuantileSetup s{};
            done[k] = !quantile_setup(p[k], mu[k], lam[k], s, x[k]);  // else x[k] is the value
            c[k] = done[k] ? 1.0 : s.c;
            if (done[k]) continue;
            m[solving] = s.m, l[solving] = s.l, log_target[solving] = s.log_target, upper[solving] = s.upper;
            lo[solving] = -HUGE_VAL, hi[solving] = HUGE_VAL, tt[solving] = s.t, converged[solving] = 0;
            element[solving++] = k;
        }
    }

    void solve() {
        for (int step = 0; solving > 0; ++step) {
            HPCML_SIMD_LOOP
            for (std::size_t j = 0; j < round_up(solving, kLanes); ++j) {
                QuantileSetup s;
                s.m = m[j], s.l = l[j], s.log_target = log_target[j], s.upper = upper[j] != 0;
                QuantileBracket b{lo[j], hi[j], tt[j]};
                const bool now = quantile_step<TailPass::Common>(b, s);
                const bool moves = converged[j] == 0;
                lo[j] = moves ? b.lo : lo[j], hi[j] = moves ? b.hi : hi[j], tt[j] = moves ? b.t : tt[j];
                converged[j] = converged[j] | now | (step + 1 == kQuantileSteps);
            }
            std::size_t live = 0;
            for (std::size_t j = 0; j < solving; ++j) live += converged[j] == 0;
            if (live <= solving * 3 / 4) pack();
        }
    }

    // The converged leave the list (their t to their element), the others move to the front.
    void pack() {
        std::size_t kept = 0;
        for (std::size_t j = 0; j < solving; ++j) {
            if (converged[j]) {
                t[element[j]] = tt[j];
                continue;
            }
            m[kept] = m[j], l[kept] = l[j], log_target[kept] = log_target[j], upper[kept] = upper[j];
            lo[kept] = lo[j], hi[kept] = hi[j], tt[kept] = tt[j], converged[kept] = 0;
            element[kept++] = element[j];
        }
        solving = kept;
    }

    void polish() {
        const std::size_t lanes = round_up(n, kLanes);
        HPCML_SIMD_LOOP
        for (std::size_t k = 0; k < lanes; ++k) {
            const QuantilePolish q = quantile_polish_start<TailPass::Common>(t[k], c[k], p[k], mu[k], lam[k]);
            x[k] = done[k] ? x[k] : q.x;
            g[k] = q.g;
        }
        // Until every element is done: 6-8% less time at lambda / mu = 1e3 and 1e6, 1% at 1.
        for (int step = 0; step < kPolishSteps && std::find(done, done + n, 0) != done + n; ++step) {
            HPCML_SIMD_LOOP
            for (std::size_t k = 0; k < lanes; ++k) {
                QuantilePolish q = {x[k], g[k]};
                const bool last = quantile_polish_step<TailPass::Common>(q, p[k], mu[k], lam[k]);
                x[k] = done[k] ? x[k] : q.x;
                g[k] = done[k] ? g[k] : q.g;
                done[k] = done[k] | last;
            }
        }
    }
};

template <class T>
void quantile_loop(const Elementwise<T>& e, std::size_t begin, std::size_t end, CpuKernel level) {
    run_compiled_for(level, [&] {
        QuantileBlock block{};  // 17 KB; zeroed: the lanes past a call's last element are computed too
        for (std::size_t first = begin; first < end; first += QuantileBlock::kElements) {
            block.load(e, first, std::min(end - first, QuantileBlock::kElements));
            block.solve();
            block.polish();
            for (std::size_t k = 0; k < block.n; ++k) e.out[first + k] = static_cast<T>(block.x[k]);
        }
    });
}

// A cdf-family entry's vectorised form (math.hpp's TailPass::Common, complete on the host: its
// upper-side difference does not cancel, so no element is left to a second pass), in double as Apply.
template <class T, class Entry>
struct ApplyCommon {
    T operator()(T x, T m, T l) const {
        return static_cast<T>(
            Entry::apply_common(static_cast<double>(x), static_cast<double>(m), static_cast<double>(l)));
    }
};

template <class T, class Entry>
void evaluate_block(Apply<T, Entry> fn, const Elementwise<T>& e, std::size_t begin, std::size_t end, CpuKernel level) {
    if constexpr (Entry::value == Function::Ppf && kQuantileCpu.lock_step) {
        if (level >= Avx2Level::value)
            quantile_loop(e, begin, end, level);
        else
            evaluate_loop(fn, e, begin, end, level);
    } else if constexpr (requires { Entry::apply_common(0.0, 0.0, 0.0); }) {
        evaluate_loop(ApplyCommon<T, Entry>{}, e, begin, end, level);
    } else {
        evaluate_loop(fn, e, begin, end, level);
    }
}

template <class T>
void cpu_evaluate(Function f, const Elementwise<T>& e) {
    // Blocks of about 0.1 ms on one core: the functions take a few ns per element (the cdf
    // family 5 to 10), the quantile's iterations about 200. A call of one block stays on the
    // calling thread, which spares it waking the others (tens of microseconds on a VM).
    const std::size_t block = iterative(f) ? 1024 : 32768;
    const std::size_t blocks = (e.n + block - 1) / block;
    const CpuKernel level = cpu_kernel_level();
    with_function<T>(f, [&](auto fn) {
#pragma omp parallel for schedule(static) if (blocks > 1)
        for (std::size_t b = 0; b < blocks; ++b)
            evaluate_block(fn, e, b * block, std::min(e.n, (b + 1) * block), level);
    });
}

template <class T>
void cpu_sample(const Elementwise<T>& e, std::uint64_t seed) {
    // Vectorised as the elementwise loops are (Philox's multiplies, libmvec's log and cos), in
    // blocks as cpu_evaluate's; the API has checked every parameter (sample_valid). Every draw in
    // a full vector lane, as evaluate_loop's elements: pieces drawn at their first_draw are then
    // one call's draws.
    constexpr std::size_t block = 32768;
    static_assert(block % kLanes == 0, "only a call's last group is padded");  // blocks start on whole groups
    const std::size_t blocks = (e.n + block - 1) / block;
    const CpuKernel level = cpu_kernel_level();
#pragma omp parallel for schedule(static) if (blocks > 1)
    for (std::size_t b = 0; b < blocks; ++b) {
        run_compiled_for(level, [&] {
            const std::size_t begin = b * block, end = std::min(e.n, begin + block);
            const std::size_t whole = begin + (end - begin) / kLanes * kLanes;
            HPCML_SIMD_LOOP
            for (std::size_t i = begin; i < whole; ++i)
                e.out[i] = static_cast<T>(sample_valid(seed, e.first + i, static_cast<double>(e.mu[i * e.mu_step]),
                                                       static_cast<double>(e.lam[i * e.lam_step])));
            if (whole == end) return;
            alignas(64) double mu[kLanes], lam[kLanes], drawn[kLanes];
            for (std::size_t k = 0; k < kLanes; ++k) {
                const std::size_t i = whole + k < end ? whole + k : whole;  // past the end: a copy of the first
                mu[k] = static_cast<double>(e.mu[i * e.mu_step]), lam[k] = static_cast<double>(e.lam[i * e.lam_step]);
            }
            HPCML_SIMD_LOOP
            for (std::size_t k = 0; k < kLanes; ++k) drawn[k] = sample_valid(seed, e.first + whole + k, mu[k], lam[k]);
            for (std::size_t k = 0; k < end - whole; ++k) e.out[whole + k] = static_cast<T>(drawn[k]);
        });
    }
}

template void cpu_evaluate<float>(Function, const Elementwise<float>&);
template void cpu_evaluate<double>(Function, const Elementwise<double>&);
template void cpu_sample<float>(const Elementwise<float>&, std::uint64_t);
template void cpu_sample<double>(const Elementwise<double>&, std::uint64_t);

}  // namespace hpcml::detail::invgauss
