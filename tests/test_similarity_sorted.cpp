// The sorted method: its per-element steps (sorted_math.hpp, shared with the GPU) against brute
// force, and the method itself bit for bit against the fused one on data built to break it: ties,
// values exactly t apart and one or two ulps either side, signed zeros, denormals, NaN and
// infinities, differences that overflow, thresholds 0, tiny and huge, shapes that are no multiple
// of its 512-wide tiles or 16-sample groups, y = x and y a copy, tiles through a sink. The other
// files of test_similarity run it too, against the reference (kMethods).
#include <algorithm>
#include <bit>
#include <cctype>
#include <cmath>
#include <cstdlib>
#include <cstdint>
#include <limits>
#include <memory>
#include <optional>
#include <random>
#include <string>
#include <tuple>
#include <vector>

#include "common/architectures.hpp"
#include "similarity/cpu_sorted.hpp"
#include "similarity/methods.hpp"
#include "similarity/host_staging.hpp"
#include "similarity/sorted_block.hpp"
#include "similarity/sorted_runs.hpp"
#include "similarity/sorted_math.hpp"
#include "support/environment.hpp"
#include "support/similarity.hpp"

using namespace hpcml_test::similarity;
namespace sorted = hpcml::detail::similarity::sorted;

namespace {

float next_up(float v, int steps) {
    for (int k = 0; k < steps; ++k) v = std::nextafter(v, INFINITY);
    for (int k = 0; k > steps; --k) v = std::nextafter(v, -INFINITY);
    return v;
}

}  // namespace

TEST(SimilaritySortedMath, OrderKeySortsLikeTheValuesAndInverts) {
    const std::vector<float> values = {-INFINITY, -3e38f, -1.0f, -0x1p-149f, -0.0f, 0.0f, 0x1p-149f,
                                       0x1p-126f, 1.0f,   next_up(1.0f, 1), 3e38f, INFINITY};
    for (std::size_t a = 0; a < values.size(); ++a) {
        EXPECT_EQ(std::bit_cast<std::uint32_t>(sorted::from_order_key(sorted::order_key(values[a]))),
                  std::bit_cast<std::uint32_t>(values[a]));
        for (std::size_t b = a + 1; b < values.size(); ++b)
            EXPECT_LT(sorted::order_key(values[a]), sorted::order_key(values[b])) << values[a] << " " << values[b];
    }
}

TEST(SimilaritySortedMath, IntervalEndsAreThePredicate) {
    // Within the interval exactly where |a - v| < t, for values on and around a +- t.
    std::mt19937 rng(3);
    std::normal_distribution<float> normal;
    for (float t : {0.0f, 0x1p-149f, 0.5f, 1.0f, 3e38f})
        for (int trial = 0; trial < 2000; ++trial) {
            const float a = normal(rng);
            std::vector<float> v(40);
            for (float& e : v) {
                const int kind = static_cast<int>(rng() % 4);
                e = kind == 0 ? normal(rng) : next_up(kind == 1 ? a - t : a + t, static_cast<int>(rng() % 5) - 2);
            }
            std::sort(v.begin(), v.end());
            const sorted::Interval r = sorted::interval_from(a, v.data(), static_cast<std::uint32_t>(v.size()), t);
            for (std::uint32_t k = 0; k < v.size(); ++k) {
                ASSERT_EQ(k >= r.lo && k < r.hi, std::fabs(a - v[k]) < t)
                    << "a " << a << " v " << v[k] << " t " << t << " [" << r.lo << ", " << r.hi << ")";
                // The GPU's one-comparison form of both ends.
                ASSERT_EQ(sorted::before_bound(a, v[k], sorted::end_bound(0, t)), sorted::before_interval(a, v[k], t))
                    << "a " << a << " v " << v[k] << " t " << t;
                ASSERT_EQ(sorted::before_bound(a, v[k], sorted::end_bound(1, t)),
                          sorted::before_interval_end(a, v[k], t))
                    << "a " << a << " v " << v[k] << " t " << t;
            }
        }
}

TEST(SimilaritySortedMath, CarrySaveSumsCountEveryPosition) {
    std::mt19937_64 rng(5);
    for (int trial = 0; trial < 500; ++trial) {
        std::uint64_t m[16], s[5];
        for (auto& w : m) w = rng() & rng();  // sparse and dense bits
        if (trial % 7 == 0) std::fill(std::begin(m), std::end(m), ~std::uint64_t{0});
        sorted::add16(m, s);
        for (unsigned bit = 0; bit < 64; ++bit) {
            unsigned ones = 0, sum = 0;
            for (auto w : m) ones += (w >> bit) & 1;
            for (unsigned p = 0; p < 5; ++p) sum |= static_cast<unsigned>((s[p] >> bit) & 1) << p;
            ASSERT_EQ(sum, ones) << "bit " << bit;
        }
    }
    // Counters of 9 planes (counts to 511) fed 31 groups: each position's count is the total.
    const unsigned planes = sorted::counter_planes(496);
    EXPECT_EQ(planes, 9u);
    EXPECT_EQ(sorted::counter_planes(1), 1u);
    EXPECT_EQ(sorted::counter_planes(16), 5u);
    std::vector<std::uint64_t> counters(planes, 0);
    std::vector<unsigned> expected(64, 0);
    for (int group = 0; group < 31; ++group) {
        std::uint64_t m[16], s[5];
        for (auto& w : m) w = rng() | (group % 5 == 0 ? rng() : 0);
        for (unsigned bit = 0; bit < 64; ++bit)
            for (auto w : m) expected[bit] += (w >> bit) & 1;
        sorted::add16(m, s);
        sorted::add_planes(counters.data(), s, planes);
    }
    for (unsigned bit = 0; bit < 64; ++bit) {
        unsigned got = 0;
        for (unsigned p = 0; p < planes; ++p) got |= static_cast<unsigned>((counters[p] >> bit) & 1) << p;
        EXPECT_EQ(got, expected[bit]) << "bit " << bit;
    }
}

