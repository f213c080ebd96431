#include "bench_main.hpp"

#include <hpcml/device.hpp>
#include <hpcml/device_memory.hpp>
#include <hpcml/telemetry.hpp>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <iostream>
#include <memory>
#include <new>
#include <optional>
#include <sstream>
#include <thread>

#if defined(__linux__)
#include <sys/mman.h>
#endif

#ifdef _OPENMP
#include <omp.h>
#endif

#ifndef HPCML_GIT_COMMIT
#define HPCML_GIT_COMMIT "unknown"
#endif

namespace hpcml::bench {

namespace {

std::FILE* summary_stream = stdout;

// Forwards to the reporter Google Benchmark would have made, keeping each run for the summary.
class CollectingReporter : public benchmark::BenchmarkReporter {
public:
    explicit CollectingReporter(std::unique_ptr<benchmark::BenchmarkReporter> inner) : inner_(std::move(inner)) {}
    bool ReportContext(const Context& context) override { return inner_->ReportContext(context); }
    void ReportRuns(const std::vector<Run>& runs) override {
        for (const Run& run : runs) {
            // Repetitions: the median stands for the benchmark (see find_result).
            if (run.run_type == Run::RT_Aggregate && run.aggregate_name != "median") continue;
            RunResult result;
            result.name = run.benchmark_name();
            result.skipped = run.error_occurred;
            result.message = run.error_message;
            result.seconds =
                run.iterations ? run.GetAdjustedRealTime() / benchmark::GetTimeUnitMultiplier(run.time_unit) : 0.0;
            for (const auto& [key, counter] : run.counters) result.counters[key] = counter.value;
            results.push_back(std::move(result));
        }
        inner_->ReportRuns(runs);
    }
    void Finalize() override { inner_->Finalize(); }

