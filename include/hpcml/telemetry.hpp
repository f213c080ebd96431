// GPU telemetry through NVML: a sampler thread that reads temperature, power, utilisation,
// memory and energy at a fixed interval, a summary of a run, and writers for the traces.
//
// NVML is loaded at run time (dlopen of libnvidia-ml.so.1, or the library named by the
// environment variable HPCML_NVML_LIBRARY), so hpcml runs where it is absent; its absence is a
// status, not a crash.
#pragma once

#include <chrono>
#include <cstddef>
#include <memory>
#include <optional>
#include <ostream>
#include <string>
#include <string_view>
#include <vector>

namespace hpcml::telemetry {

struct Sample {
    double time_s = 0;       // since the sampler started
    double unix_time_s = 0;  // wall clock, for timestamps
    double temperature_c = 0;
    double power_w = 0;
    double power_percent = 0;     // of the enforced power limit
    double gpu_util_percent = 0;  // of time a kernel ran (NVML's sample period)
    double memory_util_percent = 0;
    double memory_used_bytes = 0;
    double memory_used_percent = 0;
    double energy_j = 0;  // since the sampler started
};

struct Summary {
    double duration_s = 0, energy_j = 0, mean_power_w = 0, peak_power_w = 0;
    double mean_gpu_util_percent = 0, mean_memory_util_percent = 0;
    std::size_t samples = 0;
    bool energy_from_counter = false;  // else the integral of power over time
    // power_w is NVML's instantaneous reading (NVML_FI_DEV_POWER_INSTANT); else its power usage,
    // a one-second average on Ampere and later (drivers without the field).
    bool power_instant = false;
};

enum class Availability { Ok, NotCompiled, NoLibrary, NoDevice, Error };
std::string_view to_string(Availability availability) noexcept;  // "ok", "not_compiled", "no_library", ...

struct Status {
    Availability availability = Availability::NotCompiled;
    std::string message;  // why not, when not Ok; which device otherwise
    std::string device_name;
};

// Whether CUDA device `device` can be traced (NVML loads and finds it, matched by PCI bus id;
// where CUDA sees no device, NVML's own index `device` is used and the message says so).
Status status(int device = 0);

// Samples one device on its own thread from start() to stop().
class Sampler {
public:
    // Throws hpcml::Error (NoDevice) with status(device).message when the device cannot be traced.
    explicit Sampler(int device = 0, std::chrono::milliseconds interval = std::chrono::milliseconds(100));
    ~Sampler();
    Sampler(const Sampler&) = delete;
    Sampler& operator=(const Sampler&) = delete;

    void start();
    Summary stop();                              // joins the thread, takes a last sample
    const std::vector<Sample>& samples() const;  // after stop(); throws InvalidArgument while sampling
    std::string device_name() const;

private:
    struct Impl;
    std::unique_ptr<Impl> impl_;
};

// The summary of a trace. With energy_counter true, energy is the last sample's counter
// reading; otherwise the trapezoid integral of power over time.
Summary summarize(const std::vector<Sample>& samples, bool energy_counter);

enum class Format {
    Seed,  // the seed's CSV: "Timestamp;Temperature [C];Power [% max];GPU Util [% time];
           // Mem Util [% time];Mem Cons [% max];Energy [kJ]", ';'-separated
    Csv,   // every field, ','-separated, SI units
    Json   // {"device": ..., "summary": {...}, "samples": [{...}, ...]}
};

void write(std::ostream& out, const std::vector<Sample>& samples, const Summary& summary, Format format,
           const std::string& device_name = "");

std::string_view to_string(Format format) noexcept;  // "seed" | "csv" | "json"
Format parse_format(const std::string& text);        // the inverse, else InvalidArgument naming "format"
std::vector<std::string_view> format_names();        // for help texts

// ---- CPU and DRAM energy: the kernel's powercap interface (RAPL) -----------------------------
// Package and DRAM domains only (intel-rapl:N named package-N, and their subzones named dram),
// never core, uncore or psys, which the package contains (AMD exposes package and core, no
// DRAM). Read from /sys/class/powercap, or the folder named by HPCML_POWERCAP_ROOT (tests).
// Where the interface is absent or unreadable (virtual machines; since Linux 5.10 only root
// reads the counters), a status says why: never a zero.
struct CpuEnergyStatus {
    bool available = false;
    std::string message;               // why not, or which domains
    std::vector<std::string> domains;  // "package-0 (intel-rapl:0)", "dram (intel-rapl:0:0)", ...
};
CpuEnergyStatus cpu_energy_status();

struct CpuEnergy {
    bool valid = false;
    std::string why;      // when not valid
    double energy_j = 0;  // package + DRAM over the window
    double seconds = 0;   // the window
};

// The counters are read at construction (the window's start), at each sample() and at read().
// Each wraps at its max_energy_range_uj (minutes at full power): one wrap between two readings
// is folded in, so a long window needs a sample() at least every few minutes. The counters
// update about every millisecond: a window shorter than kCpuEnergyMinimumWindow is not valid.
class CpuEnergyMeter {
public:
    CpuEnergyMeter();  // never throws: an unavailable interface gives an invalid read()
    ~CpuEnergyMeter();
    CpuEnergyMeter(const CpuEnergyMeter&) = delete;
    CpuEnergyMeter& operator=(const CpuEnergyMeter&) = delete;
    const CpuEnergyStatus& status() const;
    void sample();
    CpuEnergy read();  // samples, then the energy since construction

private:
    struct Impl;
    std::unique_ptr<Impl> impl_;
};
inline constexpr std::chrono::milliseconds kCpuEnergyMinimumWindow{10};

// ---- Emissions: energy times a carbon intensity, as a row of CodeCarbon's emissions.csv -------
// CodeCarbon's world average (IEA, 2019), used where no intensity is given, and labelled so.
inline constexpr double kWorldAverageCarbonIntensity = 475.0;  // gCO2e/kWh

struct CarbonIntensity {
    double grams_per_kwh = kWorldAverageCarbonIntensity;
    bool world_average = true;
    std::string label;  // "475 gCO2e/kWh, the world average (no carbon intensity given)", ...
};
// `given` (a flag, named `argument` in errors) when set, else the environment's
// HPCML_CARBON_INTENSITY, else the world average. Not a finite number >= 0: InvalidArgument.
CarbonIntensity carbon_intensity(std::optional<double> given = std::nullopt,
                                 std::string_view argument = "carbon_intensity");

struct EmissionsRun {
    std::string project_name = "hpcml";
    double duration_s = 0;
    std::optional<double> cpu_energy_j, gpu_energy_j;  // unset where not measured (written as 0)
    int gpu_count = 0;
    std::string gpu_model;
    double gpu_utilization_percent = 0;
};

// The run's emissions in kg CO2e: its energy (unmeasured counts as 0) times the intensity.
double emissions_kg(const EmissionsRun& run, const CarbonIntensity& intensity);

// The columns of CodeCarbon 3.3's emissions.csv, comma-separated.
std::string_view emissions_csv_header();
// A row in those columns and units (energy in kWh, emissions in kg CO2e, power in W, duration in
// s; the CPU's energy is package + DRAM, so ram_energy is 0). country_name carries the intensity's
// label, as CodeCarbon's grid names the intensity it used.
std::string emissions_csv_row(const EmissionsRun& run, const CarbonIntensity& intensity);
// Appends the row to `path`, after the header when the file is new or empty. InvalidArgument
// naming `path` when it cannot be written or holds another header.
void append_emissions_csv(const std::string& path, const EmissionsRun& run, const CarbonIntensity& intensity);

}  // namespace hpcml::telemetry