namespace {

// Data built to break a rank method: one of `kinds` per element.
enum class Kind { Normal, Ties, NearThreshold, Zeros, Denormals, Specials, Huge };

std::vector<float> make(std::size_t count, Kind kind, float t, unsigned seed) {
    std::mt19937 rng(seed);
    std::normal_distribution<float> normal;
    std::vector<float> v(count);
    for (float& e : v) {
        switch (kind) {
            case Kind::Normal:
                e = normal(rng);
                break;
            case Kind::Ties:  // a handful of values, so that most comparisons tie
                e = static_cast<float>(static_cast<int>(rng() % 5) - 2) * 0.5f;
                break;
            case Kind::NearThreshold:  // multiples of t, one or two ulps either side
                e = next_up(static_cast<float>(static_cast<int>(rng() % 7) - 3) * (t > 0 && t < 1e30f ? t : 1.0f),
                            static_cast<int>(rng() % 5) - 2);
                break;
            case Kind::Zeros:
                e = rng() % 3 == 0 ? -0.0f : rng() % 2 ? 0.0f : next_up(0.0f, static_cast<int>(rng() % 5) - 2);
                break;
            case Kind::Denormals:
                e = std::ldexp(static_cast<float>(static_cast<int>(rng() % 64) - 32), -145);
                break;
            case Kind::Specials: {
                const int r = static_cast<int>(rng() % 8);
                e = r == 0 ? NAN : r == 1 ? INFINITY : r == 2 ? -INFINITY : normal(rng);
                break;
            }
            case Kind::Huge:  // differences overflow to +-inf
                e = (rng() % 2 ? 3.0e38f : -3.0e38f) * (rng() % 3 ? 1.0f : 0.5f);
                break;
        }
    }
    return v;
}

// f(kind, t) for each kind of data built to break the method, at the thresholds it tests (the
// denormals at the tiny ones, the others at the rest).
template <class F>
void for_each_kind_and_threshold(F&& f) {
    for (Kind kind :
         {Kind::Normal, Kind::Ties, Kind::NearThreshold, Kind::Zeros, Kind::Denormals, Kind::Specials, Kind::Huge})
        for (float t : {1.0f, 0.0f, 0x1p-149f, 0x1p-140f, 0.5f, 3.0e38f})
            if ((kind == Kind::Denormals) == (t < 1e-30f && t > 0)) f(kind, t);
}

// The sorted method's bytes equal the fused method's for both modes and every output type,
// unset and small tiles (a sink's tiles, mirrored where y is x), y a copy of x and y = x.
void expect_sorted_equals_fused(const std::vector<float>& x, const std::vector<float>& y, std::size_t samples,
                                std::size_t n, std::size_t m, float t, bool self, const std::string& what) {
    const MatrixView xv{x.data(), samples, n};
    const MatrixView yv = self ? MatrixView{} : MatrixView{y.data(), samples, m};
    std::vector<std::pair<SimilarityMode, SimilarityOutput>> outputs = {
        {SimilarityMode::Count, SimilarityOutput::Int32},
        {SimilarityMode::Count, SimilarityOutput::UInt16},
        {SimilarityMode::All, SimilarityOutput::Bitmask},
        {SimilarityMode::All, SimilarityOutput::Bool}};
    if (samples <= 255) outputs.push_back({SimilarityMode::Count, SimilarityOutput::UInt8});
    for (auto [mode, output] : outputs)
        for (std::optional<std::size_t> tile : {std::optional<std::size_t>{}, std::optional<std::size_t>{520}}) {
            SimilarityOptions o;
            o.backend = Backend::Cpu;
            o.threshold = t;
            o.mode = mode;
            o.output = output;
            o.tile = tile;
            const std::size_t bytes = hpcml::similarity_output_bytes(n, self ? n : m, output);
            std::vector<unsigned char> fused(bytes, 0xAB), sorted_out(bytes, 0xCD);
            o.method = Method::Fused;
            hpcml::similarity(xv, yv, fused.data(), o);
            o.method = Method::Sorted;
            const hpcml::RunStats stats = hpcml::similarity(xv, yv, sorted_out.data(), o);
            EXPECT_EQ(stats.method, Method::Sorted);
            ASSERT_EQ(sorted_out, fused) << what << " mode " << hpcml::to_string(mode) << " output "
                                         << hpcml::to_string(output) << " tile " << (tile ? *tile : 0);
        }
}

}  // namespace

TEST(SimilaritySorted, EqualsFusedOnDataBuiltToBreakIt) {
    // Sizes across the 512-wide tiles and bands and the 16-sample groups.
    const std::size_t samples_list[] = {1, 15, 17, 40};
    const std::pair<std::size_t, std::size_t> shapes[] = {{7, 5}, {513, 37}, {600, 1030}};
    unsigned seed = 100;
    for_each_kind_and_threshold(
        [&](Kind kind, float t) {
            for (std::size_t samples : samples_list)
                for (auto [n, m] : shapes) {
                    if (n * m * samples > 600 * 1030 * 17) continue;  // the largest shape at fewer samples
                    const auto x = make(samples * n, kind, t, ++seed), y = make(samples * m, kind, t, ++seed);
                    const std::string what = "kind " + std::to_string(static_cast<int>(kind)) + " t " +
                                             std::to_string(t) + " shape " + std::to_string(samples) + "x" +
                                             std::to_string(n) + "x" + std::to_string(m);
                    expect_sorted_equals_fused(x, y, samples, n, m, t, false, what);
                    if (n == 513) expect_sorted_equals_fused(x, y, samples, n, n, t, true, what + " y = x");
                }
        });
}

TEST(SimilaritySorted, EqualsTheReferenceAcrossTilesBandsAndGroups) {
    // Shapes that end just after a tile or band and sample counts just after a group, against the
    // brute-force reference, every output type (check_all_outputs runs every method).
    check_all_outputs(Backend::Cpu, {33, 1025, 517}, 1.0f, false, {std::nullopt, 700}, 40);
    check_all_outputs(Backend::Cpu, {17, 1100, 1100}, 0.75f, true, {std::nullopt, 513}, 41);
}

TEST(SimilaritySorted, AllModeFinishesSurvivorsDirectly) {
    // y = x with 300 samples: after a group only the diagonal and a few planted pairs survive, so
    // the rest is checked directly; planted pairs fail either side of the group boundaries (mode
    // All's first group is 12 samples, the rest 16) and of the sorted blocks (12), or never.
    const std::size_t samples = 300, n = 1100;
    std::vector<float> x = make(samples * n, Kind::Normal, 1.0f, 7);
    const std::size_t fail_at[] = {11, 12, 13, 15, 16, 17, 23, 24,  25,  27,
                                   28, 29, 35, 36, 37, 44, 64, 150, 299, samples};
    for (std::size_t k = 0; k < std::size(fail_at); ++k) {
        const std::size_t i = 37 * k + 3, j = n - 1 - 53 * k;
        for (std::size_t s = 0; s < samples; ++s) x[s * n + j] = x[s * n + i] + (s == fail_at[k] ? 3.0f : 0.5f);
    }
    const std::vector<float> copy = x;
    expect_sorted_equals_fused(x, copy, samples, n, n, 1.0f, false, "planted");
    expect_sorted_equals_fused(x, x, samples, n, n, 1.0f, true, "planted, y = x");
}

TEST(SimilaritySorted, AllModeFinishesRepeatedColumnsDirectly) {
    // Columns repeated 3 to 12 times, so that many pairs stay alive after the first groups and the
    // rest is checked 16 columns at a time: some copies drift past the threshold at a chosen
    // sample (either side of a group boundary, in the last samples, or never) or hold a NaN; y's
    // columns are copies of x's (pairs across the two stay alive too) and its width is not a
    // multiple of 16 (its last columns' checks are partial).
    for (const std::size_t samples : {40, 203}) {
        const std::size_t n = 1037, m = 1100;
        const std::vector<float> base = make(samples * n, Kind::Normal, 1.0f, 11);
        std::mt19937 rng(12);
        const auto repeated = [&](std::size_t width) {
            std::vector<float> v(samples * width);
            for (std::size_t j = 0, source = 0; j < width; source = rng() % n) {
                for (std::size_t copies = 3 + rng() % 10; copies > 0 && j < width; --copies, ++j) {
                    const std::size_t drift_at = rng() % 4 ? samples : rng() % (samples + 1);
                    for (std::size_t s = 0; s < samples; ++s)
                        v[s * width + j] = base[s * n + source] + (s == drift_at ? 1.5f : 0.25f * (rng() % 3));
                    if (rng() % 16 == 0) v[(rng() % samples) * width + j] = NAN;
                }
            }
            return v;
        };
        const std::vector<float> x = repeated(n), y = repeated(m);
        const std::string what = "repeated columns, " + std::to_string(samples) + " samples";
        expect_sorted_equals_fused(x, y, samples, n, m, 1.0f, false, what);
        expect_sorted_equals_fused(x, x, samples, n, n, 1.0f, true, what + ", y = x");
    }
}

