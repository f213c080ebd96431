// ExecutionOptions::progress: on the calling thread only, increasing, ending with done == total
// (output elements for similarity and its pair list, game-iterations for the game solvers)
// whatever the tiles, symmetry and method; nothing on a call shorter than the interval; a
// throwing callback's exception rethrown after the work.
#include <hpcml/hpcml.hpp>

#include <gtest/gtest.h>

#include <cstdint>
#include <cstdlib>
#include <optional>
#include <random>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

#include "support/environment.hpp"

namespace {

struct Recorder {
    std::vector<std::pair<std::uint64_t, std::uint64_t>> calls;
    bool other_thread = false;
    std::thread::id caller = std::this_thread::get_id();

    hpcml::ProgressCallback callback() {
        return [this](std::uint64_t done, std::uint64_t total) {
            other_thread |= std::this_thread::get_id() != caller;
            calls.emplace_back(done, total);
        };
    }
    // Reported at least `at_least` times, increasing, on the caller's thread, last done == total.
    // (Where the work is shared out, the calling thread may finish none of it, and report
    // nothing; the call itself checks that its units add up to the total.)
    void expect_complete(std::uint64_t total, std::size_t at_least, const std::string& what) const {
        ASSERT_GE(calls.size(), at_least) << what;
        if (calls.empty()) return;
        EXPECT_FALSE(other_thread) << what;
        for (std::size_t k = 0; k < calls.size(); ++k) {
            EXPECT_EQ(calls[k].second, total) << what;
            if (k > 0) EXPECT_LT(calls[k - 1].first, calls[k].first) << what;
        }
        EXPECT_EQ(calls.back().first, total) << what;
    }
};

std::vector<float> features(std::size_t samples, std::size_t n, unsigned seed) {
    std::mt19937 rng(seed);
    std::normal_distribution<float> normal;
    std::vector<float> x(samples * n);
    for (float& v : x) v = 0.3f * normal(rng);
    return x;
}

TEST(Progress, SimilarityReportsEveryOutputElementOnce) {
    const std::size_t samples = 9, n = 301, m = 157;
    const std::vector<float> x = features(samples, n, 1), y = features(samples, m, 2);
    for (hpcml::Method method : {hpcml::Method::Fused, hpcml::Method::Naive})
        for (std::optional<std::size_t> tile : {std::optional<std::size_t>{}, std::optional<std::size_t>{64}})
            for (bool y_is_x : {true, false}) {
                Recorder r;
                hpcml::SimilarityOptions o;
                o.backend = hpcml::Backend::Cpu;
                o.method = method;
                o.tile = tile;
                o.progress = r.callback();
                o.progress_interval = 0.0;  // every unit of work reports
                const std::size_t cols = y_is_x ? n : m;
                std::vector<std::int32_t> out(n * cols);
                hpcml::similarity({x.data(), samples, n},
                                  y_is_x ? hpcml::MatrixView{} : hpcml::MatrixView{y.data(), samples, m}, out.data(),
                                  o);
                const std::string what =
                    std::string(hpcml::to_string(method)) + (tile ? " tile 64" : " whole") + (y_is_x ? " y = x" : " y");
                r.expect_complete(std::uint64_t{n} * cols, method == hpcml::Method::Naive ? 1 : 0, what);
            }
}

// Every way of asking for S on the CPU accounts for exactly n x m units (a mismatch raises
// Internal from the call itself): each method (auto too), y = x by default, as the same buffer
// and as a copy, into an array, to a sink and as a pair list (both modes), at each CPU level and
// reporting interval, with enough samples for symmetry (16, 17) and more than one tile.
TEST(Progress, EveryMethodOutputAndSymmetryAccountsForTheWholeOutput) {
    const hpcml_test::ScopedEnvironment level_before("HPCML_CPU_KERNEL", std::getenv("HPCML_CPU_KERNEL"));
    const std::size_t n = 700;  // two of the sorted method's bands, three tiles of 300
    using hpcml::Method;
    // One call: y_kind 0 (y = x by default), 1 (the same buffer), 2 (a copy); how 0 (into an
    // array), 1 (to a sink), 2 and 3 (pairs in modes count and all).
    const auto check = [&](const std::vector<float>& x, const std::vector<float>& copy, std::size_t samples,
                           Method method, int y_kind, std::optional<std::size_t> tile, double interval, int how,
                           const std::string& what) {
        Recorder r;
        hpcml::SimilarityOptions o;
        o.backend = hpcml::Backend::Cpu;
        o.method = method;
        o.tile = tile;
        o.threshold = 0.4f;
        o.progress = r.callback();
        o.progress_interval = interval;
        const hpcml::MatrixView xv{x.data(), samples, n};
        const hpcml::MatrixView yv = y_kind == 0   ? hpcml::MatrixView{}
                                     : y_kind == 1 ? xv
                                                   : hpcml::MatrixView{copy.data(), samples, n};
        try {
            if (how == 0) {
                std::vector<std::int32_t> out(n * n);
                hpcml::similarity(xv, yv, out.data(), o);
            } else if (how == 1) {
                std::uint64_t sunk = 0;
                hpcml::similarity(
                    xv, yv, [&](const hpcml::SimilarityTile& t) { sunk += t.rows * t.cols; }, o);
                EXPECT_EQ(sunk, n * n) << what;
            } else {
                if (how == 3) o.mode = hpcml::SimilarityMode::All;
                hpcml::similarity_pairs(xv, yv, o, 2);
            }
        } catch (const std::exception& e) {
            ADD_FAILURE() << what << ": " << e.what();
            return;
        }
        // The calling thread may finish none of the shared-out work: only naive, run on it, must report.
        r.expect_complete(std::uint64_t{n} * n, method == Method::Naive ? 1 : 0, what);
    };
    for (const std::size_t samples : {std::size_t{16}, std::size_t{17}}) {
        const std::vector<float> x = features(samples, n, 11), copy = x;
        const std::vector<std::string_view> levels = hpcml::cpu_kernel_names();
        for (const std::string_view level : levels) {
            setenv("HPCML_CPU_KERNEL", std::string(level).c_str(), 1);
            for (const Method method : {Method::Auto, Method::Fused, Method::Sorted, Method::Naive})
                for (const int y_kind : {0, 1, 2})
                    for (const std::optional<std::size_t> tile : {std::optional<std::size_t>{}, std::optional{300ul}})
                        for (const double interval : {0.0, 0.25, 1e9})
                            for (const int how : {0, 1, 2, 3}) {
                                // Naive has no levels; the intervals at one level keep the test short
                                // (it runs under the sanitizers too).
                                if ((method == Method::Naive || level != levels[0]) && interval != 0.0) continue;
                                if (method == Method::Naive && level != levels[0]) continue;
                                check(x, copy, samples, method, y_kind, tile, interval, how,
                                      std::string(level) + " " + std::string(hpcml::to_string(method)) + " samples " +
                                          std::to_string(samples) + " y kind " + std::to_string(y_kind) +
                                          (tile ? " tile 300" : " whole") + " interval " + std::to_string(interval) +
                                          " how " + std::to_string(how));
                            }
        }
    }
}

// The sorted method's strips (a region wider than 16384 is sorted in strips, mirrored across
// the diagonal) account for their mirrors too.
TEST(Progress, SortedStripsAccountForTheirMirrors) {
    const std::size_t samples = 16, n = 16500;
    const std::vector<float> x = features(samples, n, 12);
    Recorder r;
    hpcml::SimilarityOptions o;
    o.backend = hpcml::Backend::Cpu;
    o.method = hpcml::Method::Sorted;
    o.mode = hpcml::SimilarityMode::All;
    o.output = hpcml::SimilarityOutput::Bitmask;
    o.threshold = 0.2f;
    o.progress = r.callback();
    o.progress_interval = 0.0;
    std::vector<std::uint8_t> out(hpcml::similarity_output_bytes(n, n, hpcml::SimilarityOutput::Bitmask));
    hpcml::similarity({x.data(), samples, n}, {}, out.data(), o);
    r.expect_complete(std::uint64_t{n} * n, 0, "sorted strips");
}

TEST(Progress, PairListsAndGamesReportTheirTotals) {
    const std::vector<float> x = features(5, 700, 3);
    Recorder pairs;
    hpcml::SimilarityOptions o;
    o.backend = hpcml::Backend::Cpu;
    o.mode = hpcml::SimilarityMode::All;
    o.tile = 128;
    o.progress = pairs.callback();
    o.progress_interval = 0.0;
    hpcml::similarity_pairs({x.data(), 5, 700}, {}, o);
    pairs.expect_complete(700ull * 700, 0, "pairs, y = x");

    const std::vector<float> A = features(1, 300 * 200, 4);
    Recorder game;
    hpcml::RegretOptions g;
    g.backend = hpcml::Backend::Cpu;
    g.iterations = 40;
    g.progress = game.callback();
    g.progress_interval = 0.0;
    hpcml::solve_matrix_game(A.data(), 300, 200, g);
    game.expect_complete(40, 40, "one game");

    const std::vector<float> batch = features(1, 500 * 9, 5);
    Recorder games;
    g.progress = games.callback();
    hpcml::solve_matrix_games(batch.data(), 500, 3, 3, g);
    games.expect_complete(500ull * 40, 0, "500 games");
}

TEST(Progress, ShortCallsNeverCallBack) {
    const std::vector<float> x = features(4, 50, 6);
    std::vector<std::int32_t> out(50 * 50);
    Recorder r;
    hpcml::SimilarityOptions o;
    o.backend = hpcml::Backend::Cpu;
    o.progress = r.callback();
    o.progress_interval = 60.0;
    hpcml::similarity({x.data(), 4, 50}, {}, out.data(), o);
    EXPECT_TRUE(r.calls.empty());
}

TEST(Progress, ACallbackThatThrowsStopsReportingAndItsExceptionComesBackAfterTheWork) {
    // The naive method runs its tiles on the calling thread: a report after the first.
    const std::size_t n = 200;
    const std::vector<float> x = features(7, n, 7);
    std::vector<std::int32_t> out(n * n, -1), reference(n * n);
    hpcml::SimilarityOptions o;
    o.backend = hpcml::Backend::Cpu;
    o.method = hpcml::Method::Naive;
    o.tile = 64;
    hpcml::similarity({x.data(), 7, n}, {}, reference.data(), o);
    int calls = 0;
    o.progress = [&](std::uint64_t, std::uint64_t) {
        ++calls;
        throw std::runtime_error("stop here");
    };
    o.progress_interval = 0.0;
    try {
        hpcml::similarity({x.data(), 7, n}, {}, out.data(), o);
        ADD_FAILURE() << "the callback's exception was swallowed";
    } catch (const std::runtime_error& e) {
        EXPECT_STREQ(e.what(), "stop here");
    }
    EXPECT_EQ(calls, 1);
    EXPECT_EQ(out, reference);  // every tile was computed
}

}  // namespace
