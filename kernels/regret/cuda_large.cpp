// The regret-matching CUDA backend's large-game path (cuda_large.hpp): games go in chunks of at
// most 1 GiB of payoffs and 65535 games (the grid's y and z limit) so that every count fits an int.
#include "cuda_large.hpp"

#include <algorithm>
#include <optional>

#include "common/cuda_check.hpp"
#include "common/cuda_memory.hpp"
#include "common/nvtx.hpp"
#include "cuda_launchers.hpp"
#include "cuda_results.hpp"

namespace hpcml::detail::regret {

namespace {

constexpr std::size_t kMaxGridGames = 65535;

// Where the large-game path's device memory for a chunk of `games` games lies in one block (256-
// byte aligned pieces): the host call allocates the block, with room for the payoffs; the
// device call takes the caller's workspace and reads the payoffs where they are.
struct LargeLayout {
    LargeLayout(std::size_t games, std::size_t n1, std::size_t n2, int multiprocessors, bool payoffs)
        : gemv(plan_dual_gemv(static_cast<int>(games), static_cast<int>(n1), static_cast<int>(n2), multiprocessors)) {
        constexpr std::size_t d = sizeof(double);
        state[0] = take(5 * games * n1 * d);
        state[1] = take(5 * games * n2 * d);
        u1_partial = take(games * static_cast<std::size_t>(gemv.row_partials) * n1 * d);
        u2_partial = take(games * static_cast<std::size_t>(gemv.row_splits) * n2 * d);
        averages = take(games * (n1 + n2) * d);
        evaluation = take(games * (n1 + n2) * d);
        move_partial =
            take(2 * 2 * games * static_cast<std::size_t>(move_blocks(static_cast<int>(std::max(n1, n2)))) * d);
        counters = take((1 + 2 * games) * sizeof(int));
        payoffs_at = payoffs ? take(games * n1 * n2 * sizeof(float)) : 0;
    }
    DualGemv gemv;
    std::size_t state[2] = {}, u1_partial = 0, u2_partial = 0, averages = 0, evaluation = 0, move_partial = 0,
                counters = 0, payoffs_at = 0, bytes = 0;

private:
    std::size_t take(std::size_t size) {
        const std::size_t at = bytes;
        bytes += (size + 255) / 256 * 256;
        return at;
    }
};

// The large-game path's device state for a chunk of `games` games, in a block laid out by
// LargeLayout; payoffs: the games' payoffs (in the block for the host call).
struct LargeState {
    LargeState(unsigned char* block, const LargeLayout& layout, const float* payoffs, std::size_t games, std::size_t n1,
               std::size_t n2)
        : state{reinterpret_cast<double*>(block + layout.state[0]), reinterpret_cast<double*>(block + layout.state[1])},
          gemv(layout.gemv),
          averages(reinterpret_cast<double*>(block + layout.averages)),
          evaluation(reinterpret_cast<double*>(block + layout.evaluation)),
          move_partial(reinterpret_cast<double*>(block + layout.move_partial)),
          counters(reinterpret_cast<int*>(block + layout.counters)),
          payoffs(payoffs),
          games(static_cast<int>(games)),
          n1(static_cast<int>(n1)),
          n2(static_cast<int>(n2)) {
        gemv.u1_partial = reinterpret_cast<double*>(block + layout.u1_partial);
        gemv.u2_partial = reinterpret_cast<double*>(block + layout.u2_partial);
    }
    double* state[2];
    DualGemv gemv;
    double *averages, *evaluation, *move_partial;
    int* counters;  // t, then the sampled actions of each game
    const float* payoffs;
    int games, n1, n2;

    PlayerDevice player(int which) {
        const int n = which == 0 ? n1 : n2;
        const std::size_t field = static_cast<std::size_t>(games) * n;
        double* base = state[which];
        return {base, base + field, base + 2 * field, base + 3 * field, base + 4 * field, n};
    }
    int* t() { return counters; }
    int* actions() { return counters + 1; }
};

// The large-game path's side of iterate() (math.hpp): it enqueues on `stream` (captured into
// a graph by the caller), and the kernels read the iteration from the device.
struct LargeIteration {
    const Schedule& sc;
    std::uint64_t first_game;
    LargeState& st;
    cudaStream_t stream;