// The sorted method's layout lowered (its strip, and the bands its items stack) so that small
// shapes cross strip boundaries and stack bands whatever the thread count; restored on exit.
class SortedLayoutForTest {
public:
    explicit SortedLayoutForTest(sorted::SortedLayout layout) { sorted::set_layout_for_tests(layout); }
    ~SortedLayoutForTest() { sorted::set_layout_for_tests({0, 0}); }
    SortedLayoutForTest(const SortedLayoutForTest&) = delete;
    SortedLayoutForTest& operator=(const SortedLayoutForTest&) = delete;
};

TEST(SimilaritySorted, EqualsFusedAcrossStripsAndStackedBands) {
    // Strips of 512 and 1024 over 1100 x 1300 (y = x: the strips' own diagonal and the mirrors
    // between strips) and the policy's strip with items of 4 bands forced (1100 rows: 3 bands in
    // one item), 33 samples (past a group and the sorted block); random data (mode All settles
    // within a group) and clustered data (a third of the pairs pass every sample, so mode All
    // runs every group).
    const std::size_t samples = 33, n = 1100, m = 1300;
    for (auto [strip, bands] : {std::pair<std::size_t, std::size_t>{512, 1}, {1024, 2}, {0, 4}}) {
        const SortedLayoutForTest layout({strip, bands});
        const std::string what = "strip " + std::to_string(strip) + " bands " + std::to_string(bands);
        const auto x = make(samples * n, Kind::Normal, 1.0f, 31), y = make(samples * m, Kind::Normal, 1.0f, 32);
        expect_sorted_equals_fused(x, y, samples, n, m, 1.0f, false, what + " random");
        expect_sorted_equals_fused(x, x, samples, n, n, 1.0f, true, what + " random, y = x");
        const auto cx = clustered_data(samples, n), cy = clustered_data(samples, m);
        expect_sorted_equals_fused(cx, cy, samples, n, m, 2.0f, false, what + " clustered");
        expect_sorted_equals_fused(cx, cx, samples, n, n, 2.0f, true, what + " clustered, y = x");
    }
    EXPECT_THROW(sorted::set_layout_for_tests({500, 0}), hpcml::Error);
    EXPECT_THROW(sorted::set_layout_for_tests({0, 3}), hpcml::Error);
    EXPECT_THROW(sorted::set_layout_for_tests({0, 2 * sorted::kSortedCpu.bands_per_item}), hpcml::Error);
}

TEST(SimilaritySorted, EqualsFusedInItemsOfTheMostBands) {
    // Items of the policy's most bands (count mode's), full and cut short: 4200 rows are 8 bands
    // and a partial ninth; y = x stacks only the bands on or above the diagonal.
    const std::size_t samples = 20, n = 4200, m = 700;
    const SortedLayoutForTest layout({0, sorted::kSortedCpu.bands_per_item});
    const auto x = make(samples * n, Kind::Ties, 1.0f, 51), y = make(samples * m, Kind::Normal, 1.0f, 52);
    expect_sorted_equals_fused(x, y, samples, n, m, 1.0f, false, "y a copy");
    expect_sorted_equals_fused(x, x, samples, n, n, 1.0f, true, "y = x");
}

TEST(SimilaritySorted, AllModeFindsTheLastRowsEndsByBisection) {
    // Mode All where after a group only 5 rows of an item are alive, each with 500 columns that
    // pass every sample: too many pairs to finish one by one (2500 pairs x 24 samples left), so
    // the next groups find those rows' ends by bisection of the tiles' ranks, not rank maps.
    const std::size_t samples = 40, n = 600, m = 1100;
    auto x = make(samples * n, Kind::Normal, 1.0f, 41), y = make(samples * m, Kind::Normal, 1.0f, 42);
    std::mt19937 rng(43);
    std::uniform_real_distribution<float> near(-0.3f, 0.3f);
    for (std::size_t s = 0; s < samples; ++s) {
        const float v = 10.0f + static_cast<float>(s);  // far from the others: no other pair passes
        for (std::size_t i : {3, 77, 200, 311, 599}) x[s * n + i] = v + near(rng);
        for (std::size_t j = 20; j < 520; ++j) y[s * m + j] = v + near(rng);
    }
    for (auto [strip, bands] : {std::pair<std::size_t, std::size_t>{0, 1}, {0, 2}}) {
        const SortedLayoutForTest layout({strip, bands});
        expect_sorted_equals_fused(x, y, samples, n, m, 1.0f, false, "bands " + std::to_string(bands));
    }
}

TEST(SimilaritySorted, SortsKeysThatShareTheirHighDigits) {
    // The radix sort of a strip of up to 4096 values sorts by its two high digits (key bits 11-31)
    // and puts the rest right by insertion: spread values (that path), values close together
    // (the histograms predict many keys sharing the high digits: all three digits' passes), and
    // groups of 8 values that share them, their low bits descending (the insertions pass their
    // budget: all three passes after all); and spread values past 4096 (all three passes).
    const std::size_t samples = 20, n = 1500, m = 1700;
    const auto grouped = [](std::size_t count, unsigned seed) {
        std::mt19937 rng(seed);
        std::vector<float> v(count);
        for (std::size_t g = 0; g < count; g += 8) {
            const std::uint32_t high = (100 + rng() % 64) << 23 | (rng() % 4096) << 11;  // exponent and 12 bits
            for (std::size_t k = g; k < std::min(count, g + 8); ++k)
                v[k] = std::bit_cast<float>(high | static_cast<std::uint32_t>((7 - (k - g)) * 200 + rng() % 100));
        }
        return v;
    };
    const auto close = [](std::size_t count, unsigned seed) {
        auto v = make(count, Kind::Normal, 1.0f, seed);
        for (float& e : v) e = 1000.0f + 0.01f * e;
        return v;
    };
    for (auto [kind, t] : {std::pair<int, float>{0, 1.0f}, {1, 0.01f}, {2, 1.0f}}) {
        const auto data = [&](std::size_t count, unsigned seed) {
            return kind == 0   ? make(count, Kind::Normal, t, seed)
                   : kind == 1 ? close(count, seed)
                               : grouped(count, seed);
        };
        const auto x = data(samples * n, 61), y = data(samples * m, 62);
        const std::string what = kind == 0 ? "spread" : kind == 1 ? "close together" : "grouped";
        expect_sorted_equals_fused(x, y, samples, n, m, t, false, what);
        expect_sorted_equals_fused(x, x, samples, n, n, t, true, what + ", y = x");
    }
    const std::size_t wide = 4200, wider = 4300;
    const auto x = make(samples * wide, Kind::Normal, 1.0f, 63), y = make(samples * wider, Kind::Normal, 1.0f, 64);
    expect_sorted_equals_fused(x, y, samples, wide, wider, 1.0f, false, "spread, wide");
    expect_sorted_equals_fused(x, x, samples, wide, wide, 1.0f, true, "spread, wide, y = x");
}

