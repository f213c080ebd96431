// libFuzzer target: the similarity's sorted method against its fused one on arbitrary data. The
// input's first bytes choose the shape (up to 40 samples and 700 x 700 features: more than one of
// the sorted method's 512-wide tiles), the mode, y = x or a copy, a tile, the output type, the
// sorted method's layout (its strip lowered to 512 or 1024 features, so that 700 crosses it, or
// items of 4 bands forced, so that 700 rows stack two) and the threshold (its bits); the rest are the float32 values
// (their bits, NaN and infinities included), repeated in a scrambled order so that ties are
// common. Any byte of difference aborts.
#include <hpcml/similarity.hpp>

#include <cmath>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <vector>

#include "similarity/cpu_sorted.hpp"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
    if (size < 10) return 0;
    const std::size_t samples = 1 + data[0] % 40;
    const std::size_t n = 1 + (data[1] | data[2] << 8) % 700, m = 1 + (data[3] | data[4] << 8) % 700;
    const bool all = data[5] & 1, self = data[5] & 2;
    float threshold;
    std::memcpy(&threshold, data + 6, sizeof threshold);
    threshold = std::fabs(threshold);
    if (!std::isfinite(threshold)) threshold = 1.0f;
    const std::size_t pool = (size - 10) / sizeof(float);
    auto values = [&](std::size_t count, std::size_t salt) {
        std::vector<float> v(count, 0.0f);
        for (std::size_t k = 0; pool && k < count; ++k)
            std::memcpy(&v[k], data + 10 + ((k + salt) * 2654435761u % pool) * sizeof(float), sizeof(float));
        return v;
    };
    const std::vector<float> x = values(samples * n, 0), y = self ? x : values(samples * m, 7);
    hpcml::SimilarityOptions o;
    o.backend = hpcml::Backend::Cpu;
    o.threshold = threshold;
    o.mode = all ? hpcml::SimilarityMode::All : hpcml::SimilarityMode::Count;
    const unsigned kind = data[5] >> 6;  // the mode's output types, every one reached
    o.output = all         ? (kind & 1 ? hpcml::SimilarityOutput::Bool : hpcml::SimilarityOutput::Bitmask)
               : kind == 1 ? hpcml::SimilarityOutput::UInt16
               : kind == 2 ? hpcml::SimilarityOutput::UInt8
                           : hpcml::SimilarityOutput::Int32;
    using hpcml::detail::similarity::sorted::SortedLayout;
    const SortedLayout layouts[] = {{0, 0}, {512, 1}, {0, 4}, {1024, 2}};
    const std::size_t tiles[] = {0, 1, 100, 520};
    if (const std::size_t tile = tiles[data[5] >> 2 & 3]) o.tile = tile;
    const std::size_t cols = self ? n : m;
    std::vector<unsigned char> fused(hpcml::similarity_output_bytes(n, cols, o.output), 0xAB), sorted(fused.size(), 0xCD);
    const hpcml::MatrixView xv{x.data(), samples, n};
    const hpcml::MatrixView yv = self ? hpcml::MatrixView{} : hpcml::MatrixView{y.data(), samples, m};
    o.method = hpcml::Method::Fused;
    hpcml::similarity(xv, yv, fused.data(), o);
    o.method = hpcml::Method::Sorted;
    hpcml::detail::similarity::sorted::set_layout_for_tests(layouts[data[5] >> 4 & 3]);
    hpcml::similarity(xv, yv, sorted.data(), o);
    hpcml::detail::similarity::sorted::set_layout_for_tests({0, 0});
    if (fused != sorted) std::abort();
    return 0;
}
