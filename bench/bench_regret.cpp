// bench_regret: regret matching on one large random game (--actions, default 4096, and
// --actions-2 for player 2's if they differ) or on a batch of small ones (--batch B --actions n),
// fused vs naive. Counters: iterations/s, bytes/s over A (passes per iteration x 4 n1 n2 bytes),
// and that over the memory bandwidth: the GPU's peak (bandwidth_fraction), or on the CPU a
// STREAM triad measured here (cpu_bandwidth_fraction: the floor is the passes' bytes over it),
// games x iterations / s for batches, peak memory. --where device: payoffs and results in device
// memory, timed with CUDA events (the kernels alone: no 4 n1 n2-byte copy per call), fused only.
#include <hpcml/device_memory.hpp>
#include <hpcml/regret.hpp>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <memory>
#include <random>
#include <string>
#include <vector>

#include "common/bench_main.hpp"

namespace {

using hpcml::bench::Flags;
using hpcml::bench::RunResult;

struct Workload {
    std::size_t batch, n, n2;  // n2: player 2's actions
    bool on_device;            // --where device
    hpcml::RegretOptions options;
    hpcml::bench::HugePageArray<float> A;  // as a NumPy user's large array
};

// Payoffs, results and workspace in device memory; each call timed with CUDA events.
void run_on_device(benchmark::State& state, const Workload& w, const hpcml::RegretOptions& o, hpcml::RunStats& stats) {
    hpcml::DeviceMemory A, rows, cols, scalars, workspace;
    try {
        A = hpcml::DeviceMemory(w.A.size() * sizeof(float), o.device, "--where device: the payoffs");
        A.upload(w.A.data(), A.bytes());
        rows = hpcml::DeviceMemory(w.batch * w.n * sizeof(double), o.device, "--where device: row strategies");
        cols = hpcml::DeviceMemory(w.batch * w.n2 * sizeof(double), o.device, "--where device: column strategies");
        scalars = hpcml::DeviceMemory(3 * w.batch * sizeof(double), o.device, "--where device: values, gaps, bounds");
        if (const std::size_t bytes = hpcml::solve_matrix_games_device_workspace(w.batch, w.n, w.n2, o))
            workspace = hpcml::DeviceMemory(bytes, o.device, "--where device: the workspace");
    } catch (const hpcml::Error& e) {
        hpcml::bench::skip_with_error(state, e);
        return;
    }
    double* s = scalars.data_as<double>();
    const hpcml::DeviceGameResults out{rows.data_as<double>(), cols.data_as<double>(), s, s + w.batch, s + 2 * w.batch};
    const hpcml::Context context = hpcml::make_context(hpcml::Backend::Cuda, o.device, o.stream);
    for (auto _ : state) {
        try {
            hpcml::bench::time_device(state, context, [&] {
                stats = hpcml::solve_matrix_games_device(A.data_as<const float>(), w.batch, w.n, w.n2, out, o,
                                                         workspace.data(), workspace.bytes());
            });
        } catch (const hpcml::Error& e) {
            hpcml::bench::skip_with_error(state, e);
            return;
        }
    }
}

void run_regret(benchmark::State& state, const std::shared_ptr<Workload>& w, hpcml::Method method) {
    hpcml::RegretOptions o = w->options;
    o.method = method;
    hpcml::RunStats stats;
    hpcml::bench::EnergyWindow energy(hpcml::make_context(o.backend, o.device));
    if (w->on_device) {
        run_on_device(state, *w, o, stats);
        if (state.error_occurred()) return;
    } else {
        for (auto _ : state) {
            try {
                hpcml::bench::time_wall(state, [&] {
                    stats = hpcml::solve_matrix_games(w->A.data(), w->batch, w->n, w->n2, o).front().stats;
                });
            } catch (const hpcml::Error& e) {
                hpcml::bench::skip_with_error(state, e);
                return;
            }
        }
    }
    energy.report(state);
    using benchmark::Counter;
    const double iterations = o.iterations;
    // Passes over A per iteration: simultaneous fused iterations read A once; alternating or
    // naive iterations read it twice.
    const bool one_pass = method == hpcml::Method::Fused && hpcml::simultaneous_updates(o);
    const double a_bytes = 4.0 * w->n * w->n2 * w->batch;
    state.counters["iterations/s"] = Counter(iterations, Counter::kIsIterationInvariantRate);
    const double bytes = iterations * a_bytes * (one_pass ? 1 : 2);
    state.counters["bytes/s"] = Counter(bytes, Counter::kIsIterationInvariantRate, Counter::kIs1024);
    if (stats.backend == hpcml::Backend::Cuda) {
        hpcml::bench::set_bandwidth_fraction(state, o.device, bytes);
    } else {
        hpcml::bench::set_cpu_bandwidth_fraction(state, bytes);
    }
    if (w->batch > 1)
        state.counters["game_iterations/s"] = Counter(iterations * w->batch, Counter::kIsIterationInvariantRate);
    hpcml::bench::set_memory_counters(state, stats.memory);
}

// The fused solver on the benchmark's backend against the CPU's naive one (the seed's eager
// program), on the first games (up to 16) or the leading (up to) 256 x 256 block of one large game, for
// up to 50 iterations: strategies, gap and eps within 1e-9.
void check(const Workload& w) {
    const std::size_t games = std::min<std::size_t>(w.batch, 16),
                      n = w.batch == 1 ? std::min<std::size_t>(w.n, 256) : w.n,
                      n2 = w.batch == 1 ? std::min<std::size_t>(w.n2, 256) : w.n2;
    std::vector<float> A(games * n * n2);
    for (std::size_t g = 0; g < games; ++g)
        for (std::size_t i = 0; i < n; ++i)
            std::copy_n(w.A.data() + (g * w.n + i) * w.n2, n2, A.data() + (g * n + i) * n2);
    hpcml::RegretOptions fused = w.options, reference = w.options;
    fused.iterations = reference.iterations = std::min(w.options.iterations, 50);
    reference.backend = hpcml::Backend::Cpu;
    reference.method = hpcml::Method::Naive;
    const auto got = hpcml::solve_matrix_games(A.data(), games, n, n2, fused);
    const auto expected = hpcml::solve_matrix_games(A.data(), games, n, n2, reference);
    bool agree = true;
    auto close = [&](double a, double b) { agree = agree && std::fabs(a - b) <= 1e-9; };
    for (std::size_t g = 0; g < games; ++g) {
        for (std::size_t i = 0; i < n; ++i) close(got[g].row_strategy[i], expected[g].row_strategy[i]);
        for (std::size_t j = 0; j < n2; ++j) close(got[g].col_strategy[j], expected[g].col_strategy[j]);
        close(got[g].gap, expected[g].gap);
        close(got[g].eps_bound, expected[g].eps_bound);
    }
    hpcml::bench::check_before_timing("bench_regret",
                                      "fused (" + std::string(hpcml::to_string(fused.backend)) +
                                          ") against the CPU's naive solver on " + std::to_string(games) +
                                          " game(s) of " + std::to_string(n) + " x " + std::to_string(n2) + ", " +
                                          std::to_string(fused.iterations) + " iterations",
                                      agree);
}

void declare(Flags& flags) {
    flags.add("actions", "4096", "actions of player 1 (and of player 2 unless --actions-2)");
    flags.add("actions-2", "", "actions of player 2; unset: --actions");
    flags.add("batch", "1", "games solved together (each --actions x --actions)");
    flags.add("iterations", "100", "regret-matching iterations");
    flags.add("variant", "prm+", hpcml::cli::one_of(hpcml::regret_variant_names()));
    flags.add("alternating", "true", "true|false (the seed is always simultaneous)");
    flags.add("averaging", "quadratic", hpcml::cli::one_of(hpcml::averaging_names()));
    flags.add("where", "host", "host|device: host arrays (end to end) or device arrays (kernels alone, fused only)");
}

void register_benchmarks(const Flags& flags) {
    auto w = std::make_shared<Workload>();
    w->n = static_cast<std::size_t>(flags.integer("actions", 1));
    w->n2 = flags.str("actions-2").empty() ? w->n : static_cast<std::size_t>(flags.integer("actions-2", 1));
    w->batch = static_cast<std::size_t>(flags.integer("batch", 1));
    auto& o = w->options;
    o.iterations = static_cast<int>(flags.integer("iterations", 1));
    o.variant = hpcml::parse_regret_variant(flags.str("variant"), "--variant");
    o.alternating = flags.choice("alternating", {"true", "false"}) == "true";
    o.averaging = hpcml::parse_averaging(flags.str("averaging"), "--averaging");
    o.backend = hpcml::bench::context(flags).backend;
    o.device = hpcml::bench::device(flags);
    w->on_device = flags.choice("where", {"host", "device"}) == "device";
    const std::vector<hpcml::Method> methods = hpcml::bench::methods(flags);
    if (w->on_device && o.backend != hpcml::Backend::Cuda)
        throw hpcml::Error(hpcml::ErrorKind::InvalidArgument,
                           "--where device: needs the CUDA backend, which is not usable here");
    if (w->on_device && methods != std::vector{hpcml::Method::Fused})
        throw hpcml::Error(hpcml::ErrorKind::InvalidArgument,
                           "--where device: add --method fused (the naive baseline takes host arrays)");
    std::mt19937 rng(1);
    std::normal_distribution<float> normal;
    w->A = hpcml::bench::HugePageArray<float>(w->batch * w->n * w->n2);
    for (float& a : w->A) a = normal(rng);
    check(*w);
    for (hpcml::Method method : methods) {
        const std::string name =
            "regret/" + std::string(hpcml::to_string(method)) + "/" + std::string(hpcml::to_string(o.backend)) +
            "/batch:" + std::to_string(w->batch) + "/actions:" + std::to_string(w->n) + "x" + std::to_string(w->n2) +
            "/iterations:" + std::to_string(o.iterations) + "/" + flags.str("variant") +
            (hpcml::simultaneous_updates(o) ? "/simultaneous" : "/alternating") + (w->on_device ? "/device" : "");
        benchmark::RegisterBenchmark(name.c_str(), [w, method](benchmark::State& s) { run_regret(s, w, method); })
            ->UseManualTime()
            ->Unit(benchmark::kMillisecond);
    }
}

void summarize(const Flags&, const std::vector<RunResult>& results) {
    const RunResult* fused = hpcml::bench::find_result(results, "regret/fused/");
    const RunResult* naive = hpcml::bench::find_result(results, "regret/naive/");
    if (fused && naive && !fused->skipped && !naive->skipped) {
        std::fprintf(hpcml::bench::summary_out(), "summary: fused %.4g s, naive %.4g s: %s\n", fused->seconds,
                     naive->seconds, hpcml::bench::faster_or_slower("fused", fused->seconds, naive->seconds).c_str());
    }
}

}  // namespace

int main(int argc, char** argv) {
    return hpcml::bench::run(argc, argv,
                             {"bench_regret", "regret matching for zero-sum matrix games, fused vs naive", declare,
                              register_benchmarks, summarize});
}
