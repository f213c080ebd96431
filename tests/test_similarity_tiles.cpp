// Similarity by tiles: the one tile plan (similarity_tile_plan), the mirror of a tile, tiles handed to a sink (each
// once; with y = x, a tile above the diagonal then its mirror), a sink that throws, host threads calling at once, and
// the CUDA host path's staging with the device faked.
#include <chrono>
#include <functional>
#include <future>
#include <memory>
#include <stdexcept>
#include <thread>

#include "common/hd.hpp"
#include "common/pipeline.hpp"
#include "similarity/host_staging.hpp"
#include "support/similarity.hpp"

using namespace hpcml_test::similarity;

// The tile plan against a brute-force cover of the output, on ragged shapes, every output type,
// with and without y = x: its tiles cover every element once, row-major, with the role their
// place gives them; its bands of k tiles cover the computed tiles' elements once, each within a
// row block and at most k tiles wide, in order; with y = x the bands and their mirrors cover
// every element once; Bitmask columns start on a byte; and a plan of given blocks that does
// not fit the output is refused naming the argument.
TEST(SimilarityTilePlan, TilesBandsAndMirrorsCoverTheOutputOnce) {
    using hpcml::SimilarityPlannedTile;
    using hpcml::SimilarityTileRole;
    std::mt19937 rng(50);
    for (int trial = 0; trial < 300; ++trial) {
        const SimilarityOutput output = hpcml::parse_similarity_output(
            hpcml::similarity_output_names()[rng() % hpcml::similarity_output_names().size()]);
        const bool symmetric = rng() % 2;
        const std::size_t n = rng() % 70, m = symmetric ? n : rng() % 70, tile = 1 + rng() % 40;
        const hpcml::SimilarityTilePlan plan = hpcml::similarity_tile_plan(n, m, tile, output, symmetric);
        const std::size_t per = hpcml::similarity_output_info(output).columns_per_element;
        const std::size_t edge = std::min<std::size_t>(tile, std::max<std::size_t>({n, m, 1}));
        const std::string what = "n " + std::to_string(n) + " m " + std::to_string(m) + " tile " +
                                 std::to_string(tile) + " " + std::string(hpcml::to_string(output)) +
                                 (symmetric ? " y = x" : "");
        EXPECT_EQ(plan.tile_cols, (edge + per - 1) / per * per) << what;
        EXPECT_EQ(plan.tile_rows, symmetric ? plan.tile_cols : edge) << what;
        std::vector<int> covered(n * m, 0), computed(n * m, 0);
        std::size_t last = 0;
        for (const SimilarityPlannedTile& t : plan.tiles()) {
            ASSERT_GE(t.row0 * std::max<std::size_t>(m, 1) + t.col0 + 1, last) << what << ": row-major";
            last = t.row0 * std::max<std::size_t>(m, 1) + t.col0 + 1;
            EXPECT_EQ(t.col0 % per, 0u) << what;
            const SimilarityTileRole role = !symmetric                   ? SimilarityTileRole::Computed
                                            : t.row_block == t.col_block ? SimilarityTileRole::Diagonal
                                            : t.row_block > t.col_block  ? SimilarityTileRole::Mirror
                                                                         : SimilarityTileRole::Computed;
            EXPECT_EQ(t.role, role) << what;
            for (std::size_t r = t.row0; r < t.row0 + t.rows; ++r)
                for (std::size_t c = t.col0; c < t.col0 + t.cols; ++c) {
                    ++covered[r * m + c];
                    if (t.role != SimilarityTileRole::Mirror) ++computed[r * m + c];
                }
        }
        EXPECT_EQ(std::count(covered.begin(), covered.end(), 1), static_cast<std::ptrdiff_t>(n * m)) << what;
        const std::size_t k = 1 + rng() % 4;
        std::vector<int> banded(n * m, 0), whole(n * m, 0);
        last = 0;
        for (const SimilarityPlannedTile& b : plan.bands(k)) {
            ASSERT_GE(b.row0 * std::max<std::size_t>(m, 1) + b.col0 + 1, last) << what << ": bands in order";
            last = b.row0 * std::max<std::size_t>(m, 1) + b.col0 + 1;
            EXPECT_EQ(b.rows, plan.row_blocks[b.row_block]) << what;
            EXPECT_LE(b.cols, k * plan.tile_cols) << what;
            auto mark = [&](const SimilarityPlannedTile& t) {
                for (std::size_t r = t.row0; r < t.row0 + t.rows; ++r)
                    for (std::size_t c = t.col0; c < t.col0 + t.cols; ++c) ++whole[r * m + c];
            };
            mark(b);
            for (std::size_t r = b.row0; r < b.row0 + b.rows; ++r)
                for (std::size_t c = b.col0; c < b.col0 + b.cols; ++c) ++banded[r * m + c];
            if (symmetric)
                if (const std::optional<SimilarityPlannedTile> mirror = hpcml::similarity_mirror_of(b)) mark(*mirror);
        }
        EXPECT_EQ(banded, computed) << what;
        // "Whole rows" asked as the largest count: the same bands as the tiles in a row.
        EXPECT_EQ(plan.bands(SIZE_MAX).size(), plan.bands(plan.col_blocks.size()).size()) << what;
        for (const SimilarityPlannedTile& b : plan.bands(SIZE_MAX))
            EXPECT_TRUE(b.cols > 0 && b.col0 + b.cols <= m && (!symmetric || b.col0 == b.row0)) << what;
        if (symmetric) EXPECT_EQ(std::count(whole.begin(), whole.end(), 1), static_cast<std::ptrdiff_t>(n * m)) << what;
    }
    using V = std::vector<std::size_t>;
    expect_invalid([] { hpcml::similarity_tile_plan(10, 10, 0, SimilarityOutput::Int32, false); }, "tile: ");
    expect_invalid([] { hpcml::similarity_tile_plan(10, 12, 4, SimilarityOutput::Int32, true); }, "m: y is x");
    expect_invalid(
        [] {
            hpcml::similarity_tile_plan(10, 12, V{5, 4}, V{12}, SimilarityOutput::Int32, false, "chunks");
        },
        "chunks: blocks (5, 4) cover 9 elements, but x has 10");
    expect_invalid(
        [] {
            hpcml::similarity_tile_plan(10, 12, V{10}, V{6, 6}, SimilarityOutput::Bitmask, false, "chunks");
        },
        "chunks: blocks (6, 6) of y: each but the last must be a multiple of 8");
    expect_invalid(
        [] {
            hpcml::similarity_tile_plan(16, 16, V{8, 8}, V{16}, SimilarityOutput::Int32, true, "chunks");
        },
        "chunks: with y = x the row and column blocks must be the same");
    expect_invalid(
        [] {
            hpcml::similarity_tile_plan(4, 4, V{4, 0}, V{4}, SimilarityOutput::Int32, false);
        },
        "blocks: blocks (4, 0) include an empty one");
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

// The CUDA host path's staging (cuda_driver.cpp's run_host: two_slot_pipeline over
// launch_regions or mirrored_bands, hand_on) with the device faked on the host: a step's
// "kernels and copy" run on another thread, after a delay that varies, and copy the region's
// bytes from a known matrix into its slot's pinned buffer, or straight into a page-locked `out`.
// Every byte lands where it belongs, a sink gets the plan's tiles in row-major order, each once,
// no slot is written before the host has handed on its last step, and every element is reported
// delivered once. Ragged shapes, every output width, bitmask columns.
TEST(HostStaging, FakedDeviceCopiesDeliverEveryRegionInOrder) {
    namespace sim = hpcml::detail::similarity;
    std::mt19937 rng(49);
    for (SimilarityOutput output : {SimilarityOutput::Int32, SimilarityOutput::UInt8, SimilarityOutput::Bitmask})
        for (const int destination : {0, 1, 2})  // a sink, a pageable out, a page-locked out
            for (const bool bands : {false, true}) {
                if (bands && destination == 0) continue;  // sinks get the groups (run_host)
                const std::size_t n = 301, m = 263;
                auto cut = [](std::size_t extent, std::size_t edge) {  // 64-row, 48-column tiles
                    std::vector<std::size_t> blocks;
                    for (std::size_t at = 0; at < extent; at += edge) blocks.push_back(std::min(edge, extent - at));
                    return blocks;
                };
                const sim::TilePlan plan(hpcml::similarity_tile_plan(n, m, cut(n, 64), cut(m, 48), output, false));
                sim::Problem p;
                p.n = n;
                p.m = m;
                p.output = output;
                const std::vector<sim::Region> steps =
                    bands ? sim::mirrored_bands(n, m, output, 128) : sim::launch_regions(plan, 3);
                const std::size_t out_row = sim::row_bytes(m, output);
                std::vector<unsigned char> truth(n * out_row), out(n * out_row + 1, 0xA5);
                for (unsigned char& b : truth) b = static_cast<unsigned char>(rng());
                std::size_t slot_bytes = 0;
                for (const sim::Region& r : steps)
                    slot_bytes = std::max(slot_bytes, r.rows * sim::row_bytes(r.cols, output));
                std::vector<unsigned char> staged[2] = {std::vector<unsigned char>(slot_bytes),
                                                        std::vector<unsigned char>(slot_bytes)};

                std::vector<hpcml::SimilarityTile> tiles;
                std::vector<unsigned char> assembled(n * out_row, 0);
                const hpcml::SimilarityTileSink sink = [&](const hpcml::SimilarityTile& t) {
                    tiles.push_back(t);
                    for (std::size_t r = 0; r < t.rows; ++r)
                        std::memcpy(&assembled[(t.row0 + r) * out_row + sim::row_bytes(t.col0, output)],
                                    static_cast<const unsigned char*>(t.data) + r * t.row_stride_bytes,
                                    sim::row_bytes(t.cols, output));
                };
                std::uint64_t delivered = 0;
                const std::function<void(std::uint64_t)> count = [&](std::uint64_t e) { delivered += e; };
                sim::HostDestination to;
                if (destination == 0) {
                    to.sink = &sink;
                } else {
                    to = {.out = out.data(),
                          .out_row_bytes = out_row,
                          .out_page_locked = destination == 2,
                          .delivered = &count};
                }

                std::future<void> in_flight[2];
                std::ptrdiff_t handed_on[2] = {-2, -1};  // the last step each slot handed on
                auto issue = [&](std::size_t k, int slot) {
                    ASSERT_EQ(static_cast<std::ptrdiff_t>(k) - 2, handed_on[slot])
                        << "slot " << slot << " reused early";
                    const sim::Region region = steps[k];
                    const unsigned delay = rng() % 300;
                    in_flight[slot] = std::async(std::launch::async, [&, region, slot, delay] {
                        std::this_thread::sleep_for(std::chrono::microseconds(delay));
                        const std::size_t stride = sim::row_bytes(region.cols, output);
                        for (std::size_t r = 0; r < region.rows; ++r) {
                            const unsigned char* from =
                                &truth[(region.row0 + r) * out_row + sim::row_bytes(region.col0, output)];
                            unsigned char* into = to.staged() ? staged[slot].data() + r * stride
                                                              : to.out + (region.row0 + r) * out_row +
                                                                    sim::row_bytes(region.col0, output);
                            std::memcpy(into, from, stride);
                        }
                    });
                };
                auto retire = [&](std::size_t k, int slot) {
                    in_flight[slot].get();
                    sim::hand_on(steps[k], staged[slot].data(), output, plan, to);
                    handed_on[slot] = static_cast<std::ptrdiff_t>(k);
                };
                hpcml::detail::two_slot_pipeline(steps.size(), issue, retire);

                const std::string label = std::to_string(static_cast<int>(output)) + " destination " +
                                          std::to_string(destination) + (bands ? " bands" : " groups");
                if (destination == 0) {
                    EXPECT_EQ(assembled, truth) << label;
                    for (std::size_t t = 0; t < tiles.size(); ++t) {
                        EXPECT_TRUE(tiles[t].rows == std::min(plan.tile_rows, n - tiles[t].row0) &&
                                    tiles[t].cols == std::min(plan.tile_cols, m - tiles[t].col0))
                            << label << ": tile " << t << " is not the plan's";
                        if (t > 0)
                            EXPECT_LT(std::pair(tiles[t - 1].row0, tiles[t - 1].col0),
                                      std::pair(tiles[t].row0, tiles[t].col0))
                                << label << ": tile " << t << " out of row-major order";
                    }
                    EXPECT_EQ(tiles.size(),
                              hpcml::detail::ceil_div(n, plan.tile_rows) * hpcml::detail::ceil_div(m, plan.tile_cols));
                } else {
                    EXPECT_TRUE(std::equal(truth.begin(), truth.end(), out.begin())) << label;
                    EXPECT_EQ(out.back(), 0xA5) << label << ": past the output";
                    EXPECT_EQ(delivered, std::uint64_t{n} * m) << label;
                }
            }
}
