// Similarity's pair lists against the dense result, on every backend.
#include <algorithm>
#include <random>

#include "similarity/pairs.hpp"
#include "support/similarity.hpp"

using namespace hpcml_test::similarity;

// Pair lists against the dense result: every passing pair once, row-major, with its count; on
// every backend, y = x (symmetry: tiles above the diagonal only, each pair added with its
// mirror) and y separate, tiles that do not divide the sizes, rows of one and of several
// 64-column words, and a threshold at which many pairs pass every sample.
TEST_P(SimilarityOnBackend, PairsAreTheDenseResultsNonzeros) {
    for (const auto& [shape, threshold] : {std::pair{Shape{19, 37, 29}, 1.0f}, std::pair{Shape{19, 150, 70}, 3.0f}})
        for (bool self : {false, true}) {
            const auto x = make_data(shape.samples * shape.n, 40);
            const auto y = make_data(shape.samples * shape.m, 41);
            const std::size_t m = self ? shape.n : shape.m;
            const auto counts = reference_counts(x, self ? x : y, shape.samples, shape.n, m, threshold);
            const MatrixView xv{x.data(), shape.samples, shape.n};
            const MatrixView yv = self ? MatrixView{} : MatrixView{y.data(), shape.samples, m};
            const Backend backend = GetParam();
            for (std::size_t tile : {5u, 16u, 100u})
                for (SimilarityMode mode : {SimilarityMode::Count, SimilarityMode::All})
                    for (std::size_t min_count :
                         {std::size_t{1}, std::size_t{7}, shape.samples + 1}) {  // the last passes nothing
                        SimilarityOptions o;
                        o.backend = backend;
                        o.tile = tile;
                        o.mode = mode;
                        o.threshold = threshold;
                        const hpcml::SimilarityPairs pairs = hpcml::similarity_pairs(xv, yv, o, min_count);
                        std::vector<std::uint64_t> i, j;
                        std::vector<std::int32_t> c;
                        for (std::size_t a = 0; a < shape.n; ++a)
                            for (std::size_t b = 0; b < m; ++b) {
                                const std::int64_t v = counts[a * m + b];
                                if (mode == SimilarityMode::All ? v != static_cast<std::int64_t>(shape.samples)
                                                                : v < static_cast<std::int64_t>(min_count))
                                    continue;
                                i.push_back(a);
                                j.push_back(b);
                                if (mode == SimilarityMode::Count) c.push_back(static_cast<std::int32_t>(v));
                            }
                        const std::string what = std::string(hpcml::to_string(backend)) + " tile " +
                                                 std::to_string(tile) + (self ? " y = x" : "") + " n " +
                                                 std::to_string(shape.n) + " min_count " + std::to_string(min_count);
                        EXPECT_EQ(pairs.i, i) << what;
                        EXPECT_EQ(pairs.j, j) << what;
                        EXPECT_EQ(pairs.count, c) << what;
                    }
        }
    const auto x = make_data(19 * 37, 40);
    SimilarityOptions o;
    o.backend = Backend::Cpu;
    expect_invalid([&] { hpcml::similarity_pairs({x.data(), 19, 37}, {}, o, 0); }, "min_count");
    expect_invalid([&] { hpcml::similarity_pairs_device({x.data(), 19, 37}, {}, o); }, "backend");
    // Pairs left on the device: the same checks, before any device is asked for.
    const hpcml::SimilarityDevicePairsAllocator none = [](std::size_t) { return hpcml::SimilarityDevicePairs{}; };
    expect_invalid([&] { hpcml::similarity_pairs_on_device({x.data(), 19, 37}, {}, none, o); }, "backend");
    expect_invalid([&] { hpcml::similarity_pairs_on_device({x.data(), 19, 37}, {}, {}, o); }, "allocate:");
    o.mode = SimilarityMode::Count;
    o.backend = Backend::Cuda;
    expect_invalid([&] { hpcml::similarity_pairs_on_device({x.data(), 19, 37}, {}, none, o, 0); }, "min_count");
}

// The pair list returns row-major order whatever the arrival order: regions in any order, each
// row-major within (the GPU's launches), and pairs in random order.
TEST(SimilarityPairList, ReturnsRowMajorOrderFromAnyArrival) {
    std::mt19937 rng(7);
    const std::size_t n = 41, m = 67;
    std::vector<std::pair<std::uint64_t, std::uint64_t>> expected;
    for (std::uint64_t i = 0; i < n; ++i)
        for (std::uint64_t j = 0; j < m; ++j)
            if (rng() % 3 == 0) expected.emplace_back(i, j);
    auto count_of = [](std::uint64_t i, std::uint64_t j) { return static_cast<std::int32_t>(i * 1000 + j); };
    auto check = [&](const std::vector<std::pair<std::uint64_t, std::uint64_t>>& arrival, const char* what) {
        hpcml::detail::similarity::PairList list(n, true);
        for (const auto& [i, j] : arrival) list.add(i, j, count_of(i, j));
        const hpcml::SimilarityPairs pairs = list.finish();
        ASSERT_EQ(pairs.i.size(), expected.size()) << what;
        for (std::size_t k = 0; k < expected.size(); ++k) {
            EXPECT_EQ(pairs.i[k], expected[k].first) << what << " at " << k;
            EXPECT_EQ(pairs.j[k], expected[k].second) << what << " at " << k;
            EXPECT_EQ(pairs.count[k], count_of(expected[k].first, expected[k].second)) << what << " at " << k;
        }
    };
    check(expected, "in order");
    // 10 x 16 regions in shuffled order, row-major within each.
    std::vector<std::pair<std::size_t, std::size_t>> regions;
    for (std::size_t r = 0; r < n; r += 10)
        for (std::size_t c = 0; c < m; c += 16) regions.emplace_back(r, c);
    std::shuffle(regions.begin(), regions.end(), rng);
    std::vector<std::pair<std::uint64_t, std::uint64_t>> by_region;
    for (const auto& [r, c] : regions)
        for (const auto& pair : expected)
            if (pair.first >= r && pair.first < r + 10 && pair.second >= c && pair.second < c + 16)
                by_region.push_back(pair);
    check(by_region, "regions shuffled");
    auto shuffled = expected;
    std::shuffle(shuffled.begin(), shuffled.end(), rng);
    check(shuffled, "pairs shuffled");
}