    std::vector<RunResult> results;

private:
    std::unique_ptr<benchmark::BenchmarkReporter> inner_;
};

// Google Benchmark's console table, with its context (date, CPU, caches, load) less one line: a
// Debug build of the library (Debian's) warns "Library was built as DEBUG. Timings may be
// affected.", which is not so here: every time is taken by hpcml's own timers (manual time), as
// the context's hpcml_timers line says (and the JSON's context, whose library_build_type stays).
class DisplayReporter : public benchmark::ConsoleReporter {
public:
    bool ReportContext(const Context& context) override {
        std::ostream& err = GetErrorStream();
        std::ostringstream basic;
        SetErrorStream(&basic);
        const bool ok = ConsoleReporter::ReportContext(context);
        SetErrorStream(&err);
        std::istringstream lines(basic.str());
        for (std::string line; std::getline(lines, line);)
            if (line.find("Library was built as DEBUG") == std::string::npos) err << line << '\n';
        return ok;
    }
    static constexpr const char* kTimersNote =
        "hpcml's own (the steady clock around each whole call, or CUDA events on the "
        "call's stream for device work), reported as manual time";
};

std::unique_ptr<benchmark::BenchmarkReporter> display_reporter(const std::string& format) {
    if (format == "json") return std::make_unique<benchmark::JSONReporter>();
    return std::make_unique<DisplayReporter>();
}

}  // namespace

namespace {
std::vector<Method> program_methods;  // the running program's (run() sets them)

// --method's values: auto, the program's methods, every.
std::vector<std::string> method_choices() {
    std::vector<std::string> choices{"auto"};
    for (Method m : program_methods) choices.emplace_back(to_string(m));
    choices.emplace_back("every");
    return choices;
}
}  // namespace

std::vector<Method> methods(const Flags& flags) {
    const std::string& m = flags.choice("method", method_choices());
    if (m == "every") return program_methods;
    return {parse_method(m, "--method")};
}

int device(const Flags& flags) { return static_cast<int>(flags.integer("device", 0)); }

Context context(const Flags& flags) { return make_context(flags.backend(), device(flags)); }

std::string describe(const Context& context) {
    if (context.backend == Backend::Cuda) {
        const DeviceQuery query = query_devices();
        for (const DeviceInfo& d : query.devices) {
            if (d.index == context.device) return d.name + " (device " + std::to_string(d.index) + ")";
        }
        return "CUDA device " + std::to_string(context.device);
    }
#ifdef _OPENMP
    const int threads = omp_get_max_threads();
#else
    const int threads = 1;
#endif
    return "CPU, " + std::to_string(threads) + " thread(s) of " + std::to_string(std::thread::hardware_concurrency()) +
           " hardware";
}

double time_wall(benchmark::State& state, const std::function<void()>& body) {
    const auto start = std::chrono::steady_clock::now();
    body();
    const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    state.SetIterationTime(seconds);
    return seconds;
}

double time_device(benchmark::State& state, const Context& context, const std::function<void()>& body) {
    StreamTimer timer(context);
    timer.start();
    body();
    const double seconds = timer.stop();
    state.SetIterationTime(seconds);
    return seconds;
}

std::FILE* summary_out() { return summary_stream; }

std::string faster_or_slower(const std::string& name, double seconds, double peer_seconds) {
    char text[64];
    const bool faster = seconds <= peer_seconds;
    std::snprintf(text, sizeof text, "%.3gx %s", faster ? peer_seconds / seconds : seconds / peer_seconds,
                  faster ? "faster" : "slower");
    return name + " is " + text;
}

const RunResult* find_result(const std::vector<RunResult>& results, const std::string& prefix) {
    const RunResult* first = nullptr;
    for (const RunResult& r : results) {
        if (r.name.rfind(prefix, 0) != 0) continue;
        if (r.name.size() >= 7 && r.name.compare(r.name.size() - 7, 7, "_median") == 0) return &r;
        if (!first) first = &r;
    }
    return first;
}

std::string energy_source(const Context& context) {
    if (context.backend == Backend::Cuda) {
        const telemetry::Status status = telemetry::status(context.device);
        return status.availability == telemetry::Availability::Ok ? "NVML, " + status.device_name
                                                                  : "not measured: " + status.message;
    }
    const telemetry::CpuEnergyStatus status = telemetry::cpu_energy_status();
    return status.available ? status.message : "not measured: " + status.message;
}

struct EnergyWindow::Impl {
    std::optional<telemetry::Sampler> gpu;         // a CUDA context: NVML
    std::optional<telemetry::CpuEnergyMeter> cpu;  // the CPU backend: powercap
};

EnergyWindow::EnergyWindow(const Context& context) : impl_(std::make_unique<Impl>()) {
    if (context.backend != Backend::Cuda) {
        impl_->cpu.emplace();
    } else if (telemetry::status(context.device).availability == telemetry::Availability::Ok) {
        impl_->gpu.emplace(context.device, std::chrono::milliseconds(50));
        impl_->gpu->start();
    }
}

EnergyWindow::~EnergyWindow() = default;

void EnergyWindow::report(benchmark::State& state) {
    double joules = 0, seconds = 0;
    if (impl_->gpu) {
        const telemetry::Summary s = impl_->gpu->stop();
        joules = s.energy_j;
        seconds = s.duration_s;
    } else if (impl_->cpu) {
        const telemetry::CpuEnergy e = impl_->cpu->read();
        if (!e.valid) return;  // the context's hpcml_energy says why
        joules = e.energy_j;
        seconds = e.seconds;
    }
    if (state.iterations() == 0 || seconds <= 0) return;
    state.counters["energy_per_iteration_J"] = joules / static_cast<double>(state.iterations());
    state.counters["mean_power_W"] = joules / seconds;
}

void set_memory_counters(benchmark::State& state, const MemoryStats& stats) {
    using benchmark::Counter;
    state.counters["peak_device_bytes"] =
        Counter(static_cast<double>(stats.peak_device_bytes), Counter::kDefaults, Counter::kIs1024);
    state.counters["peak_host_bytes"] =
        Counter(static_cast<double>(stats.peak_host_bytes), Counter::kDefaults, Counter::kIs1024);
}

void set_bandwidth_fraction(benchmark::State& state, int device, double bytes_per_iteration) {
    for (const DeviceInfo& d : devices())
        if (d.index == device && d.peak_memory_bandwidth_gbps > 0)
            state.counters["bandwidth_fraction"] =
                benchmark::Counter(bytes_per_iteration / (d.peak_memory_bandwidth_gbps * 1e9),
                                   benchmark::Counter::kIsIterationInvariantRate);
}

void* huge_page_allocate(std::size_t bytes) {
    constexpr std::size_t kHugePage = std::size_t{2} << 20;
    const std::size_t rounded = (std::max<std::size_t>(bytes, 1) + kHugePage - 1) / kHugePage * kHugePage;
    void* p = std::aligned_alloc(kHugePage, rounded);
    if (!p) throw std::bad_alloc();
#if defined(MADV_HUGEPAGE)
    madvise(p, rounded, MADV_HUGEPAGE);  // advice only: where refused, 4 KiB pages
#endif
    return p;
}

double cpu_stream_bandwidth() {
    static const double bandwidth = [] {
        const std::size_t n = std::size_t{1} << 24;  // 128 MiB of doubles per array, like A in huge pages
        HugePageArray<double> a(n), b(n), c(n);
        const long long count = static_cast<long long>(n);
#pragma omp parallel for schedule(static)
        for (long long i = 0; i < count; ++i) a[i] = 0.0, b[i] = 1.0, c[i] = 2.0;  // first touch where they are used
        double best = 0.0;
        for (int round = 0; round < 3; ++round) {
            const auto start = std::chrono::steady_clock::now();
#pragma omp parallel for schedule(static)
            for (long long i = 0; i < count; ++i) a[i] = b[i] + 3.0 * c[i];
            const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
            best = std::max(best, 24.0 * static_cast<double>(n) / seconds);
        }
        return best;
    }();
    return bandwidth;
}

void set_cpu_bandwidth_fraction(benchmark::State& state, double bytes_per_iteration) {
    state.counters["cpu_bandwidth_fraction"] =
        benchmark::Counter(bytes_per_iteration / cpu_stream_bandwidth(), benchmark::Counter::kIsIterationInvariantRate);
}

void skip_with_error(benchmark::State& state, const std::exception& error) { state.SkipWithError(error.what()); }

void check_before_timing(const std::string& program, const std::string& what, bool agrees) {
    std::fprintf(stderr, "%s: checked %s: %s\n", program.c_str(), what.c_str(), agrees ? "agree" : "DIFFER");
    if (!agrees)
        throw Error(ErrorKind::Internal,
                    "the fused result differs from its reference (" + what + "); nothing was timed");
}

namespace {
bool a_check_failed = false;  // check_at_start found a difference: the program exits 1
}  // namespace

std::string check_at_start(const std::string& program, const std::string& what, bool agrees) {
    std::fprintf(stderr, "%s: checked %s: %s\n", program.c_str(), what.c_str(), agrees ? "agree" : "DIFFER");
    if (agrees) return "";
    a_check_failed = true;
    return "the result differs from its reference (" + what + "); not timed";
}

int run(int argc, char** argv, const Program& program) {
    Flags flags;
    flags.add("backend", "auto", cli::one_of(backend_names()));
    flags.add("device", "0", "CUDA device ordinal");
    program_methods = program.methods;
    std::string choices;
    for (const std::string& c : method_choices()) choices += (choices.empty() ? "" : "|") + c;
    flags.add("method", "every", choices);
    program.declare_flags(flags);

    std::string format = "console";
    for (int i = 1; i < argc; ++i) {
        if (std::strcmp(argv[i], "--help") == 0 || std::strcmp(argv[i], "-h") == 0) {
            std::printf("%s: %s\n\n", program.name, program.description);
            std::printf("%s flags (as --flag VALUE or --flag=VALUE):\n", program.name);
            flags.print(stdout);
            std::printf("\nGoogle Benchmark flags:\n");
            std::fflush(stdout);
            char help[] = "--help";
            char* help_argv[] = {argv[0], help, nullptr};
            int help_argc = 2;
            benchmark::Initialize(&help_argc, help_argv);  // prints its flags and exits
            return 0;
        }
        if (std::strncmp(argv[i], "--benchmark_format=", 19) == 0) format = argv[i] + 19;
        if (std::strcmp(argv[i], "--benchmark_format") == 0 && i + 1 < argc) format = argv[i + 1];
    }

    try {
        benchmark::Initialize(&argc, argv);
        flags.parse(argc, argv, Flags::Unknown::Keep);
        if (benchmark::ReportUnrecognizedArguments(argc, argv)) return 1;

        const Context context = bench::context(flags);
        benchmark::AddCustomContext("hpcml_version", version());
        benchmark::AddCustomContext("hpcml_commit", HPCML_GIT_COMMIT);
        benchmark::AddCustomContext("hpcml_backend", std::string(to_string(context.backend)));
        benchmark::AddCustomContext("hpcml_device", describe(context));
        benchmark::AddCustomContext("hpcml_energy", energy_source(context));
        benchmark::AddCustomContext("hpcml_timers", DisplayReporter::kTimersNote);
        if (context.backend == Backend::Cpu) {
            std::fprintf(stderr, "%s: running on the CPU backend (%s)\n", program.name,
                         query_devices().status == CudaStatus::Ok ? "as asked" : "no usable CUDA device");
        }
        program.register_benchmarks(flags);

        if (format != "console") summary_stream = stderr;
        CollectingReporter reporter(display_reporter(format));
        benchmark::RunSpecifiedBenchmarks(&reporter);
        benchmark::Shutdown();
        if (program.summarize) program.summarize(flags, reporter.results);
        if (a_check_failed)
            std::fprintf(stderr, "%s: error: a method's result differed; it was not timed\n", program.name);
        return a_check_failed ? 1 : 0;
    } catch (const Error& error) {
        // --backend cuda where none can run: exit 2, which scripts tell from a failure.
        if (error.kind() == ErrorKind::NoDevice || error.kind() == ErrorKind::DriverTooOld) {
            std::fprintf(stderr, "%s: no CUDA device: %s\n", program.name, error.what());
            return 2;
        }
        std::fprintf(stderr, "%s: error: %s\n", program.name, error.what());
        return 1;
    } catch (const std::exception& error) {  // std::bad_alloc from setting up
        std::fprintf(stderr, "%s: error: %s\n", program.name, error.what());
        return 1;
    }
}

}  // namespace hpcml::bench
