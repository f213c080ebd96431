// The inverse Gaussian on the CPU: elementwise functions and sampling (threads over elements),
// and the distances to the normal, fused (threads over pairs, each reduced on the fly) and
// naive (the seed's broadcast: P x G matrices of densities and their difference, then a mean).
#include <algorithm>
#include <cmath>

#include "backends.hpp"
#include "common/cpu_kernel.hpp"

#if HPCML_HAVE_LIBMVEC
#include <immintrin.h>
// glibc's vector math (libmvec, <= 4 ulp): its SSE2 ('b') and AVX2 ('d') variants, declared so
// that GCC may call them from vectorised loops (glibc's own headers do so only under fast math).
extern "C" {
double exp(double) noexcept __attribute__((simd("notinbranch")));
double log(double) noexcept __attribute__((simd("notinbranch")));
double log1p(double) noexcept __attribute__((simd("notinbranch")));
double expm1(double) noexcept __attribute__((simd("notinbranch")));
double erfc(double) noexcept __attribute__((simd("notinbranch")));
double cos(double) noexcept __attribute__((simd("notinbranch")));
__m256d _ZGVdN4v_exp(__m256d);
}
#endif

namespace hpcml::detail::invgauss {

namespace {

#if HPCML_HAVE_LIBMVEC
// The TV sum of one pair, four grid points at a time. With w = k + y the exponents of f_Y and phi
// combine, f_Y = (k / w)^1.5 exp(-k y^2 / (2 w)) / sqrt(2 pi), which cannot overflow: one exp,
// one division and one square root per point (log1p and expm1 cost twice as much). f_Y - phi is
// then formed by subtraction, which costs at most an ulp of phi per point: an absolute error of
// ~1e-16 in a TV that is > 1e-4 wherever lambda / mu <= 1e7. Points with y <= -k lie outside
// the support (f_Y = 0, |f_Y - phi| = phi): they are summed first, and blended where a vector
// straddles -k.
[[gnu::target("avx2,fma")]] double tv_sum_avx2(const Standardized& s, const Grid& grid, const double* phi) {
    const std::size_t n = grid.points;
    std::size_t g = 1;  // the end points (weight h / 2) are added by the caller
    double outside = 0.0;
    for (; g + 1 < n && grid.at(g) <= -s.k; ++g) outside += phi[g];
    __m256d acc = _mm256_setzero_pd();
    const __m256d k = _mm256_set1_pd(s.k),
                  scaled_k_15 = _mm256_set1_pd(s.k * std::sqrt(s.k) * Constants<double>::inv_sqrt_2pi),
                  minus_k = _mm256_set1_pd(-s.k);
    const __m256d lanes = _mm256_set_pd(3, 2, 1, 0), step = _mm256_set1_pd(grid.step), lo = _mm256_set1_pd(grid.lo);
    const __m256d one = _mm256_set1_pd(1.0), minus_half_k = _mm256_set1_pd(-0.5 * s.k);
    const __m256d abs_mask = _mm256_castsi256_pd(_mm256_set1_epi64x(0x7fffffffffffffffLL));
    for (; g + 4 <= n - 1; g += 4) {
        const __m256d y = _mm256_fmadd_pd(_mm256_add_pd(_mm256_set1_pd(static_cast<double>(g)), lanes), step, lo);
        const __m256d p = _mm256_loadu_pd(phi + g);
        const __m256d inv_w = _mm256_div_pd(one, _mm256_add_pd(k, y));
        const __m256d exponent = _mm256_mul_pd(_mm256_mul_pd(minus_half_k, _mm256_mul_pd(y, y)), inv_w);
        const __m256d power = _mm256_mul_pd(_mm256_mul_pd(scaled_k_15, inv_w), _mm256_sqrt_pd(inv_w));
        const __m256d inside = _mm256_fmsub_pd(power, _ZGVdN4v_exp(exponent), p);
        const __m256d d = _mm256_blendv_pd(p, inside, _mm256_cmp_pd(y, minus_k, _CMP_GT_OQ));
        acc = _mm256_add_pd(acc, _mm256_and_pd(d, abs_mask));
    }
    alignas(32) double lanes_sum[4];
    _mm256_store_pd(lanes_sum, acc);
    double sum = outside + (lanes_sum[0] + lanes_sum[1]) + (lanes_sum[2] + lanes_sum[3]);
    for (; g + 1 < n; ++g) sum += std::fabs(s.pdf_minus_normal(grid.at(g), phi[g]));
    return sum * grid.step;
}
#endif

// The trapezoid sum's interior points (weight h), one at a time.
double tv_sum_baseline(const Standardized& s, const Grid& grid, const double* phi) {
    double sum = 0.0;
    for (std::size_t g = 1; g + 1 < grid.points; ++g) sum += std::fabs(s.pdf_minus_normal(grid.at(g), phi[g]));
    return sum * grid.step;
}

using TvInterior = double (*)(const Standardized&, const Grid&, const double*);
#if !HPCML_HAVE_LIBMVEC
constexpr TvInterior tv_sum_avx2 = nullptr;  // not built here
#endif

// The trapezoid sum of |f_Y - phi| for one pair.
double tv_sum(const Standardized& s, const Grid& grid, const double* phi, CpuKernel level) {
    const std::size_t last = grid.points - 1;
    const double ends =
        0.5 * grid.step *
        (std::fabs(s.pdf_minus_normal(grid.at(0), phi[0])) + std::fabs(s.pdf_minus_normal(grid.at(last), phi[last])));
    const TvInterior interior =
        best_kernel<TvInterior, 2>(level, {{{Avx2Level::value, tv_sum_avx2}, {BaselineLevel::value, tv_sum_baseline}}});
    return ends + interior(s, grid, phi);
}

}  // namespace

// One thread's share of an elementwise call, vectorised by the compiler where the function
// allows: with libmvec's vector exp, log, log1p, expm1 and erfc (declared above) and this file's
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
template <class T, class Fn>
void evaluate_loop(Fn fn, const Elementwise<T>& e, std::size_t begin, std::size_t end, CpuKernel level) {
    run_compiled_for(level, [&] {
        if (e.mu_step == 0 && e.lam_step == 0) {
            const T m = e.mu[0], l = e.lam[0];
            HPCML_SIMD_LOOP
            for (std::size_t i = begin; i < end; ++i) e.out[i] = fn(e.x[i], m, l);
        } else {
            HPCML_SIMD_LOOP
            for (std::size_t i = begin; i < end; ++i) e.out[i] = fn(e.x[i], e.mu[i * e.mu_step], e.lam[i * e.lam_step]);
        }
    });
}

// The quantile, a block of elements at a time, solved in lock step: each step of the solve
// (quantile.hpp's quantile_step) is one vectorised loop over the block's elements still being
// solved, packed to the front whenever a quarter of them have converged (their step counts vary
// from 3 to 16, and to 70 where p < 1e-260 bisects); then each polish step is one loop over the block.
struct QuantileBlock {
    static constexpr std::size_t kLanes = 128;
    using Flag = std::int64_t;  // GCC vectorises no loop that loads a bool array
    std::size_t n = 0;
    // By element: the arguments, where the polish stands (done: it takes no more steps), and
    // the solve's result t (in t = log(x / c)).
    double p[kLanes], mu[kLanes], lam[kLanes], c[kLanes], t[kLanes], x[kLanes], g[kLanes];
    Flag done[kLanes];
    // The elements being solved, packed to the front: the law, the bracket, their element.
    std::size_t solving = 0, element[kLanes];
    double m[kLanes], l[kLanes], log_target[kLanes], lo[kLanes], hi[kLanes], tt[kLanes];
    Flag upper[kLanes], converged[kLanes];

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
            for (std::size_t j = 0; j < solving; ++j) {
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
        HPCML_SIMD_LOOP
        for (std::size_t k = 0; k < n; ++k) {
            const QuantilePolish q = quantile_polish_start<TailPass::Common>(t[k], c[k], p[k], mu[k], lam[k]);
            x[k] = done[k] ? x[k] : q.x;
            g[k] = q.g;
        }
        // Until every element is done: 6-8% less time at lambda / mu = 1e3 and 1e6, 1% at 1.
        for (int step = 0; step < kPolishSteps && std::find(done, done + n, 0) != done + n; ++step) {
            HPCML_SIMD_LOOP
            for (std::size_t k = 0; k < n; ++k) {
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
        QuantileBlock block;  // 17 KB
        for (std::size_t first = begin; first < end; first += QuantileBlock::kLanes) {
            block.load(e, first, std::min(end - first, QuantileBlock::kLanes));
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

// The quantile in lock step pays where its loops are 4 or 8 wide: GCC on x86-64 with libmvec, at
// the avx2 level or above (3x faster than element by element). At SSE2's 2 lanes it was 10% slower.
#if HPCML_HAVE_LIBMVEC && defined(__GNUC__) && !defined(__clang__) && defined(__x86_64__)
constexpr bool kQuantileLockStep = true;
#else
constexpr bool kQuantileLockStep = false;
#endif

template <class T, class Entry>
void evaluate_block(Apply<T, Entry> fn, const Elementwise<T>& e, std::size_t begin, std::size_t end, CpuKernel level) {
    if constexpr (Entry::value == Function::Ppf && kQuantileLockStep) {
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
    // blocks as cpu_evaluate's; the API has checked every parameter (sample_valid).
    constexpr std::size_t block = 32768;
    const std::size_t blocks = (e.n + block - 1) / block;
    const CpuKernel level = cpu_kernel_level();
#pragma omp parallel for schedule(static) if (blocks > 1)
    for (std::size_t b = 0; b < blocks; ++b) {
        run_compiled_for(level, [&] {
            const std::size_t end = std::min(e.n, (b + 1) * block);
            HPCML_SIMD_LOOP
            for (std::size_t i = b * block; i < end; ++i)
                e.out[i] = static_cast<T>(sample_valid(seed, e.first + i, static_cast<double>(e.mu[i * e.mu_step]),
                                                       static_cast<double>(e.lam[i * e.lam_step])));
        });
    }
}

template void cpu_evaluate<float>(Function, const Elementwise<float>&);
template void cpu_evaluate<double>(Function, const Elementwise<double>&);
template void cpu_sample<float>(const Elementwise<float>&, std::uint64_t);
template void cpu_sample<double>(const Elementwise<double>&, std::uint64_t);

void cpu_distances_fused(const DistanceProblem& p, MemoryTracker& tracker) {
    // The normal's density and cdf on the grid are the same for every pair: G values each,
    // computed once (the P x G matrices are what fusion avoids, not these).
    HostBuffer<double> normal(tracker, 2 * p.grid.points, "normal on the grid");
    for (std::size_t g = 0; g < p.grid.points; ++g) {
        if (p.tv) normal[g] = normal_pdf(p.grid.at(g));
        if (p.ks) normal[p.grid.points + g] = normal_cdf(p.grid.at(g));
    }
    const double* phi = normal.data();
    const double* Phi = normal.data() + p.grid.points;
    const CpuKernel level = cpu_kernel_level();
#pragma omp parallel for schedule(dynamic)
    for (std::size_t k = 0; k < p.pairs; ++k) {
        const Standardized s(p.mu[k], p.lam[k]);
        const double tv = p.tv ? tv_sum(s, p.grid, phi, level) : 0.0;
        double ks = 0.0;
        if (p.ks)
            for (std::size_t g = 0; g < p.grid.points; ++g)
                ks = std::max(ks, std::fabs(s.cdf_minus_normal(p.grid.at(g), Phi[g])));
        if (p.tv) p.total_variation[k] = 0.5 * tv;
        if (p.ks) p.kolmogorov[k] = ks;
    }
}

void cpu_distances_naive(const DistanceProblem& p, MemoryTracker& tracker) {
    const std::size_t cells = checked_mul(p.pairs, p.grid.points, "distance grid");
    const std::size_t matrices = (p.tv ? 3 : 0) + (p.ks ? 3 : 0);  // IG, normal, difference per metric
    ensure_host_fits(checked_mul(cells, matrices * sizeof(double), "naive distances"),
                     "naive distances (P x G matrices of densities, cdfs and differences)");
    // The seed's steps, each materialising a P x G matrix; the normal's is broadcast over P.
    auto distance = [&](auto ig_value, auto normal_value, auto reduce, double* result) {
        HostBuffer<double> ig(tracker, cells, "naive IG matrix"), normal(tracker, cells, "naive normal matrix"),
            diff(tracker, cells, "naive difference matrix");
        for (std::size_t k = 0; k < p.pairs; ++k)
            for (std::size_t g = 0; g < p.grid.points; ++g)
                ig[k * p.grid.points + g] = ig_value(p.grid.at(g), p.mu[k], p.lam[k]);
        for (std::size_t k = 0; k < p.pairs; ++k)
            for (std::size_t g = 0; g < p.grid.points; ++g) normal[k * p.grid.points + g] = normal_value(p.grid.at(g));
        for (std::size_t c = 0; c < cells; ++c) diff[c] = std::fabs(ig[c] - normal[c]);
        for (std::size_t k = 0; k < p.pairs; ++k) result[k] = reduce(diff.data() + k * p.grid.points);
    };
    if (p.tv) {
        distance([](double y, double m, double l) { return standardized_pdf(y, m, l); },
                 [](double y) { return normal_pdf(y); },
                 [&](const double* d) {
                     double s = 0.0;
                     for (std::size_t g = 0; g < p.grid.points; ++g) s += p.grid.weight(g) * d[g];
                     return 0.5 * s;
                 },
                 p.total_variation);
    }
    if (p.ks) {
        distance([](double y, double m, double l) { return cdf(m + y * m * std::sqrt(m / l), m, l); },
                 [](double y) { return normal_cdf(y); },
                 [&](const double* d) { return *std::max_element(d, d + p.grid.points); }, p.kolmogorov);
    }
}

}  // namespace hpcml::detail::invgauss