    void utilities(int, int turn, const bool* moves) {
        const PlayerDevice p[2] = {st.player(0), st.player(1)};
        double* u1 = moves[0] ? p[0].u : nullptr;
        double* u2 = moves[1] ? p[1].u : nullptr;
        if (sc.sampled) {
            launch_sample({{p[0].s, p[1].s}, {st.n1, st.n2}, st.games, turn, first_game, sc, st.t(), st.actions()},
                          stream);
            launch_gather_utilities(st.payoffs, st.games, st.n1, st.n2, st.actions(), u1, u2, stream);
        } else {
            launch_dual_gemv(st.gemv, st.payoffs, p[0].s, p[1].s, u1, u2, stream);
        }
    }
    void move(int, const bool* moves) {  // the players that move, in the same launches
        MoveArgs args{};
        args.games = st.games;
        args.schedule = sc;
        args.t = st.t();
        args.actions = sc.sampled ? st.actions() : nullptr;
        args.partial = st.move_partial;
        args.move_blocks = move_blocks(std::max(st.n1, st.n2));
        for (int q = 0; q < 2; ++q) {
            if (!moves[q]) continue;
            args.players[args.count] = st.player(q);
            args.player[args.count] = q;
            ++args.count;
        }
        launch_move(args, stream);
    }
};

class Graph {
public:
    // Captures `iterations` iterations.
    Graph(const Schedule& sc, std::uint64_t first_game, LargeState& st, cudaStream_t stream, int iterations) {
        HPCML_CUDA_CHECK(cudaStreamBeginCapture(stream, cudaStreamCaptureModeThreadLocal));
        try {
            LargeIteration backend{sc, first_game, st, stream};
            for (int k = 0; k < iterations; ++k) {
                iterate(sc, 0, backend);
                launch_advance(st.t(), stream);
            }
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

// Runs every iteration for the `games` games whose payoffs are in st, leaving the results at
// `out` (nothing waits on the host until the caller copies them). Iterations replay two graphs
// of their own, or go on the stream one launch at a time where no graph can be captured: while
// the stream is being captured into the caller's graph, or is a default stream.
void run_large(const Schedule& sc, std::uint64_t first_game, int games, LargeState& st, const ResultPointers& out,
               cudaStream_t stream) {
    st.games = games;
    st.gemv.games = games;
    const PlayerDevice p1 = st.player(0), p2 = st.player(1);
    launch_reset(p1, games, stream);
    launch_reset(p2, games, stream);
    HPCML_CUDA_CHECK(cudaMemsetAsync(st.t(), 0, sizeof(int), stream));
    launch_advance(st.t(), stream);  // t = 1

    // The gap of the average profile into gap[g * stride]; the value too when asked.
    auto evaluate = [&](int t, double* value, double* gap, int stride) {
        double* x = st.averages;
        double* y = x + static_cast<std::size_t>(games) * st.n1;
        double* u1 = st.evaluation;
        double* u2 = u1 + static_cast<std::size_t>(games) * st.n1;
        launch_averages(p1, p2, games, sc.total_weight(t), x, y, stream);
        launch_dual_gemv(st.gemv, st.payoffs, x, y, u1, u2, stream);
        launch_evaluate(x, u1, st.n1, u2, st.n2, games, value, gap, stride, stream);
    };

    // Graphs of kGpu.graph_iterations iterations and of 1; replays run back to back on the stream.
    constexpr int kChunk = kGpu.graph_iterations;
    const bool direct =
        capturing(stream) || stream == nullptr || stream == cudaStreamLegacy || stream == cudaStreamPerThread;
    std::optional<Graph> one_iteration, eight_iterations;
    if (!direct) {
        one_iteration.emplace(sc, first_game, st, stream, 1);
        eight_iterations.emplace(sc, first_game, st, stream, kChunk);
    }
    auto run = [&](int iterations) {
        if (direct) {
            LargeIteration backend{sc, first_game, st, stream};
            for (int k = 0; k < iterations; ++k) {
                iterate(sc, 0, backend);
                launch_advance(st.t(), stream);
            }
            return;
        }
        for (; iterations >= kChunk; iterations -= kChunk) eight_iterations->launch(stream);
        for (; iterations > 0; --iterations) one_iteration->launch(stream);
    };
    int record = 0;
    for (int t = 0; t < sc.iterations;) {
        const int stop =
            sc.record_every > 0 ? std::min(sc.iterations, (t / sc.record_every + 1) * sc.record_every) : sc.iterations;
        run(stop - t);
        t = stop;
        if (sc.records_at(t)) evaluate(t, nullptr, out.curve + record++, sc.records());
    }
    evaluate(sc.iterations, out.value, out.gap, 1);
    launch_averages(p1, p2, games, sc.total_weight(sc.iterations), out.rows, out.cols, stream);
    launch_max_regret(p1, p2, games, out.max_regret, stream);
}

// Games per chunk of the large-game path: the same for host and device payoffs, since the chunk
// sets the pass's plan, and with it the order of its sums.
std::size_t large_chunk(std::size_t batch, std::size_t n1, std::size_t n2) {
    return std::clamp<std::size_t>(kGpu.chunk_bytes / (n1 * n2 * sizeof(float)), 1, std::min(batch, kMaxGridGames));
}

int multiprocessors(int device) {
    int count = 0;
    HPCML_CUDA_CHECK(cudaDeviceGetAttribute(&count, cudaDevAttrMultiProcessorCount, device));
    return count;
}

}  // namespace

std::vector<GameSolution> solve_large(const float* A, std::size_t batch, std::size_t n1, std::size_t n2,
                                      const Schedule& sc, int device, cudaStream_t stream, MemoryTracker& tracker) {
    std::vector<GameSolution> out(batch);
    const std::size_t chunk = large_chunk(batch, n1, n2);
    const LargeLayout layout(chunk, n1, n2, multiprocessors(device), true);
    DeviceBuffer<unsigned char> block(tracker, layout.bytes, stream, "regret large-game state and payoffs");
    float* payoffs = reinterpret_cast<float*>(block.data() + layout.payoffs_at);
    LargeState st(block.data(), layout, payoffs, chunk, n1, n2);
    ChunkResults results(tracker, chunk, n1, n2, sc.records(), stream);
    for (std::size_t first = 0; first < batch; first += chunk) {
        const std::size_t games = std::min(chunk, batch - first);
        const NvtxRange range([&] { return chunk_name("large-game", first, games, batch); });
        upload_to_device(payoffs, A + first * n1 * n2, games * n1 * n2 * sizeof(float), stream);
        run_large(sc, first, static_cast<int>(games), st, results.pointers(), stream);
        results.unpack(out, first, games, sc, stream);
    }
    return out;
}

std::size_t large_device_workspace(std::size_t batch, std::size_t n1, std::size_t n2, int device) {
    return LargeLayout(large_chunk(batch, n1, n2), n1, n2, multiprocessors(device), false).bytes;
}

void solve_large_on_device(const float* A, std::size_t batch, std::size_t n1, std::size_t n2, const Schedule& sc,
                           const DeviceGameResults& out, void* workspace, int device, cudaStream_t stream) {
    const std::size_t chunk = large_chunk(batch, n1, n2);
    const LargeLayout layout(chunk, n1, n2, multiprocessors(device), false);
    for (std::size_t first = 0; first < batch; first += chunk) {
        const std::size_t games = std::min(chunk, batch - first);
        LargeState st(static_cast<unsigned char*>(workspace), layout, A + first * n1 * n2, chunk, n1, n2);
        run_large(sc, first, static_cast<int>(games), st,
                  {out.row_strategy + first * n1, out.col_strategy + first * n2, out.value + first, out.gap + first,
                   out.eps_bound + first, nullptr},
                  stream);
    }
}

}  // namespace hpcml::detail::regret
