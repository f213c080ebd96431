// Emissions: energy times a carbon intensity, written in the columns and units of CodeCarbon 3.3's
// emissions.csv, so that CodeCarbon's tooling (and pandas code written for it) reads hpcml's runs.
#include <hpcml/telemetry.hpp>

#include <sys/utsname.h>
#include <unistd.h>

#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <ctime>
#include <cerrno>
#include <cstring>
#include <fstream>
#include <random>
#include <sstream>
#include <thread>

#include "common/error.hpp"

namespace hpcml::telemetry {

namespace {

constexpr double kJoulesPerKwh = 3.6e6;

std::string format_intensity(double grams_per_kwh) {
    char text[64];
    std::snprintf(text, sizeof text, "%g gCO2e/kWh", grams_per_kwh);
    return text;
}

// A CSV field, quoted where it holds a separator, a quote or a line break.
std::string field(const std::string& text) {
    if (text.find_first_of(",\"\n") == std::string::npos) return text;
    std::string out = "\"";
    for (const char c : text) out += c == '"' ? std::string("\"\"") : std::string(1, c);
    return out + '"';
}

// The shortest of 15 and 17 digits that reads back as `value` (as Python writes floats).
std::string number(double value) {
    char text[32];
    std::snprintf(text, sizeof text, "%.15g", value);
    if (std::strtod(text, nullptr) != value) std::snprintf(text, sizeof text, "%.17g", value);
    return text;
}

std::string uuid4() {
    std::random_device device;
    std::mt19937_64 bits((static_cast<std::uint64_t>(device()) << 32) ^ device());
    const std::uint64_t high = (bits() & ~0xF000ull) | 0x4000ull;                        // version 4
    const std::uint64_t low = (bits() & 0x3FFFFFFFFFFFFFFFull) | 0x8000000000000000ull;  // variant 1
    char text[40];
    std::snprintf(text, sizeof text, "%08x-%04x-%04x-%04x-%012llx", static_cast<unsigned>(high >> 32),
                  static_cast<unsigned>((high >> 16) & 0xFFFF), static_cast<unsigned>(high & 0xFFFF),
                  static_cast<unsigned>(low >> 48), static_cast<unsigned long long>(low & 0xFFFFFFFFFFFFull));
    return text;
}

std::string cpu_model() {
    std::ifstream in("/proc/cpuinfo");
    for (std::string line; std::getline(in, line);)
        if (line.rfind("model name", 0) == 0 && line.find(':') != std::string::npos) {
            const std::string name = line.substr(line.find(':') + 1);
            return name.substr(name.find_first_not_of(' ') == std::string::npos ? 0 : name.find_first_not_of(' '));
        }
    return "";
}

std::string os_name() {  // as Python's platform.platform() begins: Linux-<release>-<machine>
    utsname u{};
    if (uname(&u) != 0) return "";
    return std::string(u.sysname) + "-" + u.release + "-" + u.machine;
}

double ram_total_gb() {
    const long pages = sysconf(_SC_PHYS_PAGES), size = sysconf(_SC_PAGE_SIZE);
    return pages > 0 && size > 0 ? static_cast<double>(pages) * static_cast<double>(size) / (1u << 30) : 0.0;
}

}  // namespace

CarbonIntensity carbon_intensity(std::optional<double> given, std::string_view argument) {
    CarbonIntensity out;
    std::string source(argument);
    if (!given) {
        const char* environment = std::getenv("HPCML_CARBON_INTENSITY");
        if (environment && *environment) {
            char* end = nullptr;
            given = std::strtod(environment, &end);
            source = "HPCML_CARBON_INTENSITY";
            detail::require(end && *end == '\0', source + ": not a number: '" + environment + "'");
        }
    }
    if (!given) {
        out.label = format_intensity(out.grams_per_kwh) + ", the world average (no carbon intensity given)";
        return out;
    }
    detail::require(std::isfinite(*given) && *given >= 0,
                    source + ": a carbon intensity is a finite number of gCO2e/kWh >= 0, got " + number(*given));
    out.grams_per_kwh = *given;
    out.world_average = false;
    out.label = format_intensity(*given) + " (" + source + ")";
    return out;
}

std::string_view emissions_csv_header() {
    return "timestamp,project_name,run_id,experiment_id,duration,emissions,emissions_rate,cpu_power,gpu_power,"
           "ram_power,cpu_energy,gpu_energy,ram_energy,energy_consumed,water_consumed,country_name,country_iso_code,"
           "region,cloud_provider,cloud_region,os,python_version,codecarbon_version,cpu_count,cpu_model,gpu_count,"
           "gpu_model,longitude,latitude,ram_total_size,tracking_mode,cpu_utilization_percent,"
           "gpu_utilization_percent,ram_utilization_percent,ram_used_gb,on_cloud,pue,wue";
}

double emissions_kg(const EmissionsRun& run, const CarbonIntensity& intensity) {
    const double kwh = run.cpu_energy_j.value_or(0.0) / kJoulesPerKwh + run.gpu_energy_j.value_or(0.0) / kJoulesPerKwh;
    return kwh * intensity.grams_per_kwh / 1000.0;
}

std::string emissions_csv_row(const EmissionsRun& run, const CarbonIntensity& intensity) {
    const double cpu_kwh = run.cpu_energy_j.value_or(0.0) / kJoulesPerKwh;
    const double gpu_kwh = run.gpu_energy_j.value_or(0.0) / kJoulesPerKwh;
    const double total_kwh = cpu_kwh + gpu_kwh;
    const double kg = emissions_kg(run, intensity);
    const double seconds = run.duration_s;
    const auto per_second = [seconds](double value) { return seconds > 0 ? value / seconds : 0.0; };
    char timestamp[32];
    const std::time_t now = std::time(nullptr);
    std::tm local{};
    localtime_r(&now, &local);
    std::strftime(timestamp, sizeof timestamp, "%Y-%m-%dT%H:%M:%S", &local);
    const std::vector<std::string> fields = {timestamp,
                                             field(run.project_name),
                                             uuid4(),
                                             "5b0fa12a-3dd7-45bb-9766-cc326314d9f1",  // CodeCarbon's default experiment
                                             number(seconds),
                                             number(kg),
                                             number(per_second(kg)),
                                             number(per_second(run.cpu_energy_j.value_or(0.0))),
                                             number(per_second(run.gpu_energy_j.value_or(0.0))),
                                             "0",  // ram_power: DRAM is in the CPU's energy
                                             number(cpu_kwh),
                                             number(gpu_kwh),
                                             "0",
                                             number(total_kwh),
                                             "0",  // water_consumed
                                             field(intensity.label),
                                             "",
                                             "",
                                             "",
                                             "",
                                             field(os_name()),
                                             "",
                                             "",
                                             std::to_string(std::thread::hardware_concurrency()),
                                             field(cpu_model()),
                                             std::to_string(run.gpu_count),
                                             field(run.gpu_model),
                                             "",
                                             "",
                                             number(ram_total_gb()),
                                             "machine",
                                             "0",
                                             number(run.gpu_utilization_percent),
                                             "0",
                                             "0",
                                             "N",
                                             "1.0",
                                             "0.0"};
    std::string row;
    for (std::size_t k = 0; k < fields.size(); ++k) row += (k ? "," : "") + fields[k];
    return row;
}

void append_emissions_csv(const std::string& path, const EmissionsRun& run, const CarbonIntensity& intensity) {
    std::string first;
    {
        std::ifstream in(path);
        std::getline(in, first);
    }
    detail::require(first.empty() || first == emissions_csv_header(),
                    path + ": holds another table than CodeCarbon 3.3's emissions.csv (its first line is '" + first +
                        "'); name a new file");
    std::ofstream out(path, std::ios::app);
    detail::require(out.is_open(), path + ": cannot be written: " + std::strerror(errno));
    if (first.empty()) out << emissions_csv_header() << '\n';
    out << emissions_csv_row(run, intensity) << '\n';
    out.flush();
    detail::require(static_cast<bool>(out), path + ": cannot be written");
}

}  // namespace hpcml::telemetry
