// hpcml-trace: runs a command while sampling one GPU through NVML and the CPUs' package and DRAM
// energy through powercap, writes the trace (the GPU's; the CPU's where there is no GPU) and
// prints a summary (duration, energy, mean and peak power, mean utilisation, CPU energy), and
// exits with the command's status. Where there is neither, it times the command and says why the
// rest was not measured; --strict refuses (exit 2, the command not run) where there is no GPU
// telemetry, as hpcml.telemetry.trace(strict=True) does.
#include <hpcml/telemetry.hpp>

#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <climits>
#include <chrono>
#include <csignal>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <iostream>
#include <condition_variable>
#include <mutex>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include <hpcml/core.hpp>

#include "cli/flags.hpp"

namespace {

void usage(std::FILE* out, const hpcml::cli::Flags& flags) {
    std::fprintf(out,
                 "usage: hpcml-trace [--device N] [--interval-ms MS] [--output FILE] [--format %s]\n"
                 "                   [--emissions FILE [--carbon-intensity G]] [--strict] -- COMMAND [ARGS...]\n"
                 "\n"
                 "Runs COMMAND while sampling GPU N (CUDA ordinal, matched to NVML by PCI bus id) every MS\n"
                 "milliseconds: temperature, power (W and %% of the limit), GPU and memory utilisation, memory\n"
                 "used, energy (NVML's total-energy counter, or the integral of power where it is not\n"
                 "supported); and the CPUs' package and DRAM energy (Linux powercap, RAPL). Writes the GPU's\n"
                 "trace to FILE (default: none), or, without a GPU, the CPU's (csv or json: time_s,\n"
                 "unix_time_s, cpu_energy_j, cpu_power_w), a summary to stderr, and exits with COMMAND's\n"
                 "status. With neither, COMMAND is timed and the summary says why nothing else was measured.\n"
                 "\n",
                 hpcml::cli::one_of(hpcml::telemetry::format_names()).c_str());
    flags.print(out);
    std::fprintf(out,
                 "\n"
                 "Exit status: COMMAND's (128 + signal if it was killed; 127 not found, 126 not executable,\n"
                 "as in a shell); 2 with --strict, no GPU telemetry (and COMMAND not run); 1 bad command line.\n"
                 "A trace or an emissions row that could not be written is reported on stderr.\n");
}

// Exit status 1 (2 is --strict's refusal): the error in one line and where the help is.
int bad_usage(const std::string& message) {
    std::fprintf(stderr, "hpcml-trace: error: %s\ntry 'hpcml-trace --help'\n", message.c_str());
    return 1;
}

volatile std::sig_atomic_t g_child = 0;

void pass_on(int signal) {
    if (g_child > 0) kill(static_cast<pid_t>(g_child), signal);
}

// Runs argv[0] with its arguments; returns its exit status as a shell would.
int run(char** argv) {
    std::fflush(nullptr);  // nothing buffered may be written twice, by the child too
    const pid_t child = fork();
    if (child < 0) {
        std::fprintf(stderr, "hpcml-trace: fork failed: %s\n", std::strerror(errno));
        return 1;
    }
    if (child == 0) {
        execvp(argv[0], argv);
        const int error = errno;
        std::fprintf(stderr, "hpcml-trace: cannot run '%s': %s\n", argv[0], std::strerror(error));
        _exit(error == ENOENT ? 127 : 126);
    }
    // While COMMAND runs: the terminal's Ctrl-C (SIGINT, SIGQUIT) reaches it directly, so it is
    // ignored here, as system() does, and the trace of the interrupted run is still written;
    // SIGTERM and SIGHUP (a batch system ending the job) are passed on to COMMAND.
    g_child = child;
    struct sigaction ignore {
    }, forward{}, old_int{}, old_quit{}, old_term{}, old_hup{};
    ignore.sa_handler = SIG_IGN;
    forward.sa_handler = pass_on;
    sigemptyset(&ignore.sa_mask);
    sigemptyset(&forward.sa_mask);
    sigaction(SIGINT, &ignore, &old_int);
    sigaction(SIGQUIT, &ignore, &old_quit);
    sigaction(SIGTERM, &forward, &old_term);
    sigaction(SIGHUP, &forward, &old_hup);
    int status = 0;
    int result = 0;
    while ((result = waitpid(child, &status, 0)) < 0 && errno == EINTR) {}
    sigaction(SIGINT, &old_int, nullptr);
    sigaction(SIGQUIT, &old_quit, nullptr);
    sigaction(SIGTERM, &old_term, nullptr);
    sigaction(SIGHUP, &old_hup, nullptr);
    g_child = 0;
    if (result < 0) return 1;
    if (WIFEXITED(status)) return WEXITSTATUS(status);
    if (WIFSIGNALED(status)) return 128 + WTERMSIG(status);
    return 1;
}

// The CPUs' energy while COMMAND runs: read every interval (so that counter wraps are folded in)
// into (seconds, joules since the start) samples, on a thread of its own.
class CpuTrace {
public:
    explicit CpuTrace(std::chrono::milliseconds interval)
        : unix_start_(std::chrono::duration<double>(std::chrono::system_clock::now().time_since_epoch()).count()),
          thread_([this, interval] {
              std::unique_lock<std::mutex> lock(mutex_);
              while (!cv_.wait_for(lock, interval, [this] { return stop_; })) take();
          }) {}
    ~CpuTrace() {
        if (thread_.joinable()) finish();
    }
    // Stops, takes the last reading; the energy, or why there is none.
    hpcml::telemetry::CpuEnergy finish() {
        {
            const std::lock_guard<std::mutex> lock(mutex_);
            stop_ = true;
        }
        cv_.notify_all();
        if (thread_.joinable()) thread_.join();
        take();  // the window ends with the command
        return last_;
    }
    const hpcml::telemetry::CpuEnergyStatus& status() const { return meter_.status(); }

