/// @file
/// GPU telemetry through NVML: a sampler thread that reads temperature, power, utilisation,
/// memory and energy at a fixed interval, a summary of a run, and writers for the traces.
///
/// NVML is loaded at run time (dlopen of libnvidia-ml.so.1, or the library named by the
/// environment variable HPCML_NVML_LIBRARY), so hpcml runs where it is absent; its absence is a
/// status, not a crash.
#pragma once

#include <chrono>
#include <cstddef>
#include <memory>
#include <optional>
#include <ostream>
#include <string>
#include <string_view>
#include <vector>

/// Power, energy and emissions of a run: the GPU through NVML, the CPU through Linux's powercap (RAPL).
namespace hpcml::telemetry {

/// One reading of one device, taken by a Sampler; a reading NVML refuses is left 0.
struct Sample {
    double time_s = 0;               ///< since the sampler started
    double unix_time_s = 0;          ///< wall clock, for timestamps
    double temperature_c = 0;        ///< the GPU's temperature in degrees Celsius (NVML_TEMPERATURE_GPU)
    double power_w = 0;              ///< watts: instantaneous, or a one-second average (Summary::power_instant)
    double power_percent = 0;        ///< of the enforced power limit
    double gpu_util_percent = 0;     ///< of time a kernel ran (NVML's sample period)
    double memory_util_percent = 0;  ///< of time device memory was read or written (NVML's sample period)
    double memory_used_bytes = 0;    ///< device memory in use, in bytes (nvmlDeviceGetMemoryInfo)
    double memory_used_percent = 0;  ///< of the device's total memory
    double energy_j = 0;             ///< since the sampler started
};

/// The summary of a trace, from summarize() or Sampler::stop().
struct Summary {
    /// @var duration_s
    /// Seconds from the first sample to the last.
    /// @var energy_j
    /// Joules from the first sample to the last: the energy counter's difference, or the trapezoid integral of
    /// power over time (energy_from_counter).
    /// @var mean_power_w
    /// Watts: energy_j / duration_s (the first sample's power where duration_s is 0).
    /// @var peak_power_w
    /// Watts: the highest power_w of the samples.
    double duration_s = 0, energy_j = 0, mean_power_w = 0, peak_power_w = 0;
    /// @var mean_gpu_util_percent
    /// The mean of the samples' gpu_util_percent.
    /// @var mean_memory_util_percent
    /// The mean of the samples' memory_util_percent.
    double mean_gpu_util_percent = 0, mean_memory_util_percent = 0;
    std::size_t samples = 0;           ///< how many samples the trace holds
    bool energy_from_counter = false;  ///< else the integral of power over time
    /// power_w is NVML's instantaneous reading (NVML_FI_DEV_POWER_INSTANT); else its power usage,
    /// a one-second average on Ampere and later (drivers without the field).
    bool power_instant = false;
};

/// Whether a device can be traced: Ok, or why not: NotCompiled (this build found no nvml.h at configure
/// time), NoLibrary (NVML does not load or initialise), NoDevice (NVML has no device for the one asked).
enum class Availability { Ok, NotCompiled, NoLibrary, NoDevice, Error };
std::string_view to_string(Availability availability) noexcept;  ///< "ok", "not_compiled", "no_library", ...

/// Whether and which device can be traced: the answer of status().
struct Status {
    Availability availability = Availability::NotCompiled;  ///< Ok, or why the device cannot be traced
    std::string message;                                    ///< why not, when not Ok; which device otherwise
    std::string device_name;  ///< NVML's name for the device (nvmlDeviceGetName); empty when not Ok
};

/// Whether CUDA device `device` can be traced (NVML loads and finds it, matched by PCI bus id;
/// where CUDA sees no device, NVML's own index `device` is used and the message says so).
Status status(int device = 0);

/// Samples one device on its own thread from start() to stop().
class Sampler {
public:
    /// Throws hpcml::Error (NoDevice) with status(device).message when the device cannot be traced.
    explicit Sampler(int device = 0, std::chrono::milliseconds interval = std::chrono::milliseconds(100));
    ~Sampler();
    Sampler(const Sampler&) = delete;
    Sampler& operator=(const Sampler&) = delete;

