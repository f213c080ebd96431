// Similarity: exact equality with a brute-force float32 reference on random and special inputs,
// every output type, both methods, every backend present. The suite's other topics:
// test_similarity_tiles.cpp (tiles, sinks, mirrors, threads), test_similarity_checks.cpp (memory
// bounds, argument errors), test_similarity_pairs.cpp (pair lists), test_similarity_cuda.cpp
// (the device-pointer API and the GPU's own cases). One program, test_similarity.
#include "support/similarity.hpp"

using namespace hpcml_test::similarity;

INSTANTIATE_TEST_SUITE_P(, SimilarityOnBackend, ::testing::ValuesIn(hpcml_test::kBackends), hpcml_test::backend_name);

TEST_P(SimilarityOnBackend, OneByOne) { check_all_outputs(GetParam(), {1, 1, 1}, 1.0f, false, {std::nullopt, 1}, 1); }

TEST_P(SimilarityOnBackend, ShapesNotMultiplesOfAnyTile) {
    check_all_outputs(GetParam(), {37, 19, 23}, 1.0f, false, {std::nullopt, 1, 7, 1000}, 2);
    check_all_outputs(GetParam(), {300, 131, 5}, 1.0f, false, {std::nullopt, 13}, 3);
    check_all_outputs(GetParam(), {5, 3, 150}, 0.5f, false, {std::nullopt, 17}, 4);
}

TEST_P(SimilarityOnBackend, LargerThanOneGpuBlock) {
    check_all_outputs(GetParam(), {70, 261, 133}, 1.0f, false, {std::nullopt, 129}, 5);
}

TEST_P(SimilarityOnBackend, VectorisedLoadsAndTilesThatBreakAlignment) {
    // Feature counts that are multiples of 4 (the GPU's 16-byte loads), with tiles that start
    // rows at offsets that are not.
    check_all_outputs(GetParam(), {40, 256, 132}, 1.0f, false, {std::nullopt, 130, 64, 3}, 15);
}

TEST_P(SimilarityOnBackend, ManyColumnRegionsPerRowBand) {
    check_all_outputs(GetParam(), {3, 5, 1500}, 1.0f, false, {1, 7}, 16);
}

TEST_P(SimilarityOnBackend, AllModeStopsOnlyWhenEveryPairHasFailed) {
    // One pair per GPU block (128 x 128) that passes at every sample but one, that sample at
    // each stage of the early exit (a block vote every 16 samples; the CPU's panels), so the
    // block lives until then; partial blocks at the edges too. Random data elsewhere fails
    // within a few samples. Pairs that pass everywhere, held by threads in different warps of
    // their blocks (the last thread of one) and in both row pairs of the CPU's 4-row blocks,
    // some beside a dying pair: a vote that misses a thread or warp, or a block that stops
    // while one of them lives, reports them false. A stage skipped or counted from the wrong
    // samples reports a dying pair true.
    const std::size_t samples = 70, n = 3 * 128 + 11, m = 4 * 128 + 9;
    std::vector<float> x(samples * n, 0.0f), y(samples * m, 0.0f);
    std::mt19937 rng(17);
    std::normal_distribution<float> normal(0.0f, 3.0f);
    for (float& v : x) v = normal(rng);
    for (float& v : y) v = normal(rng);
    struct Planted {
        std::size_t i, j;
        std::optional<std::size_t> fails_at;
    };
    std::vector<Planted> planted;
    const std::size_t stages[] = {0, 1, 15, 16, 17, 31, 32, 47, 48, 63, 64, 69};
    for (std::size_t k = 0; k < std::size(stages); ++k)  // block (k / 4, k % 4)
        planted.push_back({128 * (k / 4) + 10 + 9 * k, 128 * (k % 4) + 20 + 7 * k, stages[k]});
    planted.push_back({n - 5, m - 6, 33});  // the partial corner block
    planted.push_back({n - 2, 100, 47});    // partial rows
    planted.push_back({50, m - 1, 69});     // partial columns
    planted.push_back({130, m - 4, std::nullopt});
    planted.push_back({n - 3, 300, std::nullopt});
    planted.push_back({260, 450, std::nullopt});  // beside the pair dying at sample 69
    planted.push_back({255, 255, std::nullopt});  // block (1, 1)'s last thread, beside a dying pair
    planted.push_back({326, 90, std::nullopt});   // block (2, 0), warp 4
    planted.push_back({54, 484, std::nullopt});   // block (0, 3), warp 3
    for (const Planted& p : planted) {
        for (std::size_t s = 0; s < samples; ++s) y[s * m + p.j] = x[s * n + p.i] + 0.25f;
        if (p.fails_at) y[*p.fails_at * m + p.j] = x[*p.fails_at * n + p.i] + 5.0f;
    }
    const auto counts = reference_counts(x, y, samples, n, m, 1.0f);
    std::size_t passing = 0;
    for (const std::int64_t c : counts) passing += c == static_cast<std::int64_t>(samples);
    ASSERT_EQ(passing, 6u);  // the random pairs all fail
    for (Method method : kMethods)
        for (SimilarityOutput output : {SimilarityOutput::Bool, SimilarityOutput::Bitmask}) {
            SimilarityOptions o;
            o.mode = SimilarityMode::All;
            o.output = output;
            o.backend = GetParam();
            o.method = method;
            const auto expected = encode(counts, n, m, samples, output);
            std::vector<unsigned char> got(expected.size(), 0xAB);
            hpcml::similarity({x.data(), samples, n}, {y.data(), samples, m}, got.data(), o);
            EXPECT_EQ(got, expected) << label(GetParam(), method, output, std::nullopt);
        }
}

