// Similarity's pair lists against the dense result, on every backend.
#include "support/similarity.hpp"

using namespace hpcml_test::similarity;

// Pair lists against the dense result: every passing pair once, row-major, with its count; on
// every backend, y = x (symmetry, mirrored tiles out of row-major order) and y separate, tiles
// that do not divide the sizes.
TEST_P(SimilarityOnBackend, PairsAreTheDenseResultsNonzeros) {
    const Shape shape{19, 37, 29};
    const auto x = make_data(shape.samples * shape.n, 40);
    const auto y = make_data(shape.samples * shape.m, 41);
    for (bool self : {false, true}) {
        const std::size_t m = self ? shape.n : shape.m;
        const auto counts = reference_counts(x, self ? x : y, shape.samples, shape.n, m, 1.0f);
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
                    const std::string what = std::string(hpcml::to_string(backend)) + " tile " + std::to_string(tile) +
                                             (self ? " y = x" : "") + " min_count " + std::to_string(min_count);
                    EXPECT_EQ(pairs.i, i) << what;
                    EXPECT_EQ(pairs.j, j) << what;
                    EXPECT_EQ(pairs.count, c) << what;
                }
    }
    SimilarityOptions o;
    o.backend = Backend::Cpu;
    expect_invalid([&] { hpcml::similarity_pairs({x.data(), shape.samples, shape.n}, {}, o, 0); }, "min_count");
    expect_invalid([&] { hpcml::similarity_pairs_device({x.data(), shape.samples, shape.n}, {}, o); }, "backend");
}
