// The regret-matching CUDA backend's host side: the batched kernel for small games, and for a
// large game the iteration captured once in a CUDA graph and replayed, with the exact gap
// evaluated on the device at record points and at the end.
#include <algorithm>
#include <cstring>
#include <vector>

#include "common/cuda_check.hpp"
#include "common/cuda_memory.hpp"
#include "common/cuda_stream.hpp"
#include "cuda.hpp"

namespace hpcml::detail::regret {

namespace {

int records_of(const RegretOptions& o) { return o.record_every > 0 ? (o.iterations - 1) / o.record_every + 1 : 0; }

std::vector<GameSolution> solve_batched(const float* A, std::size_t batch, std::size_t n1, std::size_t n2,
                                        const RegretOptions& o, cudaStream_t stream, MemoryTracker& tracker) {
    const int records = records_of(o);
    DeviceBuffer<float> payoffs(tracker, batch * n1 * n2, stream, "regret payoffs on device");
    DeviceBuffer<double> rows(tracker, batch * n1, stream, "regret row strategies");
    DeviceBuffer<double> cols(tracker, batch * n2, stream, "regret column strategies");
    DeviceBuffer<double> scalars(tracker, batch * 3, stream, "regret values, gaps, regrets");
    DeviceBuffer<double> curve(tracker, batch * static_cast<std::size_t>(records), stream, "regret gap curves");
    HPCML_CUDA_CHECK(cudaMemcpyAsync(payoffs.data(), A, payoffs.bytes(), cudaMemcpyHostToDevice, stream));
    BatchedArgs args{payoffs.data(), static_cast<int>(batch), static_cast<int>(n1), static_cast<int>(n2),
                     o.variant, o.alternating, o.sampled, o.averaging, o.iterations, o.record_every, records,
                     o.rng_seed, rows.data(), cols.data(), scalars.data(), scalars.data() + batch,
                     scalars.data() + 2 * batch, curve.data()};
    launch_batched(args, stream);
    std::vector<double> h_rows(batch * n1), h_cols(batch * n2), h_scalars(batch * 3), h_curve(curve.size());
    HPCML_CUDA_CHECK(cudaMemcpyAsync(h_rows.data(), rows.data(), rows.bytes(), cudaMemcpyDeviceToHost, stream));
    HPCML_CUDA_CHECK(cudaMemcpyAsync(h_cols.data(), cols.data(), cols.bytes(), cudaMemcpyDeviceToHost, stream));
    HPCML_CUDA_CHECK(cudaMemcpyAsync(h_scalars.data(), scalars.data(), scalars.bytes(), cudaMemcpyDeviceToHost, stream));
    if (records) HPCML_CUDA_CHECK(cudaMemcpyAsync(h_curve.data(), curve.data(), curve.bytes(), cudaMemcpyDeviceToHost, stream));
    HPCML_CUDA_CHECK(cudaStreamSynchronize(stream));

    std::vector<GameSolution> out(batch);
    for (std::size_t b = 0; b < batch; ++b) {
        GameSolution& s = out[b];
        s.row_strategy.assign(h_rows.begin() + b * n1, h_rows.begin() + (b + 1) * n1);
        s.col_strategy.assign(h_cols.begin() + b * n2, h_cols.begin() + (b + 1) * n2);
        s.value = h_scalars[b];
        s.gap = h_scalars[batch + b];
        s.eps_bound = 2.0 * h_scalars[2 * batch + b] / o.iterations;
        for (int r = 0; r < records; ++r) {
            const int iteration = r + 1 < records ? (r + 1) * o.record_every : o.iterations;
            s.curve.push_back({iteration, h_curve[b * records + r]});
        }
    }
    return out;
}

struct LargeState {
    LargeState(MemoryTracker& tracker, std::size_t n1, std::size_t n2, cudaStream_t stream)
        : p1(tracker, 6 * n1, stream, "regret player 1 state"),
          p2(tracker, 6 * n2, stream, "regret player 2 state"),
          u1_partial(tracker, static_cast<std::size_t>(dual_gemv_row_partials(static_cast<int>(n2))) * n1, stream,
                     "regret row partials"),
          u2_partial(tracker, static_cast<std::size_t>(dual_gemv_row_blocks(static_cast<int>(n1), static_cast<int>(n2))) * n2,
                     stream, "regret column partials"),
          averages(tracker, n1 + n2, stream, "regret averages"),
          evaluation(tracker, n1 + n2 + 2, stream, "regret evaluation"),
          counters(tracker, 3, stream, "regret iteration and sampled actions") {}
    DeviceBuffer<double> p1, p2, u1_partial, u2_partial, averages, evaluation;
    DeviceBuffer<int> counters;  // t, then the sampled row and column actions