TEST_P(SimilarityOnBackend, ColumnBlocksOfAWiderMatrixAreViewedInPlace) {
    // x and y as blocks of one 300-column matrix (ld = 300), y the last columns (a copy of
    // whole rows would read past the matrix): the same bytes as on packed copies of the blocks.
    const std::size_t samples = 29, width = 300;
    const auto wide = make_data(samples * width, 20);
    auto pack = [&](std::size_t col0, std::size_t cols) {
        std::vector<float> out(samples * cols);
        for (std::size_t s = 0; s < samples; ++s)
            for (std::size_t j = 0; j < cols; ++j) out[s * cols + j] = wide[s * width + col0 + j];
        return out;
    };
    const auto xp = pack(37, 100), yp = pack(250, 50);
    const MatrixView xv{wide.data() + 37, samples, 100, width}, yv{wide.data() + 250, samples, 50, width};
    const Backend backend = GetParam();
    for (Method method : kMethods)
        for (auto [mode, output] : {std::pair{SimilarityMode::Count, SimilarityOutput::Int32},
                                    std::pair{SimilarityMode::All, SimilarityOutput::Bitmask}}) {
            SimilarityOptions o;
            o.backend = backend;
            o.method = method;
            o.mode = mode;
            o.output = output;
            o.tile = 33;
            std::vector<unsigned char> viewed(hpcml::similarity_output_bytes(100, 50, output)), packed(viewed.size());
            hpcml::similarity(xv, yv, viewed.data(), o);
            hpcml::similarity({xp.data(), samples, 100}, {yp.data(), samples, 50}, packed.data(), o);
            EXPECT_EQ(viewed, packed) << label(backend, method, output, 33);
            std::vector<unsigned char> self_viewed(hpcml::similarity_output_bytes(100, 100, output)),
                self_packed(self_viewed.size());
            hpcml::similarity(xv, {}, self_viewed.data(), o);
            hpcml::similarity({xp.data(), samples, 100}, {}, self_packed.data(), o);
            EXPECT_EQ(self_viewed, self_packed) << "y = x " << label(backend, method, output, 33);
        }
    std::vector<std::int32_t> out(100 * 50);
    SimilarityOptions o;
    o.backend = backend;
    expect_invalid([&] { hpcml::similarity({wide.data(), samples, 100, 99}, yv, out.data(), o); }, "x:");
    expect_invalid([&] { hpcml::similarity(xv, {wide.data(), samples, 50, 10}, out.data(), o); }, "y:");
}

TEST_P(SimilarityOnBackend, SelfSimilarity) {
    check_all_outputs(GetParam(), {64, 45, 45}, 1.0f, true, {std::nullopt, 11}, 6);
}

// y is x: with 16 samples or more the CPU computes tiles on and above the diagonal (the
// diagonal ones from items on and above it) and mirrors the rest. Sizes that are not multiples
// of the 128-row items, the 16-column panels or the tiles; NaN and inf among the data
// (make_data); every output.
TEST_P(SimilarityOnBackend, SymmetricTilingEqualsTheReference) {
    check_all_outputs(GetParam(), {33, 301, 301}, 1.0f, true, {std::nullopt, 7, 129, 302}, 30);
    check_all_outputs(GetParam(), {16, 17, 17}, 0.25f, true, {std::nullopt, 1, 5, 8}, 31);
}