TEST(SimilaritySorted, EqualsFusedWhereTheOutputIsStreamed) {
    // Outputs of 12 MiB or more are stored past the cache, and where y = x the int32 mirror is
    // then written a cache line at a time from where the mirror's lines start: outputs 0, 4 and
    // 36 bytes past a 64-byte boundary (a first chunk of 16, 15 and 7 rows), and rows whose
    // length is not a multiple of 64 bytes (no lines); mode All's bool output too. 16 samples:
    // the fewest for which y = x computes half and mirrors the rest.
    const std::size_t samples = 16;
    for (auto [n, mode, output] : {std::tuple{std::size_t{1808}, SimilarityMode::Count, SimilarityOutput::Int32},
                                   std::tuple{std::size_t{1801}, SimilarityMode::Count, SimilarityOutput::Int32},
                                   std::tuple{std::size_t{3600}, SimilarityMode::All, SimilarityOutput::Bool}}) {
        const auto x = make(samples * n, Kind::Normal, 1.0f, static_cast<unsigned>(n));
        const std::size_t bytes = hpcml::similarity_output_bytes(n, n, output);
        ASSERT_GE(bytes, std::size_t{12} << 20);
        std::vector<unsigned char> fused(bytes + 128), sorted_out(bytes + 128);
        const auto at = [](std::vector<unsigned char>& v, std::size_t offset) {
            return v.data() + (64 - reinterpret_cast<std::uintptr_t>(v.data()) % 64) % 64 + offset;
        };
        for (std::size_t offset : {0, 4, 36}) {
            SimilarityOptions o;
            o.backend = Backend::Cpu;
            o.mode = mode;
            o.output = output;
            o.method = Method::Fused;
            hpcml::similarity(MatrixView{x.data(), samples, n}, {}, at(fused, offset), o);
            o.method = Method::Sorted;
            hpcml::similarity(MatrixView{x.data(), samples, n}, {}, at(sorted_out, offset), o);
            ASSERT_TRUE(std::equal(at(fused, offset), at(fused, offset) + bytes, at(sorted_out, offset)))
                << "n " << n << " offset " << offset;
            if (output != SimilarityOutput::Int32) break;
        }
    }
}

TEST(SimilaritySorted, AutoJudgesTheShapeThatRuns) {
    // The CPU's auto (docs/similarity.md, "Which method auto runs") judges the shape one run of
    // the method gets: a sink's and a pair list's tiles, not the whole call; from 64 samples,
    // fewer pairs (fewer still where y is not x).
    const auto chosen = [](std::size_t samples, std::size_t n, SimilarityOutput output,
                           std::optional<std::size_t> sink_tile) {
        const auto x = make(samples * n, Kind::Normal, 1.0f, 5);
        SimilarityOptions o;
        o.backend = Backend::Cpu;
        o.output = output;
        o.tile = sink_tile;
        if (sink_tile)
            return hpcml::similarity(
                       {x.data(), samples, n}, {}, [](const hpcml::SimilarityTile&) {}, o)
                .method;
        std::vector<unsigned char> out(hpcml::similarity_output_bytes(n, n, output));
        return hpcml::similarity({x.data(), samples, n}, {}, out.data(), o).method;
    };
    EXPECT_EQ(chosen(16, 2100, SimilarityOutput::Int32, std::nullopt), Method::Sorted);
    EXPECT_EQ(chosen(16, 2100, SimilarityOutput::Int32, 256), Method::Fused);  // a sink's 256 x 256 tiles
    EXPECT_EQ(chosen(16, 2100, SimilarityOutput::Int32, 2048), Method::Sorted);
    EXPECT_EQ(chosen(16, 2100, SimilarityOutput::UInt8, std::nullopt), Method::Sorted);  // y = x: narrow mirrors too
    EXPECT_EQ(chosen(15, 2100, SimilarityOutput::UInt8, std::nullopt), Method::Fused);
    EXPECT_EQ(chosen(32, 768, SimilarityOutput::Int32, std::nullopt), Method::Fused);
    EXPECT_EQ(chosen(64, 768, SimilarityOutput::Int32, std::nullopt), Method::Sorted);
    EXPECT_EQ(chosen(64, 500, SimilarityOutput::Int32, std::nullopt), Method::Fused);
    EXPECT_EQ(chosen(64, 512, SimilarityOutput::Int32, std::nullopt), Method::Fused);  // y = x
    {
        const auto x = make(64 * 512, Kind::Normal, 1.0f, 8), y = x;  // y a copy: 512 x 512 runs sorted
        SimilarityOptions o;
        o.backend = Backend::Cpu;
        std::vector<std::int32_t> out(512 * 512);
        EXPECT_EQ(hpcml::similarity({x.data(), 64, 512}, {y.data(), 64, 512}, out.data(), o).method, Method::Sorted);
        EXPECT_EQ(hpcml::similarity({x.data(), 32, 512}, {y.data(), 32, 512}, out.data(), o).method, Method::Fused);
    }
    // A pair list's tiles are 2048 x 2048 unless told: 2100 features run sorted; in mode All
    // tiles of 640 too (400 thousand pairs suffice there, whatever the samples), tiles of 600 fused.
    const auto x = make(16 * 2100, Kind::Normal, 1.0f, 6);
    SimilarityOptions o;
    o.backend = Backend::Cpu;
    o.mode = SimilarityMode::All;
    EXPECT_EQ(hpcml::similarity_pairs({x.data(), 16, 2100}, {}, o).stats.method, Method::Sorted);
    o.tile = 640;
    EXPECT_EQ(hpcml::similarity_pairs({x.data(), 16, 2100}, {}, o).stats.method, Method::Sorted);
    o.tile = 600;
    EXPECT_EQ(hpcml::similarity_pairs({x.data(), 16, 2100}, {}, o).stats.method, Method::Fused);
}

TEST(SimilaritySorted, AutoPicksAMethodAndSaysWhich) {
    const auto x = make(64 * 40, Kind::Normal, 1.0f, 9);
    std::vector<std::int32_t> out(40 * 40);
    SimilarityOptions o;
    o.backend = Backend::Cpu;
    const hpcml::RunStats stats = hpcml::similarity({x.data(), 64, 40}, {}, out.data(), o);
    EXPECT_TRUE(stats.method == Method::Fused || stats.method == Method::Sorted) << hpcml::to_string(stats.method);
    o.method = Method::Naive;
    EXPECT_EQ(hpcml::similarity({x.data(), 64, 40}, {}, out.data(), o).method, Method::Naive);
}

