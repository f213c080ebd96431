// Similarity: exact equality with a brute-force float32 reference on random and special inputs,
// every output type, both methods, every backend present; tiling and sinks; memory bounds;
// argument errors.
#include <hpcml/similarity.hpp>

#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <limits>
#include <memory>
#include <optional>
#include <random>
#include <string>
#include <stdexcept>
#include <thread>
#include <vector>

#include "support/errors.hpp"
#include "support/gpu.hpp"

#if HPCML_WITH_CUDA
#include <cuda_runtime.h>

#include <algorithm>
#include <new>

#include "support/late_upload.hpp"
#endif

namespace {

using hpcml_test::expect_invalid;

using hpcml::Backend;
using hpcml::MatrixView;
using hpcml::Method;
using hpcml::SimilarityMode;
using hpcml::SimilarityOptions;
using hpcml::SimilarityOutput;

// The reference: NumPy's (abs(x[:, :, None] - y[:, None, :]) < t).sum(0) in float32, one pair
// at a time. It shares no code with the library.
std::vector<std::int64_t> reference_counts(const std::vector<float>& x, const std::vector<float>& y,
                                           std::size_t samples, std::size_t n, std::size_t m, float t) {
    std::vector<std::int64_t> counts(n * m, 0);
    for (std::size_t s = 0; s < samples; ++s)
        for (std::size_t i = 0; i < n; ++i)
            for (std::size_t j = 0; j < m; ++j) {
                const volatile float d = x[s * n + i] - y[s * m + j];  // rounded to float32
                counts[i * m + j] += std::fabs(d) < t;
            }
    return counts;
}

// The expected output bytes for `output` (All outputs: count == samples).
std::vector<unsigned char> encode(const std::vector<std::int64_t>& counts, std::size_t n, std::size_t m,
                                  std::size_t samples, SimilarityOutput output) {
    std::vector<unsigned char> out(hpcml::similarity_output_bytes(n, m, output), 0);
    for (std::size_t i = 0; i < n; ++i)
        for (std::size_t j = 0; j < m; ++j) {
            const std::int64_t c = counts[i * m + j];
            const bool all = c == static_cast<std::int64_t>(samples);
            switch (output) {
                case SimilarityOutput::Int32: {
                    const auto v = static_cast<std::int32_t>(c);
                    std::memcpy(&out[(i * m + j) * 4], &v, 4);
                    break;
                }
                case SimilarityOutput::UInt16: {
                    const auto v = static_cast<std::uint16_t>(c);
                    std::memcpy(&out[(i * m + j) * 2], &v, 2);
                    break;
                }
                case SimilarityOutput::UInt8:
                    out[i * m + j] = static_cast<unsigned char>(c);
                    break;
                case SimilarityOutput::Bool:
                    out[i * m + j] = all;
                    break;
                case SimilarityOutput::Bitmask:
                    out[i * ((m + 7) / 8) + j / 8] |= static_cast<unsigned char>(all << (j % 8));
                    break;
                default:
                    ADD_FAILURE();
            }
        }
    return out;
}

// Normals, mixed with quantised values (so that differences land exactly on t), NaN and +-inf.
std::vector<float> make_data(std::size_t count, unsigned seed, double special_fraction = 0.05) {
    std::mt19937 rng(seed);
    std::normal_distribution<float> normal(0.0f, 1.0f);
    std::uniform_real_distribution<double> u(0.0, 1.0);
    std::uniform_int_distribution<int> q(-8, 8);
    std::vector<float> v(count);
    for (float& e : v) {
        const double r = u(rng);
        if (r < special_fraction / 3) {
            e = std::numeric_limits<float>::quiet_NaN();
        } else if (r < special_fraction * 2 / 3) {
            e = r < special_fraction / 2 ? INFINITY : -INFINITY;
        } else if (r < 0.5) {
            e = static_cast<float>(q(rng)) * 0.25f;
        } else {
            e = normal(rng);
        }
    }
    return v;
}

// Tests of every backend: the CUDA instances skip, saying why, where no usable GPU exists.
class SimilarityOnBackend : public ::testing::TestWithParam<Backend> {
protected:
    void SetUp() override { HPCML_SKIP_UNLESS_AVAILABLE(GetParam()); }
};
INSTANTIATE_TEST_SUITE_P(, SimilarityOnBackend, ::testing::ValuesIn(hpcml_test::kBackends), hpcml_test::backend_name);

std::string label(Backend b, Method m, SimilarityOutput o, std::optional<std::size_t> tile) {
    return std::string(hpcml::to_string(b)) + "/" + std::string(hpcml::to_string(m)) + " output " +
           std::to_string(static_cast<int>(o)) + " tile " + (tile ? std::to_string(*tile) : "unset");
}

struct Shape {
    std::size_t samples, n, m;
};

void check_all_outputs(Backend backend, const Shape& shape, float threshold, bool self,
                       const std::vector<std::optional<std::size_t>>& tiles, unsigned seed) {
    const auto x = make_data(shape.samples * shape.n, seed);
    const auto y = self ? x : make_data(shape.samples * shape.m, seed + 1);
    const std::size_t m = self ? shape.n : shape.m;
    const auto counts = reference_counts(x, y, shape.samples, shape.n, m, threshold);
    const MatrixView xv{x.data(), shape.samples, shape.n};
    const MatrixView yv = self ? MatrixView{} : MatrixView{y.data(), shape.samples, m};

    std::vector<std::pair<SimilarityMode, SimilarityOutput>> outputs = {
        {SimilarityMode::Count, SimilarityOutput::Int32},
        {SimilarityMode::Count, SimilarityOutput::UInt16},
        {SimilarityMode::All, SimilarityOutput::Bool},
        {SimilarityMode::All, SimilarityOutput::Bitmask}};
    if (shape.samples <= 255) outputs.push_back({SimilarityMode::Count, SimilarityOutput::UInt8});
    for (const auto& [mode, output] : outputs) {
        const auto expected = encode(counts, shape.n, m, shape.samples, output);
        for (Method method : {Method::Fused, Method::Naive})
            for (const auto& tile : tiles) {
                SimilarityOptions o;
                o.threshold = threshold;
                o.mode = mode;
                o.output = output;
                o.tile = tile;
                o.backend = backend;
                o.method = method;
                std::vector<unsigned char> got(expected.size(), 0xAB);
                const hpcml::RunStats stats = hpcml::similarity(xv, yv, got.data(), o);
                EXPECT_EQ(stats.backend, backend);
                ASSERT_EQ(got, expected) << label(backend, method, output, tile) << " shape " << shape.samples << "x"
                                         << shape.n << "x" << m << " t=" << threshold;
            }
    }
}

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
    for (Method method : {Method::Fused, Method::Naive})
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
    for (Method method : {Method::Fused, Method::Naive})
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
// samples x n features that are offsets in [0, 8) plus noise in +-0.2: with threshold 2 about
// a third of the pairs pass in mode All. Feature n / 2 has a NaN (it passes with nothing,
// itself included) and feature 1 an inf.
std::vector<float> clustered_data(std::size_t samples, std::size_t n) {
    std::mt19937 rng(static_cast<unsigned>(n));
    std::uniform_real_distribution<float> offset(0.0f, 8.0f), noise(-0.2f, 0.2f);
    std::vector<float> base(n), x(samples * n);
    for (float& b : base) b = offset(rng);
    for (std::size_t s = 0; s < samples; ++s)
        for (std::size_t i = 0; i < n; ++i) x[s * n + i] = base[i] + noise(rng);
    x[3 * n + n / 2] = NAN;
    x[5 * n + 1] = INFINITY;
    return x;
}

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
            for (const std::optional<std::size_t> tile :
                 {std::optional<std::size_t>{}, std::optional<std::size_t>{8}, std::optional<std::size_t>{24},
                  std::optional<std::size_t>{129}}) {
                SimilarityOptions o;
                o.backend = GetParam();
                o.mode = SimilarityMode::All;
                o.output = output;
                o.threshold = 2.0f;
                o.tile = tile;
                std::vector<unsigned char> got(expected.size(), 0xAB);
                hpcml::similarity({x.data(), samples, n}, {}, got.data(), o);
                EXPECT_EQ(got, expected) << label(GetParam(), Method::Fused, output, tile) << " n " << n;
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
                    << "sink " << label(GetParam(), Method::Fused, output, tile) << " n " << n;
                const std::vector<float> copy = x;  // no symmetry: the same bytes
                std::vector<unsigned char> plain(expected.size(), 0xAB);
                hpcml::similarity({x.data(), samples, n}, {copy.data(), samples, n}, plain.data(), o);
                EXPECT_EQ(plain, expected) << "copy " << label(GetParam(), Method::Fused, output, tile) << " n " << n;
            }
        }
    }
}