    /// Clears the samples, takes the first and starts the thread; InvalidArgument when already started.
    void start();
    Summary stop();                              ///< joins the thread, takes a last sample
    const std::vector<Sample>& samples() const;  ///< after stop(); throws InvalidArgument while sampling
    std::string device_name() const;             ///< NVML's name for the device (Status::device_name)

private:
    struct Impl;
    std::unique_ptr<Impl> impl_;
};

/// The summary of a trace. With energy_counter true, energy is the last sample's counter
/// reading; otherwise the trapezoid integral of power over time.
Summary summarize(const std::vector<Sample>& samples, bool energy_counter);

/// A trace's file format, for write(); named by to_string() and parse_format().
enum class Format {
    Seed,  ///< the seed's CSV: "Timestamp;Temperature [C];Power [% max];GPU Util [% time];
           /// Mem Util [% time];Mem Cons [% max];Energy [kJ]", ';'-separated
    Csv,   ///< every field, ','-separated, SI units
    Json   ///< {"device": ..., "summary": {...}, "samples": [{...}, ...]}
};

/// Writes `samples` to `out` in `format`: a header line and a line per sample (Seed, Csv), or one JSON object
/// that also holds `summary` and `device_name`, with null for a reading that is not finite (Json).
void write(std::ostream& out, const std::vector<Sample>& samples, const Summary& summary, Format format,
           const std::string& device_name = "");

std::string_view to_string(Format format) noexcept;  ///< "seed" | "csv" | "json"
Format parse_format(const std::string& text);        ///< the inverse, else InvalidArgument naming "format"
std::vector<std::string_view> format_names();        ///< for help texts

/// ---- CPU and DRAM energy: the kernel's powercap interface (RAPL) -----------------------------
/// Package and DRAM domains only (intel-rapl:N named package-N, and their subzones named dram),
/// never core, uncore or psys, which the package contains (AMD exposes package and core, no
/// DRAM). Read from /sys/class/powercap, or the folder named by HPCML_POWERCAP_ROOT (tests).
/// Where the interface is absent or unreadable (virtual machines; since Linux 5.10 only root
/// reads the counters), a status says why: never a zero.
struct CpuEnergyStatus {
    bool available = false;            ///< a package domain was found and every domain's counter can be read
    std::string message;               ///< why not, or which domains
    std::vector<std::string> domains;  ///< "package-0 (intel-rapl:0)", "dram (intel-rapl:0:0)", ...
};
/// Which domains a CpuEnergyMeter would read, or why it would read none.
CpuEnergyStatus cpu_energy_status();

/// The CPUs' energy over a window, from CpuEnergyMeter::read().
struct CpuEnergy {
    bool valid = false;   ///< energy_j was measured; else it is 0 and `why` says why
    std::string why;      ///< when not valid
    double energy_j = 0;  ///< package + DRAM over the window
    double seconds = 0;   ///< the window
};

/// The counters are read at construction (the window's start), at each sample() and at read().
/// Each wraps at its max_energy_range_uj (minutes at full power): one wrap between two readings
/// is folded in, so a long window needs a sample() at least every few minutes. The counters
/// update about every millisecond: a window shorter than kCpuEnergyMinimumWindow is not valid.
class CpuEnergyMeter {
public:
    CpuEnergyMeter();  ///< never throws: an unavailable interface gives an invalid read()
    ~CpuEnergyMeter();
    CpuEnergyMeter(const CpuEnergyMeter&) = delete;
    CpuEnergyMeter& operator=(const CpuEnergyMeter&) = delete;
    const CpuEnergyStatus& status() const;  ///< the domains found at construction, or why none
    /// Reads the counters and adds what each advanced since its last reading, one wrap folded in.
    void sample();
    CpuEnergy read();  ///< samples, then the energy since construction

private:
    struct Impl;
    std::unique_ptr<Impl> impl_;
};
/// The shortest window CpuEnergyMeter::read() reports as valid: a few updates of the counters.
inline constexpr std::chrono::milliseconds kCpuEnergyMinimumWindow{10};

/// ---- Emissions: energy times a carbon intensity, as a row of CodeCarbon's emissions.csv -------
/// CodeCarbon's world average (IEA, 2019), used where no intensity is given, and labelled so.
inline constexpr double kWorldAverageCarbonIntensity = 475.0;  ///< gCO2e/kWh

/// A carbon intensity and where it came from, from carbon_intensity().
struct CarbonIntensity {
    double grams_per_kwh = kWorldAverageCarbonIntensity;  ///< gCO2e/kWh
    bool world_average = true;                            ///< true where none was given and the world average is used
    std::string label;  ///< "475 gCO2e/kWh, the world average (no carbon intensity given)", ...
};
/// `given` (a flag, named `argument` in errors) when set, else the environment's
/// HPCML_CARBON_INTENSITY, else the world average. Not a finite number >= 0: InvalidArgument.
CarbonIntensity carbon_intensity(std::optional<double> given = std::nullopt,
                                 std::string_view argument = "carbon_intensity");

/// What one run measured, for emissions_kg() and a row of emissions.csv.
struct EmissionsRun {
    std::string project_name = "hpcml";  ///< the row's project_name
    double duration_s = 0;               ///< the run's duration in seconds
    /// @var cpu_energy_j
    /// The CPUs' energy in joules, package + DRAM; unset where not measured (written as 0).
    /// @var gpu_energy_j
    /// The GPUs' energy in joules; unset where not measured (written as 0).
    std::optional<double> cpu_energy_j, gpu_energy_j;
    int gpu_count = 0;                   ///< how many GPUs the run used (the row's gpu_count)
    std::string gpu_model;               ///< the GPUs' model name (the row's gpu_model)
    double gpu_utilization_percent = 0;  ///< the GPUs' mean utilisation in percent (the row's gpu_utilization_percent)
};

/// The run's emissions in kg CO2e: its energy (unmeasured counts as 0) times the intensity.
double emissions_kg(const EmissionsRun& run, const CarbonIntensity& intensity);

/// The columns of CodeCarbon 3.3's emissions.csv, comma-separated.
std::string_view emissions_csv_header();
/// A row in those columns and units (energy in kWh, emissions in kg CO2e, power in W, duration in
/// s; the CPU's energy is package + DRAM, so ram_energy is 0). country_name carries the intensity's
/// label, as CodeCarbon's grid names the intensity it used.
std::string emissions_csv_row(const EmissionsRun& run, const CarbonIntensity& intensity);
/// Appends the row to `path`, after the header when the file is new or empty. InvalidArgument
/// naming `path` when it cannot be written or holds another header.
void append_emissions_csv(const std::string& path, const EmissionsRun& run, const CarbonIntensity& intensity);

}  // namespace hpcml::telemetry