// The GPU's block (sorted_block.hpp) run on the CPU, its threads one after another between the
// barriers, after a sort pass written here from its specification (sorted.cu): its bytes equal the
// fused method's for every output type, on data built to break it and across its 256-row bands,
// 256-column tiles and 8-sample passes. The GPU runs the same block (test_similarity_cuda.cpp).
namespace {

namespace gpu = hpcml::detail::similarity::sorted_gpu;
using hpcml::detail::similarity::plan_sort_runs;
using hpcml::detail::similarity::SortRun;
using hpcml::detail::similarity::SortRuns;

struct HostSegments {
    std::vector<float> values;
    std::vector<std::uint8_t> index;
    std::vector<std::uint16_t> finite;
    std::size_t count = 0;
    gpu::Segments view() const { return {values.data(), index.data(), finite.data(), count}; }
};

// Each sample's runs sorted in segments of 256 (the layout of sorted.cu's sort pass): finite values
// by order key, ties in reverse position order (any order of equal keys must do), then the rest,
// and positions past a run's end, as +inf. `data` has rows of `ld` features.
HostSegments sort_runs(const float* data, std::size_t ld, std::size_t samples, const SortRuns& runs) {
    HostSegments h;
    h.count = runs.segments;
    for (std::size_t s = 0; s < samples; ++s)
        for (const SortRun& run : runs.runs)
            for (std::size_t seg = 0; seg * gpu::kSegment < run.extent; ++seg) {
                std::vector<std::pair<std::uint32_t, int>> keys;
                for (int p = gpu::kSegment - 1; p >= 0; --p) {
                    const std::size_t i = seg * gpu::kSegment + p;
                    const float v = i < run.extent ? data[s * ld + run.start + i] : NAN;
                    keys.push_back({std::isfinite(v) ? sorted::order_key(v) : 0xffffffffu, p});
                }
                std::stable_sort(keys.begin(), keys.end(), [](auto a, auto b) { return a.first < b.first; });
                std::size_t finite = 0;
                for (auto [key, p] : keys) {
                    finite += key != 0xffffffffu;
                    h.values.push_back(key == 0xffffffffu ? INFINITY : sorted::from_order_key(key));
                    h.index.push_back(static_cast<std::uint8_t>(p));
                }
                h.finite.push_back(static_cast<std::uint16_t>(finite));
            }
    return h;
}

HostSegments sort_segments(const float* data, std::size_t samples, std::size_t extent) {
    return sort_runs(data, extent, samples, plan_sort_runs({{0, extent}}, gpu::kSegment));
}

// S from the GPU's block on the CPU, in the encoding of `output`, stored `offset` bytes past a
// 64-byte boundary with `pad` bytes after each row (which, as the bytes around, it must not write).
std::vector<unsigned char> gpu_block_on_cpu(const std::vector<float>& x, const std::vector<float>& y,
                                            std::size_t samples, std::size_t n, std::size_t m, float t,
                                            SimilarityOutput output, std::size_t offset = 0, std::size_t pad = 0) {
    const HostSegments xs = sort_segments(x.data(), samples, n), ys = sort_segments(y.data(), samples, m);
    const std::size_t row = hpcml::detail::similarity::row_bytes(m, output), stride = row + pad;
    constexpr unsigned char kUnwritten = 0xEE;
    const std::size_t bytes = offset + n * stride + 64;
    std::vector<unsigned char> storage(bytes + 64, kUnwritten);
    unsigned char* const buffer = storage.data() + (64 - reinterpret_cast<std::uintptr_t>(storage.data()) % 64);
    const gpu::SortedArgs args{xs.view(),           ys.view(), samples,         static_cast<int>(n),
                               static_cast<int>(m), t,         buffer + offset, stride};
    auto shared = std::make_unique<gpu::Shared>();
    hpcml::detail::similarity::Outputs::visit(output, [&](auto entry) {
        using Out = decltype(entry);
        for (std::size_t by = 0; by * gpu::kRows < n; ++by)
            for (std::size_t bx = 0; bx * gpu::kCols < m; ++bx) {
                auto threads = std::make_unique<gpu::SerialThreads<gpu::State<Out>>>();
                gpu::run_block<Out>(args, static_cast<unsigned>(bx), static_cast<unsigned>(by), *shared, *threads);
            }
    });
    std::vector<unsigned char> out(n * row);
    for (std::size_t k = 0; k < bytes; ++k) {
        const bool inside = k >= offset && k < offset + n * stride && (k - offset) % stride < row;
        if (inside) {
            out[(k - offset) / stride * row + (k - offset) % stride] = buffer[k];
        } else if (buffer[k] != kUnwritten) {
            ADD_FAILURE() << "the block wrote byte " << k << " outside its rows (offset " << offset << ", pad " << pad
                          << ", " << hpcml::to_string(output) << ")";
            break;
        }
    }
    return out;
}

void expect_gpu_block_equals_fused(const std::vector<float>& x, const std::vector<float>& y, std::size_t samples,
                                   std::size_t n, std::size_t m, float t, const std::string& what) {
    for (auto [mode, output] : {std::pair{SimilarityMode::Count, SimilarityOutput::Int32},
                                std::pair{SimilarityMode::Count, SimilarityOutput::UInt16},
                                std::pair{SimilarityMode::Count, SimilarityOutput::UInt8},
                                std::pair{SimilarityMode::All, SimilarityOutput::Bitmask},
                                std::pair{SimilarityMode::All, SimilarityOutput::Bool}}) {
        if (output == SimilarityOutput::UInt8 && samples > 255) continue;
        SimilarityOptions o;
        o.backend = Backend::Cpu;
        o.method = Method::Fused;
        o.threshold = t;
        o.mode = mode;
        o.output = output;
        std::vector<unsigned char> fused(hpcml::similarity_output_bytes(n, m, output), 0xAB);
        hpcml::similarity({x.data(), samples, n}, {y.data(), samples, m}, fused.data(), o);
        for (auto [offset, pad] : {std::pair<std::size_t, std::size_t>{0, 0}, {3, 37}, {8, 4}})
            ASSERT_EQ(gpu_block_on_cpu(x, y, samples, n, m, t, output, offset, pad), fused)
                << what << " output " << hpcml::to_string(output) << " offset " << offset << " pad " << pad;
    }
}

}  // namespace

TEST(SimilaritySortedGpuBlock, EqualsFusedOnDataBuiltToBreakIt) {
    unsigned seed = 500;
    for_each_kind_and_threshold(
        [&](Kind kind, float t) {
            for (auto [samples, n, m] : {std::tuple<std::size_t, std::size_t, std::size_t>{1, 7, 5}, {9, 257, 40},
                                         {17, 300, 513}}) {
                const auto x = make(samples * n, kind, t, ++seed), y = make(samples * m, kind, t, ++seed);
                expect_gpu_block_equals_fused(x, y, samples, n, m, t,
                                              "kind " + std::to_string(static_cast<int>(kind)) + " t " +
                                                  std::to_string(t) + " shape " + std::to_string(samples) + "x" +
                                                  std::to_string(n) + "x" + std::to_string(m));
            }
        });
}