// similarity_transpose against element-by-element transposition, for every output type, on
// sizes that are not multiples of 8 (the Bitmask padding bits of the mirror are 0), inside
// larger strides; and its argument checks.
TEST(Similarity, TransposeOfATile) {
    std::mt19937 rng(40);
    for (SimilarityOutput output : {SimilarityOutput::Int32, SimilarityOutput::UInt16, SimilarityOutput::UInt8,
                                    SimilarityOutput::Bool, SimilarityOutput::Bitmask})
        for (auto [rows, cols] : {std::pair<std::size_t, std::size_t>{1, 1}, {13, 37}, {64, 8}, {70, 129}}) {
            const std::size_t width =
                output == SimilarityOutput::Bitmask ? 1 : hpcml::similarity_output_bytes(1, 1, output);
            auto element = [&](const std::vector<unsigned char>& m, std::size_t stride, std::size_t r, std::size_t c) {
                if (output == SimilarityOutput::Bitmask) return std::uint64_t{(m[r * stride + c / 8] >> (c % 8)) & 1u};
                std::uint64_t v = 0;
                std::memcpy(&v, &m[r * stride + c * width], width);
                return v;
            };
            const std::size_t src_stride = hpcml::similarity_output_bytes(1, cols, output) + 3;
            const std::size_t dst_stride = hpcml::similarity_output_bytes(1, rows, output) + 5;
            std::vector<unsigned char> src(rows * src_stride);
            for (auto& b : src) b = static_cast<unsigned char>(rng());
            std::vector<unsigned char> dst(cols * dst_stride, 0xAB);
            hpcml::similarity_transpose({0, 0, rows, cols, src.data(), src_stride, output}, dst.data(), dst_stride);
            for (std::size_t a = 0; a < cols; ++a) {
                for (std::size_t b = 0; b < rows; ++b)
                    ASSERT_EQ(element(dst, dst_stride, a, b), element(src, src_stride, b, a))
                        << static_cast<int>(output) << " " << a << "," << b;
                if (output == SimilarityOutput::Bitmask && rows % 8)
                    EXPECT_EQ(dst[a * dst_stride + rows / 8] >> (rows % 8), 0);
                EXPECT_EQ(dst[a * dst_stride + dst_stride - 1], 0xAB);  // past the row: untouched
            }
        }
    std::vector<unsigned char> buffer(64);
    expect_invalid(
        [&] {
            hpcml::similarity_transpose({0, 0, 4, 4, buffer.data(), 16, SimilarityOutput::Default}, buffer.data(), 16);
        },
        "tile:");
    expect_invalid(
        [&] {
            hpcml::similarity_transpose({0, 0, 4, 4, buffer.data(), 8, SimilarityOutput::Int32}, buffer.data(), 16);
        },
        "tile:");
    expect_invalid(
        [&] {
            hpcml::similarity_transpose({0, 0, 4, 4, buffer.data(), 16, SimilarityOutput::Int32}, buffer.data(), 15);
        },
        "dst_row_stride_bytes:");
    expect_invalid(
        [&] {
            hpcml::similarity_transpose({0, 0, 4, 4, buffer.data(), 16, SimilarityOutput::Int32}, nullptr, 16);
        },
        "dst:");
    // In place, or overlapping by one byte: refused (threads would read what others write).
    expect_invalid(
        [&] {
            hpcml::similarity_transpose({0, 0, 4, 4, buffer.data(), 16, SimilarityOutput::Int32}, buffer.data(), 16);
        },
        "dst: overlaps");
    std::vector<unsigned char> two(128);
    expect_invalid(
        [&] {
            hpcml::similarity_transpose({0, 0, 4, 4, two.data(), 16, SimilarityOutput::Int32}, two.data() + 63, 16);
        },
        "dst: overlaps");
    hpcml::similarity_transpose({0, 0, 4, 4, two.data(), 16, SimilarityOutput::Int32}, two.data() + 64,
                                16);  // adjacent: fine
}