    void write(std::ostream& out, hpcml::telemetry::Format format) const {
        const bool json = format == hpcml::telemetry::Format::Json;
        out << (json ? "{\"cpu\": {\"domains\": [" : "time_s,unix_time_s,cpu_energy_j,cpu_power_w\n");
        if (json) {
            for (std::size_t k = 0; k < status().domains.size(); ++k)
                out << (k ? ", " : "") << quoted(status().domains[k]);
            out << "], ";
            if (last_.valid)
                out << "\"energy_j\": " << last_.energy_j;
            else
                out << "\"energy_j\": null, \"why\": " << quoted(last_.why);
            out << ", \"duration_s\": " << last_.seconds << "}, \"samples\": [";
        }
        for (std::size_t k = 0; k < samples_.size(); ++k) {
            const auto [t, e] = samples_[k];
            const double dt = k ? t - samples_[k - 1].first : t;
            const double power = dt > 0 ? (e - (k ? samples_[k - 1].second : 0.0)) / dt : 0.0;
            char line[160];
            std::snprintf(
                line, sizeof line,
                json ? "%s{\"time_s\": %.6f, \"unix_time_s\": %.6f, \"cpu_energy_j\": %.6f, \"cpu_power_w\": %.3f}"
                     : "%s%.6f,%.6f,%.6f,%.3f\n",
                json && k ? ", " : "", t, unix_start_ + t, e, power);
            out << line;
        }
        if (json) out << "]}\n";
    }

private:
    static std::string quoted(const std::string& text) {
        std::string out = "\"";
        for (const char c : text) {
            if (c == '"' || c == '\\') out += '\\';
            out += c;
        }
        return out + '"';
    }
    void take() {
        if (!last_.why.empty() && last_.why.find("shorter") == std::string::npos) return;  // a failure stays
        last_ = meter_.read();
        if (last_.valid) samples_.emplace_back(last_.seconds, last_.energy_j);
    }

