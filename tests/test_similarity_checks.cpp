// Similarity's checks: memory bounded for the fused method and refused before the naive one
// would not fit, arguments that name themselves, options checked before a job, output sizes.
#include "support/similarity.hpp"

using namespace hpcml_test::similarity;

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

// A misaligned operand of the device entry points is refused before any CUDA call (a kernel's
// misaligned access is a sticky error that would end every later GPU call of the process), so
// this runs on any machine. The pointers are never read.
TEST(Similarity, DeviceEntryPointsRefuseMisalignedOperands) {
    alignas(16) static unsigned char memory[4096];
    const auto* x = reinterpret_cast<const float*>(memory);
    const auto* odd = reinterpret_cast<const float*>(memory + 2);
    SimilarityOptions o;
    o.backend = Backend::Cuda;
    expect_invalid([&] { hpcml::similarity_device({odd, 4, 3}, {}, memory + 2048, o); }, "x: its elements need 4-byte");
    expect_invalid([&] { hpcml::similarity_device({x, 4, 3}, {odd, 4, 3}, memory + 2048, o); }, "y:");
    // The output's alignment is its element's: 4 bytes for int32, 2 for uint16, 1 for the rest.
    expect_invalid(
        [&] {
            hpcml::similarity_device({x, 4, 3}, {}, memory + 2050, o);
        },
        "out: its elements need 4-byte alignment, but the pointer is 2 bytes past");
    o.output = SimilarityOutput::UInt16;
    expect_invalid([&] { hpcml::similarity_device({x, 4, 3}, {}, memory + 2049, o); }, "out: its elements need 2-byte");
    expect_invalid([&] { hpcml::similarity_pairs_device({odd, 4, 3}, {}, o); }, "x:");
    expect_invalid(
        [&] {
            hpcml::similarity_pairs_on_device(
                {odd, 4, 3}, {}, [](std::size_t) { return hpcml::SimilarityDevicePairs{}; }, o);
        },
        "x:");
    o.mode = SimilarityMode::All;
    o.output = SimilarityOutput::Bitmask;
    try {  // a byte output takes any address: past the alignment check to the device check
        hpcml::similarity_device({x, 4, 3}, {}, memory + 2049, o);
    } catch (const hpcml::Error& e) {
        EXPECT_EQ(std::string(e.what()).find("alignment"), std::string::npos) << e.what();
    }
}

TEST(Similarity, OptionsCanBeCheckedBeforeAJob) {
    SimilarityOptions o;
    o.output = SimilarityOutput::UInt8;
    EXPECT_NO_THROW(hpcml::check_similarity_options(o, 255));
    expect_invalid([&] { hpcml::check_similarity_options(o, 256); }, "output: uint8 holds counts up to 255");
    o.output = SimilarityOutput::Bitmask;
    expect_invalid([&] { hpcml::check_similarity_options(o, 1); }, "output: bitmask is an output of mode all");
    expect_invalid([&] { hpcml::check_similarity_options(o, 1, "--dtype"); },
                   "--dtype: bitmask is an output of mode all");
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