TEST(SimilaritySortedGpuBlock, CountsUpToItsLargestSampleCount) {
    // Counts past each plane of eights up to the most count mode takes (1023), y = x (whose
    // diagonal counts every sample), and zero samples (all pass in mode all).
    for (std::size_t samples : {0, 8, 64, 255, 256, 1023}) {
        const auto x = make(samples * 70, Kind::Normal, 1.0f, 900 + static_cast<unsigned>(samples));
        const auto y = make(samples * 300, Kind::Ties, 1.0f, 901 + static_cast<unsigned>(samples));
        expect_gpu_block_equals_fused(x, x, samples, 70, 70, 1.5f, "y = x, samples " + std::to_string(samples));
        expect_gpu_block_equals_fused(x, y, samples, 70, 300, 1.0f, "ties, samples " + std::to_string(samples));
    }
}

TEST(SimilaritySortedGpuBlock, AllModeStopsOnlyWhenNoPairIsLeft) {
    // Planted pairs that fail at samples across the 8-sample passes, or never, in a block whose
    // other pairs all die in the first pass.
    const std::size_t samples = 70, n = 300, m = 290;
    auto x = make(samples * n, Kind::Normal, 1.0f, 31);
    auto y = make(samples * m, Kind::Normal, 1.0f, 32);
    const std::size_t fail_at[] = {7, 8, 9, 63, 64, 69, samples};
    for (std::size_t k = 0; k < std::size(fail_at); ++k) {
        const std::size_t i = 41 * k + 2, j = m - 1 - 37 * k;
        for (std::size_t s = 0; s < samples; ++s) y[s * m + j] = x[s * n + i] + (s == fail_at[k] ? 3.0f : 0.5f);
    }
    expect_gpu_block_equals_fused(x, y, samples, n, m, 1.0f, "planted");
}

// A call's sorted runs (sorted_runs.hpp): every launch of the host and device paths' plans finds
// its x band and y columns, segment for segment, in runs sorted once, and ranges that can share
// a run do (plans of 256-multiple tiles, the mirrored paths' bands of whole 256-row blocks).
namespace {

namespace sim = hpcml::detail::similarity;

// Each layout segment's first feature, from the runs; then every range finds its features there.
void expect_runs_serve(const SortRuns& runs, const std::vector<std::pair<std::size_t, std::size_t>>& ranges,
                       const std::string& what) {
    std::vector<long long> feature(runs.segments, -1);
    for (const SortRun& r : runs.runs)
        for (std::size_t k = 0; k * gpu::kSegment < r.extent; ++k) {
            ASSERT_EQ(feature[r.first_segment + k], -1) << what << ": two runs in one segment";
            feature[r.first_segment + k] = static_cast<long long>(r.start + k * gpu::kSegment);
        }
    for (auto [start, extent] : ranges) {
        if (extent == 0) continue;
        const long long first = runs.first_segment(start, extent, gpu::kSegment);
        ASSERT_GE(first, 0) << what << ": no run for [" << start << ", +" << extent << ")";
        for (std::size_t k = 0; k * gpu::kSegment < extent; ++k)
            ASSERT_EQ(feature[static_cast<std::size_t>(first) + k], static_cast<long long>(start + k * gpu::kSegment))
                << what << ": range [" << start << ", +" << extent << ") segment " << k;
        const auto run = std::find_if(runs.runs.begin(), runs.runs.end(), [&](const SortRun& r) {
            return r.first_segment <= static_cast<std::size_t>(first) &&
                   static_cast<std::size_t>(first) < r.first_segment + (r.extent + gpu::kSegment - 1) / gpu::kSegment;
        });
        ASSERT_LE(start + extent, run->start + run->extent) << what << ": the run ends inside the range";
    }
}

// The launches of a call (the host and device paths' regions, or the mirrored bands' upper launches).
std::vector<sim::Region> plan_launches(std::size_t n, std::size_t m, std::size_t tile, std::size_t group,
                                       bool mirrored) {
    if (!mirrored)
        return sim::launch_regions(
            sim::TilePlan(hpcml::similarity_tile_plan(n, m, tile, SimilarityOutput::Int32, false)), group);
    std::vector<sim::Region> launches =
        sim::mirrored_bands(n, n, SimilarityOutput::Int32, (tile + gpu::kRows - 1) / gpu::kRows * gpu::kRows);
    for (sim::Region& r : launches) r = {r.row0, r.row0, r.rows, n - r.row0};
    return launches;
}

void expect_call_runs_serve(const std::vector<sim::Region>& launches, bool y_is_x, const std::string& what) {
    const sim::CallRuns runs = sim::plan_call_runs(launches, y_is_x, gpu::kSegment);
    std::vector<std::pair<std::size_t, std::size_t>> rows, cols;
    for (const sim::Region& r : launches) {
        rows.emplace_back(r.row0, r.rows);
        cols.emplace_back(r.col0, r.cols);
    }
    expect_runs_serve(runs.x, rows, what + " x");
    expect_runs_serve(y_is_x ? runs.x : runs.y, cols, what + " y");
    if (y_is_x) EXPECT_TRUE(runs.y.runs.empty()) << what;
}

}  // namespace

TEST(SimilaritySortedRuns, ServeEveryLaunchFromOneSort) {
    for (auto [n, m] : {std::pair<std::size_t, std::size_t>{700, 900}, {1000, 1000}, {4500, 300}, {256, 512}, {1, 1}})
        for (std::size_t tile : {256, 300, 512, 1000, 8192})
            for (std::size_t group : {1, 2, 3, 100})
                for (bool y_is_x : {false, true}) {
                    const std::string what = std::to_string(n) + "x" + std::to_string(m) + " tile " +
                                             std::to_string(tile) + " group " + std::to_string(group) +
                                             (y_is_x ? " y = x" : "");
                    const auto launches = plan_launches(n, y_is_x ? n : m, tile, group, false);
                    expect_call_runs_serve(launches, y_is_x, what);
                    const sim::CallRuns runs = sim::plan_call_runs(launches, y_is_x, gpu::kSegment);
                    if (tile % gpu::kSegment == 0) {  // one run of each operand, its features once
                        EXPECT_EQ(runs.x.runs.size(), 1u) << what;
                        EXPECT_EQ(runs.x.segments, (n + gpu::kSegment - 1) / gpu::kSegment) << what;
                    }
                    if (y_is_x) {
                        expect_call_runs_serve(plan_launches(n, n, tile, group, true), true, what + " mirrored");
                        const sim::CallRuns mirrored =
                            sim::plan_call_runs(plan_launches(n, n, tile, group, true), true, gpu::kSegment);
                        EXPECT_EQ(mirrored.x.runs.size(), 1u) << what << " mirrored";
                        EXPECT_EQ(mirrored.x.segments, (n + gpu::kSegment - 1) / gpu::kSegment) << what;
                    }
                }
}