// With y = x through a sink, every tile arrives once: a tile above the diagonal, then its mirror.
TEST(Similarity, SymmetricSinkOrder) {
    const Shape shape{21, 45, 45};
    const auto x = make_data(shape.samples * shape.n, 32);
    const auto counts = reference_counts(x, x, shape.samples, shape.n, shape.n, 1.0f);
    for (SimilarityOutput output : {SimilarityOutput::Int32, SimilarityOutput::UInt8}) {
        SimilarityOptions o;
        o.backend = Backend::Cpu;
        o.tile = 16;
        o.output = output;
        const auto expected = encode(counts, shape.n, shape.n, shape.samples, output);
        const std::size_t row_bytes = hpcml::similarity_output_bytes(1, shape.n, output);
        std::vector<unsigned char> assembled(expected.size(), 0xAB);
        std::vector<std::pair<std::size_t, std::size_t>> order;
        hpcml::similarity(
            {x.data(), shape.samples, shape.n}, {},
            [&](const hpcml::SimilarityTile& t) {
                order.emplace_back(t.row0, t.col0);
                const std::size_t bytes = hpcml::similarity_output_bytes(1, t.cols, output);
                for (std::size_t r = 0; r < t.rows; ++r)
                    std::memcpy(
                        &assembled[(t.row0 + r) * row_bytes + hpcml::similarity_output_bytes(1, t.col0, output)],
                        static_cast<const unsigned char*>(t.data) + r * t.row_stride_bytes, bytes);
            },
            o);
        EXPECT_EQ(assembled, expected) << static_cast<int>(output);
        const std::vector<std::pair<std::size_t, std::size_t>> expected_order = {
            {0, 0}, {0, 16}, {16, 0}, {0, 32}, {32, 0}, {16, 16}, {16, 32}, {32, 16}, {32, 32}};
        EXPECT_EQ(order, expected_order) << static_cast<int>(output);
        // A sink that throws on a mirror tile ends the call there.
        int seen = 0;
        EXPECT_THROW(hpcml::similarity(
                         {x.data(), shape.samples, shape.n}, {},
                         [&](const hpcml::SimilarityTile&) {
                             if (++seen == 3) throw std::runtime_error("the sink failed on a mirror");
                         },
                         o),
                     std::runtime_error);
        EXPECT_EQ(seen, 3);
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
    for (Method method : {Method::Fused, Method::Naive}) {
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

TEST_P(SimilarityOnBackend, SinkSeesEveryTileOnce) {
    const Shape shape{33, 41, 29};
    const auto x = make_data(shape.samples * shape.n, 9);
    const auto y = make_data(shape.samples * shape.m, 10);
    const auto counts = reference_counts(x, y, shape.samples, shape.n, shape.m, 1.0f);
    const Backend backend = GetParam();
    for (SimilarityOutput output : {SimilarityOutput::Int32, SimilarityOutput::Bitmask}) {
        SimilarityOptions o;
        o.backend = backend;
        o.tile = 10;
        o.mode = output == SimilarityOutput::Int32 ? SimilarityMode::Count : SimilarityMode::All;
        o.output = output;
        const std::size_t row_bytes = hpcml::similarity_output_bytes(1, shape.m, output);
        std::vector<unsigned char> assembled(shape.n * row_bytes, 0);
        std::vector<int> covered(shape.n * shape.m, 0);
        hpcml::similarity(
            {x.data(), shape.samples, shape.n}, {y.data(), shape.samples, shape.m},
            [&](const hpcml::SimilarityTile& t) {
                EXPECT_EQ(t.output, output);
                EXPECT_LE(t.rows, 10u);
                EXPECT_LE(t.cols, output == SimilarityOutput::Bitmask ? 16u : 10u);
                const std::size_t bytes = hpcml::similarity_output_bytes(1, t.cols, output);
                const std::size_t offset = hpcml::similarity_output_bytes(1, t.col0, output);
                if (output == SimilarityOutput::Bitmask) EXPECT_EQ(t.col0 % 8, 0u);
                for (std::size_t r = 0; r < t.rows; ++r) {
                    std::memcpy(&assembled[(t.row0 + r) * row_bytes + offset],
                                static_cast<const unsigned char*>(t.data) + r * t.row_stride_bytes, bytes);
                    for (std::size_t c = 0; c < t.cols; ++c) ++covered[(t.row0 + r) * shape.m + t.col0 + c];
                }
            },
            o);
        for (int c : covered) ASSERT_EQ(c, 1);
        EXPECT_EQ(assembled, encode(counts, shape.n, shape.m, shape.samples, output)) << hpcml::to_string(backend);
    }
}

TEST(Similarity, FusedMemoryIsBoundedNaiveGrowsWithSamples) {
    const std::size_t n = 40, m = 30;
    for (std::size_t samples : {64u, 512u}) {
        const auto x = make_data(samples * n, 11);
        const auto y = make_data(samples * m, 12);
        std::vector<std::int32_t> out(n * m);
        SimilarityOptions o;
        o.backend = Backend::Cpu;
        const auto fused = hpcml::similarity({x.data(), samples, n}, {y.data(), samples, m}, out.data(), o);
        // The packed inputs (samples x (n + m) floats, features rounded up to 16) and per-thread
        // accumulators: it grows with the input, never with samples x n x m.
        EXPECT_LT(fused.memory.peak_host_bytes, sizeof(float) * samples * (n + m + 32) + 256u * 1024);
        o.method = Method::Naive;
        const auto naive = hpcml::similarity({x.data(), samples, n}, {y.data(), samples, m}, out.data(), o);
        EXPECT_GE(naive.memory.peak_host_bytes, samples * n * m * (sizeof(float) + 1));
        EXPECT_GT(naive.memory.peak_host_bytes, 10 * fused.memory.peak_host_bytes);
    }
}

TEST(Similarity, NaiveFailsCleanlyWhenItWouldNotFit) {
    // 1000 samples x 20000 x 20000 would need 2 TB for the broadcast; the input is 80 MB.
    const std::size_t samples = 1000, n = 20000;
    std::vector<float> x(samples * n, 0.0f);
    std::unique_ptr<std::int32_t[]> out(new std::int32_t[n * n]);  // never touched: no pages used
    SimilarityOptions o;
    o.backend = Backend::Cpu;
    o.method = Method::Naive;
    try {
        hpcml::similarity({x.data(), samples, n}, {}, out.get(), o);
        FAIL() << "expected OutOfMemory";
    } catch (const hpcml::Error& e) {
        EXPECT_EQ(e.kind(), hpcml::ErrorKind::OutOfMemory);
        EXPECT_NE(std::string(e.what()).find("needs 2.00 TB"), std::string::npos) << e.what();
    }
}

TEST(Similarity, BadArgumentsNameThemselves) {
    const std::vector<float> x(12, 0.0f), y(8, 0.0f);
    std::vector<std::int32_t> out(16);
    const MatrixView xv{x.data(), 4, 3}, yv{y.data(), 4, 2};
    auto with = [&](auto change) {
        SimilarityOptions o;
        o.backend = Backend::Cpu;
        change(o);
        return o;
    };
    for (float bad : {-1.0f, NAN, INFINITY}) {
        expect_invalid([&] { hpcml::similarity(xv, yv, out.data(), with([&](auto& o) { o.threshold = bad; })); },
                       "threshold");
    }
    expect_invalid([&] { hpcml::similarity({nullptr, 4, 3}, yv, out.data(), with([](auto&) {})); }, "x:");
    expect_invalid([&] { hpcml::similarity(xv, yv, nullptr, with([](auto&) {})); }, "out:");
    expect_invalid([&] { hpcml::similarity(xv, {y.data(), 2, 4}, out.data(), with([](auto&) {})); }, "y:");
    expect_invalid([&] { hpcml::similarity(xv, yv, out.data(), with([](auto& o) { o.tile = 0; })); }, "tile");
    expect_invalid(
        [&] { hpcml::similarity(xv, yv, out.data(), with([](auto& o) { o.output = SimilarityOutput::Bool; })); },
        "output");
    expect_invalid(
        [&] {
            hpcml::similarity(xv, yv, out.data(), with([](auto& o) {
                                  o.mode = SimilarityMode::All;
                                  o.output = SimilarityOutput::Int32;
                              }));
        },
        "output");
    const std::vector<float> many(256 * 2, 0.0f);
    expect_invalid(
        [&] {
            hpcml::similarity({many.data(), 256, 2}, {}, out.data(),
                              with([](auto& o) { o.output = SimilarityOutput::UInt8; }));
        },
        "output");
    expect_invalid([&] { hpcml::similarity(xv, yv, hpcml::SimilarityTileSink{}, with([](auto&) {})); }, "sink");
}

TEST(Similarity, OptionsCanBeCheckedBeforeAJob) {
    SimilarityOptions o;
    o.output = SimilarityOutput::UInt8;
    EXPECT_NO_THROW(hpcml::check_similarity_options(o, 255));
    expect_invalid([&] { hpcml::check_similarity_options(o, 256); }, "output: uint8 holds counts up to 255");
    o.output = SimilarityOutput::Bitmask;
    expect_invalid([&] { hpcml::check_similarity_options(o, 1); }, "output: bitmask is an output of mode All");
    o.mode = SimilarityMode::All;
    EXPECT_NO_THROW(hpcml::check_similarity_options(o, 1u << 30));
    o.threshold = -0.5f;
    expect_invalid([&] { hpcml::check_similarity_options(o, 1); }, "threshold");
    o.threshold = 1.0f;
    o.tile = 0;
    expect_invalid([&] { hpcml::check_similarity_options(o, 1); }, "tile");
}

TEST(Similarity, OutputBytes) {
    EXPECT_EQ(hpcml::similarity_output_bytes(3, 10, SimilarityOutput::Int32), 120u);
    EXPECT_EQ(hpcml::similarity_output_bytes(3, 10, SimilarityOutput::UInt16), 60u);
    EXPECT_EQ(hpcml::similarity_output_bytes(3, 10, SimilarityOutput::Bool), 30u);
    EXPECT_EQ(hpcml::similarity_output_bytes(3, 10, SimilarityOutput::Bitmask), 6u);
}

#if HPCML_WITH_CUDA
// Device buffers for the device-pointer API, freed on scope exit.
template <class T>
struct DeviceArray {
    explicit DeviceArray(std::size_t count) : count(count) {
        if (cudaMalloc(&data, std::max<std::size_t>(count, 1) * sizeof(T)) != cudaSuccess) throw std::bad_alloc();
    }
    ~DeviceArray() { cudaFree(data); }
    DeviceArray(const DeviceArray&) = delete;
    DeviceArray& operator=(const DeviceArray&) = delete;
    T* data = nullptr;
    std::size_t count;
};

// The device-pointer API on a user stream, every output and method: y = x (70 features:
// scalar loads) and a separate y (132 and 260 features from cudaMalloc: 16-byte loads). x is
// uploaded on the stream behind a 200 ms wait, so a call that did not follow the stream would
// count NaN.
TEST(SimilarityCuda, DevicePointersEveryOutputAndMethodOnAUserStream) {
    HPCML_SKIP_WITHOUT_GPU();
    cudaStream_t stream = nullptr;
    ASSERT_EQ(cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking), cudaSuccess);
    const std::pair<SimilarityMode, SimilarityOutput> outputs[] = {{SimilarityMode::Count, SimilarityOutput::Int32},
                                                                   {SimilarityMode::Count, SimilarityOutput::UInt16},
                                                                   {SimilarityMode::Count, SimilarityOutput::UInt8},
                                                                   {SimilarityMode::All, SimilarityOutput::Bool},
                                                                   {SimilarityMode::All, SimilarityOutput::Bitmask}};
    for (const bool self : {true, false}) {
        const Shape shape = self ? Shape{33, 70, 70} : Shape{33, 132, 260};
        const auto x = make_data(shape.samples * shape.n, 18);
        const auto y = self ? x : make_data(shape.samples * shape.m, 19);
        DeviceArray<float> dx(x.size()), dy(y.size());
        ASSERT_EQ(cudaMemcpy(dy.data, y.data(), y.size() * sizeof(float), cudaMemcpyHostToDevice), cudaSuccess);
        const auto counts = reference_counts(x, y, shape.samples, shape.n, shape.m, 1.0f);
        for (const auto& [mode, output] : outputs)
            for (Method method : {Method::Fused, Method::Naive}) {
                const auto expected = encode(counts, shape.n, shape.m, shape.samples, output);
                DeviceArray<unsigned char> out(expected.size());
                ASSERT_EQ(cudaMemset(out.data, 0xAB, expected.size()), cudaSuccess);
                ASSERT_EQ(cudaDeviceSynchronize(), cudaSuccess);  // the non-blocking stream does not wait for it
                SimilarityOptions o;
                o.mode = mode;
                o.output = output;
                o.method = method;
                o.backend = Backend::Cuda;
                o.stream = stream;
                {
                    const hpcml_test::LateUpload late(stream, dx.data, x.data(), x.size() * sizeof(float));
                    hpcml::similarity_device({dx.data, shape.samples, shape.n},
                                             self ? MatrixView{} : MatrixView{dy.data, shape.samples, shape.m},
                                             out.data, o);
                }
                std::vector<unsigned char> got(expected.size());
                ASSERT_EQ(cudaMemcpy(got.data(), out.data, got.size(), cudaMemcpyDeviceToHost), cudaSuccess);
                EXPECT_EQ(got, expected) << label(Backend::Cuda, method, output, std::nullopt)
                                         << (self ? " y = x" : " y");
            }
    }
    cudaStreamDestroy(stream);
}

// y = x on the device path: blocks on and above the diagonal in bands of whole 128-row blocks,
// then the mirror kernels (elements by 32 x 32 tiles, Bitmask bit by bit). Sizes across one,
// two and three block rows that are not multiples of 8, 32 or 128; tiles that are not
// multiples of 128; every output, on data where a third of the pairs pass in mode All and on
// data with NaN and inf; every byte written (the output starts as 0xAB).
TEST(SimilarityCuda, SymmetricDevicePathEqualsTheReference) {
    HPCML_SKIP_WITHOUT_GPU();
    for (const std::size_t n : {std::size_t{131}, std::size_t{257}, std::size_t{301}})
        for (const bool clustered : {true, false}) {
            const std::size_t samples = clustered ? 20 : 40;
            const float threshold = clustered ? 2.0f : 1.0f;
            const auto x = clustered ? clustered_data(samples, n) : make_data(samples * n, static_cast<unsigned>(n));
            DeviceArray<float> dx(x.size());
            ASSERT_EQ(cudaMemcpy(dx.data, x.data(), x.size() * sizeof(float), cudaMemcpyHostToDevice), cudaSuccess);
            const auto counts = reference_counts(x, x, samples, n, n, threshold);
            for (const auto& [mode, output] : {std::pair{SimilarityMode::Count, SimilarityOutput::Int32},
                                               std::pair{SimilarityMode::Count, SimilarityOutput::UInt16},
                                               std::pair{SimilarityMode::Count, SimilarityOutput::UInt8},
                                               std::pair{SimilarityMode::All, SimilarityOutput::Bool},
                                               std::pair{SimilarityMode::All, SimilarityOutput::Bitmask}}) {
                const auto expected = encode(counts, n, n, samples, output);
                for (const std::optional<std::size_t> tile :
                     {std::optional<std::size_t>{}, std::optional<std::size_t>{1}, std::optional<std::size_t>{100},
                      std::optional<std::size_t>{200}}) {
                    DeviceArray<unsigned char> out(expected.size());
                    ASSERT_EQ(cudaMemset(out.data, 0xAB, expected.size()), cudaSuccess);
                    SimilarityOptions o;
                    o.mode = mode;
                    o.output = output;
                    o.threshold = threshold;
                    o.tile = tile;
                    o.backend = Backend::Cuda;
                    hpcml::similarity_device({dx.data, samples, n}, {}, out.data, o);
                    std::vector<unsigned char> got(expected.size());
                    ASSERT_EQ(cudaMemcpy(got.data(), out.data, got.size(), cudaMemcpyDeviceToHost), cudaSuccess);
                    ASSERT_EQ(got, expected) << label(Backend::Cuda, Method::Fused, output, tile) << " n " << n
                                             << (clustered ? " clustered" : " special values");
                }
            }
        }
}

// Pair lists reduced on the device (select_passing over launches of several tiles, whose pairs
// arrive out of row-major order and are sorted) against the CPU's, which the test above checks
// against the reference: y = x and not, mode All where a third of the pairs pass, mode Count
// at several min_count (one above every count: nothing), tiles that do not divide n.
TEST(SimilarityCuda, PairsReducedOnTheDeviceEqualTheCpus) {
    HPCML_SKIP_WITHOUT_GPU();
    const std::size_t samples = 24, n = 700, m = 515;
    const auto x = clustered_data(samples, n);
    const auto y = clustered_data(samples, m);
    for (const bool self : {true, false})
        for (const std::optional<std::size_t> tile :
             {std::optional<std::size_t>{}, std::optional<std::size_t>{100}, std::optional<std::size_t>{300}})
            for (const auto& [mode, min_count] :
                 {std::pair{SimilarityMode::All, std::size_t{1}}, std::pair{SimilarityMode::Count, std::size_t{1}},
                  std::pair{SimilarityMode::Count, std::size_t{20}}, std::pair{SimilarityMode::Count, samples + 1}}) {
                SimilarityOptions o;
                o.mode = mode;
                o.threshold = 2.0f;
                o.tile = tile;
                o.backend = Backend::Cpu;
                const MatrixView xv{x.data(), samples, n};
                const MatrixView yv = self ? MatrixView{} : MatrixView{y.data(), samples, m};
                const hpcml::SimilarityPairs cpu = hpcml::similarity_pairs(xv, yv, o, min_count);
                o.backend = Backend::Cuda;
                const hpcml::SimilarityPairs gpu = hpcml::similarity_pairs(xv, yv, o, min_count);
                const std::string what =
                    std::string(self ? "y = x" : "y") + " tile " + (tile ? std::to_string(*tile) : "unset") + " mode " +
                    std::string(hpcml::to_string(mode)) + " min_count " + std::to_string(min_count);
                EXPECT_EQ(gpu.stats.backend, Backend::Cuda);
                if (min_count <= samples) EXPECT_GT(cpu.i.size(), n) << what;
                // The same from device pointers.
                DeviceArray<float> dx(x.size()), dy(y.size());
                ASSERT_EQ(cudaMemcpy(dx.data, x.data(), x.size() * sizeof(float), cudaMemcpyHostToDevice), cudaSuccess);
                ASSERT_EQ(cudaMemcpy(dy.data, y.data(), y.size() * sizeof(float), cudaMemcpyHostToDevice), cudaSuccess);
                const hpcml::SimilarityPairs device = hpcml::similarity_pairs_device(
                    {dx.data, samples, n}, self ? MatrixView{} : MatrixView{dy.data, samples, m}, o, min_count);
                EXPECT_EQ(device.i, cpu.i) << "device pointers, " << what;
                EXPECT_EQ(device.j, cpu.j) << "device pointers, " << what;
                EXPECT_EQ(device.count, cpu.count) << "device pointers, " << what;
                EXPECT_EQ(gpu.i, cpu.i) << what;
                EXPECT_EQ(gpu.j, cpu.j) << what;
                EXPECT_EQ(gpu.count, cpu.count) << what;
            }
    // 60000 columns of 100-column tiles: a row band takes several launches, so regions start
    // past column 0 and their pairs arrive out of row-major order; the naive method too.
    const std::size_t wide = 60000, rows = 150;
    const auto a = clustered_data(16, rows);
    const auto b = clustered_data(16, wide);
    for (const Method method : {Method::Fused, Method::Naive})
        for (const SimilarityMode mode : {SimilarityMode::All, SimilarityMode::Count}) {
            SimilarityOptions o;
            o.mode = mode;
            o.threshold = 2.0f;
            o.tile = 100;
            o.method = method;
            o.backend = Backend::Cpu;
            const hpcml::SimilarityPairs cpu =
                hpcml::similarity_pairs({a.data(), 16, rows}, {b.data(), 16, wide}, o, 8);
            o.backend = Backend::Cuda;
            const hpcml::SimilarityPairs gpu =
                hpcml::similarity_pairs({a.data(), 16, rows}, {b.data(), 16, wide}, o, 8);
            const std::string what = std::string(hpcml::to_string(method)) + " " + std::string(hpcml::to_string(mode));
            EXPECT_GT(cpu.i.size(), wide) << what;
            EXPECT_EQ(gpu.i, cpu.i) << what;
            EXPECT_EQ(gpu.j, cpu.j) << what;
            EXPECT_EQ(gpu.count, cpu.count) << what;
        }
}

TEST(SimilarityCuda, HostPointersToTheDeviceApiAreRefused) {
    // A host pointer would fault in a kernel and leave the context unusable: it must raise
    // InvalidArgument naming the argument, and the device must work afterwards.
    HPCML_SKIP_WITHOUT_GPU();
    const std::vector<float> x(8 * 16, 0.5f);
    DeviceArray<float> dx(x.size());
    DeviceArray<std::int32_t> out(16 * 16);
    ASSERT_EQ(cudaMemcpy(dx.data, x.data(), x.size() * sizeof(float), cudaMemcpyHostToDevice), cudaSuccess);
    std::vector<std::int32_t> host_out(16 * 16);
    SimilarityOptions o;
    o.backend = Backend::Cuda;
    expect_invalid([&] { hpcml::similarity_device({x.data(), 8, 16}, {}, out.data, o); }, "x:");
    expect_invalid([&] { hpcml::similarity_device({dx.data, 8, 16}, {x.data(), 8, 16}, out.data, o); }, "y:");
    expect_invalid([&] { hpcml::similarity_device({dx.data, 8, 16}, {}, host_out.data(), o); }, "out:");
    hpcml::similarity_device({dx.data, 8, 16}, {}, out.data, o);
    ASSERT_EQ(cudaMemcpy(host_out.data(), out.data, host_out.size() * sizeof(std::int32_t), cudaMemcpyDeviceToHost),
              cudaSuccess);
    for (std::int32_t c : host_out) EXPECT_EQ(c, 8);
    expect_invalid([&] { hpcml::similarity_pairs_device({x.data(), 8, 16}, {}, o); }, "x:");
    const hpcml::SimilarityPairs pairs = hpcml::similarity_pairs_device({dx.data, 8, 16}, {}, o);
    EXPECT_EQ(pairs.i.size(), 16u * 16u);  // every pair passes: equal columns
}

TEST(SimilarityCuda, OutputOverFourGiB) {
    // 33000 x 33000 int32 counts are 4.36 GB: every index past 2^32 bytes must land. Checked
    // against the reference on rows spread over the whole output, the last one included.
    HPCML_SKIP_WITHOUT_GPU();
    const std::size_t samples = 3, n = 33000;
    const auto x = make_data(samples * n, 19, 0.0);
    std::vector<std::int32_t> out(n * n, -1);
    SimilarityOptions o;
    o.backend = Backend::Cuda;
    o.tile = 4096;
    hpcml::similarity({x.data(), samples, n}, {}, out.data(), o);
    for (std::size_t i : {std::size_t{0}, n / 3, n / 2 + 1, n - 2, n - 1}) {
        for (std::size_t j = 0; j < n; ++j) {
            std::int32_t expected = 0;
            for (std::size_t s = 0; s < samples; ++s) {
                const volatile float d = x[s * n + i] - x[s * n + j];
                expected += std::fabs(d) < 1.0f;
            }
            ASSERT_EQ(out[i * n + j], expected) << "pair " << i << ", " << j;
        }
    }
    // The device path: the blocks on and above the diagonal, then the mirror kernels, whose
    // writes to the last rows land past 2^32 bytes. Rows equal to those checked above.
    DeviceArray<float> dx(x.size());
    DeviceArray<std::int32_t> dout(n * n);
    ASSERT_EQ(cudaMemcpy(dx.data, x.data(), x.size() * sizeof(float), cudaMemcpyHostToDevice), cudaSuccess);
    hpcml::similarity_device({dx.data, samples, n}, {}, dout.data, o);
    std::vector<std::int32_t> row(n);
    for (std::size_t i : {std::size_t{0}, n / 3, n / 2 + 1, n - 2, n - 1}) {
        ASSERT_EQ(cudaMemcpy(row.data(), dout.data + i * n, n * sizeof(std::int32_t), cudaMemcpyDeviceToHost),
                  cudaSuccess);
        ASSERT_TRUE(std::equal(row.begin(), row.end(), out.begin() + static_cast<std::ptrdiff_t>(i * n)))
            << "device path, row " << i;
    }
}

TEST(SimilarityCuda, NaiveOutOfDeviceMemoryIsAnError) {
    HPCML_SKIP_WITHOUT_GPU();
    // 1000 samples x 20000 x 20000: the naive broadcast needs 2 TB of device memory.
    const std::size_t samples = 1000, n = 20000;
    std::vector<float> x(samples * n, 0.0f);
    std::unique_ptr<std::int32_t[]> out(new std::int32_t[n * n]);
    SimilarityOptions o;
    o.backend = Backend::Cuda;
    o.method = Method::Naive;
    try {
        hpcml::similarity({x.data(), samples, n}, {}, out.get(), o);
        FAIL() << "expected OutOfMemory";
    } catch (const hpcml::Error& e) {
        EXPECT_EQ(e.kind(), hpcml::ErrorKind::OutOfMemory) << e.what();
        EXPECT_NE(std::string(e.what()).find("device memory"), std::string::npos) << e.what();
    }
}

TEST(SimilarityCuda, CpuAndGpuAgreeOnALargerProblem) {
    HPCML_SKIP_WITHOUT_GPU();
    const Shape shape{256, 700, 515};
    const auto x = make_data(shape.samples * shape.n, 13, 0.0);
    const auto y = make_data(shape.samples * shape.m, 14, 0.0);
    std::vector<std::int32_t> cpu(shape.n * shape.m), gpu(shape.n * shape.m);
    SimilarityOptions o;
    o.backend = Backend::Cpu;
    hpcml::similarity({x.data(), shape.samples, shape.n}, {y.data(), shape.samples, shape.m}, cpu.data(), o);
    o.backend = Backend::Cuda;
    o.tile = 300;
    const auto stats =
        hpcml::similarity({x.data(), shape.samples, shape.n}, {y.data(), shape.samples, shape.m}, gpu.data(), o);
    EXPECT_EQ(cpu, gpu);
    // Inputs on the device plus two staging slots of output tiles.
    EXPECT_LT(stats.memory.peak_device_bytes, (shape.n + shape.m) * shape.samples * 4 + 2u * 300 * 515 * 4 * 2 + 4096);
}
#endif

}  // namespace

// A sink that throws ends the call with its exception (no tile after it), and the library is
// usable again at once: on the GPU the streams, events and staging buffers in flight are undone.
TEST_P(SimilarityOnBackend, ASinkThatThrowsEndsTheCallAndLeavesTheLibraryUsable) {
    const Shape shape{16, 40, 37};
    const auto x = make_data(shape.samples * shape.n, 21);
    const auto y = make_data(shape.samples * shape.m, 22);
    const auto counts = reference_counts(x, y, shape.samples, shape.n, shape.m, 1.0f);
    const MatrixView xv{x.data(), shape.samples, shape.n}, yv{y.data(), shape.samples, shape.m};
    const Backend backend = GetParam();
    SimilarityOptions o;
    o.backend = backend;
    o.tile = 8;
    int seen = 0;
    EXPECT_THROW(hpcml::similarity(
                     xv, yv,
                     [&](const hpcml::SimilarityTile&) {
                         if (++seen == 3) throw std::runtime_error("the sink failed");
                     },
                     o),
                 std::runtime_error);
    EXPECT_EQ(seen, 3) << hpcml::to_string(backend);
    std::vector<std::int32_t> out(shape.n * shape.m);
    hpcml::similarity(xv, yv, out.data(), o);
    EXPECT_EQ(std::vector<std::int64_t>(out.begin(), out.end()), counts) << hpcml::to_string(backend);
}

// Several host threads calling at once, on every backend (on the GPU: one device shared by all).
TEST_P(SimilarityOnBackend, HostThreadsCallAtOnce) {
    constexpr int kThreads = 4;
    const Shape shape{24, 70, 53};
    std::vector<std::vector<float>> xs, ys;
    std::vector<std::vector<std::int64_t>> expected;
    for (int t = 0; t < kThreads; ++t) {
        xs.push_back(make_data(shape.samples * shape.n, 100 + t));
        ys.push_back(make_data(shape.samples * shape.m, 200 + t));
        expected.push_back(reference_counts(xs[t], ys[t], shape.samples, shape.n, shape.m, 1.0f));
    }
    const Backend backend = GetParam();
    std::vector<std::vector<std::int32_t>> got(kThreads, std::vector<std::int32_t>(shape.n * shape.m));
    std::vector<std::string> errors(kThreads);
    std::vector<std::thread> threads;
    for (int t = 0; t < kThreads; ++t)
        threads.emplace_back([&, t] {
            try {
                SimilarityOptions o;
                o.backend = backend;
                o.tile = 16 + t;
                for (int repeat = 0; repeat < 5; ++repeat)
                    hpcml::similarity({xs[t].data(), shape.samples, shape.n}, {ys[t].data(), shape.samples, shape.m},
                                      got[t].data(), o);
            } catch (const std::exception& e) {
                errors[t] = e.what();
            }
        });
    for (std::thread& thread : threads) thread.join();
    for (int t = 0; t < kThreads; ++t) {
        EXPECT_EQ(errors[t], "") << hpcml::to_string(backend);
        EXPECT_EQ(std::vector<std::int64_t>(got[t].begin(), got[t].end()), expected[t])
            << hpcml::to_string(backend) << " thread " << t;
    }
}

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
