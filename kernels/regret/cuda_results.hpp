// What both regret CUDA paths (cuda_driver.cpp's batched games, cuda_large.cpp's large ones) leave
// on the device for a chunk of games, and its copy into the host solutions.
#pragma once

#include <cuda_runtime.h>

#include <cstddef>
#include <string>
#include <vector>

#include "common/cuda_check.hpp"
#include "common/cuda_memory.hpp"
#include "math.hpp"

namespace hpcml::detail::regret {

// Where a chunk's results go on the device (curve: games x records, null without records).
struct ResultPointers {
    double *rows, *cols, *value, *gap, *max_regret, *curve;
};

// "hpcml::regret batched games 0-1048575 of 3000000": a chunk's NVTX range (its upload,
// iterations and download).
inline std::string chunk_name(const char* path, std::size_t first, std::size_t games, std::size_t batch) {
    return std::string("hpcml::regret ") + path + " games " + std::to_string(first) + "-" +
           std::to_string(first + games - 1) + " of " + std::to_string(batch);
}

// What both paths leave on the device for a chunk of games, and its copy into the solutions.
struct ChunkResults {
    ChunkResults(MemoryTracker& tracker, std::size_t games, std::size_t n1, std::size_t n2, int records,
                 cudaStream_t stream)
        : rows(tracker, games * n1, stream, "regret row strategies"),
          cols(tracker, games * n2, stream, "regret column strategies"),
          scalars(tracker, games * 3, stream, "regret values, gaps, regrets"),
          curve(tracker, games * static_cast<std::size_t>(records), stream, "regret gap curves"),
          games(games),
          n1(n1),
          n2(n2),
          records(records) {
        // Each game's last curve entry is its gap, kept in `scalars`: zeroed so that the copy
        // back reads no uninitialised memory.
        if (curve.size() > 0) HPCML_CUDA_CHECK(cudaMemsetAsync(curve.data(), 0, curve.bytes(), stream));
    }
    DeviceBuffer<double> rows, cols, scalars, curve;
    std::size_t games, n1, n2;
    int records;

    double* value() { return scalars.data(); }
    double* gap() { return scalars.data() + games; }
    double* max_regret() { return scalars.data() + 2 * games; }
    ResultPointers pointers() { return {rows.data(), cols.data(), value(), gap(), max_regret(), curve.data()}; }

    // Solutions first .. first + count - 1 from the chunk's first `count` games.
    void unpack(std::vector<GameSolution>& out, std::size_t first, std::size_t count, const Schedule& sc,
                cudaStream_t stream) {
        std::vector<double> h_rows(count * n1), h_cols(count * n2), h_scalars(scalars.size()), h_curve(count * records);
        HPCML_CUDA_CHECK(cudaMemcpyAsync(h_rows.data(), rows.data(), h_rows.size() * sizeof(double),
                                         cudaMemcpyDeviceToHost, stream));
        HPCML_CUDA_CHECK(cudaMemcpyAsync(h_cols.data(), cols.data(), h_cols.size() * sizeof(double),
                                         cudaMemcpyDeviceToHost, stream));
        HPCML_CUDA_CHECK(
            cudaMemcpyAsync(h_scalars.data(), scalars.data(), scalars.bytes(), cudaMemcpyDeviceToHost, stream));
        if (records > 0)
            HPCML_CUDA_CHECK(cudaMemcpyAsync(h_curve.data(), curve.data(), h_curve.size() * sizeof(double),
                                             cudaMemcpyDeviceToHost, stream));
        HPCML_CUDA_CHECK(cudaStreamSynchronize(stream));
        for (std::size_t g = 0; g < count; ++g) {
            GameSolution& s = out[first + g];
            s.row_strategy.assign(h_rows.begin() + g * n1, h_rows.begin() + (g + 1) * n1);
            s.col_strategy.assign(h_cols.begin() + g * n2, h_cols.begin() + (g + 1) * n2);
            s.value = h_scalars[g];
            s.gap = h_scalars[games + g];
            s.eps_bound = 2.0 * h_scalars[2 * games + g] / sc.iterations;
            for (int k = 0; k < records; ++k)
                s.curve.push_back({sc.record_iteration(k), k + 1 < records ? h_curve[g * records + k] : s.gap});
        }
    }
};

}  // namespace hpcml::detail::regret