TEST(SimilaritySortedRuns, RangesOffTheirSegmentsGetTheirOwnRun) {
    // [300, 800) inside [0, 1000) but 300 features in: not on its segments; [512, 1512) is, and
    // extends the first run; [2000, 2100) is apart from it.
    const SortRuns runs = plan_sort_runs({{0, 1000}, {300, 500}, {512, 1000}, {2000, 100}, {7, 0}}, 256);
    ASSERT_EQ(runs.runs.size(), 3u);
    EXPECT_EQ(runs.runs[0].extent, 1512u);
    expect_runs_serve(runs, {{0, 1000}, {300, 500}, {512, 1000}, {2000, 100}, {256, 256}}, "ranges");
    EXPECT_EQ(runs.segments, 6u + 2u + 1u);
    EXPECT_LT(runs.first_segment(100, 10, 256), 0) << "no run starts a segment at 100";
    EXPECT_LT(runs.first_segment(2000, 101, 256), 0) << "past the run's end";
}

// The GPU's block over a call's launches, its operands read from the call's sorted runs, as
// sorted.cu's launches do: the same bytes as the fused method over plans whose ranges share
// runs (tile 256) or not (tile 300), groups of tiles, y = x and y a copy.
TEST(SimilaritySortedGpuBlock, EqualsFusedThroughACallsSortedRuns) {
    const std::size_t samples = 19, n = 600, m = 700;
    const float t = 1.0f;
    const auto x = make(samples * n, Kind::Specials, t, 81), y_copy = make(samples * m, Kind::Ties, t, 82);
    for (auto [tile, group, y_is_x] :
         {std::tuple<std::size_t, std::size_t, bool>{256, 2, false}, {300, 2, false}, {300, 1, true}, {512, 3, true}}) {
        const auto& y = y_is_x ? x : y_copy;
        const std::size_t cols = y_is_x ? n : m;
        const auto launches = plan_launches(n, cols, tile, group, false);
        const sim::CallRuns runs = sim::plan_call_runs(launches, y_is_x, gpu::kSegment);
        const HostSegments xs = sort_runs(x.data(), n, samples, runs.x);
        const HostSegments ys = y_is_x ? HostSegments{} : sort_runs(y.data(), m, samples, runs.y);
        const HostSegments& y_layout = y_is_x ? xs : ys;
        SimilarityOptions o;
        o.backend = Backend::Cpu;
        o.method = Method::Fused;
        o.threshold = t;
        std::vector<std::int32_t> fused(n * cols), block(n * cols, -7);
        hpcml::similarity({x.data(), samples, n}, {y.data(), samples, cols}, fused.data(), o);
        auto shared = std::make_unique<gpu::Shared>();
        for (const sim::Region& r : launches) {
            const long long fx = runs.x.first_segment(r.row0, r.rows, gpu::kSegment);
            const long long fy = (y_is_x ? runs.x : runs.y).first_segment(r.col0, r.cols, gpu::kSegment);
            ASSERT_GE(fx, 0);
            ASSERT_GE(fy, 0);
            const gpu::SortedArgs args{xs.view().from(static_cast<std::size_t>(fx)),
                                       y_layout.view().from(static_cast<std::size_t>(fy)),
                                       samples,
                                       static_cast<int>(r.rows),
                                       static_cast<int>(r.cols),
                                       t,
                                       reinterpret_cast<unsigned char*>(block.data() + r.row0 * cols + r.col0),
                                       cols * sizeof(std::int32_t)};
            for (std::size_t by = 0; by * gpu::kRows < r.rows; ++by)
                for (std::size_t bx = 0; bx * gpu::kCols < r.cols; ++bx) {
                    auto threads = std::make_unique<gpu::SerialThreads<gpu::State<sim::Int32Output>>>();
                    gpu::run_block<sim::Int32Output>(args, static_cast<unsigned>(bx), static_cast<unsigned>(by),
                                                     *shared, *threads);
                }
        }
        ASSERT_EQ(block, fused) << "tile " << tile << " group " << group << (y_is_x ? " y = x" : "");
    }
}

// The GPU's sorted kernel against the CPU's fused method, on the same data built to break it
// (denormals at tiny thresholds, as the CPU's test), in the sizes that cross its bands, tiles and
// passes, y a copy and y = x (the GPU suite).
TEST(SimilaritySortedCuda, EqualsTheCpuOnDataBuiltToBreakIt) {
    HPCML_SKIP_WITHOUT_GPU();
    unsigned seed = 700;
    for_each_kind_and_threshold(
        [&](Kind kind, float t) {
            for (auto [samples, n, m] : {std::tuple<std::size_t, std::size_t, std::size_t>{1, 7, 5}, {17, 300, 513},
                                         {40, 600, 1030}, {1023, 257, 300}}) {
                const auto x = make(samples * n, kind, t, ++seed), y_copy = make(samples * m, kind, t, ++seed);
                const bool self = samples == 40;  // y = x: the same memory
                const auto& y = self ? x : y_copy;
                if (self) m = n;
                for (auto [mode, output] : {std::pair{SimilarityMode::Count, SimilarityOutput::Int32},
                                            std::pair{SimilarityMode::All, SimilarityOutput::Bitmask}}) {
                    SimilarityOptions o;
                    o.threshold = t;
                    o.mode = mode;
                    o.output = output;
                    o.backend = Backend::Cpu;
                    o.method = Method::Fused;
                    std::vector<unsigned char> cpu(hpcml::similarity_output_bytes(n, m, output)), gpu(cpu.size(), 0xAB);
                    hpcml::similarity({x.data(), samples, n}, {y.data(), samples, m}, cpu.data(), o);
                    o.backend = Backend::Cuda;
                    o.method = Method::Sorted;
                    EXPECT_EQ(hpcml::similarity({x.data(), samples, n}, {y.data(), samples, m}, gpu.data(), o).method,
                              Method::Sorted);
                    ASSERT_EQ(gpu, cpu) << "kind " << static_cast<int>(kind) << " t " << t << " shape " << samples
                                        << "x" << n << "x" << m << (self ? " y = x " : " ") << hpcml::to_string(output);
                }
            }
        });
}

TEST(SimilaritySortedCuda, CountModeSaysHowManySamplesItTakes) {
    HPCML_SKIP_WITHOUT_GPU();
    const auto x = make(1024 * 3, Kind::Normal, 1.0f, 3);
    std::vector<std::int32_t> out(9);
    SimilarityOptions o;
    o.backend = Backend::Cuda;
    o.method = Method::Sorted;
    hpcml_test::expect_invalid([&] { hpcml::similarity({x.data(), 1024, 3}, {}, out.data(), o); },
                               "method: the sorted method on the GPU counts at most 1023 samples");
}

