// Similarity's GPU cases (they skip, saying why, without a usable device; a build without CUDA
// has none): the device-pointer API on a user stream, the symmetric device path, pairs reduced on
// the device, host pointers refused, outputs past 4 GiB, the naive method out of device memory.
#include "support/similarity.hpp"

#if HPCML_WITH_CUDA
#include <string>
#include <tuple>

#include "similarity/methods.hpp"
#include "support/late_upload.hpp"

using namespace hpcml_test::similarity;

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
        DeviceArray<float> dx(x.size(), "x"), dy(y.size(), "y");
        ASSERT_EQ(cudaMemcpy(dy.data(), y.data(), y.size() * sizeof(float), cudaMemcpyHostToDevice), cudaSuccess);
        const auto counts = reference_counts(x, y, shape.samples, shape.n, shape.m, 1.0f);
        for (const auto& [mode, output] : outputs)
            for (Method method : kMethods) {
                const auto expected = encode(counts, shape.n, shape.m, shape.samples, output);
                DeviceArray<unsigned char> out(expected.size(), "out");
                ASSERT_EQ(cudaMemset(out.data(), 0xAB, expected.size()), cudaSuccess);
                ASSERT_EQ(cudaDeviceSynchronize(), cudaSuccess);  // the non-blocking stream does not wait for it
                SimilarityOptions o;
                o.mode = mode;
                o.output = output;
                o.method = method;
                o.backend = Backend::Cuda;
                o.stream = stream;
                {
                    const hpcml_test::LateUpload late(stream, dx.data(), x.data(), x.size() * sizeof(float));
                    hpcml::similarity_device({dx.data(), shape.samples, shape.n},
                                             self ? MatrixView{} : MatrixView{dy.data(), shape.samples, shape.m},
                                             out.data(), o);
                }
                std::vector<unsigned char> got(expected.size());
                ASSERT_EQ(cudaMemcpy(got.data(), out.data(), got.size(), cudaMemcpyDeviceToHost), cudaSuccess);
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
// data with NaN and inf; every byte written (the output starts as 0xAB). The fused and the sorted
// kernels (the sorted one's blocks below the diagonal skipped where a band has more than one
// block row: the tile unset).
TEST(SimilarityCuda, SymmetricDevicePathEqualsTheReference) {
    HPCML_SKIP_WITHOUT_GPU();
    for (const std::size_t n : {std::size_t{131}, std::size_t{257}, std::size_t{301}})
        for (const bool clustered : {true, false}) {
            const std::size_t samples = clustered ? 20 : 40;
            const float threshold = clustered ? 2.0f : 1.0f;
            const auto x = clustered ? clustered_data(samples, n) : make_data(samples * n, static_cast<unsigned>(n));
            DeviceArray<float> dx(x.size(), "x");
            ASSERT_EQ(cudaMemcpy(dx.data(), x.data(), x.size() * sizeof(float), cudaMemcpyHostToDevice), cudaSuccess);
            const auto counts = reference_counts(x, x, samples, n, n, threshold);
            for (const auto& [mode, output] : {std::pair{SimilarityMode::Count, SimilarityOutput::Int32},
                                               std::pair{SimilarityMode::Count, SimilarityOutput::UInt16},
                                               std::pair{SimilarityMode::Count, SimilarityOutput::UInt8},
                                               std::pair{SimilarityMode::All, SimilarityOutput::Bool},
                                               std::pair{SimilarityMode::All, SimilarityOutput::Bitmask}}) {
                const auto expected = encode(counts, n, n, samples, output);
                for (const Method method : {Method::Fused, Method::Sorted})
                    for (const std::optional<std::size_t> tile :
                         {std::optional<std::size_t>{}, std::optional<std::size_t>{1}, std::optional<std::size_t>{100},
                          std::optional<std::size_t>{200}}) {
                        DeviceArray<unsigned char> out(expected.size(), "out");
                        ASSERT_EQ(cudaMemset(out.data(), 0xAB, expected.size()), cudaSuccess);
                        SimilarityOptions o;
                        o.mode = mode;
                        o.output = output;
                        o.threshold = threshold;
                        o.tile = tile;
                        o.backend = Backend::Cuda;
                        o.method = method;
                        hpcml::similarity_device({dx.data(), samples, n}, {}, out.data(), o);
                        std::vector<unsigned char> got(expected.size());
                        ASSERT_EQ(cudaMemcpy(got.data(), out.data(), got.size(), cudaMemcpyDeviceToHost), cudaSuccess);
                        ASSERT_EQ(got, expected) << label(Backend::Cuda, method, output, tile) << " n " << n
                                                 << (clustered ? " clustered" : " special values");
                    }
            }
        }
}

// similarity_pairs_on_device into device arrays its allocator makes (called once, with the
// number of pairs), brought back as a host list.
hpcml::SimilarityPairs pairs_left_on_device(MatrixView x, MatrixView y, const SimilarityOptions& o,
                                            std::size_t min_count) {
    DeviceArray<std::int64_t> i, j;
    DeviceArray<std::int32_t> count;
    int calls = 0;
    const hpcml::RunStats stats = hpcml::similarity_pairs_on_device(
        x, y,
        [&](std::size_t pairs) {
            ++calls;
            i = DeviceArray<std::int64_t>(pairs, "i");
            j = DeviceArray<std::int64_t>(pairs, "j");
            count = DeviceArray<std::int32_t>(o.mode == SimilarityMode::Count ? pairs : 0, "count");
            return hpcml::SimilarityDevicePairs{i.data(), j.data(), count.size() ? count.data() : nullptr};
        },
        o, min_count);
    EXPECT_EQ(calls, 1);
    EXPECT_EQ(stats.backend, Backend::Cuda);
    std::vector<std::int64_t> hi(i.size()), hj(j.size());
    hpcml::SimilarityPairs pairs;
    pairs.count.resize(count.size());
    i.download(hi.data());
    j.download(hj.data());
    count.download(pairs.count.data());
    pairs.i.assign(hi.begin(), hi.end());
    pairs.j.assign(hj.begin(), hj.end());
    return pairs;
}

// The pairs left on the device equal similarity_pairs_device's host list of the same call;
// returns the list's length.
std::size_t expect_left_on_device_as_on_host(MatrixView x, MatrixView y, const SimilarityOptions& o,
                                             std::size_t min_count, const std::string& what) {
    const hpcml::SimilarityPairs host = hpcml::similarity_pairs_device(x, y, o, min_count);
    const hpcml::SimilarityPairs left = pairs_left_on_device(x, y, o, min_count);
    EXPECT_EQ(left.i, host.i) << what;
    EXPECT_EQ(left.j, host.j) << what;
    EXPECT_EQ(left.count, host.count) << what;
    return host.i.size();
}

// Pair lists reduced on the device (select_passing over launches of several tiles, whose pairs
// arrive out of row-major order and are sorted) against the CPU's, which the test above checks
// against the reference: y = x and not, mode All where a third of the pairs pass, mode Count
// at several min_count (one above every count: nothing, allocate(0)), tiles that do not divide
// n; from host arrays, device arrays, and left on the device (similarity_pairs_on_device); auto
// (the fused kernel) and the sorted one (its operands sorted once per call, in runs that tiles of
// 100 and 300 do not share).
TEST(SimilarityCuda, PairsReducedOnTheDeviceEqualTheCpus) {
    HPCML_SKIP_WITHOUT_GPU();
    const std::size_t samples = 24, n = 700, m = 515;
    const auto x = clustered_data(samples, n);
    const auto y = clustered_data(samples, m);
    for (const Method method : {Method::Auto, Method::Sorted})
        for (const bool self : {true, false})
            for (const std::optional<std::size_t> tile :
                 {std::optional<std::size_t>{}, std::optional<std::size_t>{100}, std::optional<std::size_t>{300}})
                for (const auto& [mode, min_count] :
                     {std::pair{SimilarityMode::All, std::size_t{1}}, std::pair{SimilarityMode::Count, std::size_t{1}},
                      std::pair{SimilarityMode::Count, std::size_t{20}},
                      std::pair{SimilarityMode::Count, samples + 1}}) {
                    SimilarityOptions o;
                    o.mode = mode;
                    o.threshold = 2.0f;
                    o.tile = tile;
                    o.backend = Backend::Cpu;
                    o.method = method;
                    const MatrixView xv{x.data(), samples, n};
                    const MatrixView yv = self ? MatrixView{} : MatrixView{y.data(), samples, m};
                    const hpcml::SimilarityPairs cpu = hpcml::similarity_pairs(xv, yv, o, min_count);
                    o.backend = Backend::Cuda;
                    const hpcml::SimilarityPairs gpu = hpcml::similarity_pairs(xv, yv, o, min_count);
                    const std::string what = std::string(hpcml::to_string(method)) + (self ? " y = x" : " y") +
                                             " tile " + (tile ? std::to_string(*tile) : "unset") + " mode " +
                                             std::string(hpcml::to_string(mode)) + " min_count " +
                                             std::to_string(min_count);
                    EXPECT_EQ(gpu.stats.backend, Backend::Cuda);
                    if (min_count <= samples) EXPECT_GT(cpu.i.size(), n) << what;
                    // The same from device pointers.
                    DeviceArray<float> dx(x.size(), "x"), dy(y.size(), "y");
                    ASSERT_EQ(cudaMemcpy(dx.data(), x.data(), x.size() * sizeof(float), cudaMemcpyHostToDevice),
                              cudaSuccess);
                    ASSERT_EQ(cudaMemcpy(dy.data(), y.data(), y.size() * sizeof(float), cudaMemcpyHostToDevice),
                              cudaSuccess);
                    const hpcml::SimilarityPairs device = hpcml::similarity_pairs_device(
                        {dx.data(), samples, n}, self ? MatrixView{} : MatrixView{dy.data(), samples, m}, o, min_count);
                    EXPECT_EQ(device.i, cpu.i) << "device pointers, " << what;
                    EXPECT_EQ(device.j, cpu.j) << "device pointers, " << what;
                    EXPECT_EQ(device.count, cpu.count) << "device pointers, " << what;
                    // The same left on the device (launches of whole rows: in order as they come).
                    const hpcml::SimilarityPairs left = pairs_left_on_device(
                        {dx.data(), samples, n}, self ? MatrixView{} : MatrixView{dy.data(), samples, m}, o, min_count);
                    EXPECT_EQ(left.i, cpu.i) << "left on the device, " << what;
                    EXPECT_EQ(left.j, cpu.j) << "left on the device, " << what;
                    EXPECT_EQ(left.count, cpu.count) << "left on the device, " << what;
                    EXPECT_EQ(gpu.i, cpu.i) << what;
                    EXPECT_EQ(gpu.j, cpu.j) << what;
                    EXPECT_EQ(gpu.count, cpu.count) << what;
                }
    // 60000 columns of 100-column tiles: a row band takes several launches, so regions start
    // past column 0 and their pairs arrive out of row-major order; the sorted and naive methods too.
    const std::size_t wide = 60000, rows = 150;
    const auto a = clustered_data(16, rows);
    const auto b = clustered_data(16, wide);
    for (const Method method : {Method::Fused, Method::Sorted, Method::Naive})
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

// Pairs left on the device, small enough for every sanitizer: equal to the host list (y = x in
// mode Count, a separate y in mode All); a null or host allocation refused naming allocate, a
// call under CUDA graph capture naming the stream, and the device usable after.
TEST(SimilarityCuda, PairsLeftOnTheDeviceAndTheirRefusals) {
    HPCML_SKIP_WITHOUT_GPU();
    const std::size_t samples = 16, n = 300, m = 200;
    const auto x = clustered_data(samples, n);
    const auto y = clustered_data(samples, m);
    DeviceArray<float> dx(x.data(), x.size(), "x"), dy(y.data(), y.size(), "y");
    const MatrixView xv{dx.data(), samples, n};
    for (const bool self : {true, false}) {
        SimilarityOptions o;
        o.mode = self ? SimilarityMode::Count : SimilarityMode::All;
        o.threshold = 2.0f;
        o.tile = 128;
        o.backend = Backend::Cuda;
        const MatrixView yv = self ? MatrixView{} : MatrixView{dy.data(), samples, m};
        const std::size_t min_count = self ? 4 : 1;
        EXPECT_GT(expect_left_on_device_as_on_host(xv, yv, o, min_count, self ? "y = x" : "y"), self ? n : 0u);
    }
    SimilarityOptions o;
    o.threshold = 2.0f;
    o.backend = Backend::Cuda;
    expect_invalid(
        [&] {
            hpcml::similarity_pairs_on_device(
                xv, {}, [](std::size_t) { return hpcml::SimilarityDevicePairs{}; }, o);
        },
        "allocate:");
    std::vector<std::int64_t> host_i(n * n), host_j(n * n);
    expect_invalid(
        [&] {
            hpcml::similarity_pairs_on_device(
                xv, {},
                [&](std::size_t) {
                    return hpcml::SimilarityDevicePairs{host_i.data(), host_j.data(), nullptr};
                },
                o);
        },
        "allocate's i:");
    // Under CUDA graph capture: refused naming the stream, and the capture goes on.
    cudaStream_t stream = nullptr;
    ASSERT_EQ(cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking), cudaSuccess);
    o.stream = stream;
    ASSERT_EQ(cudaStreamBeginCapture(stream, cudaStreamCaptureModeThreadLocal), cudaSuccess);
    expect_invalid(
        [&] {
            hpcml::similarity_pairs_on_device(
                xv, {}, [](std::size_t) { return hpcml::SimilarityDevicePairs{}; }, o);
        },
        "stream:");
    cudaGraph_t graph = nullptr;
    EXPECT_EQ(cudaStreamEndCapture(stream, &graph), cudaSuccess);
    if (graph) cudaGraphDestroy(graph);
    cudaStreamDestroy(stream);
    EXPECT_EQ(cudaDeviceSynchronize(), cudaSuccess);  // the device still works
}

// Rows wider than one launch (150 x 250000: 2^25 elements would not fit one launch of whole
// rows): the pairs arrive out of row-major order and are sorted on the device by key, counts
// with them. Against the host list. (Left out under the sanitizers: heavy.)
TEST(SimilarityCuda, PairsLeftOnTheDeviceSortedAcrossLaunches) {
    HPCML_SKIP_WITHOUT_GPU();
    const std::size_t samples = 16, rows = 150, wide = 250000;
    const auto a = clustered_data(samples, rows);
    const auto b = clustered_data(samples, wide);
    DeviceArray<float> da(a.data(), a.size(), "a"), db(b.data(), b.size(), "b");
    for (const SimilarityMode mode : {SimilarityMode::All, SimilarityMode::Count}) {
        SimilarityOptions o;
        o.mode = mode;
        o.threshold = 2.0f;
        o.tile = 1000;
        o.backend = Backend::Cuda;
        const std::size_t min_count = mode == SimilarityMode::Count ? 8 : 1;
        const MatrixView av{da.data(), samples, rows}, bv{db.data(), samples, wide};
        EXPECT_GT(expect_left_on_device_as_on_host(av, bv, o, min_count, std::string(hpcml::to_string(mode))), wide);
    }
}

TEST(SimilarityCuda, HostInputsToTheDeviceApiAreRefused) {
    // A host input would fault in a kernel and leave the context unusable: it must raise
    // InvalidArgument naming the argument, and the device must work afterwards. (A host output
    // is taken: SimilarityCuda.DeviceInputsIntoAHostOutput.)
    HPCML_SKIP_WITHOUT_GPU();
    const std::vector<float> x(8 * 16, 0.5f);
    DeviceArray<float> dx(x.size(), "x");
    DeviceArray<std::int32_t> out(16 * 16, "out");
    ASSERT_EQ(cudaMemcpy(dx.data(), x.data(), x.size() * sizeof(float), cudaMemcpyHostToDevice), cudaSuccess);
    std::vector<std::int32_t> host_out(16 * 16);
    SimilarityOptions o;
    o.backend = Backend::Cuda;
    expect_invalid([&] { hpcml::similarity_device({x.data(), 8, 16}, {}, out.data(), o); }, "x:");
    expect_invalid([&] { hpcml::similarity_device({dx.data(), 8, 16}, {x.data(), 8, 16}, out.data(), o); }, "y:");
    hpcml::similarity_device({dx.data(), 8, 16}, {}, out.data(), o);
    ASSERT_EQ(cudaMemcpy(host_out.data(), out.data(), host_out.size() * sizeof(std::int32_t), cudaMemcpyDeviceToHost),
              cudaSuccess);
    for (std::int32_t c : host_out) EXPECT_EQ(c, 8);
    expect_invalid([&] { hpcml::similarity_pairs_device({x.data(), 8, 16}, {}, o); }, "x:");
    const hpcml::SimilarityPairs pairs = hpcml::similarity_pairs_device({dx.data(), 8, 16}, {}, o);
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
    DeviceArray<float> dx(x.size(), "x");
    DeviceArray<std::int32_t> dout(n * n, "out");
    ASSERT_EQ(cudaMemcpy(dx.data(), x.data(), x.size() * sizeof(float), cudaMemcpyHostToDevice), cudaSuccess);
    hpcml::similarity_device({dx.data(), samples, n}, {}, dout.data(), o);
    std::vector<std::int32_t> row(n);
    for (std::size_t i : {std::size_t{0}, n / 3, n / 2 + 1, n - 2, n - 1}) {
        ASSERT_EQ(cudaMemcpy(row.data(), dout.data() + i * n, n * sizeof(std::int32_t), cudaMemcpyDeviceToHost),
                  cudaSuccess);
        ASSERT_TRUE(std::equal(row.begin(), row.end(), out.begin() + static_cast<std::ptrdiff_t>(i * n)))
            << "device path, row " << i;
    }
}

TEST(SimilarityCuda, NaiveOutOfDeviceMemoryIsAnError) {
    HPCML_SKIP_WITHOUT_GPU();
    // 1000 samples x 20000 x 20000 in one tile: the naive broadcast needs 1.6 TB of device
    // memory (with the default tile it needs a tile's 4 GB at a time, which a large GPU has).
    const std::size_t samples = 1000, n = 20000;
    std::vector<float> x(samples * n, 0.0f);
    std::unique_ptr<std::int32_t[]> out(new std::int32_t[n * n]);
    SimilarityOptions o;
    o.backend = Backend::Cuda;
    o.method = Method::Naive;
    o.tile = n;
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

// Host output three ways: pageable (staged through pinned slots, copied out by threads),
// page-locked by cudaMallocHost and by cudaHostRegister (copied into straight from the device:
// no staging, so no host memory of hpcml's), and registered in part only (staged). Int32 and
// Bitmask, y = x and a separate y, a tile that does not divide the shape; fused (whole rows per
// launch; with y = x, bands of 384 rows from their diagonal on, mirrored on the device), sorted
// (the same, its 256 x 256 blocks from each band's diagonal) and naive (a tile per launch: regions
// from columns 384 and 768, narrower than the output); the bytes past the output untouched;
// progress counts every element.
TEST(SimilarityCuda, HostOutputPageableOrPageLockedEqualsTheReference) {
    HPCML_SKIP_WITHOUT_GPU();
    const Shape shape{40, 1100, 900};
    const auto x = make_data(shape.samples * shape.n, 21);
    const auto y = make_data(shape.samples * shape.m, 22);
    enum class Memory { Pageable, Allocated, Registered, RegisteredInPart };
    for (const Method method : {Method::Fused, Method::Sorted, Method::Naive})
        for (const bool self : {true, false})
            for (const SimilarityOutput output : {SimilarityOutput::Int32, SimilarityOutput::Bitmask})
                for (const Memory memory :
                     {Memory::Pageable, Memory::Allocated, Memory::Registered, Memory::RegisteredInPart}) {
                    const std::size_t m = self ? shape.n : shape.m;
                    const auto counts = reference_counts(x, self ? x : y, shape.samples, shape.n, m, 1.0f);
                    const auto expected = encode(counts, shape.n, m, shape.samples, output);
                    std::vector<unsigned char> pageable;
                    unsigned char* out = nullptr;
                    const std::size_t bytes = expected.size() + 64;  // 64 guard bytes past the output
                    if (memory == Memory::Allocated) {
                        ASSERT_EQ(cudaMallocHost(reinterpret_cast<void**>(&out), bytes), cudaSuccess);
                    } else {
                        pageable.resize(bytes);
                        out = pageable.data();
                        if (memory != Memory::Pageable)
                            ASSERT_EQ(cudaHostRegister(out, memory == Memory::Registered ? bytes : bytes / 2,
                                                       cudaHostRegisterDefault),
                                      cudaSuccess);
                    }
                    std::memset(out, 0xAB, bytes);
                    SimilarityOptions o;
                    o.mode = output == SimilarityOutput::Bitmask ? SimilarityMode::All : SimilarityMode::Count;
                    o.output = output;
                    o.backend = Backend::Cuda;
                    o.method = method;
                    o.tile = 384;
                    std::uint64_t done = 0, total = 0;
                    o.progress = [&](std::uint64_t d, std::uint64_t t) { done = d, total = t; };
                    const hpcml::RunStats stats =
                        hpcml::similarity({x.data(), shape.samples, shape.n},
                                          self ? MatrixView{} : MatrixView{y.data(), shape.samples, shape.m}, out, o);
                    const std::vector<unsigned char> got(out, out + expected.size());
                    const std::string where = std::string(hpcml::to_string(method)) + (self ? ", y = x, " : ", y, ") +
                                              std::string(hpcml::to_string(output)) + ", memory kind " +
                                              std::to_string(static_cast<int>(memory));
                    const bool page_locked = memory == Memory::Allocated || memory == Memory::Registered;
                    EXPECT_EQ(stats.memory.peak_host_bytes == 0, page_locked) << where << " (staged or not)";
                    if (self && method != Method::Naive)  // the mirrored path: the whole output on the device
                        EXPECT_GE(stats.memory.peak_device_bytes, expected.size()) << where;
                    EXPECT_EQ(got, expected) << where;
                    EXPECT_TRUE(std::all_of(out + expected.size(), out + bytes, [](unsigned char b) {
                        return b == 0xAB;
                    })) << where;
                    EXPECT_EQ(done, total) << where;
                    EXPECT_EQ(total, std::uint64_t{shape.n} * m) << where;
                    if (memory == Memory::Allocated) cudaFreeHost(out);
                    if (memory == Memory::Registered || memory == Memory::RegisteredInPart) cudaHostUnregister(out);
                }
}

// The sorted kernel's operands sorted once per call (runs that tiles of 300 cannot share: one per
// band and per group of columns) or by each launch (as where memory is short, or into a captured
// graph), alike: a band of 300 rows over 40000 columns (two groups of tiles per launch), y = x
// over 2000 (the mirrored bands of 512 rows, y from each band's diagonal on); from host arrays
// into host memory and from device arrays into device memory.
TEST(SimilaritySortedCuda, SortedOncePerCallOrPerLaunchAlike) {
    HPCML_SKIP_WITHOUT_GPU();
    const std::size_t samples = 16;
    for (const auto& [n, m, self] :
         {std::tuple<std::size_t, std::size_t, bool>{300, 40000, false}, {2000, 2000, true}}) {
        const auto x = make_data(samples * n, 31);
        const auto y = self ? x : make_data(samples * m, 32);
        const auto expected =
            encode(reference_counts(x, y, samples, n, m, 1.0f), n, m, samples, SimilarityOutput::Int32);
        DeviceArray<float> dx(x.size(), "x"), dy(y.size(), "y");
        ASSERT_EQ(cudaMemcpy(dx.data(), x.data(), x.size() * sizeof(float), cudaMemcpyHostToDevice), cudaSuccess);
        ASSERT_EQ(cudaMemcpy(dy.data(), y.data(), y.size() * sizeof(float), cudaMemcpyHostToDevice), cudaSuccess);
        DeviceArray<unsigned char> device_out(expected.size(), "out");
        for (const bool per_launch : {false, true}) {
            hpcml::detail::similarity::set_sort_per_launch_for_tests(per_launch);
            SimilarityOptions o;
            o.backend = Backend::Cuda;
            o.method = Method::Sorted;
            o.tile = 300;
            const std::string what = std::to_string(n) + " x " + std::to_string(m) + (self ? ", y = x" : ", y") +
                                     (per_launch ? ", sorted by each launch" : ", sorted once");
            std::vector<unsigned char> host(expected.size(), 0xAB);
            EXPECT_EQ(hpcml::similarity({x.data(), samples, n}, self ? MatrixView{} : MatrixView{y.data(), samples, m},
                                        host.data(), o)
                          .method,
                      Method::Sorted);
            EXPECT_EQ(host, expected) << "host arrays, " << what;
            ASSERT_EQ(cudaMemset(device_out.data(), 0xAB, expected.size()), cudaSuccess);
            hpcml::similarity_device({dx.data(), samples, n}, self ? MatrixView{} : MatrixView{dy.data(), samples, m},
                                     device_out.data(), o);
            std::vector<unsigned char> got(expected.size());
            ASSERT_EQ(cudaMemcpy(got.data(), device_out.data(), got.size(), cudaMemcpyDeviceToHost), cudaSuccess);
            EXPECT_EQ(got, expected) << "device arrays, " << what;
        }
        hpcml::detail::similarity::set_sort_per_launch_for_tests(false);
    }
}

// similarity_device into host memory: pageable (staged, copied out by threads) and page-locked
// (copied into from the device), after inputs written late on the caller's stream (a call that
// did not follow it would count NaN); y = x and a separate y, counts and bitmask, fused, sorted
// and naive (regions narrower than the output). Under CUDA
// graph capture a host output is refused naming out, and the stream still captures.
TEST(SimilarityCuda, DeviceInputsIntoAHostOutput) {
    HPCML_SKIP_WITHOUT_GPU();
    cudaStream_t stream = nullptr;
    ASSERT_EQ(cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking), cudaSuccess);
    const Shape shape{24, 700, 530};
    const auto x = make_data(shape.samples * shape.n, 31);
    const auto y = make_data(shape.samples * shape.m, 32);
    DeviceArray<float> dx(x.size(), "x"), dy(y.size(), "y");
    ASSERT_EQ(cudaMemcpy(dy.data(), y.data(), y.size() * sizeof(float), cudaMemcpyHostToDevice), cudaSuccess);
    for (const Method method : {Method::Fused, Method::Sorted, Method::Naive})
        for (const bool self : {true, false})
            for (const SimilarityOutput output : {SimilarityOutput::Int32, SimilarityOutput::Bitmask})
                for (const bool pinned : {false, true}) {
                    const std::size_t m = self ? shape.n : shape.m;
                    const auto expected = encode(reference_counts(x, self ? x : y, shape.samples, shape.n, m, 1.0f),
                                                 shape.n, m, shape.samples, output);
                    std::vector<unsigned char> pageable(pinned ? 0 : expected.size());
                    unsigned char* out = pageable.data();
                    if (pinned) ASSERT_EQ(cudaMallocHost(reinterpret_cast<void**>(&out), expected.size()), cudaSuccess);
                    std::memset(out, 0xAB, expected.size());
                    SimilarityOptions o;
                    o.mode = output == SimilarityOutput::Bitmask ? SimilarityMode::All : SimilarityMode::Count;
                    o.output = output;
                    o.backend = Backend::Cuda;
                    o.stream = stream;
                    o.method = method;
                    o.tile = 256;
                    {
                        const hpcml_test::LateUpload late(stream, dx.data(), x.data(), x.size() * sizeof(float));
                        hpcml::similarity_device({dx.data(), shape.samples, shape.n},
                                                 self ? MatrixView{} : MatrixView{dy.data(), shape.samples, shape.m},
                                                 out, o);
                    }
                    EXPECT_EQ(std::vector<unsigned char>(out, out + expected.size()), expected)
                        << std::string(hpcml::to_string(method)) << (self ? ", y = x, " : ", y, ")
                        << std::string(hpcml::to_string(output)) << (pinned ? ", page-locked" : ", pageable");
                    if (pinned) cudaFreeHost(out);
                }
    std::vector<std::int32_t> host_out(shape.n * shape.n);
    SimilarityOptions o;
    o.backend = Backend::Cuda;
    o.stream = stream;
    ASSERT_EQ(cudaStreamBeginCapture(stream, cudaStreamCaptureModeThreadLocal), cudaSuccess);
    expect_invalid(
        [&] {
            hpcml::similarity_device({dx.data(), shape.samples, shape.n}, {}, host_out.data(), o);
        },
        "out: host memory cannot take a result while the stream is being captured");
    cudaGraph_t graph = nullptr;
    EXPECT_EQ(cudaStreamEndCapture(stream, &graph), cudaSuccess);
    if (graph) cudaGraphDestroy(graph);
    cudaStreamDestroy(stream);
}

#endif
