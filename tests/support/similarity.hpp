// What the similarity test files share: the reference (NumPy's broadcast in float32, one pair at
// a time, sharing no code with the library), the expected bytes of every output type, test data
// with NaN, infinities and values landing exactly on the threshold, and the fixture that runs a
// test on every backend (its CUDA instances skip, saying why, where no usable GPU exists).
#pragma once

#include <hpcml/similarity.hpp>

#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <limits>
#include <optional>
#include <random>
#include <string>
#include <vector>

#include "support/errors.hpp"
#include "support/gpu.hpp"

#if HPCML_WITH_CUDA
#include <cuda_runtime.h>

#include "common/cuda_memory.hpp"
#endif

namespace hpcml_test::similarity {

using hpcml_test::expect_invalid;

using hpcml::Backend;
using hpcml::MatrixView;
using hpcml::Method;
using hpcml::SimilarityMode;
using hpcml::SimilarityOptions;
using hpcml::SimilarityOutput;

// The reference: NumPy's (abs(x[:, :, None] - y[:, None, :]) < t).sum(0) in float32, one pair
// at a time. It shares no code with the library.
inline std::vector<std::int64_t> reference_counts(const std::vector<float>& x, const std::vector<float>& y,
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
inline std::vector<unsigned char> encode(const std::vector<std::int64_t>& counts, std::size_t n, std::size_t m,
                                         std::size_t samples, SimilarityOutput output) {
    std::vector<unsigned char> out(hpcml::similarity_output_bytes(n, m, output), 0);
    const std::size_t row_bytes = hpcml::similarity_output_bytes(1, m, output);
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
                    out[i * row_bytes + j / 8] |= static_cast<unsigned char>(all << (j % 8));
                    break;
                default:
                    ADD_FAILURE();
            }
        }
    return out;
}

// Normals, mixed with quantised values (so that differences land exactly on t), NaN and +-inf.
inline std::vector<float> make_data(std::size_t count, unsigned seed, double special_fraction = 0.05) {
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

// The exact methods and the baseline, which both backends have.
inline const std::vector<Method> kMethods = {Method::Fused, Method::Sorted, Method::Naive};

inline std::string label(Backend b, Method m, SimilarityOutput o, std::optional<std::size_t> tile) {
    return std::string(hpcml::to_string(b)) + "/" + std::string(hpcml::to_string(m)) + " output " +
           std::to_string(static_cast<int>(o)) + " tile " + (tile ? std::to_string(*tile) : "unset");
}

struct Shape {
    std::size_t samples, n, m;
};

inline void check_all_outputs(Backend backend, const Shape& shape, float threshold, bool self,
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
        for (Method method : kMethods)
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

// samples x n features that are offsets in [0, 8) plus noise in +-0.2: with threshold 2 about
// a third of the pairs pass in mode All. Feature n / 2 has a NaN (it passes with nothing,
// itself included) and feature 1 an inf.
inline std::vector<float> clustered_data(std::size_t samples, std::size_t n) {
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

#if HPCML_WITH_CUDA
using hpcml::detail::DeviceArray;  // device buffers for the device-pointer API
#endif

}  // namespace hpcml_test::similarity
