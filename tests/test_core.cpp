// Core: names and parsing, backend resolution, errors, the tracked allocator, device query.
#include <hpcml/hpcml.hpp>

#include <gtest/gtest.h>

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <limits>
#include <string>
#include <vector>

#include "common/architectures.hpp"
#include "common/cpu_kernel.hpp"
#include "common/memory.hpp"
#include "support/environment.hpp"
#include "support/errors.hpp"
#include "support/gpu.hpp"
#if HPCML_WITH_CUDA
#include "common/cublas.hpp"
#include "common/cuda_memory.hpp"
#endif

namespace {

template <class F>
hpcml::Error capture_error(F&& f) {
    try {
        f();
    } catch (const hpcml::Error& e) {
        return e;
    }
    ADD_FAILURE() << "expected hpcml::Error";
    return hpcml::Error(hpcml::ErrorKind::Internal, "none thrown");
}

TEST(Core, VersionMatchesHeader) { EXPECT_EQ(hpcml::version(), HPCML_VERSION_STRING); }

// Every family's options extend ExecutionOptions; an entry point refuses a field it cannot
// honour (a stream where it synchronises, a naive method it does not have) before any work,
// on every backend, naming the field.
TEST(Core, ExecutionOptionsAnEntryPointCannotHonourAreRefused) {
    using hpcml_test::expect_invalid;
    int not_a_stream = 0;
    const std::vector<float> x(4 * 3, 0.5f), A{1, -1, -1, 1};
    const std::vector<double> one(1, 1.0);
    std::vector<float> out(9);
    for (hpcml::Backend backend : {hpcml::Backend::Auto, hpcml::Backend::Cpu, hpcml::Backend::Cuda}) {
        hpcml::SimilarityOptions similarity;
        similarity.backend = backend;
        similarity.stream = &not_a_stream;
        expect_invalid([&] { hpcml::similarity({x.data(), 4, 3}, {}, out.data(), similarity); }, "stream");
        expect_invalid([&] { hpcml::similarity_pairs({x.data(), 4, 3}, {}, similarity); }, "stream");
        hpcml::RegretOptions regret;
        regret.backend = backend;
        regret.stream = &not_a_stream;
        expect_invalid([&] { hpcml::solve_matrix_game(A.data(), 2, 2, regret); }, "stream");
        hpcml::invgauss::DistanceOptions distances;
        distances.backend = backend;
        distances.stream = &not_a_stream;
        expect_invalid([&] { hpcml::invgauss::distance_to_normal(one.data(), one.data(), 1, distances); }, "stream");
        hpcml::invgauss::InvGaussOptions elementwise;
        elementwise.backend = backend;
        elementwise.method = hpcml::Method::Naive;
        std::vector<double> values(1, 1.0), result(1);
        expect_invalid(
            [&] {
                hpcml::invgauss::evaluate(hpcml::invgauss::Function::Pdf, values.data(), 1, one.data(), 1, one.data(),
                                          1, result.data(), elementwise);
            },
            "method: evaluate has no naive method (its methods: auto, fused)");
        expect_invalid([&] { hpcml::invgauss::sample(1, one.data(), 1, one.data(), 1, 7, result.data(), elementwise); },
                       "method");
        // The sorted method is the similarity functions' alone: the others refuse it by name.
        hpcml::RegretOptions sorted_regret;
        sorted_regret.backend = backend;
        sorted_regret.method = hpcml::Method::Sorted;
        // Each family's list of methods, named in the refusal.
        expect_invalid([&] { hpcml::solve_matrix_game(A.data(), 2, 2, sorted_regret); },
                       "method: solve_matrix_games has no sorted method (its methods: auto, fused, naive)");
        hpcml::invgauss::DistanceOptions sorted_distances;
        sorted_distances.backend = backend;
        sorted_distances.method = hpcml::Method::Sorted;
        expect_invalid(
            [&] { hpcml::invgauss::distance_to_normal(one.data(), one.data(), 1, sorted_distances); }, "method");
        elementwise.method = hpcml::Method::Sorted;
        expect_invalid(
            [&] {
                hpcml::invgauss::evaluate(hpcml::invgauss::Function::Pdf, values.data(), 1, one.data(), 1, one.data(),
                                          1, result.data(), elementwise);
            },
            "method");
        // Progress: only the long calls report it (the others refuse a callback), and its
        // interval must be a number of seconds.
        elementwise.method = hpcml::Method::Fused;
        elementwise.progress = [](std::uint64_t, std::uint64_t) {};
        expect_invalid(
            [&] {
                hpcml::invgauss::evaluate(hpcml::invgauss::Function::Pdf, values.data(), 1, one.data(), 1, one.data(),
                                          1, result.data(), elementwise);
            },
            "progress");
        for (double interval :
             {-1.0, std::numeric_limits<double>::quiet_NaN(), std::numeric_limits<double>::infinity()}) {
            hpcml::SimilarityOptions timed;
            timed.backend = backend;
            timed.progress_interval = interval;
            expect_invalid([&] { hpcml::similarity({x.data(), 4, 3}, {}, out.data(), timed); }, "progress_interval");
        }
    }
}

TEST(Core, ParseBackendAndMethodRoundTrip) {
    for (auto b : {hpcml::Backend::Auto, hpcml::Backend::Cpu, hpcml::Backend::Cuda}) {
        EXPECT_EQ(hpcml::parse_backend(hpcml::to_string(b)), b);
    }
    for (auto m : {hpcml::Method::Auto, hpcml::Method::Fused, hpcml::Method::Sorted, hpcml::Method::Naive}) {
        EXPECT_EQ(hpcml::parse_method(hpcml::to_string(m)), m);
    }
}

TEST(Core, ParseErrorsNameTheArgument) {
    const auto e = capture_error([] { hpcml::parse_backend("gpu", "--backend"); });
    EXPECT_EQ(e.kind(), hpcml::ErrorKind::InvalidArgument);
    EXPECT_NE(std::string(e.what()).find("--backend"), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find("'gpu'"), std::string::npos) << e.what();
    const auto m = capture_error([] { hpcml::parse_method("Fused", "method"); });
    EXPECT_EQ(m.kind(), hpcml::ErrorKind::InvalidArgument);
    EXPECT_NE(std::string(m.what()).find("method"), std::string::npos);
}

// HPCML_CPU_KERNEL caps the CPU's instruction set at each call; another value is refused by name.
TEST(Core, CpuKernelIsCappedByTheEnvironment) {
    const hpcml_test::ScopedEnvironment unset("HPCML_CPU_KERNEL", nullptr);
    const std::string best(hpcml::cpu_kernel());
    // The levels' names from their table, best first: "avx512, avx2 or baseline".
    std::string levels;
    const auto& names = hpcml::detail::CpuLevels::names;
    for (std::size_t k = 0; k < names.size(); ++k)
        levels += (k == 0 ? "" : k + 1 == names.size() ? " or " : ", ") + std::string(names[k].name);
    EXPECT_TRUE(std::any_of(names.begin(), names.end(), [&](const auto& n) { return n.name == best; })) << best;
    ::setenv("HPCML_CPU_KERNEL", "avx2", 1);
    EXPECT_EQ(hpcml::cpu_kernel(), best == "baseline" ? "baseline" : "avx2");
    ::setenv("HPCML_CPU_KERNEL", "baseline", 1);
    EXPECT_EQ(hpcml::cpu_kernel(), "baseline");
    ::setenv("HPCML_CPU_KERNEL", "sse", 1);
    const auto e = capture_error([] { hpcml::cpu_kernel(); });
    EXPECT_EQ(e.kind(), hpcml::ErrorKind::InvalidArgument);
    EXPECT_NE(std::string(e.what()).find("HPCML_CPU_KERNEL: expected " + levels + ", got 'sse'"), std::string::npos)
        << e.what();
}

// A kernel written for one level runs there and above: best_kernel takes the best compiled one
// at or below the level in use, whatever levels a file has kernels for (a level added above
// avx512 must not fall back to the baseline's). The floor's rate follows the level.
TEST(Core, BestKernelIsTheBestCompiledAtOrBelowTheLevel) {
    using namespace hpcml::detail;
    using Kernel = int (*)();
    const Kernel k512 = [] { return 512; }, k2 = [] { return 2; }, k0 = [] { return 0; };
    const std::array<LevelKernel<Kernel>, 3> all{
        {{Avx512Level::value, k512}, {Avx2Level::value, k2}, {BaselineLevel::value, k0}}};
    EXPECT_EQ(best_kernel(Avx512Level::value, all)(), 512);
    EXPECT_EQ(best_kernel(Avx2Level::value, all)(), 2);
    EXPECT_EQ(best_kernel(BaselineLevel::value, all)(), 0);
    EXPECT_EQ(best_kernel(CpuKernel{3}, all)(), 512) << "a level above every kernel takes the best";
    const std::array<LevelKernel<Kernel>, 3> no512{
        {{Avx512Level::value, nullptr}, {Avx2Level::value, k2}, {BaselineLevel::value, k0}}};
    EXPECT_EQ(best_kernel(Avx512Level::value, no512)(), 2) << "a kernel not built here is passed over";
    {
        const hpcml_test::ScopedEnvironment baseline("HPCML_CPU_KERNEL", "baseline");
        EXPECT_EQ(hpcml::cpu_kernel_pair_samples_per_cycle(), 4.0);
    }
    const double best = hpcml::cpu_kernel_pair_samples_per_cycle();
    EXPECT_TRUE(best == 4.0 || best == 8.0 || best == 16.0) << best;
}

TEST(Core, CpuContextAlwaysResolves) {
    const hpcml::Context c = hpcml::make_context(hpcml::Backend::Cpu);
    EXPECT_EQ(c.backend, hpcml::Backend::Cpu);
    EXPECT_EQ(hpcml::available_backends().front(), hpcml::Backend::Cpu);
}

TEST(Core, AutoFollowsDeviceAvailability) {
    const hpcml::Context c = hpcml::make_context(hpcml::Backend::Auto);
    EXPECT_EQ(c.backend, hpcml_test::gpu_available() ? hpcml::Backend::Cuda : hpcml::Backend::Cpu);
    EXPECT_NE(c.backend, hpcml::Backend::Auto);
}

TEST(Core, CudaWithoutDeviceRaisesWithReason) {
    if (hpcml_test::gpu_available()) GTEST_SKIP() << "this machine has a CUDA device";
    const auto e = capture_error([] { hpcml::make_context(hpcml::Backend::Cuda); });
    EXPECT_TRUE(e.kind() == hpcml::ErrorKind::NoDevice || e.kind() == hpcml::ErrorKind::DriverTooOld)
        << hpcml::to_string(e.kind());
    EXPECT_NE(std::string(e.what()).find("backend cuda requested"), std::string::npos) << e.what();
    EXPECT_EQ(hpcml::available_backends().size(), 1u);
}

TEST(Core, CudaDeviceOrdinalOutOfRange) {
    HPCML_SKIP_WITHOUT_GPU();
    const auto e = capture_error([] { hpcml::make_context(hpcml::Backend::Cuda, 1 << 20); });
    EXPECT_EQ(e.kind(), hpcml::ErrorKind::InvalidArgument);
    EXPECT_NE(std::string(e.what()).find("device"), std::string::npos);
}

TEST(DeviceQuery, StatusIsConsistent) {
    const hpcml::DeviceQuery q = hpcml::query_devices();
    if (!hpcml::cuda_compiled()) {
        EXPECT_EQ(q.status, hpcml::CudaStatus::NotCompiled);
    } else {
        EXPECT_GT(q.runtime_version, 12000);
    }
    std::size_t usable = 0;
    for (const auto& d : q.devices) {
        usable += d.usable;
        EXPECT_EQ(d.usable, d.unusable_reason.empty()) << d.unusable_reason;
    }
    EXPECT_EQ(hpcml::devices().size(), usable);
    if (q.status == hpcml::CudaStatus::Ok) {
        ASSERT_GT(usable, 0u);
        for (const auto& d : q.devices) {
            EXPECT_FALSE(d.name.empty());
            EXPECT_GT(d.multiprocessor_count, 0);
            EXPECT_GT(d.total_global_memory_bytes, 0u);
            EXPECT_GT(d.peak_memory_bandwidth_gbps, 0.0);
            EXPECT_NEAR(d.peak_memory_bandwidth_gbps, 2.0 * d.memory_clock_khz * d.memory_bus_width_bits / 8.0 / 1e6,
                        1e-6);
        }
    } else {
        // Devices are listed only when they exist but none can run this build.
        EXPECT_EQ(q.devices.empty(), q.status != hpcml::CudaStatus::NoKernelImage);
        EXPECT_EQ(usable, 0u);
        EXPECT_FALSE(q.message.empty());
    }
    EXPECT_EQ(hpcml::cuda_architectures().empty(), !hpcml::cuda_compiled());
}

TEST(DeviceQuery, DescribesBuiltArchitectures) {
    using hpcml::detail::describe_architectures;
    EXPECT_EQ(
        describe_architectures("75-real,80-real,86-real,89-real,90"),
        "sm_75, sm_80, sm_86, sm_89, sm_90 machine code and compute_90 PTX, which the driver compiles for newer GPUs");
    EXPECT_EQ(describe_architectures("90-real"), "sm_90 machine code");
    EXPECT_EQ(describe_architectures("80-virtual"), "compute_80 PTX, which the driver compiles for newer GPUs");
    EXPECT_EQ(describe_architectures("all-major"), "all-major");
    EXPECT_EQ(describe_architectures("90a-real"), "sm_90a machine code");
}

TEST(DeviceQuery, DecidesWhichGpusABuildCovers) {
    using hpcml::detail::architecture_problem;
    const std::string standard = "75-real,80-real,86-real,89-real,90";
    const std::pair<int, int> covered[] = {{7, 5}, {8, 0}, {8, 6}, {8, 7}, {8, 9}, {9, 0}, {10, 0}, {12, 0}};
    for (auto [major, minor] : covered)
        EXPECT_EQ(architecture_problem(standard, major, minor), "") << major << "." << minor;  // 10.x, 12.x: 9.0's PTX
    EXPECT_NE(architecture_problem(standard, 7, 0), "");  // Volta: none (and CUDA 13 dropped it)
    EXPECT_NE(architecture_problem("90-real", 8, 0), "");
    EXPECT_NE(architecture_problem("90-real", 10, 0), "");  // machine code does not run on the next major
    EXPECT_EQ(architecture_problem("80-real", 8, 6), "");   // ... but on later minors of its own
    EXPECT_NE(architecture_problem("86-real", 8, 0), "");
    EXPECT_EQ(architecture_problem("80-virtual", 9, 0), "");
    EXPECT_NE(architecture_problem("90a-real", 10, 0), "");  // arch-specific: 9.0 only
    EXPECT_EQ(architecture_problem("90a-real", 9, 0), "");
    EXPECT_EQ(architecture_problem("all-major", 7, 0), "");  // CMake's words: trusted
    const std::string why = architecture_problem("90-real", 8, 0);
    EXPECT_NE(why.find("compute capability 8.0"), std::string::npos) << why;
    EXPECT_NE(why.find("-DCMAKE_CUDA_ARCHITECTURES=80"), std::string::npos) << why;
}

TEST(DeviceQuery, FormatsVersions) {
    EXPECT_EQ(hpcml::format_cuda_version(13000), "13.0");
    EXPECT_EQ(hpcml::format_cuda_version(12080), "12.8");
    EXPECT_EQ(hpcml::format_cuda_version(0), "none");
}

TEST(Memory, TrackerReportsPeakNotCurrent) {
    hpcml::detail::MemoryTracker tracker;
    {
        hpcml::detail::HostBuffer<float> a(tracker, 1000, "a");
        {
            hpcml::detail::HostBuffer<double> b(tracker, 500, "b");
            EXPECT_EQ(tracker.stats().peak_host_bytes, 8000u);
        }
        hpcml::detail::HostBuffer<char> c(tracker, 100, "c");
        EXPECT_EQ(tracker.stats().peak_host_bytes, 8000u);
        hpcml::detail::HostBuffer<char> d(tracker, 5000, "d");
        EXPECT_EQ(tracker.stats().peak_host_bytes, 9100u);
    }
    EXPECT_EQ(tracker.stats().peak_device_bytes, 0u);
    hpcml::detail::HostBuffer<float> e(tracker, 10, "e");
    EXPECT_EQ(tracker.stats().peak_host_bytes, 9100u);
}

TEST(Memory, HostBufferMoveKeepsAccounting) {
    hpcml::detail::MemoryTracker tracker;
    hpcml::detail::HostBuffer<int> a(tracker, 256, "a");
    hpcml::detail::HostBuffer<int> b = std::move(a);
    b = hpcml::detail::HostBuffer<int>(tracker, 512, "c");  // frees 1 KiB, then holds 2 KiB
    hpcml::detail::HostBuffer<int> d(tracker, 256, "d");
    EXPECT_EQ(tracker.stats().peak_host_bytes, 3072u);
}

// A freed block serves the next request it fits (at most twice its size), 64-byte aligned; a
// Fresh block (the naive baselines') is never kept; release_cached_memory empties the cache.
// Builds with AddressSanitizer keep nothing (so that a use after free is caught).
TEST(Memory, HostBlocksAreKeptForTheNextCall) {
    hpcml::release_cached_memory();
    hpcml::detail::MemoryTracker tracker;
    const void* first = nullptr;
    {
        hpcml::detail::HostBuffer<float> a(tracker, 1 << 20, "a");
        first = a.data();
        EXPECT_EQ(reinterpret_cast<std::uintptr_t>(first) % 64, 0u);
    }
#if defined(__SANITIZE_ADDRESS__)
    GTEST_SKIP() << "AddressSanitizer build: host blocks are not kept";
#endif
    {
        hpcml::detail::HostBuffer<float> again(tracker, 3 << 18, "again");  // 3 MiB from the kept 4 MiB
        EXPECT_EQ(again.data(), first);
        hpcml::detail::HostBuffer<float> other(tracker, 1 << 20, "other");  // the kept block is in use
        EXPECT_NE(other.data(), first);
    }
    {
        hpcml::detail::HostBuffer<float> small(tracker, 1 << 18, "small");  // a quarter: not from a kept block
        EXPECT_NE(small.data(), first);
        hpcml::detail::HostBuffer<float> fresh(tracker, 1 << 20, "fresh", hpcml::detail::HostBlock::Fresh);
        EXPECT_NE(fresh.data(), first);
    }
    // again (3 MiB, in a 4 MiB block) and other (4 MiB): the kept block's spare MiB is not counted
    EXPECT_EQ(tracker.stats().peak_host_bytes, std::size_t{7} << 20);
    hpcml::release_cached_memory();
    hpcml::detail::HostBuffer<float> after(tracker, 1 << 20, "after");
    std::fill(after.data(), after.data() + after.size(), 1.0f);
}

TEST(Memory, OversizedRequestsFailCleanly) {
    const auto e = capture_error(
        [] { hpcml::detail::ensure_host_fits(std::numeric_limits<std::size_t>::max() / 2, "naive intermediate"); });
    EXPECT_EQ(e.kind(), hpcml::ErrorKind::OutOfMemory);
    EXPECT_NE(std::string(e.what()).find("naive intermediate needs"), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find("available"), std::string::npos) << e.what();

    hpcml::detail::MemoryTracker tracker;
    const auto o = capture_error(
        [&] { hpcml::detail::HostBuffer<double> b(tracker, std::numeric_limits<std::size_t>::max() / 4, "x"); });
    EXPECT_EQ(o.kind(), hpcml::ErrorKind::InvalidArgument);  // the byte count overflows
}

// The public device memory and timer (hpcml/device_memory.hpp), which the benchmarks and
// hpcml-similarity use instead of CUDA code of their own.
TEST(DeviceMemory, WithoutAGpuIsNoDeviceAndTheCpuTimerIsWallTime) {
    hpcml::StreamTimer cpu_timer(hpcml::Context{});
    cpu_timer.start();
    const auto until = std::chrono::steady_clock::now() + std::chrono::milliseconds(20);
    while (std::chrono::steady_clock::now() < until) {}
    const double seconds = cpu_timer.stop();
    EXPECT_GE(seconds, 0.02);
    EXPECT_LT(seconds, 5.0);
    if (hpcml_test::gpu_available()) GTEST_SKIP() << "this machine has a CUDA device (DeviceMemoryCuda.* test it)";
    const auto e = capture_error([] { hpcml::DeviceMemory memory(64, 0, "a buffer"); });
    EXPECT_TRUE(e.kind() == hpcml::ErrorKind::NoDevice || e.kind() == hpcml::ErrorKind::DriverTooOld) << e.what();
    const std::vector<float> host(6, 1.0f);
    EXPECT_THROW(hpcml::DeviceMatrix({host.data(), 2, 3}, 0, "x"), hpcml::Error);
    const hpcml::DeviceMemory empty;  // nothing allocated: destroyed without a GPU
    EXPECT_EQ(empty.data(), nullptr);
}

TEST(DeviceMemoryCuda, RoundTripRangesMatrixPaddingAndTimer) {
    HPCML_SKIP_WITHOUT_GPU();
    hpcml::DeviceMemory memory(40, 0, "a buffer");
    std::vector<unsigned char> zeros(40, 7), back(40);
    memory.download(zeros.data(), 40);
    EXPECT_EQ(zeros, std::vector<unsigned char>(40, 0)) << "allocated zeroed";
    const unsigned char bytes[3] = {1, 2, 3};
    memory.upload(bytes, 3, 37);
    memory.download(back.data(), 40);
    EXPECT_EQ(back[37], 1);
    EXPECT_EQ(back[39], 3);
    hpcml_test::expect_invalid([&] { memory.upload(bytes, 3, 38); }, "upload: 3 bytes at offset 38 leave a buffer");
    hpcml_test::expect_invalid([&] { memory.download(back.data(), 41); }, "download:");
    hpcml::DeviceMemory moved = std::move(memory);
    EXPECT_EQ(memory.data(), nullptr);
    EXPECT_EQ(moved.bytes(), 40u);

    // 3 x 5 floats: rows padded to 8, each on 16 bytes; views of columns in place, equal to the host call.
    std::vector<float> x(15);
    for (std::size_t k = 0; k < x.size(); ++k) x[k] = 0.3f * static_cast<float>(k % 7);
    const hpcml::DeviceMatrix dx({x.data(), 3, 5}, 0, "x");
    EXPECT_EQ(dx.view().ld, 8u);
    EXPECT_EQ(reinterpret_cast<std::uintptr_t>(dx.columns(4, 1).data) % 16, 0u);
    hpcml_test::expect_invalid([&] { (void)dx.columns(4, 2); }, "columns: 2 from column 4 of 5");
    hpcml::SimilarityOptions o;
    o.backend = hpcml::Backend::Cuda;
    std::vector<std::int32_t> expected(25), got(25);
    hpcml::similarity({x.data(), 3, 5}, {}, expected.data(), o);
    hpcml::DeviceMemory out(25 * sizeof(std::int32_t), 0, "out");
    hpcml::StreamTimer timer(hpcml::make_context(hpcml::Backend::Cuda, 0));
    timer.start();
    hpcml::similarity_device(dx.view(), {}, out.data(), o);
    EXPECT_GT(timer.stop(), 0.0);
    out.download(got.data(), out.bytes());
    EXPECT_EQ(got, expected);
}

TEST(Memory, FormatsBytes) {
    EXPECT_EQ(hpcml::detail::format_bytes(512), "512 B");
    EXPECT_EQ(hpcml::detail::format_bytes(7629394944), "7.63 GB (7629394944 bytes)");
}

#if HPCML_WITH_CUDA
TEST(Cuda, ErrorsMapToKinds) {
    const auto oom =
        capture_error([] { hpcml::detail::raise_cuda(cudaErrorMemoryAllocation, "cudaMalloc(&p, n)", "f.cu", 7); });
    EXPECT_EQ(oom.kind(), hpcml::ErrorKind::OutOfMemory);
    EXPECT_NE(std::string(oom.what()).find("cudaMalloc(&p, n) failed: cudaErrorMemoryAllocation"), std::string::npos)
        << oom.what();
    const auto other = capture_error([] { hpcml::detail::raise_cuda(cudaErrorInvalidValue, "cudaMemcpy", "f.cu", 9); });
    EXPECT_EQ(other.kind(), hpcml::ErrorKind::Cuda);
    EXPECT_NE(std::string(other.what()).find("f.cu:9"), std::string::npos);
}

// cuBLAS is opened when first needed, not linked: what is tried, and what a missing or wrong
// file says (no GPU needed to open it).
TEST(Cuda, CublasIsLoadedWhenNeededAndItsAbsenceExplained) {
    const auto missing = capture_error([] { hpcml::detail::load_cublas({"/nonexistent/libcublas.so.13"}); });
    EXPECT_EQ(missing.kind(), hpcml::ErrorKind::NoDevice);
    for (const char* part : {"/nonexistent/libcublas.so.13: ", "pip install nvidia-cublas", "HPCML_CUBLAS_LIBRARY"})
        EXPECT_NE(std::string(missing.what()).find(part), std::string::npos) << part << " in " << missing.what();
    const auto wrong = capture_error([] { hpcml::detail::load_cublas({"libc.so.6"}); });
    EXPECT_NE(std::string(wrong.what()).find("libc.so.6: it lacks cublasCreate_v2"), std::string::npos) << wrong.what();

    const std::vector<std::string> candidates = hpcml::detail::cublas_candidates();
    ASSERT_FALSE(candidates.empty());
    EXPECT_EQ(candidates.front().rfind("libcublas.so.", 0), 0u) << "the loader's own path first";
    // The toolkit this build used is the last resort, so a build machine always finds it.
    const hpcml::detail::CublasLibrary& blas = hpcml::detail::cublas();
    EXPECT_NE(blas.path.find("libcublas.so."), std::string::npos) << blas.path;
    EXPECT_NE(blas.sgemv, nullptr);
    EXPECT_EQ(&hpcml::detail::cublas(), &blas) << "loaded once";
}

// The test program's own CUDA calls (device arrays, streams, the teardown's device reset) and the
// library's go through one runtime: a second one, hidden inside a shared libhpcml, would not see
// the reset, and compute-sanitizer's leak check would miss what it holds (tests/CMakeLists.txt).
TEST(Cuda, OneRuntimeServesTheLibraryAndTheTest) {
    EXPECT_EQ(hpcml::detail::library_cuda_runtime_entry(), reinterpret_cast<const void*>(&cudaGetDeviceCount))
        << "this test program holds two CUDA runtimes: the library's and its own";
}

TEST(Cuda, DeviceAndPinnedBuffersAreTracked) {
    HPCML_SKIP_WITHOUT_GPU();
    hpcml::detail::MemoryTracker tracker;
    {
        hpcml::detail::DeviceBuffer<float> d(tracker, 1 << 20, nullptr, "d");
        hpcml::detail::PinnedBuffer<float> p(tracker, 1 << 10, "p");
        ASSERT_NE(d.data(), nullptr);
        ASSERT_NE(p.data(), nullptr);
        HPCML_CUDA_CHECK(cudaMemsetAsync(d.data(), 0, d.bytes(), nullptr));
        HPCML_CUDA_CHECK(cudaStreamSynchronize(nullptr));
    }
    EXPECT_EQ(tracker.stats().peak_device_bytes, 4u << 20);
    EXPECT_EQ(tracker.stats().peak_host_bytes, 4u << 10);
}

// The front ends' and tests' device array: a round trip, and OutOfMemory naming what did not fit.
TEST(Cuda, DeviceArrayRoundTripAndOutOfMemory) {
    HPCML_SKIP_WITHOUT_GPU();
    const std::vector<float> host{1.5f, -2.0f, 3.25f};
    const hpcml::detail::DeviceArray<float> d(host.data(), host.size(), "d");
    std::vector<float> back(3);
    d.download(back.data());
    EXPECT_EQ(back, host);
    const auto e = capture_error([] { hpcml::detail::DeviceArray<float> huge(std::size_t{1} << 60, "huge"); });
    EXPECT_TRUE(e.kind() == hpcml::ErrorKind::OutOfMemory || e.kind() == hpcml::ErrorKind::InvalidArgument) << e.what();
    EXPECT_EQ(std::string(e.what()).rfind("huge", 0), 0u) << e.what();
}

TEST(Cuda, ImpossibleDeviceAllocationIsOutOfMemory) {
    HPCML_SKIP_WITHOUT_GPU();
    const auto e = capture_error([] { hpcml::detail::ensure_device_fits(std::size_t{1} << 60, "naive"); });
    EXPECT_EQ(e.kind(), hpcml::ErrorKind::OutOfMemory);
    EXPECT_NE(std::string(e.what()).find("free"), std::string::npos);
}
// upload_to_device: every byte where it belongs from pageable memory (straight, and through the
// pinned chunks: sizes past 32 MiB, one not a multiple of the chunk) and from page-locked memory;
// the source may change once it returns.
TEST(Cuda, UploadToDeviceFromPageableAndPageLockedMemory) {
    HPCML_SKIP_WITHOUT_GPU();
    for (const std::size_t bytes :
         {std::size_t{0}, std::size_t{1} << 20, (std::size_t{33} << 20) + 5, std::size_t{48} << 20})
        for (const bool pinned : {false, true}) {
            std::vector<unsigned char> pageable(pinned ? 0 : bytes);
            unsigned char* src = pageable.data();
            if (pinned)
                ASSERT_EQ(cudaMallocHost(reinterpret_cast<void**>(&src), std::max<std::size_t>(bytes, 1)), cudaSuccess);
            for (std::size_t k = 0; k < bytes; ++k) src[k] = static_cast<unsigned char>(k * 2654435761u >> 24);
            const std::vector<unsigned char> expected(src, src + bytes);
            hpcml::detail::DeviceArray<unsigned char> device(bytes, "upload");
            hpcml::detail::upload_to_device(device.data(), src, bytes, nullptr);
            if (!pinned) std::fill(pageable.begin(), pageable.end(), 0);  // the source may change now
            ASSERT_EQ(cudaDeviceSynchronize(), cudaSuccess);
            std::vector<unsigned char> got(bytes);
            if (bytes) ASSERT_EQ(cudaMemcpy(got.data(), device.data(), bytes, cudaMemcpyDeviceToHost), cudaSuccess);
            EXPECT_TRUE(got == expected) << bytes << " bytes, " << (pinned ? "page-locked" : "pageable");
            if (pinned) cudaFreeHost(src);
        }
}

#endif

// Every call opens one NVTX range named after it, its backend and its shape, and closes it, also
// when it fails. Run by the nvtx_ranges test with tests/nvtx_injection's recorder.
TEST(Nvtx, EveryCallIsARangeNamedAfterItsShape) {
    const char* record = std::getenv("HPCML_NVTX_RECORD");
    if (!std::getenv("NVTX_INJECTION64_PATH") || !record)
        GTEST_SKIP() << "needs the injection library: the nvtx_ranges test (a build with NVTX3 headers) runs it";
    std::remove(record);
    const std::vector<float> x(4 * 10, 0.5f);
    std::vector<std::int32_t> S(10 * 10);
    hpcml::SimilarityOptions o;
    o.backend = hpcml::Backend::Cpu;
    hpcml::similarity({x.data(), 4, 10}, {}, S.data(), o);
    const double v[3] = {0.5, 1.0, 2.0}, one = 1.0;
    double out[3];
    hpcml::invgauss::InvGaussOptions g;
    g.backend = hpcml::Backend::Cpu;
    hpcml::invgauss::evaluate<double>(hpcml::invgauss::Function::Cdf, v, 3, &one, 1, &one, 1, out, g);
    o.method = hpcml::Method::Naive;
    o.threshold = -1.0f;  // refused before the range opens: no range
    EXPECT_THROW(hpcml::similarity({x.data(), 4, 10}, {}, S.data(), o), hpcml::Error);
    std::ifstream in(record);
    std::vector<std::string> lines;
    for (std::string line; std::getline(in, line);) lines.push_back(line);
    EXPECT_EQ(lines, (std::vector<std::string>{"push hpcml::similarity cpu 4x10x10", "pop",
                                               "push hpcml::evaluate cpu 3", "pop"}));
}

}  // namespace

