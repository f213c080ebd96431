// Similarity by tiles: the mirror of a tile, tiles handed to a sink (each once; with y = x, a tile
// above the diagonal then its mirror), a sink that throws, and host threads calling at once.
#include <memory>
#include <stdexcept>
#include <thread>

#include "support/similarity.hpp"

using namespace hpcml_test::similarity;

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
