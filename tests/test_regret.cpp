// Regret matching: known equilibria, the exact gap against a brute-force evaluation, the
// seed's bound identity, batched = one by one, reproducible sampling, bad inputs.
#include <hpcml/regret.hpp>

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <limits>
#include <random>
#include <string>
#include <tuple>
#include <vector>

#include "support/errors.hpp"
#include "support/gpu.hpp"

namespace {

using hpcml_test::expect_invalid;

using hpcml::Averaging;
using hpcml::RegretOptions;
using hpcml::RegretVariant;

const std::vector<float> kRpsCrash = {0, -1, 2, 1, 0, -1, -2, 1, 0};

RegretOptions cpu(RegretVariant variant, int iterations, bool alternating = true,
                  Averaging averaging = Averaging::Quadratic) {
    RegretOptions o;
    o.variant = variant;
    o.iterations = iterations;
    o.alternating = alternating;
    o.averaging = averaging;
    o.backend = hpcml::Backend::Cpu;
    return o;
}

// max_i (A y)_i - min_j (x^T A)_j by plain loops.
double brute_force_gap(const std::vector<float>& A, std::size_t n1, std::size_t n2, const std::vector<double>& x,
                       const std::vector<double>& y) {
    double best_row = -INFINITY, worst_col = INFINITY;
    for (std::size_t i = 0; i < n1; ++i) {
        double v = 0;
        for (std::size_t j = 0; j < n2; ++j) v += A[i * n2 + j] * y[j];
        best_row = std::max(best_row, v);
    }
    for (std::size_t j = 0; j < n2; ++j) {
        double v = 0;
        for (std::size_t i = 0; i < n1; ++i) v += x[i] * A[i * n2 + j];
        worst_col = std::min(worst_col, v);
    }
    return best_row - worst_col;
}

void expect_distribution(const std::vector<double>& s) {
    double total = 0;
    for (double p : s) {
        EXPECT_GE(p, 0.0);
        total += p;
    }
    EXPECT_NEAR(total, 1.0, 1e-12);
}

const RegretVariant kAll[] = {RegretVariant::Seed, RegretVariant::RM, RegretVariant::RMPlus, RegretVariant::DCFR,
                              RegretVariant::PredictiveRMPlus};

TEST(Regret, RpsWithCrashConvergesToQuarterHalfQuarter) {
    for (RegretVariant v : kAll) {
        const auto s = hpcml::solve_matrix_game(kRpsCrash.data(), 3, 3, cpu(v, 20000));
        const double tolerance = v == RegretVariant::Seed || v == RegretVariant::RM ? 2e-2 : 2e-3;
        for (const auto* strategy : {&s.row_strategy, &s.col_strategy}) {
            expect_distribution(*strategy);
            EXPECT_NEAR((*strategy)[0], 0.25, tolerance) << hpcml::to_string(v);
            EXPECT_NEAR((*strategy)[1], 0.50, tolerance) << hpcml::to_string(v);
            EXPECT_NEAR((*strategy)[2], 0.25, tolerance) << hpcml::to_string(v);
        }
        EXPECT_NEAR(s.value, 0.0, 1e-2);
    }
}

TEST(Regret, DefaultReachesATinyGapOnRpsWithCrash) {
    RegretOptions o;
    o.backend = hpcml::Backend::Cpu;
    const auto s = hpcml::solve_matrix_game(kRpsCrash.data(), 3, 3, o);
    EXPECT_LT(s.gap, 1e-4);
}

TEST(Regret, GapIsTheBruteForceGap) {
    std::mt19937 rng(1);
    std::normal_distribution<float> normal;
    for (auto [n1, n2] : {std::pair{7, 11}, std::pair{30, 4}, std::pair{1, 5}}) {
        std::vector<float> A(n1 * n2);
        for (float& a : A) a = normal(rng);
        for (RegretVariant v : kAll)
            for (bool alt : {false, true}) {
                const auto s = hpcml::solve_matrix_game(A.data(), n1, n2, cpu(v, 200, alt));
                expect_distribution(s.row_strategy);
                expect_distribution(s.col_strategy);
                EXPECT_NEAR(s.gap, brute_force_gap(A, n1, n2, s.row_strategy, s.col_strategy), 1e-9);
                EXPECT_GE(s.gap, 0.0);
            }
    }
}

TEST(Regret, SimultaneousUniformRmGapEqualsTheRegretIdentity) {
    // With simultaneous full-information updates and uniform averaging of the played
    // strategies, T * gap = max R1 + max R2 <= 2 max(max R1, max R2) = T * eps_bound.
    std::vector<float> A(25);
    std::mt19937 rng(2);
    std::uniform_real_distribution<float> u(-1, 1);
    for (float& a : A) a = u(rng);
    for (RegretVariant v : {RegretVariant::RM, RegretVariant::RMPlus, RegretVariant::PredictiveRMPlus}) {
        const auto s = hpcml::solve_matrix_game(A.data(), 5, 5, cpu(v, 300, false, Averaging::Uniform));
        EXPECT_TRUE(s.eps_bound_valid);
        EXPECT_LE(s.gap, s.eps_bound + 1e-12);
    }
    const auto seed = hpcml::solve_matrix_game(A.data(), 5, 5, cpu(RegretVariant::Seed, 300));
    EXPECT_FALSE(seed.eps_bound_valid);  // it averages the strategies after each update
    EXPECT_FALSE(hpcml::solve_matrix_game(A.data(), 5, 5, cpu(RegretVariant::RM, 300, true)).eps_bound_valid);
}

TEST(Regret, MatchingPenniesAndSaddlePoints) {
    const std::vector<float> pennies = {1, -1, -1, 1};
    const auto p = hpcml::solve_matrix_game(pennies.data(), 2, 2, cpu(RegretVariant::PredictiveRMPlus, 2000));
    EXPECT_NEAR(p.row_strategy[0], 0.5, 1e-3);
    EXPECT_NEAR(p.col_strategy[0], 0.5, 1e-3);
    EXPECT_NEAR(p.value, 0.0, 1e-3);

    const std::vector<float> saddle = {3, 5, 1, 2};  // row 0, column 0, value 3
    const auto s = hpcml::solve_matrix_game(saddle.data(), 2, 2, cpu(RegretVariant::RMPlus, 2000));
    EXPECT_GT(s.row_strategy[0], 0.999);
    EXPECT_GT(s.col_strategy[0], 0.999);
    EXPECT_NEAR(s.value, 3.0, 1e-2);

    const std::vector<float> one_row = {1, 2, 0};  // the column player takes column 2
    const auto r = hpcml::solve_matrix_game(one_row.data(), 1, 3, cpu(RegretVariant::RMPlus, 500));
    EXPECT_EQ(r.row_strategy.size(), 1u);
    EXPECT_GT(r.col_strategy[2], 0.99);
    const std::vector<float> one_col = {1, 3, 2};  // the row player takes row 1
    const auto c = hpcml::solve_matrix_game(one_col.data(), 3, 1, cpu(RegretVariant::RMPlus, 500));
    EXPECT_GT(c.row_strategy[1], 0.99);
    EXPECT_NEAR(c.value, 3.0, 0.05);
}

TEST(Regret, BatchEqualsOneByOne) {
    std::mt19937 rng(3);
    std::normal_distribution<float> normal;
    const std::size_t batch = 9, n1 = 4, n2 = 6;
    std::vector<float> A(batch * n1 * n2);
    for (float& a : A) a = normal(rng);
    for (bool sampled : {false, true}) {
        RegretOptions o = cpu(RegretVariant::DCFR, 100);
        o.sampled = sampled;
        o.record_every = 25;
        const auto all = hpcml::solve_matrix_games(A.data(), batch, n1, n2, o);
        ASSERT_EQ(all.size(), batch);
        for (std::size_t b = 0; b < batch; ++b) {
            // Each game keeps its own index in the sampled draws, so solve it as the batch did.
            const auto alone = hpcml::solve_matrix_games(A.data(), b + 1, n1, n2, o)[b];
            EXPECT_EQ(all[b].row_strategy, alone.row_strategy);
            EXPECT_EQ(all[b].col_strategy, alone.col_strategy);
            EXPECT_EQ(all[b].gap, alone.gap);
            ASSERT_EQ(all[b].curve.size(), 4u);
            EXPECT_EQ(all[b].curve.back().iteration, 100);
            EXPECT_EQ(all[b].curve.back().gap, all[b].gap);
        }
        if (!sampled) {
            const auto single = hpcml::solve_matrix_game(A.data() + 5 * n1 * n2, n1, n2, o);
            EXPECT_EQ(single.row_strategy, all[5].row_strategy);
        }
    }
}

TEST(Regret, NaiveEqualsFused) {
    std::vector<float> A(12 * 9);
    std::mt19937 rng(4);
    std::normal_distribution<float> normal;
    for (float& a : A) a = normal(rng);
    for (RegretVariant v : kAll)
        for (bool alt : {false, true}) {
            RegretOptions o = cpu(v, 150, alt);
            const auto fused = hpcml::solve_matrix_game(A.data(), 12, 9, o);
            o.method = hpcml::Method::Naive;
            const auto naive = hpcml::solve_matrix_game(A.data(), 12, 9, o);
            for (std::size_t i = 0; i < 12; ++i) EXPECT_NEAR(fused.row_strategy[i], naive.row_strategy[i], 1e-12);
            EXPECT_NEAR(fused.gap, naive.gap, 1e-12);
        }
}

TEST(Regret, SampledRunsAreReproducible) {
    RegretOptions o = cpu(RegretVariant::Seed, 500);
    o.sampled = true;
    o.rng_seed = 42;
    const auto a = hpcml::solve_matrix_game(kRpsCrash.data(), 3, 3, o);
    const auto b = hpcml::solve_matrix_game(kRpsCrash.data(), 3, 3, o);
    EXPECT_EQ(a.row_strategy, b.row_strategy);
    o.rng_seed = 43;
    const auto c = hpcml::solve_matrix_game(kRpsCrash.data(), 3, 3, o);
    EXPECT_NE(a.row_strategy, c.row_strategy);
    EXPECT_FALSE(a.eps_bound_valid);
    EXPECT_LT(a.gap, 0.5);
}

TEST(Regret, BadInputsRaise) {
    std::vector<float> A = {1, 2, 3, 4};
    const RegretOptions ok = cpu(RegretVariant::RMPlus, 10);
    expect_invalid([&] { hpcml::solve_matrix_game(A.data(), 0, 2, ok); }, "A:");
    expect_invalid([&] { hpcml::solve_matrix_game(nullptr, 2, 2, ok); }, "A:");
    expect_invalid([&] { hpcml::solve_matrix_games(A.data(), 0, 2, 2, ok); }, "A:");
    RegretOptions zero = ok;
    zero.iterations = 0;
    expect_invalid([&] { hpcml::solve_matrix_game(A.data(), 2, 2, zero); }, "iterations");
    RegretOptions record = ok;
    record.record_every = -1;
    expect_invalid([&] { hpcml::solve_matrix_game(A.data(), 2, 2, record); }, "record_every");
    A[3] = std::numeric_limits<float>::quiet_NaN();
    expect_invalid([&] { hpcml::solve_matrix_game(A.data(), 2, 2, ok); }, "A: payoff at (1, 1)");
    A[3] = INFINITY;
    expect_invalid([&] { hpcml::solve_matrix_game(A.data(), 2, 2, ok); }, "A:");
    expect_invalid([] { hpcml::parse_regret_variant("cfr"); }, "variant");
    expect_invalid([] { hpcml::parse_averaging("cubic"); }, "averaging");
}

#if HPCML_WITH_CUDA
// The GPU against the CPU: the batched kernel (small games), the large-game path (graphs,
// dual GEMV) and the naive cuBLAS baseline, for every variant and update order.
void expect_close(const hpcml::GameSolution& a, const hpcml::GameSolution& b, double tolerance, const std::string& what) {
    ASSERT_EQ(a.row_strategy.size(), b.row_strategy.size());
    for (std::size_t i = 0; i < a.row_strategy.size(); ++i) EXPECT_NEAR(a.row_strategy[i], b.row_strategy[i], tolerance) << what;
    for (std::size_t j = 0; j < a.col_strategy.size(); ++j) EXPECT_NEAR(a.col_strategy[j], b.col_strategy[j], tolerance) << what;
    EXPECT_NEAR(a.gap, b.gap, tolerance) << what;
    EXPECT_NEAR(a.value, b.value, tolerance) << what;
    EXPECT_NEAR(a.eps_bound, b.eps_bound, tolerance) << what;
    ASSERT_EQ(a.curve.size(), b.curve.size()) << what;
    for (std::size_t k = 0; k < a.curve.size(); ++k) {
        EXPECT_EQ(a.curve[k].iteration, b.curve[k].iteration) << what;
        EXPECT_NEAR(a.curve[k].gap, b.curve[k].gap, tolerance) << what;
    }
}

TEST(RegretCuda, AgreesWithCpu) {
    HPCML_SKIP_WITHOUT_GPU();
    std::mt19937 rng(5);
    std::normal_distribution<float> normal;
    for (auto [batch, n1, n2] : {std::tuple{50, 3, 3}, std::tuple{7, 40, 17}, std::tuple{2, 100, 70}, std::tuple{1, 1500, 700}}) {
        std::vector<float> A(static_cast<std::size_t>(batch) * n1 * n2);
        for (float& a : A) a = normal(rng);
        for (RegretVariant v : kAll)
            for (bool alt : {false, true})
                for (bool sampled : {false, true}) {
                    RegretOptions o = cpu(v, 60, alt);
                    o.sampled = sampled;
                    o.record_every = 25;
                    const auto host = hpcml::solve_matrix_games(A.data(), batch, n1, n2, o);
                    o.backend = hpcml::Backend::Cuda;
                    const auto device = hpcml::solve_matrix_games(A.data(), batch, n1, n2, o);
                    for (int b = 0; b < batch; ++b)
                        expect_close(host[b], device[b], 1e-9,
                                     std::string(hpcml::to_string(v)) + (alt ? " alternating" : " simultaneous") +
                                         (sampled ? " sampled" : "") + " game " + std::to_string(b) + " of " +
                                         std::to_string(n1) + "x" + std::to_string(n2));
                    o.method = hpcml::Method::Naive;  // float32 state, as the eager program
                    if (batch <= 7) {
                        const auto naive = hpcml::solve_matrix_games(A.data(), batch, n1, n2, o);
                        for (int b = 0; b < batch; ++b) expect_close(host[b], naive[b], 2e-3, "naive");
                    }
                }
    }
}
#endif

}  // namespace
