// bench_similarity: the fused pairwise similarity against its naive broadcast baseline, on
// x = randn(samples, dim) (y = x unless --dim-y is given), the output produced --tile at a
// time into a full host output. Prints elements/s (pair-samples: samples * n * m / time, all
// pairs counted even where symmetry computes half, so that symmetry can pass 1), peak memory,
// the fraction of the backend's instruction floor (floor_fraction), and a fused-vs-naive
// summary line; with y = x also fused on a copy of x
// (no symmetry: "fused-plain") and the ratio.
#include <hpcml/device.hpp>
#include <hpcml/device_memory.hpp>
#include <hpcml/similarity.hpp>

#include <algorithm>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <map>
#include <memory>
#include <set>
#include <random>
#include <string>
#include <thread>
#include <vector>

#include "common/bench_main.hpp"

namespace {

using hpcml::bench::Flags;
using hpcml::bench::RunResult;

// What a host call delivers its result to (--deliver).
enum class Deliver { Out, Sink, Pairs };

struct Workload {
    std::size_t samples, n, m, tile;
    bool on_device;  // --where device: inputs and output in device memory, no host copies
    Deliver deliver = Deliver::Out;
    hpcml::SimilarityOptions options;
    std::vector<float> x, y;    // y empty: y = x
    std::vector<float> x_copy;  // y = x as other memory: the plain run beside the symmetric one
    std::map<hpcml::Method, std::string> checked;  // each method's check() (run once, first use)
};

// samples x features normal values, each distinct column repeated `repeat` times side by side.
std::vector<float> randn(std::size_t samples, std::size_t features, std::size_t repeat, unsigned seed) {
    std::mt19937 rng(seed);
    std::normal_distribution<float> normal;
    std::vector<float> v(samples * features);
    for (float& e : v) e = normal(rng);
    for (std::size_t s = 0; s < samples; ++s)
        for (std::size_t f = 0; f < features; ++f) v[s * features + f] = v[s * features + f / repeat * repeat];
    return v;
}

// Pair-samples per second the instruction issue allows. GPU: 128 thread-instructions per
// clock per SM, 3 instructions per pair-sample (kernels/similarity/fused.cu). CPU: the level's
// pair-samples per cycle and physical core (hpcml::cpu_kernel_pair_samples_per_cycle: full-width
// vector pipes, as on Zen 5; half that where 512-bit instructions are split) at the clock
// /proc/cpuinfo gives (a virtual machine's may be the nominal one); 0 where unknown.
double instruction_floor(const hpcml::Context& context) {
    if (context.backend == hpcml::Backend::Cuda) {
        for (const hpcml::DeviceInfo& d : hpcml::devices())
            if (d.index == context.device) return d.multiprocessor_count * (128.0 / 3.0) * d.sm_clock_khz * 1e3;
        return 0.0;
    }
    // Physical cores: distinct (physical id, core id) pairs (hyperthreads share their pipes).
    std::ifstream cpuinfo("/proc/cpuinfo");
    std::set<std::pair<std::string, std::string>> cores;
    std::string package, mhz;
    for (std::string line; std::getline(cpuinfo, line);) {
        const std::size_t colon = line.find(':');
        if (colon == std::string::npos) continue;
        const std::string value = line.substr(colon + 1);
        if (line.rfind("physical id", 0) == 0) package = value;
        if (line.rfind("core id", 0) == 0) cores.emplace(package, value);
        if (line.rfind("cpu MHz", 0) == 0 && mhz.empty()) mhz = value;
    }
    if (mhz.empty()) return 0.0;
    const double count = cores.empty() ? std::thread::hardware_concurrency() : static_cast<double>(cores.size());
    return hpcml::cpu_kernel_pair_samples_per_cycle() * count * std::stod(mhz) * 1e6;
}

// Inputs and the whole output in device memory, timed with CUDA events: the kernels alone,
// which against the host run shows what the device-to-host copies cost.
// y_host empty: y = x. Adds the seconds timed to `timed`.
void run_on_device(benchmark::State& state, const Workload& w, const std::vector<float>& y_host,
                   const hpcml::SimilarityOptions& options, hpcml::RunStats& stats, double& timed) {
    const hpcml::SimilarityOutput output = hpcml::resolve_output(options);
    hpcml::DeviceMemory x, y, out;
    try {
        x = hpcml::DeviceMemory(w.x.size() * sizeof(float), options.device, "--where device: x");
        x.upload(w.x.data(), x.bytes());
        if (!y_host.empty()) {
            y = hpcml::DeviceMemory(y_host.size() * sizeof(float), options.device, "--where device: y");
            y.upload(y_host.data(), y.bytes());
        }
        out = hpcml::DeviceMemory(hpcml::similarity_output_bytes(w.n, w.m, output), options.device,
                                  "--where device: the output");
    } catch (const hpcml::Error& e) {
        hpcml::bench::skip_with_error(state, e);
        return;
    }
    const hpcml::Context context = hpcml::make_context(hpcml::Backend::Cuda, options.device, options.stream);
    const hpcml::MatrixView xv{x.data_as<const float>(), w.samples, w.n};
    const hpcml::MatrixView yv =
        y.data() ? hpcml::MatrixView{y.data_as<const float>(), w.samples, w.m} : hpcml::MatrixView{};
    for (auto _ : state) {
        try {
            timed += hpcml::bench::time_device(state, context,
                                               [&] { stats = hpcml::similarity_device(xv, yv, out.data(), options); });
        } catch (const hpcml::Error& e) {
            hpcml::bench::skip_with_error(state, e);
            break;
        }
    }
}

std::string check(const Workload& w, hpcml::Method method);  // below

void run_similarity(benchmark::State& state, const std::shared_ptr<Workload>& w, hpcml::Method method, bool plain) {
    if (method != hpcml::Method::Naive) {
        const auto [at, first] = w->checked.try_emplace(method);
        if (first) at->second = check(*w, method);
        if (!at->second.empty()) {
            state.SkipWithError(at->second.c_str());
            return;
        }
    }
    hpcml::SimilarityOptions options = w->options;
    options.method = method;
    const hpcml::Context context = hpcml::make_context(options.backend, options.device);
    const hpcml::SimilarityOutput output = hpcml::resolve_output(options);
    const std::size_t out_bytes = hpcml::similarity_output_bytes(w->n, w->m, output);
    const hpcml::MatrixView x{w->x.data(), w->samples, w->n};
    const hpcml::MatrixView y = plain          ? hpcml::MatrixView{w->x_copy.data(), w->samples, w->m}
                                : w->y.empty() ? hpcml::MatrixView{}
                                               : hpcml::MatrixView{w->y.data(), w->samples, w->m};
    // The host output's pages faulted in before the clock and the energy window start: Google
    // Benchmark calls this function several times, and each call's first iteration would otherwise
    // pay for them, whatever the method (at 256 x 8000, 65536 faults of a 256 MB output: the
    // medians fell from 524 to 452 ms fused and from 188 to 157 ms sorted, y a copy of x).
    std::unique_ptr<unsigned char[]> out;
    if (!w->on_device && w->deliver == Deliver::Out) {
        out.reset(new unsigned char[out_bytes]);
        std::memset(out.get(), 0, out_bytes);
    }
    hpcml::RunStats stats;
    double timed = 0;  // seconds, every iteration's
    hpcml::bench::EnergyWindow energy(context);
    if (w->on_device) {
        run_on_device(state, *w, plain ? w->x_copy : w->y, options, stats, timed);
        if (state.error_occurred()) return;
    } else {
        for (auto _ : state) {
            try {
                // The whole call, host copies included: what a user waits for.
                timed += hpcml::bench::time_wall(state, [&] {
                    if (w->deliver == Deliver::Sink) {
                        stats = hpcml::similarity(
                            x, y, [](const hpcml::SimilarityTile&) {}, options);
                    } else if (w->deliver == Deliver::Pairs) {
                        stats = hpcml::similarity_pairs(x, y, options).stats;
                    } else {
                        stats = hpcml::similarity(x, y, out.get(), options);
                    }
                });
            } catch (const hpcml::Error& e) {
                hpcml::bench::skip_with_error(state, e);
                return;
            }
        }
    }
    energy.report(state);
    if (method == hpcml::Method::Auto) state.SetLabel("ran " + std::string(hpcml::to_string(stats.method)));
    const double elements = static_cast<double>(w->samples) * w->n * w->m;
    state.counters["elements/s"] = benchmark::Counter(elements, benchmark::Counter::kIsIterationInvariantRate);
    hpcml::bench::set_memory_counters(state, stats.memory);
    const double io_bytes = (w->x.size() + w->y.size()) * sizeof(float) +
                            static_cast<double>(out_bytes);
    state.counters["memory_vs_io"] =
        (io_bytes + static_cast<double>(stats.memory.peak_host_bytes + stats.memory.peak_device_bytes)) / io_bytes;
    // A fraction, not a rate (a rate counter would print it with "/s").
    if (const double floor = instruction_floor(context); floor > 0 && timed > 0)
        state.counters["floor_fraction"] = elements * static_cast<double>(state.iterations()) / (floor * timed);
}

// A method's result on the benchmark's backend against the CPU's naive broadcast, on the first
// 600 x 550 pairs of the workload (column blocks viewed in place; more than one of the sorted
// method's 512-wide tiles): equal bytes. Made where the method's first benchmark starts: "" where
// they agree, else why that method is not timed (the others are: a sorted failure on a GPU
// cannot cost the fused and naive numbers).
std::string check(const Workload& w, hpcml::Method method) {
    const std::size_t n = std::min<std::size_t>(w.n, 600), m = std::min<std::size_t>(w.m, 550);
    const float* y = w.y.empty() ? w.x.data() : w.y.data();
    const hpcml::MatrixView xv{w.x.data(), w.samples, n, w.n}, yv{y, w.samples, m, w.y.empty() ? w.n : w.m};
    hpcml::SimilarityOptions tested = w.options, reference = w.options;
    tested.method = method;
    tested.tile = std::min<std::size_t>(w.tile, 256);  // several tiles even on the slice
    reference.backend = hpcml::Backend::Cpu;
    reference.method = hpcml::Method::Naive;
    const std::size_t bytes = hpcml::similarity_output_bytes(n, m, hpcml::resolve_output(tested));
    std::vector<unsigned char> got(bytes, 0xAB), expected(bytes, 0xCD);
    const std::string what = std::string(hpcml::to_string(method)) + " (" +
                             std::string(hpcml::to_string(tested.backend)) + ") against the CPU's naive broadcast on " +
                             std::to_string(w.samples) + " x " + std::to_string(n) + " x " + std::to_string(m);
    try {
        hpcml::similarity(xv, yv, got.data(), tested);
        hpcml::similarity(xv, yv, expected.data(), reference);
    } catch (const hpcml::Error& e) {
        return hpcml::bench::check_at_start("bench_similarity", what + ": " + e.what(), false);
    }
    return hpcml::bench::check_at_start("bench_similarity", what, got == expected);
}

void declare(Flags& flags) {
    flags.add("tile", "1000", "output tile edge (the output is produced tile x tile at a time)");
    flags.add("samples", "256", "samples (rows of x and y)");
    flags.add("dim", "2000", "features of x (columns)");
    flags.add("dim-y", "", "features of y; unset: y = x");
    flags.add("mode", "count", hpcml::cli::one_of(hpcml::similarity_mode_names()));
    flags.add("dtype", "default", "default|" + hpcml::cli::one_of(hpcml::similarity_output_names()));
    flags.add("threshold", "1", "threshold t of |x - y| < t");
    flags.add("where", "host", "host|device: host arrays (end to end) or device arrays (kernels only)");
    flags.add("symmetric", "both", "both|on: with y = x, also time fused on a copy of x (no symmetry) beside it");
    flags.add("repeat", "1",
              "each distinct column of x (and y) repeated this many times side by side: pairs that stay "
              "alive in mode all");
    flags.add("deliver", "out",
              "out|sink|pairs: host calls into one output, to a tile sink (tiles of --tile, "
              "dropped), or as a pair list (similarity_pairs)");
}

void register_benchmarks(const Flags& flags) {
    auto w = std::make_shared<Workload>();
    w->samples = static_cast<std::size_t>(flags.integer("samples", 0));
    w->n = static_cast<std::size_t>(flags.integer("dim", 1));
    w->m = flags.str("dim-y").empty() ? w->n : static_cast<std::size_t>(flags.integer("dim-y", 1));
    w->tile = static_cast<std::size_t>(flags.integer("tile", 1));
    w->on_device = flags.choice("where", {"host", "device"}) == "device";
    const std::string deliver = flags.choice("deliver", {"out", "sink", "pairs"});
    w->deliver = deliver == "sink" ? Deliver::Sink : deliver == "pairs" ? Deliver::Pairs : Deliver::Out;
    if (w->on_device && w->deliver != Deliver::Out)
        throw hpcml::Error(hpcml::ErrorKind::InvalidArgument,
                           "--deliver: sink and pairs are host calls (--where host)");
    auto& o = w->options;
    o.tile = w->tile;
    o.threshold = static_cast<float>(flags.real("threshold"));
    o.mode = hpcml::parse_similarity_mode(flags.str("mode"), "--mode");
    o.output = hpcml::parse_similarity_output(flags.str("dtype"), "--dtype");
    o.backend = hpcml::bench::context(flags).backend;
    o.device = hpcml::bench::device(flags);
    if (w->on_device && o.backend != hpcml::Backend::Cuda) {
        throw hpcml::Error(hpcml::ErrorKind::InvalidArgument,
                           "--where device: needs the CUDA backend, which is not usable here");
    }
    const auto repeat = static_cast<std::size_t>(flags.integer("repeat", 1));
    w->x = randn(w->samples, w->n, repeat, 1);
    if (!flags.str("dim-y").empty()) w->y = randn(w->samples, w->m, repeat, 2);
    const std::vector<hpcml::Method> methods = hpcml::bench::methods(flags);

    // Where y is x, the library uses the symmetry (the CPU and --where device compute half the
    // pairs); "fused-plain" (and "sorted-plain") times the same pairs with y a copy of x, which
    // the library cannot know is x.
    const bool plain = w->y.empty() && flags.choice("symmetric", {"both", "on"}) == "both";
    if (plain) w->x_copy = w->x;
    for (hpcml::Method method : methods)
        for (bool copy : {false, true}) {
            if (copy && (!plain || method == hpcml::Method::Naive)) continue;
            const std::string name =
                "similarity/" + std::string(hpcml::to_string(method)) + (copy ? "-plain" : "") + "/" +
                std::string(hpcml::to_string(o.backend)) + "/samples:" + std::to_string(w->samples) +
                "/n:" + std::to_string(w->n) + "/m:" + std::to_string(w->m) + "/tile:" + std::to_string(w->tile) + "/" +
                flags.str("mode") + (repeat > 1 ? "/repeat:" + std::to_string(repeat) : "") +
                (w->on_device ? "/device" : "") + (w->deliver == Deliver::Out ? "" : "/" + deliver);
            benchmark::RegisterBenchmark(name.c_str(),
                                         [w, method, copy](benchmark::State& s) { run_similarity(s, w, method, copy); })
                ->UseManualTime()
                ->Unit(benchmark::kMillisecond);
        }
}

// Ends the summary line: the sorted method beside the fused one; with y = x, fused on a copy of
// x beside it, and what symmetry gave; on the CPU, the instruction set its kernel ran on.
void print_symmetry(const RunResult& fused, const std::vector<RunResult>& results) {
    const RunResult* sorted = hpcml::bench::find_result(results, "similarity/sorted/");
    if (sorted && !sorted->skipped)
        std::fprintf(hpcml::bench::summary_out(), "; sorted %.4g s: %.2fx fused", sorted->seconds,
                     fused.seconds / sorted->seconds);
    const RunResult* plain = hpcml::bench::find_result(results, "similarity/fused-plain/");
    const RunResult* sorted_plain = hpcml::bench::find_result(results, "similarity/sorted-plain/");
    if (plain && sorted_plain && !plain->skipped && !sorted_plain->skipped)
        std::fprintf(hpcml::bench::summary_out(), "; with y a copy of x sorted %.4g s: %.2fx fused",
                     sorted_plain->seconds, plain->seconds / sorted_plain->seconds);
    if (plain && !plain->skipped)
        std::fprintf(hpcml::bench::summary_out(), "; fused without symmetry (y a copy of x) %.4g s: symmetry %.2fx",
                     plain->seconds, plain->seconds / fused.seconds);
    if (fused.name.find("/cpu/") != std::string::npos)
        std::fprintf(hpcml::bench::summary_out(), "; CPU kernel %s", std::string(hpcml::cpu_kernel()).c_str());
    std::fprintf(hpcml::bench::summary_out(), "\n");
}

void summarize(const Flags& flags, const std::vector<RunResult>& results) {
    const RunResult* fused = hpcml::bench::find_result(results, "similarity/fused/");
    const RunResult* naive = hpcml::bench::find_result(results, "similarity/naive/");
    auto peak = [](const RunResult& r) {
        return r.counters.count("peak_device_bytes")
                   ? r.counters.at("peak_device_bytes") + r.counters.at("peak_host_bytes")
                   : 0.0;
    };
    if (fused && naive && !fused->skipped && !naive->skipped) {
        std::fprintf(hpcml::bench::summary_out(),
                     "summary: fused %.4g s, naive %.4g s: %s; peak memory allocated by hpcml fused "
                     "%.3g MB, naive %.3g MB: "
                     "%.1fx less",
                     fused->seconds, naive->seconds,
                     hpcml::bench::faster_or_slower("fused", fused->seconds, naive->seconds).c_str(),
                     peak(*fused) / 1e6, peak(*naive) / 1e6, peak(*naive) / std::max(peak(*fused), 1.0));
        const auto energy = [](const RunResult& r) {
            const auto it = r.counters.find("energy_per_iteration_J");
            return it == r.counters.end() ? 0.0 : it->second;
        };
        if (energy(*fused) > 0 && energy(*naive) > 0) {
            std::fprintf(hpcml::bench::summary_out(), "; energy fused %.4g J, naive %.4g J: %.1fx less", energy(*fused),
                         energy(*naive), energy(*naive) / energy(*fused));
        } else {
            std::fprintf(hpcml::bench::summary_out(), "; energy %s",
                         hpcml::bench::energy_source(hpcml::bench::context(flags)).c_str());
        }
        print_symmetry(*fused, results);
    } else if (fused && !fused->skipped) {
        std::fprintf(hpcml::bench::summary_out(), "summary: fused %.4g s, peak memory allocated by hpcml %.3g MB%s%s",
                     fused->seconds, peak(*fused) / 1e6, naive ? "; naive skipped: " : "",
                     naive ? naive->message.c_str() : "");
        print_symmetry(*fused, results);
    } else if (fused) {
        std::fprintf(hpcml::bench::summary_out(), "summary: fused failed: %s\n", fused->message.c_str());
    } else if (naive && naive->skipped) {  // --method naive alone
        std::fprintf(hpcml::bench::summary_out(), "summary: naive skipped: %s\n", naive->message.c_str());
    }
}

}  // namespace

int main(int argc, char** argv) {
    return hpcml::bench::run(
        argc, argv,
        {"bench_similarity",
         "pairwise similarity S[i,j] = #{s : |x[s,i] - y[s,j]| < t},\n"
         "the fused and sorted methods beside the naive broadcast",
         declare, register_benchmarks, summarize, {hpcml::Method::Fused, hpcml::Method::Sorted, hpcml::Method::Naive}});
}