// The CUDA host path's copy-out (host_copy_rows): every byte of every row where it belongs,
// nothing between the rows touched, whether one thread or many copy (sizes around the MiB a
// thread takes, strided and packed, one row and many).
TEST(HostCopyRows, CopiesEveryRowAndNothingElse) {
    struct Shape {
        std::size_t rows, row_bytes, src_pad, dst_pad;
    };
    std::uint32_t state = 7;
    auto next = [&] { return state = state * 1664525u + 1013904223u; };
    for (const Shape& s : {Shape{0, 10, 0, 0}, Shape{3, 0, 1, 1}, Shape{1, 1, 0, 0}, Shape{5, 13, 3, 7},
                           Shape{1, (std::size_t{5} << 20) + 3, 0, 0}, Shape{4096, 1024, 0, 0},
                           Shape{3000, 1001, 5, 64}, Shape{2, (std::size_t{3} << 20) + 1, 17, 0}}) {
        const std::size_t src_stride = s.row_bytes + s.src_pad, dst_stride = s.row_bytes + s.dst_pad;
        std::vector<unsigned char> src(s.rows * src_stride), dst(s.rows * dst_stride + 1, 0xA5);
        for (unsigned char& b : src) b = static_cast<unsigned char>(next() >> 24);
        hpcml::detail::host_copy_rows(dst.data(), dst_stride, src.data(), src_stride, s.row_bytes, s.rows);
        for (std::size_t r = 0; r < s.rows; ++r) {
            ASSERT_TRUE(std::equal(src.begin() + r * src_stride, src.begin() + r * src_stride + s.row_bytes,
                                   dst.begin() + r * dst_stride))
                << s.rows << " rows of " << s.row_bytes << ": row " << r;
            ASSERT_TRUE(std::all_of(dst.begin() + r * dst_stride + s.row_bytes, dst.begin() + (r + 1) * dst_stride,
                                    [](unsigned char b) { return b == 0xA5; }))
                << "the gap after row " << r;
        }
        EXPECT_EQ(dst.back(), 0xA5);
    }
}
