// Regret matching on every backend: known equilibria, the seed's first iterations by hand, the
// exact gap against a brute-force evaluation, the bound identity, batched = one by one,
// reproducible sampling; the GPU against the CPU on random and integer games; bad inputs.
#include <hpcml/regret.hpp>

#include <gtest/gtest.h>

#include <Eigen/Core>

#include <algorithm>
#include <cmath>
#include <limits>
#include <random>
#include <string>
#include <tuple>
#include <vector>

#include "support/errors.hpp"
#include "support/gpu.hpp"

#if HPCML_WITH_CUDA
#include <cuda_runtime.h>

#include "common/cuda_memory.hpp"
#include "support/late_upload.hpp"
#endif

namespace {

using hpcml::Backend;
using hpcml_test::expect_invalid;

using hpcml::Averaging;
using hpcml::RegretOptions;
using hpcml::RegretVariant;

const std::vector<float> kRpsCrash = {0, -1, 2, 1, 0, -1, -2, 1, 0};

RegretOptions options(Backend backend, RegretVariant variant, int iterations, bool alternating = true,
                      Averaging averaging = Averaging::Quadratic) {
    RegretOptions o;
    o.variant = variant;
    o.iterations = iterations;
    o.alternating = alternating;
    o.averaging = averaging;
    o.backend = backend;
    return o;
}

std::vector<float> random_payoffs(std::size_t count, unsigned seed, bool integer = false) {
    std::mt19937 rng(seed);
    std::normal_distribution<float> normal;
    std::uniform_int_distribution<int> small(-3, 3);
    std::vector<float> A(count);
    for (float& a : A) a = integer ? static_cast<float>(small(rng)) : normal(rng);
    return A;
}

// The exact gap max_i (A y)_i - min_j (x^T A)_j and the value x^T A y of a profile, by Eigen's
// GEMVs in double: a reference that shares no code with the library.
struct Evaluation {
    double gap, value;
};
Evaluation reference_evaluation(const std::vector<float>& A, std::size_t n1, std::size_t n2,
                                const std::vector<double>& x, const std::vector<double>& y) {
    using RowMajor = Eigen::Matrix<float, Eigen::Dynamic, Eigen::Dynamic, Eigen::RowMajor>;
    const Eigen::MatrixXd a = Eigen::Map<const RowMajor>(A.data(), n1, n2).cast<double>();
    const Eigen::Map<const Eigen::VectorXd> xv(x.data(), n1), yv(y.data(), n2);
    const Eigen::VectorXd ay = a * yv, xa = a.transpose() * xv;
    return {ay.maxCoeff() - xa.minCoeff(), xv.dot(ay)};
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

// Every field of two solutions within `tolerance` (0: equal).
void expect_near(const hpcml::GameSolution& a, const hpcml::GameSolution& b, double tolerance,
                 const std::string& what) {
    ASSERT_EQ(a.row_strategy.size(), b.row_strategy.size()) << what;
    ASSERT_EQ(a.col_strategy.size(), b.col_strategy.size()) << what;
    for (std::size_t i = 0; i < a.row_strategy.size(); ++i)
        EXPECT_NEAR(a.row_strategy[i], b.row_strategy[i], tolerance) << what;
    for (std::size_t j = 0; j < a.col_strategy.size(); ++j)
        EXPECT_NEAR(a.col_strategy[j], b.col_strategy[j], tolerance) << what;
    EXPECT_NEAR(a.gap, b.gap, tolerance) << what;
    EXPECT_NEAR(a.value, b.value, tolerance) << what;
    EXPECT_NEAR(a.eps_bound, b.eps_bound, tolerance) << what;
    EXPECT_EQ(a.eps_bound_valid, b.eps_bound_valid) << what;
    ASSERT_EQ(a.curve.size(), b.curve.size()) << what;
    for (std::size_t k = 0; k < a.curve.size(); ++k) {
        EXPECT_EQ(a.curve[k].iteration, b.curve[k].iteration) << what;
        EXPECT_NEAR(a.curve[k].gap, b.curve[k].gap, tolerance) << what;
    }
}

class RegretOnBackend : public ::testing::TestWithParam<Backend> {
protected:
    void SetUp() override { HPCML_SKIP_UNLESS_AVAILABLE(GetParam()); }
    RegretOptions with(RegretVariant variant, int iterations, bool alternating = true,
                       Averaging averaging = Averaging::Quadratic) const {
        return options(GetParam(), variant, iterations, alternating, averaging);
    }
};
INSTANTIATE_TEST_SUITE_P(, RegretOnBackend, ::testing::ValuesIn(hpcml_test::kBackends), hpcml_test::backend_name);

TEST_P(RegretOnBackend, RpsWithCrashConvergesToQuarterHalfQuarter) {
    for (RegretVariant v : kAll) {
        const auto s = hpcml::solve_matrix_game(kRpsCrash.data(), 3, 3, with(v, 20000));
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

TEST_P(RegretOnBackend, SeedIsOneIterationBehind) {
    // The seed's iteration t plays the strategy of the regrets up to t - 2: iterations 1 and 2
    // average the uniform strategy and the best response to it: pure rock for both players
    // (regrets 1/3, 0, -1/3 against uniform; the game is symmetric).
    RegretOptions o = with(RegretVariant::Seed, 1);
    const auto one = hpcml::solve_matrix_game(kRpsCrash.data(), 3, 3, o);
    for (double p : one.row_strategy) EXPECT_NEAR(p, 1.0 / 3, 1e-15);
    o.iterations = 2;
    const auto two = hpcml::solve_matrix_game(kRpsCrash.data(), 3, 3, o);
    const double big = (1.0 / 3 + 1) / 2, small = 1.0 / 6;
    EXPECT_NEAR(two.row_strategy[0], big, 1e-15);
    EXPECT_NEAR(two.row_strategy[1], small, 1e-15);
    EXPECT_NEAR(two.col_strategy[0], big, 1e-15);
    EXPECT_NEAR(two.col_strategy[2], small, 1e-15);
    // The regrets of both iterations were taken against the uniform strategy: eps = 2 (2/3) / 2.
    EXPECT_NEAR(two.eps_bound, 2.0 / 3, 1e-15);
}

TEST_P(RegretOnBackend, SeedNumbersOnRpsWithCrash) {
    // The seed program after 500 iterations (its float32 transcription gives eps 0.107108,
    // gap 0.104290): not the "eps < 0.03" it commented.
    const auto s = hpcml::solve_matrix_game(kRpsCrash.data(), 3, 3, with(RegretVariant::Seed, 500));
    EXPECT_NEAR(s.eps_bound, 0.107108, 1e-5);
    EXPECT_NEAR(s.gap, 0.104290, 1e-5);
    EXPECT_FALSE(s.eps_bound_valid);
}

TEST_P(RegretOnBackend, DefaultReachesATinyGapOnRpsWithCrash) {
    RegretOptions o;
    o.backend = GetParam();
    const auto s = hpcml::solve_matrix_game(kRpsCrash.data(), 3, 3, o);
    EXPECT_LT(s.gap, 1e-4);
}

TEST_P(RegretOnBackend, GapIsTheBruteForceGap) {
    for (auto [n1, n2] : {std::pair{7, 11}, std::pair{30, 4}, std::pair{1, 5}, std::pair{90, 70}}) {
        const std::vector<float> A = random_payoffs(static_cast<std::size_t>(n1) * n2, 1);
        for (RegretVariant v : kAll)
            for (bool alt : {false, true}) {
                const auto s = hpcml::solve_matrix_game(A.data(), n1, n2, with(v, 200, alt));
                expect_distribution(s.row_strategy);
                expect_distribution(s.col_strategy);
                const Evaluation reference = reference_evaluation(A, n1, n2, s.row_strategy, s.col_strategy);
                EXPECT_NEAR(s.gap, reference.gap, 1e-9);
                EXPECT_NEAR(s.value, reference.value, 1e-9);
                EXPECT_GE(s.gap, 0.0);
            }
    }
}

// Games of more than one 64 x 4096 tile take the large-game pass (on the CPU, FMA sums where the
// CPU has them): shapes of one row or one column, and sizes that divide neither the row block
// nor the column strip; the gap and value of the returned profile against Eigen, and the naive
// method (the same pass, one player at a time) against the fused one.
TEST_P(RegretOnBackend, LargeGamePassOnOddShapes) {
    for (auto [n1, n2] : {std::pair{1, 5000}, std::pair{5000, 1}, std::pair{67, 4099}, std::pair{130, 70}}) {
        const std::vector<float> A = random_payoffs(static_cast<std::size_t>(n1) * n2, 5);
        for (bool alt : {false, true}) {
            RegretOptions o = with(RegretVariant::RMPlus, 5, alt);
            o.record_every = 2;
            const auto fused = hpcml::solve_matrix_game(A.data(), n1, n2, o);
            const Evaluation reference = reference_evaluation(A, n1, n2, fused.row_strategy, fused.col_strategy);
            EXPECT_NEAR(fused.gap, reference.gap, 1e-9) << n1 << " x " << n2;
            EXPECT_NEAR(fused.value, reference.value, 1e-9) << n1 << " x " << n2;
            o.method = hpcml::Method::Naive;
            const auto naive = hpcml::solve_matrix_game(A.data(), n1, n2, o);
            expect_near(fused, naive, GetParam() == Backend::Cuda ? 2e-3 : 1e-12,
                        std::to_string(n1) + " x " + std::to_string(n2));
        }
    }
}

TEST_P(RegretOnBackend, SimultaneousUniformRmGapEqualsTheRegretIdentity) {
    // With simultaneous full-information updates and uniform averaging of the played
    // strategies, T * gap = max R1 + max R2 <= 2 max(max R1, max R2) = T * eps_bound.
    std::vector<float> A(25);
    std::mt19937 rng(2);
    std::uniform_real_distribution<float> u(-1, 1);
    for (float& a : A) a = u(rng);
    for (RegretVariant v : {RegretVariant::RM, RegretVariant::RMPlus, RegretVariant::PredictiveRMPlus}) {
        const auto s = hpcml::solve_matrix_game(A.data(), 5, 5, with(v, 300, false, Averaging::Uniform));
        EXPECT_TRUE(s.eps_bound_valid);
        EXPECT_LE(s.gap, s.eps_bound + 1e-12);
    }
    const auto seed = hpcml::solve_matrix_game(A.data(), 5, 5, with(RegretVariant::Seed, 300));
    EXPECT_FALSE(seed.eps_bound_valid);  // it averages other strategies than it took regrets against
    EXPECT_FALSE(hpcml::solve_matrix_game(A.data(), 5, 5, with(RegretVariant::RM, 300, true)).eps_bound_valid);
}

TEST_P(RegretOnBackend, MatchingPenniesAndSaddlePoints) {
    const std::vector<float> pennies = {1, -1, -1, 1};
    const auto p = hpcml::solve_matrix_game(pennies.data(), 2, 2, with(RegretVariant::PredictiveRMPlus, 2000));
    EXPECT_NEAR(p.row_strategy[0], 0.5, 1e-3);
    EXPECT_NEAR(p.col_strategy[0], 0.5, 1e-3);
    EXPECT_NEAR(p.value, 0.0, 1e-3);

    const std::vector<float> saddle = {3, 5, 1, 2};  // row 0, column 0, value 3
    const auto s = hpcml::solve_matrix_game(saddle.data(), 2, 2, with(RegretVariant::RMPlus, 2000));
    EXPECT_GT(s.row_strategy[0], 0.999);
    EXPECT_GT(s.col_strategy[0], 0.999);
    EXPECT_NEAR(s.value, 3.0, 1e-2);

    const std::vector<float> one_row = {1, 2, 0};  // the column player takes column 2
    const auto r = hpcml::solve_matrix_game(one_row.data(), 1, 3, with(RegretVariant::RMPlus, 500));
    EXPECT_EQ(r.row_strategy.size(), 1u);
    EXPECT_GT(r.col_strategy[2], 0.99);
    const std::vector<float> one_col = {1, 3, 2};  // the row player takes row 1
    const auto c = hpcml::solve_matrix_game(one_col.data(), 3, 1, with(RegretVariant::RMPlus, 500));
    EXPECT_GT(c.row_strategy[1], 0.99);
    EXPECT_NEAR(c.value, 3.0, 0.05);
}

TEST_P(RegretOnBackend, BatchEqualsOneByOne) {
    // Small games (the GPU's batched kernel, several games per warp) and large ones (the GPU's
    // large-game path, several games per launch).
    for (auto [batch, n1, n2] : {std::tuple{9, 4, 6}, std::tuple{3, 70, 65}}) {
        const std::vector<float> A = random_payoffs(static_cast<std::size_t>(batch) * n1 * n2, 3);
        for (bool sampled : {false, true}) {
            RegretOptions o = with(RegretVariant::DCFR, 100);
            o.sampled = sampled;
            o.record_every = 25;
            const auto all = hpcml::solve_matrix_games(A.data(), batch, n1, n2, o);
            ASSERT_EQ(all.size(), static_cast<std::size_t>(batch));
            for (int b = 0; b < batch; ++b) {
                // Each game keeps its own index in the sampled draws, so solve it as the batch did.
                const auto alone = hpcml::solve_matrix_games(A.data(), b + 1, n1, n2, o)[b];
                // The GPU's large-game path splits rows by the number of games per launch, so
                // its sums round differently; everything else is bit for bit.
                const double tolerance = GetParam() == Backend::Cuda && n1 > 64 ? 1e-12 : 0.0;
                expect_near(all[b], alone, tolerance, "game " + std::to_string(b));
                ASSERT_EQ(all[b].curve.size(), 4u);
                EXPECT_EQ(all[b].curve.back().iteration, 100);
                EXPECT_EQ(all[b].curve.back().gap, all[b].gap);
            }
        }
    }
}

TEST_P(RegretOnBackend, NaiveFollowsTheSameSchedule) {
    // The naive baseline keeps float32 state on the GPU (as the eager program), double on the CPU.
    const std::vector<float> A = random_payoffs(12 * 9, 4);
    const double tolerance = GetParam() == Backend::Cuda ? 2e-3 : 1e-12;
    for (RegretVariant v : kAll)
        for (bool alt : {false, true})
            for (bool sampled : {false, true}) {
                RegretOptions o = with(v, 150, alt);
                o.sampled = sampled;
                o.record_every = 40;
                const auto fused = hpcml::solve_matrix_game(A.data(), 12, 9, o);
                o.method = hpcml::Method::Naive;
                const auto naive = hpcml::solve_matrix_game(A.data(), 12, 9, o);
                expect_near(
                    fused, naive, tolerance,
                    std::string(hpcml::to_string(v)) + (alt ? " alternating" : "") + (sampled ? " sampled" : ""));
            }
}

TEST_P(RegretOnBackend, SampledRunsAreReproducible) {
    RegretOptions o = with(RegretVariant::Seed, 500);
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

// first_game: a batch solved in pieces, each at its first game's number, draws as one call
// (every method; games of 3 x 3 and, for the large-game path, of 70 x 70).
TEST_P(RegretOnBackend, SampledBatchSolvedInPiecesEqualsOneCall) {
    for (const std::size_t n : {std::size_t{3}, std::size_t{70}}) {
        const std::size_t batch = 7;
        std::mt19937 rng(5);
        std::uniform_real_distribution<float> payoff(-1.0f, 1.0f);
        std::vector<float> A(batch * n * n);
        for (float& a : A) a = payoff(rng);
        for (const hpcml::Method method : {hpcml::Method::Fused, hpcml::Method::Naive}) {
            RegretOptions o = with(RegretVariant::RMPlus, 40);
            o.sampled = true;
            o.rng_seed = 11;
            o.method = method;
            const auto whole = hpcml::solve_matrix_games(A.data(), batch, n, n, o);
            for (std::size_t first = 0, size = 1; first < batch; first += size, ++size) {
                const std::size_t games = std::min(size, batch - first);
                RegretOptions piece = o;
                piece.first_game = first;
                const auto part = hpcml::solve_matrix_games(A.data() + first * n * n, games, n, n, piece);
                for (std::size_t g = 0; g < games; ++g)
                    EXPECT_EQ(part[g].row_strategy, whole[first + g].row_strategy)
                        << n << " x " << n << ", game " << first + g << ", " << hpcml::to_string(method);
            }
        }
    }
    RegretOptions last = with(RegretVariant::RMPlus, 5);
    last.sampled = true;
    last.first_game = std::numeric_limits<std::uint64_t>::max() - 1;  // the last two game numbers
    const std::vector<float> A = {1, -1, -1, 1, 1, -1, -1, 1};
    EXPECT_EQ(hpcml::solve_matrix_games(A.data(), 2, 2, 2, last).size(), 2u);
    RegretOptions past = last;
    ++past.first_game;
    expect_invalid([&] { hpcml::solve_matrix_games(A.data(), 2, 2, 2, past); }, "first_game:");
}

TEST(Regret, BadInputsRaise) {
    std::vector<float> A = {1, 2, 3, 4};
    const RegretOptions ok = options(Backend::Cpu, RegretVariant::RMPlus, 10);
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
    // The check goes by chunks of 65536 payoffs: the first bad one is named, in whichever chunk.
    std::vector<float> large(3 * 300 * 300, 1.0f);
    large[2 * 90000 + 299 * 300 + 299] = std::numeric_limits<float>::quiet_NaN();
    large[2 * 90000 + 250 * 300 + 7] = -INFINITY;
    large[2 * 90000 + 250 * 300 + 8] = INFINITY;
    expect_invalid([&] { hpcml::solve_matrix_games(large.data(), 3, 300, 300, ok); },
                   "A: payoff of game 2 at (250, 7) is not finite");
    large[65535] = INFINITY;
    expect_invalid([&] { hpcml::solve_matrix_games(large.data(), 3, 300, 300, ok); },
                   "A: payoff of game 0 at (218, 135)");
    expect_invalid([] { hpcml::parse_regret_variant("cfr"); }, "variant");
    expect_invalid([] { hpcml::parse_averaging("cubic"); }, "averaging");
}

// What the device entry point cannot do is refused before any device is looked for.
TEST(Regret, DeviceEntryPointRefusesCurvesAndBadShapes) {
    const float* A = reinterpret_cast<const float*>(256);  // never read: the checks come first
    const hpcml::DeviceGameResults out;
    RegretOptions o = options(Backend::Cuda, RegretVariant::RMPlus, 10);
    expect_invalid([&] { hpcml::solve_matrix_games_device(A, 0, 3, 3, out, o); }, "A: the batch is empty");
    expect_invalid([&] { hpcml::solve_matrix_games_device(nullptr, 2, 3, 3, out, o); }, "A: null pointer");
    expect_invalid([&] { hpcml::solve_matrix_games_device_workspace(2, 0, 3, o); }, "A: the payoff matrix is empty");
    EXPECT_EQ(hpcml::solve_matrix_games_device_workspace(5, 64, 3, o), 0u) << "small games need no workspace";
    o.record_every = 5;
    expect_invalid([&] { hpcml::solve_matrix_games_device(A, 2, 3, 3, out, o); }, "record_every");
    // Misaligned operands, refused before any CUDA call (a misaligned access is a sticky error).
    o.record_every = 0;
    alignas(16) static unsigned char memory[256];
    hpcml::DeviceGameResults results{reinterpret_cast<double*>(memory), reinterpret_cast<double*>(memory + 64),
                                     reinterpret_cast<double*>(memory + 128), reinterpret_cast<double*>(memory + 160),
                                     reinterpret_cast<double*>(memory + 192)};
    expect_invalid(
        [&] { hpcml::solve_matrix_games_device(reinterpret_cast<const float*>(memory + 2), 2, 3, 3, results, o); },
        "A: its elements need 4-byte alignment");
    results.gap = reinterpret_cast<double*>(memory + 164);
    expect_invalid([&] { hpcml::solve_matrix_games_device(A, 2, 3, 3, results, o); }, "gap: its elements need 8-byte");
}

TEST(Regret, SimultaneousUpdates) {
    RegretOptions o;
    EXPECT_FALSE(hpcml::simultaneous_updates(o));  // prm+, alternating
    o.alternating = false;
    EXPECT_TRUE(hpcml::simultaneous_updates(o));
    o.alternating = true;
    o.variant = RegretVariant::Seed;
    EXPECT_TRUE(hpcml::simultaneous_updates(o));  // the seed is always simultaneous
}

// The GPU against the CPU, on the paths' edges: one action per lane and two (32/33, 64/65),
// several games per warp (3 x 3, 2000 of them), the large-game path with several games per
// launch, more than 1024 columns, one-action players, iteration counts not a multiple of the
// graphs' 8, and integer payoffs (exact ties in the regrets); the matrix pass's 16-byte loads
// (n2 a multiple of 4) and its scalar ones, and moves over several blocks of 1024 entries. The
// batched kernel (games up to 64 x 64) takes every sum in the CPU's order without FMA: equal to
// the bit (small random games can be chaotic: 1e-16 apart at t = 1 can be 1e-2 apart at t = 61).
// The large-game path sums in another order, with FMA: within 1e-9.
TEST(RegretCuda, AgreesWithCpu) {
    HPCML_SKIP_WITHOUT_GPU();
    struct Case {
        int batch, n1, n2;
        bool integer;
    };
    const Case cases[] = {{2000, 3, 3, false},
                          {50, 3, 3, true},
                          {7, 40, 17, false},
                          {5, 32, 33, false},
                          {3, 64, 64, true},
                          {3, 65, 64, false},
                          {2, 100, 70, false},
                          {2, 80, 80, true},
                          {1, 3, 1, false},
                          {1, 2000, 3, false},
                          {1, 3, 1500, false},
                          {1, 1500, 700, false},
                          // three move blocks of 1024 entries for one player and one for the other, two games
                          {2, 2050, 5, false},
                          {40, 1, 1, false}};  // one lane per game: 32 games in a warp
    for (const Case& c : cases) {
        const std::vector<float> A = random_payoffs(static_cast<std::size_t>(c.batch) * c.n1 * c.n2, 5, c.integer);
        for (RegretVariant v : kAll)
            for (bool alt : {false, true})
                for (bool sampled : {false, true}) {
                    RegretOptions o = options(Backend::Cpu, v, 61, alt);
                    o.sampled = sampled;
                    o.record_every = 25;
                    const auto host = hpcml::solve_matrix_games(A.data(), c.batch, c.n1, c.n2, o);
                    o.backend = Backend::Cuda;
                    const auto device = hpcml::solve_matrix_games(A.data(), c.batch, c.n1, c.n2, o);
                    const double tolerance = std::max(c.n1, c.n2) <= 64 ? 0.0 : 1e-9;
                    for (int b = 0; b < c.batch; ++b)
                        expect_near(host[b], device[b], tolerance,
                                    std::string(hpcml::to_string(v)) + (alt ? " alternating" : " simultaneous") +
                                        (sampled ? " sampled" : "") + (c.integer ? " integer" : "") + " game " +
                                        std::to_string(b) + " of " + std::to_string(c.n1) + "x" + std::to_string(c.n2));
                }
    }
}

#if HPCML_WITH_CUDA
// The device entry point on the caller's arrays and stream (A arrives behind a wait): games of at
// most 64 actions give the CPU's bits (the batched kernel), larger ones the host call's on the GPU
// (the large-game path, in the caller's workspace), eps bound included; sampled too. The large
// games run a second time inside a CUDA graph the test captures, where the path cannot use
// graphs of its own, and give the same bits.
TEST(RegretCuda, DeviceEntryPointEqualsTheHostCalls) {
    HPCML_SKIP_WITHOUT_GPU();
    struct Case {
        int batch, n1, n2;
    };
    cudaStream_t stream = nullptr;
    ASSERT_EQ(cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking), cudaSuccess);
    for (const Case& c : {Case{300, 5, 7}, Case{3, 64, 64}, Case{1, 1, 9}, Case{3, 100, 70}, Case{1, 1500, 65}})
        for (bool sampled : {false, true}) {
            const std::size_t b = static_cast<std::size_t>(c.batch);
            const bool small = std::max(c.n1, c.n2) <= 64;
            const std::vector<float> A = random_payoffs(b * c.n1 * c.n2, 9);
            RegretOptions o = options(small ? Backend::Cpu : Backend::Cuda, RegretVariant::PredictiveRMPlus, 73);
            o.sampled = sampled;
            const auto expected = hpcml::solve_matrix_games(A.data(), b, c.n1, c.n2, o);
            o.backend = Backend::Cuda;
            o.stream = stream;
            const std::size_t workspace_bytes = hpcml::solve_matrix_games_device_workspace(b, c.n1, c.n2, o);
            EXPECT_EQ(workspace_bytes == 0, small);
            const hpcml::detail::DeviceArray<float> d_A(A.size(), "A");
            const hpcml::detail::DeviceArray<double> rows(b * c.n1, "rows"), cols(b * c.n2, "cols"),
                scalars(3 * b, "scalars");
            const hpcml::detail::DeviceArray<unsigned char> workspace(std::max<std::size_t>(workspace_bytes, 1), "ws");
            const hpcml::DeviceGameResults out{rows.data(), cols.data(), scalars.data(), scalars.data() + b,
                                               scalars.data() + 2 * b};
            auto check = [&](const char* how) {
                std::vector<double> h_rows(b * c.n1), h_cols(b * c.n2), h_scalars(3 * b);
                rows.download(h_rows.data());
                cols.download(h_cols.data());
                scalars.download(h_scalars.data());
                for (std::size_t g = 0; g < b; ++g) {
                    const std::string where = std::string(how) + " " + std::to_string(c.n1) + "x" +
                                              std::to_string(c.n2) + " game " + std::to_string(g) +
                                              (sampled ? " sampled" : "");
                    for (int i = 0; i < c.n1; ++i)
                        ASSERT_EQ(h_rows[g * c.n1 + i], expected[g].row_strategy[i]) << where;
                    for (int j = 0; j < c.n2; ++j)
                        ASSERT_EQ(h_cols[g * c.n2 + j], expected[g].col_strategy[j]) << where;
                    ASSERT_EQ(h_scalars[g], expected[g].value) << where;
                    ASSERT_EQ(h_scalars[b + g], expected[g].gap) << where;
                    ASSERT_EQ(h_scalars[2 * b + g], expected[g].eps_bound) << where;
                }
            };
            {
                const hpcml_test::LateUpload late(stream, d_A.data(), A.data(), A.size() * sizeof(float));
                hpcml::solve_matrix_games_device(d_A.data(), b, c.n1, c.n2, out, o, workspace.data(), workspace_bytes);
            }
            check("on the stream:");
            ASSERT_EQ(cudaMemsetAsync(scalars.data(), 0xFF, 3 * b * sizeof(double), stream), cudaSuccess);
            cudaGraph_t graph = nullptr;
            cudaGraphExec_t exec = nullptr;
            ASSERT_EQ(cudaStreamBeginCapture(stream, cudaStreamCaptureModeThreadLocal), cudaSuccess);
            hpcml::solve_matrix_games_device(d_A.data(), b, c.n1, c.n2, out, o, workspace.data(), workspace_bytes);
            ASSERT_EQ(cudaStreamEndCapture(stream, &graph), cudaSuccess);
            ASSERT_EQ(cudaGraphInstantiate(&exec, graph, 0), cudaSuccess);
            ASSERT_EQ(cudaGraphLaunch(exec, stream), cudaSuccess);
            ASSERT_EQ(cudaStreamSynchronize(stream), cudaSuccess);
            check("in a captured graph:");
            cudaGraphExecDestroy(exec);
            cudaGraphDestroy(graph);
        }
    cudaStreamDestroy(stream);
}
#endif

}  // namespace
