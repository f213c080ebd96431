// The one main() of every bench_* program: Google Benchmark plus the program's own flags
// (`--tile 1000` or `--tile=1000`), run context (device, backend, commit), counters for peak
// memory and throughput, wall-clock or CUDA-event timing, and a plain summary at the end.
#pragma once

#include <hpcml/core.hpp>

#include <benchmark/benchmark.h>

#include "cli/flags.hpp"

#include <cstddef>
#include <cstdio>
#include <cstdlib>
#include <functional>
#include <map>
#include <memory>
#include <string>
#include <vector>

namespace hpcml::bench {

// The program's own flags: the command-line parser every hpcml program shares.
using Flags = cli::Flags;

// The flags every program shares (declared by run()): --backend auto|cpu|cuda, --device N and
// --method, one of the program's methods (Program::methods, or auto) or "every" (all of them, the
// default). methods(): the methods to run; context(): the backend and device they resolve to
// (make_context's choice, for the benchmarks' names).
std::vector<Method> methods(const Flags& flags);
int device(const Flags& flags);
Context context(const Flags& flags);

// One finished benchmark run, as the summary sees it.
struct RunResult {
    std::string name;
    double seconds = 0.0;  // per iteration (manual time where the benchmark sets it)
    std::map<std::string, double> counters;
    bool skipped = false;
    std::string message;  // why it was skipped
};

struct Program {
    const char* name;
    const char* description;
    std::function<void(Flags&)> declare_flags;  // add the program's own flags
    std::function<void(const Flags&)> register_benchmarks;
    std::function<void(const Flags&, const std::vector<RunResult>&)> summarize;
    std::vector<Method> methods{Method::Fused, Method::Naive};  // the family's methods, fastest kind first
};

int run(int argc, char** argv, const Program& program);

// Where summaries go: stdout after the console table, stderr when stdout carries JSON
// (--benchmark_format=json), so that it stays valid.
std::FILE* summary_out();

// "fused is 3.2x faster", or "fused is 4.1x slower" where `seconds` is the longer time: a
// summary's comparison of `name`'s time with its peer's.
std::string faster_or_slower(const std::string& name, double seconds, double peer_seconds);

// The run whose name starts with `prefix`: its median over repetitions where there is one.
const RunResult* find_result(const std::vector<RunResult>& results, const std::string& prefix);

// Time `body` once and record it as this iteration's time (benchmarks that use them register
// with ->UseManualTime()): time_wall by the steady clock, the whole call end to end; time_device
// by CUDA events on `context`'s stream where it is a CUDA context, so that only device work
// counts (by the steady clock on the CPU). Each returns the seconds it recorded.
double time_wall(benchmark::State& state, const std::function<void()>& body);
double time_device(benchmark::State& state, const Context& context, const std::function<void()>& body);

// Energy around a benchmark's timed loop: construct before the loop, report() after it. Sets
// energy_per_iteration_J and mean_power_W, for a CUDA context from NVML's energy counter (or
// integrated power), on the CPU backend from powercap's package and DRAM counters (the whole
// machine's CPUs, not this process alone), and nothing where they are unavailable
// (energy_source says why). NVML's counter updates every 20-100 ms, so run loops of a second or
// more on a GPU (--benchmark_min_time=1).
std::string energy_source(const Context& context);  // what measures energy, or "not measured: why"
class EnergyWindow {
public:
    explicit EnergyWindow(const Context& context);
    ~EnergyWindow();
    EnergyWindow(const EnergyWindow&) = delete;
    EnergyWindow& operator=(const EnergyWindow&) = delete;
    void report(benchmark::State& state);

private:
    struct Impl;
    std::unique_ptr<Impl> impl_;
};

// Peak device and host bytes as counters (reported in binary units).
void set_memory_counters(benchmark::State& state, const MemoryStats& stats);

// bandwidth_fraction: bytes moved per iteration over the device's theoretical peak
// (2 x memory clock x bus width / 8); nothing where the device reports no peak.
void set_bandwidth_fraction(benchmark::State& state, int device, double bytes_per_iteration);

// n elements of T, uninitialised, in transparent huge pages where Linux grants them (2 MiB
// aligned, madvise(MADV_HUGEPAGE)), as NumPy allocates its large arrays: a memory-bound CPU
// kernel then runs with the TLB reach that a NumPy user's array gives it (worth ~15% to the
// regret pass on Zen 4 when memory is fast).
void* huge_page_allocate(std::size_t bytes);  // std::bad_alloc where it cannot
template <class T>
class HugePageArray {
public:
    explicit HugePageArray(std::size_t n = 0)
        : n_(n), data_(n ? static_cast<T*>(huge_page_allocate(n * sizeof(T))) : nullptr) {}
    T* data() const { return data_.get(); }
    std::size_t size() const { return n_; }
    T* begin() const { return data(); }
    T* end() const { return data() + n_; }
    T& operator[](std::size_t i) const { return data_.get()[i]; }

private:
    struct Free {
        void operator()(T* p) const { std::free(p); }
    };
    std::size_t n_;
    std::unique_ptr<T, Free> data_;
};

// The CPU's memory bandwidth, bytes/s, as a STREAM triad measures it (a[i] = b[i] + s c[i] over
// three arrays of 128 MiB, far past the last-level cache, on every thread, best of three;
// 24 bytes per element): measured once per process. The floor of a memory-bound CPU kernel is
// its bytes over this; cpu_bandwidth_fraction is bytes moved per iteration over it.
double cpu_stream_bandwidth();
void set_cpu_bandwidth_fraction(benchmark::State& state, double bytes_per_iteration);

// Before anything is timed, each program checks its fused path against a reference (the naive
// baseline or the CPU) on a small slice of its workload: a line on stderr says what was
// compared, and a difference ends the program with an error (exit 1) instead of timing it.
void check_before_timing(const std::string& program, const std::string& what, bool agrees);
// The same check where one benchmark starts (bench_similarity's, per method, so that one method's
// failure cannot cost the others' numbers): the same line on stderr; where `agrees` is false,
// the message to skip that benchmark with (SkipWithError), and the program exits 1 once the
// others have run. "" where it agrees.
std::string check_at_start(const std::string& program, const std::string& what, bool agrees);

// Skips the benchmark with hpcml's message (for example a naive run that would not fit).
void skip_with_error(benchmark::State& state, const std::exception& error);

// "NVIDIA H100 80GB HBM3 (device 0)" or "CPU: 2 threads".
std::string describe(const Context& context);

}  // namespace hpcml::bench