    PlayerDevice player(int which, int n) {
        double* base = which == 0 ? p1.data() : p2.data();
        return {base, base + n, base + 2 * n, base + 3 * n, base + 4 * n, base + 5 * n, n};
    }
};

// Enqueues one iteration of the large-game path on `stream` (captured into a graph by the caller).
void enqueue_iteration(const float* A, int n1, int n2, std::size_t game, const RegretOptions& o, LargeState& st,
                       cudaStream_t stream) {
    const PlayerDevice p1 = st.player(0, n1), p2 = st.player(1, n2);
    int* t = st.counters.data();
    int* row_action = t + 1;
    int* col_action = t + 2;
    const bool simultaneous = o.variant == RegretVariant::Seed || !o.alternating;
    auto update = [&](const PlayerDevice& a, const PlayerDevice* b) {
        UpdateArgs args{{a, b ? *b : a}, b ? 2 : 1, o.variant, o.averaging, t};
        launch_update(args, stream);
    };
    auto sample = [&](const PlayerDevice& p, int player, int* action) {
        SampleArgs args{{p.s, p.s}, {p.n, p.n}, {player, player}, 1, o.rng_seed, game, t, action};
        launch_sample(args, stream);
    };
    if (simultaneous) {
        if (o.sampled) {
            SampleArgs args{{p1.s, p2.s}, {n1, n2}, {0, 1}, 2, o.rng_seed, game, t, row_action};
            launch_sample(args, stream);
            launch_gather_row_utilities(A, n1, n2, col_action, p1.u, stream);
            launch_gather_column_utilities(A, n1, n2, row_action, p2.u, stream);
        } else {
            launch_dual_gemv(A, n1, n2, p1.s, p2.s, p1.u, p2.u, st.u1_partial.data(), st.u2_partial.data(), stream);
        }
        update(p1, &p2);
    } else {
        if (o.sampled) {
            sample(p2, 1, col_action);
            launch_gather_row_utilities(A, n1, n2, col_action, p1.u, stream);
        } else {
            launch_dual_gemv(A, n1, n2, nullptr, p2.s, p1.u, nullptr, st.u1_partial.data(), nullptr, stream);
        }
        update(p1, nullptr);
        if (o.sampled) {
            sample(p1, 0, row_action);
            launch_gather_column_utilities(A, n1, n2, row_action, p2.u, stream);
        } else {
            launch_dual_gemv(A, n1, n2, p1.s, nullptr, nullptr, p2.u, nullptr, st.u2_partial.data(), stream);
        }
        update(p2, nullptr);
    }
    launch_advance(t, stream);
}

class Graph {
public:
    // Captures `iterations` iterations.
    Graph(const float* A, int n1, int n2, std::size_t game, const RegretOptions& o, LargeState& st, cudaStream_t stream,
          int iterations) {
        HPCML_CUDA_CHECK(cudaStreamBeginCapture(stream, cudaStreamCaptureModeThreadLocal));
        try {
            for (int k = 0; k < iterations; ++k) enqueue_iteration(A, n1, n2, game, o, st, stream);
        } catch (...) {
            cudaGraph_t broken = nullptr;
            (void)cudaStreamEndCapture(stream, &broken);
            if (broken) (void)cudaGraphDestroy(broken);
            throw;
        }
        HPCML_CUDA_CHECK(cudaStreamEndCapture(stream, &graph_));
        const cudaError_t status = cudaGraphInstantiate(&exec_, graph_, 0);
        if (status != cudaSuccess) {  // no destructor runs for a throwing constructor
            (void)cudaGraphDestroy(graph_);
            graph_ = nullptr;
            HPCML_CUDA_CHECK(status);
        }
    }
    ~Graph() {
        if (exec_) (void)cudaGraphExecDestroy(exec_);
        if (graph_) (void)cudaGraphDestroy(graph_);
    }
    Graph(const Graph&) = delete;
    Graph& operator=(const Graph&) = delete;
    void launch(cudaStream_t stream) { HPCML_CUDA_CHECK(cudaGraphLaunch(exec_, stream)); }

private:
    cudaGraph_t graph_ = nullptr;
    cudaGraphExec_t exec_ = nullptr;
};

GameSolution solve_large(const float* A_host, std::size_t n1, std::size_t n2, std::size_t game, const RegretOptions& o,
                         cudaStream_t stream, MemoryTracker& tracker) {
    const int N1 = static_cast<int>(n1), N2 = static_cast<int>(n2);
    DeviceBuffer<float> A(tracker, n1 * n2, stream, "regret payoffs on device");
    HPCML_CUDA_CHECK(cudaMemcpyAsync(A.data(), A_host, A.bytes(), cudaMemcpyHostToDevice, stream));
    LargeState st(tracker, n1, n2, stream);
    // Accumulators, regrets, predictions, sums and utilities start at 0; strategies uniform.
    HPCML_CUDA_CHECK(cudaMemsetAsync(st.p1.data(), 0, st.p1.bytes(), stream));
    HPCML_CUDA_CHECK(cudaMemsetAsync(st.p2.data(), 0, st.p2.bytes(), stream));
    const std::vector<double> uniform1(n1, 1.0 / static_cast<double>(n1)), uniform2(n2, 1.0 / static_cast<double>(n2));
    HPCML_CUDA_CHECK(cudaMemcpyAsync(st.player(0, N1).s, uniform1.data(), n1 * sizeof(double), cudaMemcpyHostToDevice, stream));
    HPCML_CUDA_CHECK(cudaMemcpyAsync(st.player(1, N2).s, uniform2.data(), n2 * sizeof(double), cudaMemcpyHostToDevice, stream));
    const int one = 1;
    HPCML_CUDA_CHECK(cudaMemcpyAsync(st.counters.data(), &one, sizeof one, cudaMemcpyHostToDevice, stream));
    HPCML_CUDA_CHECK(cudaStreamSynchronize(stream));  // `uniform*` and `one` are host temporaries

    GameSolution out;
    double evaluation[2] = {0.0, 0.0};
    auto evaluate_now = [&](int t) {
        double* x = st.averages.data();
        double* y = x + n1;
        double* u1 = st.evaluation.data();
        double* u2 = u1 + n1;
        double* result = u2 + n2;
        launch_averages(st.player(0, N1), st.player(1, N2), averaging_total(o.variant, o.averaging, t), x, y, stream);
        launch_dual_gemv(A.data(), N1, N2, x, y, u1, u2, st.u1_partial.data(), st.u2_partial.data(), stream);
        launch_evaluate(x, u1, N1, u2, N2, result, stream);
        HPCML_CUDA_CHECK(cudaMemcpyAsync(evaluation, result, sizeof evaluation, cudaMemcpyDeviceToHost, stream));
        HPCML_CUDA_CHECK(cudaStreamSynchronize(stream));
    };

    // Graphs of 8 iterations and of 1; replays run back to back on the stream.
    constexpr int kChunk = 8;
    Graph one_iteration(A.data(), N1, N2, game, o, st, stream, 1);
    Graph chunk(A.data(), N1, N2, game, o, st, stream, kChunk);
    for (int t = 0; t < o.iterations;) {
        const int next_record = o.record_every > 0 ? (t / o.record_every + 1) * o.record_every : o.iterations;
        const int stop = std::min(next_record, o.iterations);
        while (t + kChunk <= stop) {
            chunk.launch(stream);
            t += kChunk;
        }
        while (t < stop) {
            one_iteration.launch(stream);
            ++t;
        }
        if (o.record_every > 0 && t % o.record_every == 0 && t != o.iterations) {
            evaluate_now(t);
            out.curve.push_back({t, evaluation[1]});
        }
    }
    evaluate_now(o.iterations);
    out.value = evaluation[0];
    out.gap = evaluation[1];
    if (o.record_every > 0) out.curve.push_back({o.iterations, out.gap});
    out.row_strategy.resize(n1);
    out.col_strategy.resize(n2);
    std::vector<double> r1(n1), r2(n2);
    HPCML_CUDA_CHECK(cudaMemcpyAsync(out.row_strategy.data(), st.averages.data(), n1 * sizeof(double), cudaMemcpyDeviceToHost, stream));
    HPCML_CUDA_CHECK(cudaMemcpyAsync(out.col_strategy.data(), st.averages.data() + n1, n2 * sizeof(double), cudaMemcpyDeviceToHost, stream));
    HPCML_CUDA_CHECK(cudaMemcpyAsync(r1.data(), st.player(0, N1).r_total, n1 * sizeof(double), cudaMemcpyDeviceToHost, stream));
    HPCML_CUDA_CHECK(cudaMemcpyAsync(r2.data(), st.player(1, N2).r_total, n2 * sizeof(double), cudaMemcpyDeviceToHost, stream));
    HPCML_CUDA_CHECK(cudaStreamSynchronize(stream));
    const double max_regret = std::max(*std::max_element(r1.begin(), r1.end()), *std::max_element(r2.begin(), r2.end()));
    out.eps_bound = 2.0 * max_regret / o.iterations;
    return out;
}

}  // namespace

std::vector<GameSolution> cuda_solve(const float* A, std::size_t batch, std::size_t n1, std::size_t n2,
                                     const RegretOptions& o, const Context& context, MemoryTracker& tracker) {
    const DeviceGuard guard(context.device);
    Stream stream;
    require(n1 < (std::size_t{1} << 31) && n2 < (std::size_t{1} << 31), "A: at most 2^31 - 1 actions per player on the GPU");
    if (o.method == Method::Naive) {
        std::vector<GameSolution> out;
        for (std::size_t b = 0; b < batch; ++b) out.push_back(naive_solve(A + b * n1 * n2, n1, n2, b, o, stream.get(), tracker));
        return out;
    }
    if (std::max(n1, n2) <= kMaxBatchedActions) return solve_batched(A, batch, n1, n2, o, stream.get(), tracker);
    std::vector<GameSolution> out;
    for (std::size_t b = 0; b < batch; ++b) out.push_back(solve_large(A + b * n1 * n2, n1, n2, b, o, stream.get(), tracker));
    return out;
}

}  // namespace hpcml::detail::regret
