// bench_invgauss: the inverse Gaussian's elementwise throughput (pdf and cdf, bytes/s and, on
// the GPU, the fraction of the memory bandwidth: device arrays, kernel time), its sampling rate,
// and the distance-to-normal batch, fused vs naive (time, peak memory).
#include <hpcml/device_memory.hpp>
#include <hpcml/invgauss.hpp>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <memory>
#include <random>
#include <string>
#include <vector>

#include "common/bench_main.hpp"

namespace {

namespace ig = hpcml::invgauss;
using hpcml::bench::Flags;
using hpcml::bench::RunResult;

struct Config {
    std::size_t elements, params, grid;
    hpcml::Backend backend;
    int device;
};

ig::InvGaussOptions on(hpcml::Backend backend, int device) {
    ig::InvGaussOptions options;
    options.backend = backend;
    options.device = device;
    return options;
}

// The elementwise benchmarks' inputs, made (and on the GPU uploaded) once per type: Google
// Benchmark calls each benchmark function several times (its estimate, then each repetition), and
// at 2e7 elements drawing and uploading them in each call outlasted the GPU suite's part.
template <class T>
struct ElementwiseInputs {
    std::vector<T> x, out;
    hpcml::DeviceMemory dx, dout, dparams;  // empty on the CPU
    static constexpr T mu = 1, lam = 3;
};

template <class T>
ElementwiseInputs<T>& elementwise_inputs(const Config& c, bool cuda) {
    static std::unique_ptr<ElementwiseInputs<T>> made;
    if (made) return *made;
    auto inputs = std::make_unique<ElementwiseInputs<T>>();
    inputs->x.resize(c.elements);
    std::mt19937 rng(1);
    std::uniform_real_distribution<double> u(0.05, 4.0);
    for (T& v : inputs->x) v = static_cast<T>(u(rng));
    if (cuda) {
        const T params[2] = {ElementwiseInputs<T>::mu, ElementwiseInputs<T>::lam};
        inputs->dx = hpcml::DeviceMemory(c.elements * sizeof(T), c.device, "the elementwise input");
        inputs->dx.upload(inputs->x.data(), inputs->dx.bytes());
        inputs->dout = hpcml::DeviceMemory(c.elements * sizeof(T), c.device, "the elementwise output");
        inputs->dparams = hpcml::DeviceMemory(sizeof params, c.device, "the parameters");
        inputs->dparams.upload(params, sizeof params);
    } else {
        inputs->out.assign(c.elements, T(0));  // its pages faulted in here, not in the timed calls
    }
    made = std::move(inputs);
    return *made;
}

// Elementwise f on n values with scalar parameters: 2 n sizeof(T) bytes moved.
template <class T>
void run_elementwise(benchmark::State& state, const Config& c, ig::Function f) {
    const ig::InvGaussOptions options = on(c.backend, c.device);
    const hpcml::Context context = hpcml::make_context(c.backend, c.device);
    const bool cuda = context.backend == hpcml::Backend::Cuda;
    ElementwiseInputs<T>* in = nullptr;
    try {
        in = &elementwise_inputs<T>(c, cuda);
    } catch (const hpcml::Error& e) {
        hpcml::bench::skip_with_error(state, e);
        return;
    }
    if (cuda) {
        const T* parameters = in->dparams.template data_as<const T>();
        for (auto _ : state)
            hpcml::bench::time_device(state, context, [&] {
                ig::evaluate_device<T>(f, in->dx.template data_as<const T>(), c.elements, parameters, 1, parameters + 1,
                                       1, in->dout.template data_as<T>(), options);
            });
        hpcml::bench::set_bandwidth_fraction(state, c.device, 2.0 * in->dx.bytes());
    } else {
        const T mu = ElementwiseInputs<T>::mu, lam = ElementwiseInputs<T>::lam;
        for (auto _ : state)
            hpcml::bench::time_wall(
                state, [&] { ig::evaluate<T>(f, in->x.data(), c.elements, &mu, 1, &lam, 1, in->out.data(), options); });
    }
    state.counters["bytes/s"] = benchmark::Counter(
        2.0 * c.elements * sizeof(T), benchmark::Counter::kIsIterationInvariantRate, benchmark::Counter::kIs1024);
    state.counters["elements/s"] =
        benchmark::Counter(static_cast<double>(c.elements), benchmark::Counter::kIsIterationInvariantRate);
}

void run_sample(benchmark::State& state, const Config& c) {
    static std::vector<double> out;  // made once, its pages faulted in before any timed call
    out.assign(c.elements, 0.0);
    const double mu = 1.0, lam = 3.0;
    const ig::InvGaussOptions options = on(c.backend, c.device);
    for (auto _ : state)
        hpcml::bench::time_wall(state,
                                [&] { ig::sample<double>(c.elements, &mu, 1, &lam, 1, 7, out.data(), options); });
    state.counters["samples/s"] =
        benchmark::Counter(static_cast<double>(c.elements), benchmark::Counter::kIsIterationInvariantRate);
}

void run_distance(benchmark::State& state, const Config& c, hpcml::Method method) {
    std::vector<double> mu(c.params, 1.0), lam(c.params);
    for (std::size_t k = 0; k < c.params; ++k)
        lam[k] = std::pow(10.0, std::log10(2.0) + (5 - std::log10(2.0)) * k / std::max<std::size_t>(c.params - 1, 1));
    ig::DistanceOptions o;
    o.grid_points = c.grid;
    o.method = method;
    o.backend = c.backend;
    o.device = c.device;
    hpcml::RunStats stats;
    hpcml::bench::EnergyWindow energy(hpcml::make_context(c.backend, c.device));
    for (auto _ : state) {
        try {
            hpcml::bench::time_wall(state,
                                    [&] { stats = ig::distance_to_normal(mu.data(), lam.data(), c.params, o).stats; });
        } catch (const hpcml::Error& e) {
            hpcml::bench::skip_with_error(state, e);
            return;
        }
    }
    energy.report(state);
    hpcml::bench::set_memory_counters(state, stats.memory);
    state.counters["points/s"] =
        benchmark::Counter(static_cast<double>(c.params) * c.grid, benchmark::Counter::kIsIterationInvariantRate);
}

void declare(Flags& flags) {
    flags.add("elements", "10000000", "elements for the elementwise and sampling benchmarks");
    flags.add("params", "1000", "(mu, lambda) pairs of the distance batch");
    flags.add("grid", "10000", "grid points of the distance batch");
}

// On the benchmark's backend: pdf and cdf against the CPU on 10 000 values (relative 1e-12), and
// the fused distances against the CPU's naive broadcast on 20 pairs (relative 1e-8).
void check(const Config& c) {
    std::vector<double> x(10000), host(x.size()), device(x.size());
    for (std::size_t k = 0; k < x.size(); ++k) x[k] = 0.05 + 4.0 * static_cast<double>(k) / x.size();
    const double mu = 1, lam = 3;
    auto rel = [](double a, double b) { return std::fabs(a - b) / std::max(std::fabs(b), 1e-300); };
    bool agree = true;
    for (ig::Function f : {ig::Function::Pdf, ig::Function::Cdf}) {
        ig::evaluate<double>(f, x.data(), x.size(), &mu, 1, &lam, 1, device.data(), on(c.backend, c.device));
        ig::evaluate<double>(f, x.data(), x.size(), &mu, 1, &lam, 1, host.data(), on(hpcml::Backend::Cpu, 0));
        for (std::size_t k = 0; k < x.size(); ++k) agree = agree && rel(device[k], host[k]) < 1e-12;
    }
    std::vector<double> mus(20, 0.5), lams(20);
    for (std::size_t k = 0; k < lams.size(); ++k) lams[k] = 0.5 * std::pow(10.0, -2.0 + 9.0 * k / 19);
    ig::DistanceOptions fused, reference;
    fused.backend = c.backend;
    fused.device = c.device;
    reference.backend = hpcml::Backend::Cpu;
    reference.method = hpcml::Method::Naive;
    const auto d = ig::distance_to_normal(mus.data(), lams.data(), mus.size(), fused);
    const auto r = ig::distance_to_normal(mus.data(), lams.data(), mus.size(), reference);
    for (std::size_t k = 0; k < mus.size(); ++k)
        agree = agree && rel(d.total_variation[k], r.total_variation[k]) < 1e-8 &&
                rel(d.kolmogorov[k], r.kolmogorov[k]) < 1e-8;
    hpcml::bench::check_before_timing("bench_invgauss",
                                      "pdf, cdf and fused distances (" + std::string(hpcml::to_string(c.backend)) +
                                          ") against the CPU's and its naive broadcast",
                                      agree);
}

void register_benchmarks(const Flags& flags) {
    Config c{static_cast<std::size_t>(flags.integer("elements", 1)),
             static_cast<std::size_t>(flags.integer("params", 1)), static_cast<std::size_t>(flags.integer("grid", 2)),
             hpcml::bench::context(flags).backend, hpcml::bench::device(flags)};
    check(c);
    const std::string where = std::string(hpcml::to_string(c.backend));
    const std::string n = std::to_string(c.elements);
    auto add = [](const std::string& name, auto fn) {
        benchmark::RegisterBenchmark(name.c_str(), fn)->UseManualTime()->Unit(benchmark::kMillisecond);
    };
    add("invgauss/pdf/double/" + where + "/n:" + n,
        [c](benchmark::State& s) { run_elementwise<double>(s, c, ig::Function::Pdf); });
    add("invgauss/cdf/double/" + where + "/n:" + n,
        [c](benchmark::State& s) { run_elementwise<double>(s, c, ig::Function::Cdf); });
    add("invgauss/pdf/float/" + where + "/n:" + n,
        [c](benchmark::State& s) { run_elementwise<float>(s, c, ig::Function::Pdf); });
    add("invgauss/sample/double/" + where + "/n:" + n, [c](benchmark::State& s) { run_sample(s, c); });
    for (hpcml::Method method : hpcml::bench::methods(flags)) {
        add("invgauss/distance/" + std::string(hpcml::to_string(method)) + "/" + where +
                "/params:" + std::to_string(c.params) + "/grid:" + std::to_string(c.grid),
            [c, method](benchmark::State& s) { run_distance(s, c, method); });
    }
}

void summarize(const Flags&, const std::vector<RunResult>& results) {
    const RunResult* fused = hpcml::bench::find_result(results, "invgauss/distance/fused/");
    const RunResult* naive = hpcml::bench::find_result(results, "invgauss/distance/naive/");
    auto peak = [](const RunResult& r) {
        return r.counters.at("peak_device_bytes") + r.counters.at("peak_host_bytes");
    };
    if (fused && naive && !fused->skipped && !naive->skipped) {
        std::fprintf(hpcml::bench::summary_out(),
                     "summary: distances fused %.4g s, naive %.4g s: %s; peak memory allocated by hpcml "
                     "fused %.3g MB, naive %.3g MB (%.2f%%)\n",
                     fused->seconds, naive->seconds,
                     hpcml::bench::faster_or_slower("fused", fused->seconds, naive->seconds).c_str(),
                     peak(*fused) / 1e6, peak(*naive) / 1e6, 100.0 * peak(*fused) / std::max(peak(*naive), 1.0));
    } else if (naive && naive->skipped) {
        std::fprintf(hpcml::bench::summary_out(), "summary: distances naive skipped: %s\n", naive->message.c_str());
    }
}

}  // namespace

int main(int argc, char** argv) {
    return hpcml::bench::run(
        argc, argv,
        {"bench_invgauss", "inverse Gaussian: elementwise throughput, sampling, distances fused vs naive", declare,
         register_benchmarks, summarize});
}
