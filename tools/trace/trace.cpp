// hpcml-trace: runs a command while sampling one GPU through NVML, writes the trace and prints a
// summary (duration, energy, mean and peak power, mean utilisation), and exits with the
// command's status. Without a GPU or NVML it says why and exits 2 without running the command,
// unless --allow-missing is given (then the command runs untraced).
#include <hpcml/telemetry.hpp>

#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <climits>
#include <chrono>
#include <csignal>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <iostream>
#include <string>
#include <vector>

#include <hpcml/core.hpp>

#include "cli/flags.hpp"

namespace {

void usage(std::FILE* out, const hpcml::cli::Flags& flags) {
    std::fprintf(out,
                 "usage: hpcml-trace [--device N] [--interval-ms MS] [--output FILE] [--format seed|csv|json]\n"
                 "                   [--allow-missing] -- COMMAND [ARGS...]\n"
                 "\n"
                 "Runs COMMAND while sampling GPU N (CUDA ordinal, matched to NVML by PCI bus id) every MS\n"
                 "milliseconds: temperature, power (W and %% of the limit), GPU and memory utilisation, memory\n"
                 "used, energy (NVML's total-energy counter, or the integral of power where it is not\n"
                 "supported). Writes the trace to FILE (default: none) and a summary to stderr, and exits\n"
                 "with COMMAND's status.\n"
                 "\n");
    flags.print(out);
    std::fprintf(out,
                 "\n"
                 "Exit status: COMMAND's (128 + signal if it was killed; 127 not found, 126 not executable,\n"
                 "as in a shell); 2 no GPU telemetry (and COMMAND not run); 1 bad command line. A trace\n"
                 "that could not be written is reported on stderr.\n");
}

int bad_usage(const std::string& message, const hpcml::cli::Flags& flags) {
    std::fprintf(stderr, "hpcml-trace: %s\n\n", message.c_str());
    usage(stderr, flags);
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

}  // namespace

int main(int argc, char** argv) {
    hpcml::cli::Flags flags;
    flags.add("device", "0", "CUDA device ordinal", "N");
    flags.add("interval-ms", "100", "sampling interval", "MS");
    flags.add("output", "", "write the trace here", "FILE");
    flags.add("format", "seed", "seed (the seed's ';' CSV), csv or json", "F");
    flags.add_switch("allow-missing", "without a GPU or NVML, run COMMAND untraced instead of exiting 2");
    int device = 0;
    long interval_ms = 100;
    hpcml::telemetry::Format format;
    try {
        flags.parse(argc, argv);
        if (flags.help_requested()) {
            usage(stdout, flags);
            return 0;
        }
        if (!flags.positionals().empty())
            return bad_usage("unknown argument '" + flags.positionals().front() + "' (the command goes after --)",
                             flags);
        device = static_cast<int>(
            std::min<long long>(flags.integer("device", 0), INT_MAX));  // no such device: telemetry says so
        interval_ms = static_cast<long>(flags.integer("interval-ms", 1));
    } catch (const hpcml::Error& e) {
        return bad_usage(e.what(), flags);
    }
    try {
        format = hpcml::telemetry::parse_format(flags.str("format"));
    } catch (const hpcml::Error& e) {
        return bad_usage(std::string("--") + e.what(), flags);
    }
    char** command = const_cast<char**>(flags.rest().data());
    if (!command[0]) return bad_usage("no command: put it after --", flags);
    const std::string output = flags.str("output");
    const bool allow_missing = flags.on("allow-missing");

    const hpcml::telemetry::Status status = hpcml::telemetry::status(device);
    if (status.availability != hpcml::telemetry::Availability::Ok) {
        if (!allow_missing) {
            std::fprintf(stderr,
                         "hpcml-trace: no GPU telemetry, so '%s' was not run: %s\n"
                         "(--allow-missing runs it untraced)\n",
                         command[0], status.message.c_str());
            return 2;
        }
        std::fprintf(stderr, "hpcml-trace: no GPU telemetry (%s); running '%s' untraced\n", status.message.c_str(),
                     command[0]);
        return run(command);
    }

    std::ofstream file;
    if (!output.empty()) {
        file.open(output);
        if (!file) return bad_usage("--output: cannot write '" + output + "'", flags);
    }
    try {
        hpcml::telemetry::Sampler sampler(device, std::chrono::milliseconds(interval_ms));
        sampler.start();
        const int exit_status = run(command);
        const hpcml::telemetry::Summary s = sampler.stop();
        if (file.is_open()) {
            hpcml::telemetry::write(file, sampler.samples(), s, format, sampler.device_name());
            file.close();
            if (!file) std::fprintf(stderr, "hpcml-trace: error: --output: writing '%s' failed\n", output.c_str());
        }
        std::fprintf(stderr,
                     "hpcml-trace: %s: %.2f s, %zu samples, energy %.1f J (%s), mean power %.1f W, peak %.1f W, "
                     "mean GPU util %.0f%%, mean memory util %.0f%%; exit status %d\n",
                     sampler.device_name().c_str(), s.duration_s, s.samples, s.energy_j,
                     s.energy_from_counter ? "energy counter" : "integrated power", s.mean_power_w, s.peak_power_w,
                     s.mean_gpu_util_percent, s.mean_memory_util_percent, exit_status);
        return exit_status;
    } catch (const hpcml::Error& e) {
        std::fprintf(stderr, "hpcml-trace: %s\n", e.what());
        return 2;
    }
}