    hpcml::telemetry::CpuEnergyMeter meter_;
    double unix_start_;
    hpcml::telemetry::CpuEnergy last_;
    std::vector<std::pair<double, double>> samples_;
    std::mutex mutex_;
    std::condition_variable cv_;
    bool stop_ = false;
    std::thread thread_;  // last: it starts once everything above exists
};

std::string describe(const hpcml::telemetry::CpuEnergy& e, const hpcml::telemetry::CpuEnergyStatus& status) {
    if (!e.valid) return "CPU energy not measured (" + e.why + ")";
    char text[96];
    std::snprintf(text, sizeof text, "CPU energy %.1f J, mean CPU power %.1f W", e.energy_j,
                  e.seconds > 0 ? e.energy_j / e.seconds : 0.0);
    return std::string(text) + " (" + status.message + ")";
}

// What the command line asks for.
struct Options {
    int device = 0;
    long interval_ms = 100;
    hpcml::telemetry::Format format = hpcml::telemetry::Format::Seed;
    char** command = nullptr;
    std::string output, emissions;
    bool strict = false;
    hpcml::telemetry::CarbonIntensity intensity;
};

hpcml::cli::Flags declare() {
    hpcml::cli::Flags flags;
    flags.add("device", "0", "CUDA device ordinal", "N");
    flags.add("interval-ms", "100", "sampling interval", "MS");
    flags.add("output", "", "write the trace here", "FILE");
    flags.add("format", "seed", hpcml::cli::one_of(hpcml::telemetry::format_names()) + " (seed: the seed's ';' CSV)",
              "F");
    flags.add_switch("strict", "without GPU telemetry (no GPU, no NVML), exit 2 and do not run COMMAND");
    flags.add_switch("allow-missing", "the default (kept for older command lines)");
    flags.add("emissions", "", "append the run's row to this CodeCarbon emissions.csv", "FILE");
    flags.add("carbon-intensity", "",
              "gCO2e/kWh for the emissions (default: $HPCML_CARBON_INTENSITY, else the world average, 475)", "G");
    return flags;
}

// The options, or the exit status where the program ends here (--help: 0; a bad command line: 1).
std::optional<Options> parse(hpcml::cli::Flags& flags, int argc, char** argv, int& exit_status) {
    Options o;
    exit_status = 1;
    try {
        flags.parse(argc, argv);
        if (flags.help_requested()) {
            usage(stdout, flags);
            exit_status = 0;
            return std::nullopt;
        }
        if (!flags.positionals().empty()) {
            bad_usage("unknown argument '" + flags.positionals().front() + "' (the command goes after --)");
            return std::nullopt;
        }
        o.device = static_cast<int>(
            std::min<long long>(flags.integer("device", 0), INT_MAX));  // no such device: telemetry says so
        o.interval_ms = static_cast<long>(flags.integer("interval-ms", 1));
    } catch (const hpcml::Error& e) {
        bad_usage(e.what());
        return std::nullopt;
    }
    try {
        o.format = hpcml::telemetry::parse_format(flags.str("format"));
    } catch (const hpcml::Error& e) {
        bad_usage(std::string("--") + e.what());
        return std::nullopt;
    }
    o.command = const_cast<char**>(flags.rest().data());
    if (!o.command[0]) {
        bad_usage("no command: put it after --");
        return std::nullopt;
    }
    o.output = flags.str("output");
    o.strict = flags.on("strict");
    if (o.strict && flags.on("allow-missing")) {
        bad_usage("--strict: refuses what --allow-missing allows; give one");
        return std::nullopt;
    }
    o.emissions = flags.str("emissions");
    try {
        const std::string given = flags.str("carbon-intensity");
        std::optional<double> value;
        if (!given.empty()) {
            char* end = nullptr;
            value = std::strtod(given.c_str(), &end);
            if (!end || *end != '\0') {
                bad_usage("--carbon-intensity: not a number: '" + given + "'");
                return std::nullopt;
            }
        }
        o.intensity = hpcml::telemetry::carbon_intensity(value, "--carbon-intensity");
    } catch (const hpcml::Error& e) {
        bad_usage(e.what());
        return std::nullopt;
    }
    return o;
}

// The run's row in emissions.csv (where --emissions asks), and the line that says what it holds.
void record_emissions(const Options& o, const hpcml::telemetry::EmissionsRun& run) {
    if (o.emissions.empty()) return;
    if (!run.cpu_energy_j && !run.gpu_energy_j) {
        std::fprintf(stderr, "hpcml-trace: --emissions: no row appended to %s: no energy was measured\n",
                     o.emissions.c_str());
        return;
    }
    try {
        hpcml::telemetry::append_emissions_csv(o.emissions, run, o.intensity);
        const double joules = run.cpu_energy_j.value_or(0.0) + run.gpu_energy_j.value_or(0.0);
        std::fprintf(stderr, "hpcml-trace: emissions %.4g g CO2e (%.4g kWh at %s) appended to %s\n",
                     1000.0 * hpcml::telemetry::emissions_kg(run, o.intensity), joules / 3.6e6,
                     o.intensity.label.c_str(), o.emissions.c_str());
    } catch (const hpcml::Error& e) {
        std::fprintf(stderr, "hpcml-trace: error: --emissions: %s\n", e.what());
    }
}

// Closes --output's file, saying so where writing it failed.
void close_output(std::ofstream& file, const Options& o) {
    file.close();
    if (!file) std::fprintf(stderr, "hpcml-trace: error: --output: writing '%s' failed\n", o.output.c_str());
}

// Without a GPU: the CPU's energy is the trace (csv where the seed's GPU format was asked for).
int trace_cpu(Options o, const hpcml::telemetry::Status& status, std::ofstream& file) {
    if (o.format == hpcml::telemetry::Format::Seed && file.is_open()) {
        std::fprintf(stderr,
                     "hpcml-trace: no GPU (%s): the CPU's trace goes to '%s' as csv (the seed's format "
                     "is the GPU's)\n",
                     status.message.c_str(), o.output.c_str());
        o.format = hpcml::telemetry::Format::Csv;
    }
    CpuTrace trace{std::chrono::milliseconds(o.interval_ms)};
    const int exit_status = run(o.command);
    const hpcml::telemetry::CpuEnergy e = trace.finish();
    if (file.is_open()) {
        trace.write(file, o.format);
        close_output(file, o);
    }
    std::fprintf(stderr, "hpcml-trace: no GPU (%s); %.2f s, %s; exit status %d\n", status.message.c_str(), e.seconds,
                 describe(e, trace.status()).c_str(), exit_status);
    hpcml::telemetry::EmissionsRun row;
    row.duration_s = e.seconds;
    if (e.valid) row.cpu_energy_j = e.energy_j;
    record_emissions(o, row);
    return exit_status;
}

// The GPU's samples (NVML) and the CPU's energy, around the command.
int trace_gpu(const Options& o, std::ofstream& file) {
    try {
        hpcml::telemetry::Sampler sampler(o.device, std::chrono::milliseconds(o.interval_ms));
        CpuTrace cpu_trace{std::chrono::milliseconds(o.interval_ms)};
        sampler.start();
        const int exit_status = run(o.command);
        const hpcml::telemetry::Summary s = sampler.stop();
        const hpcml::telemetry::CpuEnergy cpu_energy = cpu_trace.finish();
        if (file.is_open()) {
            hpcml::telemetry::write(file, sampler.samples(), s, o.format, sampler.device_name());
            close_output(file, o);
        }
        std::fprintf(stderr,
                     "hpcml-trace: %s: %.2f s, %zu samples, energy %.1f J (%s), mean power %.1f W, peak %.1f W (%s), "
                     "mean GPU util %.0f%%, mean memory util %.0f%%; %s; exit status %d\n",
                     sampler.device_name().c_str(), s.duration_s, s.samples, s.energy_j,
                     s.energy_from_counter ? "energy counter" : "integrated power", s.mean_power_w, s.peak_power_w,
                     s.power_instant ? "instantaneous power" : "NVML's 1 s average power", s.mean_gpu_util_percent,
                     s.mean_memory_util_percent, describe(cpu_energy, cpu_trace.status()).c_str(), exit_status);
        hpcml::telemetry::EmissionsRun row;
        row.duration_s = s.duration_s;
        row.gpu_energy_j = s.energy_j;
        if (cpu_energy.valid) row.cpu_energy_j = cpu_energy.energy_j;
        row.gpu_count = 1;
        row.gpu_model = sampler.device_name();
        row.gpu_utilization_percent = s.mean_gpu_util_percent;
        record_emissions(o, row);
        return exit_status;
    } catch (const hpcml::Error& e) {
        std::fprintf(stderr, "hpcml-trace: %s\n", e.what());
        return 2;
    }
}

}  // namespace

int main(int argc, char** argv) {
    hpcml::cli::Flags flags = declare();
    int exit_status = 1;
    const std::optional<Options> parsed = parse(flags, argc, argv, exit_status);
    if (!parsed) return exit_status;
    const Options& o = *parsed;

    const hpcml::telemetry::Status status = hpcml::telemetry::status(o.device);
    const bool gpu = status.availability == hpcml::telemetry::Availability::Ok;
    const hpcml::telemetry::CpuEnergyStatus cpu = hpcml::telemetry::cpu_energy_status();
    if (!gpu && o.strict) {
        std::fprintf(stderr, "hpcml-trace: no GPU telemetry, so '%s' was not run (--strict): %s; %s\n", o.command[0],
                     status.message.c_str(), cpu.message.c_str());
        return 2;
    }
    std::ofstream file;
    if (!o.output.empty()) {
        file.open(o.output);
        if (!file) return bad_usage("--output: cannot write '" + o.output + "': " + std::strerror(errno));
    }
    return gpu ? trace_gpu(o, file) : trace_cpu(o, status, file);
}
