// Trace writers: the seed's semicolon CSV (timestamps in Unix seconds, as its time.time(), so its
// pandas code reads it unchanged: examples/trace runs that code on both), a full CSV, JSON.
#include <hpcml/core.hpp>
#include <hpcml/telemetry.hpp>

#include <cmath>
#include <cstdio>

#include "common/error.hpp"
#include "common/names.hpp"

namespace hpcml::telemetry {

namespace {

std::string number(double v, const char* format = "%.6g") {
    char text[64];
    std::snprintf(text, sizeof text, format, v);
    return text;
}

// JSON has no NaN or infinity: a reading that is not finite is null.
std::string json_number(double v, const char* format = "%.6g") { return std::isfinite(v) ? number(v, format) : "null"; }

std::string json_string(const std::string& s) {
    std::string out = "\"";
    for (char c : s) {
        if (c == '"' || c == '\\') out += '\\';
        if (static_cast<unsigned char>(c) >= 0x20) out += c;
    }
    return out + "\"";
}

}  // namespace

namespace {
constexpr std::array<detail::Named<Format>, 3> kFormatNames{
    {{Format::Seed, "seed"}, {Format::Csv, "csv"}, {Format::Json, "json"}}};
constexpr std::array<detail::Named<Availability>, 5> kAvailabilityNames{{{Availability::Ok, "ok"},
                                                                         {Availability::NotCompiled, "not_compiled"},
                                                                         {Availability::NoLibrary, "no_library"},
                                                                         {Availability::NoDevice, "no_device"},
                                                                         {Availability::Error, "error"}}};
}  // namespace

std::string_view to_string(Format format) noexcept { return detail::name_in(kFormatNames, format); }
std::string_view to_string(Availability availability) noexcept {
    return detail::name_in(kAvailabilityNames, availability);
}
Format parse_format(const std::string& text) { return detail::parse_in(kFormatNames, text, "format"); }
std::vector<std::string_view> format_names() { return detail::names_in(kFormatNames); }

void write(std::ostream& out, const std::vector<Sample>& samples, const Summary& summary, Format format,
           const std::string& device_name) {
    switch (format) {
        case Format::Seed:
            out << "Timestamp;Temperature [C];Power [% max];GPU Util [% time];Mem Util [% time];Mem Cons [% "
                   "max];Energy [kJ]\n";
            for (const Sample& s : samples)
                out << number(s.unix_time_s, "%.6f") << ';' << number(s.temperature_c) << ';'
                    << number(s.power_percent, "%.2f") << ';' << number(s.gpu_util_percent) << ';'
                    << number(s.memory_util_percent) << ';' << number(s.memory_used_percent, "%.2f") << ';'
                    << number(s.energy_j / 1000.0, "%.6f") << '\n';
            break;
        case Format::Csv:
            out << "time_s,unix_time_s,temperature_c,power_w,power_percent,gpu_util_percent,memory_util_percent,"
                   "memory_used_bytes,memory_used_percent,energy_j\n";
            for (const Sample& s : samples)
                out << number(s.time_s, "%.4f") << ',' << number(s.unix_time_s, "%.3f") << ','
                    << number(s.temperature_c) << ',' << number(s.power_w, "%.3f") << ','
                    << number(s.power_percent, "%.2f") << ',' << number(s.gpu_util_percent) << ','
                    << number(s.memory_util_percent) << ',' << number(s.memory_used_bytes, "%.0f") << ','
                    << number(s.memory_used_percent, "%.2f") << ',' << number(s.energy_j, "%.3f") << '\n';
            break;
        case Format::Json:
            out << "{\"device\": " << json_string(device_name)
                << ", \"summary\": {\"duration_s\": " << json_number(summary.duration_s)
                << ", \"energy_j\": " << json_number(summary.energy_j)
                << ", \"mean_power_w\": " << json_number(summary.mean_power_w)
                << ", \"peak_power_w\": " << json_number(summary.peak_power_w)
                << ", \"mean_gpu_util_percent\": " << json_number(summary.mean_gpu_util_percent)
                << ", \"mean_memory_util_percent\": " << json_number(summary.mean_memory_util_percent)
                << ", \"samples\": " << summary.samples
                << ", \"energy_from_counter\": " << (summary.energy_from_counter ? "true" : "false")
                << ", \"power\": " << (summary.power_instant ? "\"instant\"" : "\"average\"") << "},\n \"samples\": [";
            for (std::size_t k = 0; k < samples.size(); ++k) {
                const Sample& s = samples[k];
                out << (k ? ",\n  " : "\n  ") << "{\"time_s\": " << json_number(s.time_s, "%.4f")
                    << ", \"unix_time_s\": " << json_number(s.unix_time_s, "%.3f")
                    << ", \"temperature_c\": " << json_number(s.temperature_c)
                    << ", \"power_w\": " << json_number(s.power_w, "%.3f")
                    << ", \"power_percent\": " << json_number(s.power_percent, "%.2f")
                    << ", \"gpu_util_percent\": " << json_number(s.gpu_util_percent)
                    << ", \"memory_util_percent\": " << json_number(s.memory_util_percent)
                    << ", \"memory_used_bytes\": " << json_number(s.memory_used_bytes, "%.0f")
                    << ", \"memory_used_percent\": " << json_number(s.memory_used_percent, "%.2f")
                    << ", \"energy_j\": " << json_number(s.energy_j, "%.3f") << "}";
            }
            out << (samples.empty() ? "]}\n" : "\n ]}\n");
            break;
    }
}

}  // namespace hpcml::telemetry