// Every architecture this build emits code for, and every one the default build does (CI builds
// sm_90 alone): its shared-memory limit is known, and for each method the kernel a device of that
// architecture runs asks for no more shared memory per block than the limit (the sorted block's
// 96,672 bytes exceed Turing's 64 KiB: there the fused kernel runs, and says so in RunStats).
TEST(SharedMemory, EveryKernelFitsEveryArchitectureTheBuildsEmit) {
    using namespace hpcml::detail::similarity;
    std::vector<int> architectures;
    std::string list = HPCML_TEST_ARCHITECTURES;
    for (std::size_t at = 0; at < list.size();) {
        const std::size_t end = std::min(list.find(',', at), list.size());
        const std::string item = list.substr(at, end - at);  // "75-real", "90" ("native", "all": none to check)
        if (!item.empty() && std::isdigit(static_cast<unsigned char>(item[0])))
            architectures.push_back(std::stoi(item));
        at = end + 1;
    }
    ASSERT_FALSE(architectures.empty());
    for (const int sm : architectures) {
        const std::size_t limit = hpcml::detail::max_shared_memory_per_block(sm);
        ASSERT_GT(limit, 0u) << "sm_" << sm << ": add its shared memory per block to architectures.hpp";
        for (const hpcml::Method asked :
             {hpcml::Method::Auto, hpcml::Method::Fused, hpcml::Method::Sorted, hpcml::Method::Naive}) {
            const hpcml::Method runs = cuda_method(Problem{}, asked, limit);
            const std::size_t shared = method_entry(runs).cuda_shared_bytes;
            EXPECT_LE(shared, limit) << "sm_" << sm << ": the " << hpcml::to_string(runs) << " kernel asks for "
                                     << shared << " bytes of shared memory per block";
            if (asked != hpcml::Method::Auto && method_entry(asked).cuda_shared_bytes <= limit) EXPECT_EQ(runs, asked);
        }
    }
    EXPECT_EQ(method_entry(hpcml::Method::Sorted).cuda_shared_bytes, sizeof(sorted_gpu::Shared));
    EXPECT_EQ(cuda_method(Problem{}, hpcml::Method::Sorted, hpcml::detail::max_shared_memory_per_block(75)),
              hpcml::Method::Fused);
    EXPECT_EQ(cuda_method(Problem{}, hpcml::Method::Sorted, hpcml::detail::max_shared_memory_per_block(90)),
              hpcml::Method::Sorted);
}

// The sorted kernel's tuning per architecture (SortedGpuPolicy): the blocks an SM holds follow from
// its shared memory, one more would not fit, and the layout, so count mode's sample limit, is the
// same everywhere (docs/similarity.md's table).
TEST(SortedGpuPolicy, BlocksPerSmAndSampleLimitPerArchitecture) {
    namespace sorted_gpu = hpcml::detail::similarity::sorted_gpu;
    const std::size_t block = sizeof(sorted_gpu::Shared) + hpcml::detail::kSharedReservedPerBlock;
    for (auto [sm, blocks] :
         {std::pair{75, 0}, {80, 1}, {86, 1}, {87, 1}, {89, 1}, {90, 2}, {100, 2}, {103, 2}, {120, 1}}) {
        const sorted_gpu::SortedGpuPolicy policy = sorted_gpu::sorted_gpu_policy(sm);
        const std::size_t per_sm = hpcml::detail::shared_memory(sm).per_sm;
        EXPECT_EQ(policy.blocks_per_sm, blocks) << "sm_" << sm;
        EXPECT_LE(static_cast<std::size_t>(blocks) * block, per_sm) << "sm_" << sm;
        EXPECT_GT(static_cast<std::size_t>(blocks + 1) * block, per_sm) << "sm_" << sm;
        EXPECT_EQ(policy.pass_samples, 8);
        EXPECT_EQ(policy.most_count_samples, 1023u);
    }
}

namespace {

// HPCML_SORTED_GPU_BLOCKS_PER_SM set for a scope (unset: nullptr), then as it was.
struct BlocksPerSmVariable : hpcml_test::ScopedEnvironment {
    explicit BlocksPerSmVariable(const char* value) : ScopedEnvironment("HPCML_SORTED_GPU_BLOCKS_PER_SM", value) {}
};

}  // namespace

TEST(SortedGpuPolicy, OneBlockPerSmOnlyWhereTheVariableSaysOne) {
    namespace sorted_gpu = hpcml::detail::similarity::sorted_gpu;
    for (const char* unset : {static_cast<const char*>(nullptr), ""}) {
        const BlocksPerSmVariable set(unset);
        EXPECT_FALSE(sorted_gpu::sorted_gpu_one_block_per_sm());
    }
    {
        const BlocksPerSmVariable one("1");
        EXPECT_TRUE(sorted_gpu::sorted_gpu_one_block_per_sm());
    }
    for (const char* bad : {"2", "0", "one", "1 "}) {
        const BlocksPerSmVariable set(bad);
        hpcml_test::expect_invalid([] { (void)sorted_gpu::sorted_gpu_one_block_per_sm(); },
                                   "HPCML_SORTED_GPU_BLOCKS_PER_SM");
    }
}

// On the GPU: its shared memory as architectures.hpp lists it for its compute capability, and the
// sorted kernel resident as the policy says (registers do not lower it); the kernel built for one
// block per SM (HPCML_SORTED_GPU_BLOCKS_PER_SM=1) resident once per SM, with the same results.
TEST(SortedGpuPolicy, TheDeviceHoldsTheBlocksThePolicySays) {
    HPCML_SKIP_WITHOUT_GPU();
    const hpcml::DeviceInfo& device = hpcml_test::device_query().devices.at(0);
    const int sm = device.compute_capability_major * 10 + device.compute_capability_minor;
    const hpcml::detail::SharedMemoryLimit listed = hpcml::detail::shared_memory(sm);
    if (listed.per_block == 0) GTEST_SKIP() << "sm_" << sm << " is not in architectures.hpp's table";
    EXPECT_EQ(listed.per_block, device.shared_memory_per_block_optin_bytes) << "sm_" << sm;
    EXPECT_EQ(listed.per_sm, device.shared_memory_per_multiprocessor_bytes) << "sm_" << sm;
    const int blocks = hpcml::detail::similarity::sorted_gpu::sorted_gpu_policy(sm).blocks_per_sm;
    if (blocks == 0) GTEST_SKIP() << "the sorted kernel does not fit sm_" << sm;
    const BlocksPerSmVariable policy_build(nullptr);  // whatever the environment says
    hpcml::detail::similarity::Problem p;
    p.output = SimilarityOutput::Int32;
    EXPECT_EQ(hpcml::detail::similarity::sorted_blocks(p).resident,
              static_cast<std::size_t>(blocks) * static_cast<std::size_t>(device.multiprocessor_count))
        << "sm_" << sm;
    const std::size_t samples = 40, n = 300, m = 513;
    const auto x = make(samples * n, Kind::Ties, 1.0f, 61), y = make(samples * m, Kind::Specials, 1.0f, 62);
    SimilarityOptions o;
    o.backend = Backend::Cuda;
    o.method = Method::Sorted;
    std::vector<std::int32_t> cpu(n * m), policy(n * m, -7), one(n * m, -7);
    hpcml::similarity({x.data(), samples, n}, {y.data(), samples, m}, policy.data(), o);
    {
        const BlocksPerSmVariable set("1");
        EXPECT_EQ(hpcml::detail::similarity::sorted_blocks(p).resident,
                  static_cast<std::size_t>(device.multiprocessor_count));
        hpcml::similarity({x.data(), samples, n}, {y.data(), samples, m}, one.data(), o);
    }
    o.backend = Backend::Cpu;
    o.method = Method::Fused;
    hpcml::similarity({x.data(), samples, n}, {y.data(), samples, m}, cpu.data(), o);
    EXPECT_EQ(policy, cpu);
    EXPECT_EQ(one, cpu);
}