// Mode All with y = x where about a third of the pairs pass (features are offsets plus small
// noise), so that every bit of a mirrored bitmask block is exercised: 8 x 8 blocks across and
// on the diagonal, edges that are not multiples of 8, tiles, and the tiles through a sink.
TEST_P(SimilarityOnBackend, SymmetricAllModeMirrorsEveryBit) {
    // 300 samples: more than one 256-sample chunk of the CPU kernel, with pairs alive across it.
    for (const auto [n, samples] : {std::pair<std::size_t, std::size_t>{301, 20}, {64, 20}, {17, 20}, {131, 300}}) {
        const auto x = clustered_data(samples, n);
        const auto counts = reference_counts(x, x, samples, n, n, 2.0f);
        for (SimilarityOutput output : {SimilarityOutput::Bool, SimilarityOutput::Bitmask}) {
            const auto expected = encode(counts, n, n, samples, output);
            const std::size_t passes = std::count(counts.begin(), counts.end(), static_cast<std::int32_t>(samples));
            EXPECT_GT(passes, n * n / 5);
            EXPECT_LT(passes, n * n * 2 / 3);
            for (const Method method : kMethods)
            for (const std::optional<std::size_t> tile :
                 {std::optional<std::size_t>{}, std::optional<std::size_t>{8}, std::optional<std::size_t>{24},
                  std::optional<std::size_t>{129}}) {
                if (method == Method::Naive) continue;
                SimilarityOptions o;
                o.backend = GetParam();
                o.method = method;
                o.mode = SimilarityMode::All;
                o.output = output;
                o.threshold = 2.0f;
                o.tile = tile;
                std::vector<unsigned char> got(expected.size(), 0xAB);
                hpcml::similarity({x.data(), samples, n}, {}, got.data(), o);
                EXPECT_EQ(got, expected) << label(GetParam(), method, output, tile) << " n " << n;
                std::vector<unsigned char> assembled(expected.size(), 0xAB);
                const std::size_t row_bytes = hpcml::similarity_output_bytes(1, n, output);
                hpcml::similarity(
                    {x.data(), samples, n}, {},
                    [&](const hpcml::SimilarityTile& t) {
                        for (std::size_t r = 0; r < t.rows; ++r)
                            std::memcpy(&assembled[(t.row0 + r) * row_bytes +
                                                   hpcml::similarity_output_bytes(1, t.col0, output)],
                                        static_cast<const unsigned char*>(t.data) + r * t.row_stride_bytes,
                                        hpcml::similarity_output_bytes(1, t.cols, output));
                    },
                    o);
                EXPECT_EQ(assembled, expected)
                    << "sink " << label(GetParam(), method, output, tile) << " n " << n;
                const std::vector<float> copy = x;  // no symmetry: the same bytes
                std::vector<unsigned char> plain(expected.size(), 0xAB);
                hpcml::similarity({x.data(), samples, n}, {copy.data(), samples, n}, plain.data(), o);
                EXPECT_EQ(plain, expected) << "copy " << label(GetParam(), method, output, tile) << " n " << n;
            }
        }
    }
}

TEST_P(SimilarityOnBackend, ThresholdZeroAndLarge) {
    check_all_outputs(GetParam(), {20, 9, 10}, 0.0f, false, {std::nullopt}, 7);
    check_all_outputs(GetParam(), {20, 9, 10}, 1e30f, false, {std::nullopt, 4}, 8);
}

TEST_P(SimilarityOnBackend, DifferencesExactlyAtThresholdDoNotCount) {
    // 1.5 - 0.5 == 1 exactly; 1 - 2^-24 rounds the other way; inf - inf is NaN.
    const std::vector<float> x = {1.5f, 1.0f, INFINITY, NAN, -0.5f, 0.0f};
    const std::vector<float> y = {0.5f, 2.0f - 0x1p-23f, INFINITY, 0.0f, 0.5f, 0x1p-149f};
    std::vector<std::int32_t> out(36);
    SimilarityOptions o;
    o.backend = GetParam();
    hpcml::similarity({x.data(), 1, 6}, {y.data(), 1, 6}, out.data(), o);
    EXPECT_EQ(out[0 * 6 + 0], 0);  // |1.5 - 0.5| == 1
    EXPECT_EQ(out[1 * 6 + 1], 1);  // |1 - (2 - 2^-23)| = 1 - 2^-23 < 1
    EXPECT_EQ(out[2 * 6 + 2], 0);  // inf - inf = NaN
    EXPECT_EQ(out[3 * 6 + 3], 0);  // NaN
    EXPECT_EQ(out[4 * 6 + 4], 0);  // |-0.5 - 0.5| == 1
    EXPECT_EQ(out[5 * 6 + 5], 1);  // denormal difference, no flush to zero needed
    const auto ref = reference_counts(x, y, 1, 6, 6, 1.0f);
    for (std::size_t e = 0; e < 36; ++e) EXPECT_EQ(out[e], ref[e]) << "pair " << e;
}

TEST_P(SimilarityOnBackend, ZeroSamplesGiveZeroCountsAndAllTrue) {
    const std::vector<float> none;
    for (Method method : kMethods) {
        SimilarityOptions o;
        o.backend = GetParam();
        o.method = method;
        std::vector<std::int32_t> counts(12, -1);
        hpcml::similarity({none.data(), 0, 3}, {none.data(), 0, 4}, counts.data(), o);
        for (auto c : counts) EXPECT_EQ(c, 0);
        o.mode = SimilarityMode::All;
        std::vector<std::uint8_t> all(12, 7);
        hpcml::similarity({none.data(), 0, 3}, {none.data(), 0, 4}, all.data(), o);
        for (auto a : all) EXPECT_EQ(a, 1);
    }
}

TEST_P(SimilarityOnBackend, EmptyFeaturesAreANoOp) {
    const std::vector<float> x(10, 0.0f);
    SimilarityOptions o;
    o.backend = GetParam();
    EXPECT_NO_THROW(hpcml::similarity({x.data(), 10, 0}, {x.data(), 10, 1}, nullptr, o));
    EXPECT_NO_THROW(hpcml::similarity({x.data(), 10, 1}, {x.data(), 10, 0}, nullptr, o));
}
