// Telemetry: summary arithmetic on synthetic samples, the writers against golden files, the
// sampler end to end on the fake NVML (tests/fake_nvml), and, on a GPU, real readings.
#include <hpcml/similarity.hpp>
#include <hpcml/telemetry.hpp>

#include <gtest/gtest.h>

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <cstdlib>
#include <filesystem>
#include <ctime>
#include <fstream>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include <unistd.h>

#include "support/errors.hpp"

namespace {

namespace tel = hpcml::telemetry;

// Paths come from the environment (ctest sets them), so that the build tree can move.
std::string environment(const char* name) {
    const char* value = std::getenv(name);
    if (!value || !*value) {
        ADD_FAILURE() << name << " is not set: run this suite through ctest, which sets it";
        return "";
    }
    return value;
}

std::vector<tel::Sample> synthetic() {
    std::vector<tel::Sample> s;
    for (int k = 0; k <= 4; ++k) {
        tel::Sample x;
        x.time_s = 0.5 * k;
        x.unix_time_s = 1763719200.0 + 0.5 * k;  // 2025-11-21 10:00:00 UTC
        x.temperature_c = 50 + k;
        x.power_w = k < 2 ? 100.0 : 300.0;
        x.power_percent = x.power_w / 4.0;
        x.gpu_util_percent = 20.0 * k;
        x.memory_util_percent = 10.0;
        x.memory_used_bytes = 1e9;
        x.memory_used_percent = 25.0;
        x.energy_j = 150.0 * x.time_s;  // an energy counter
        s.push_back(x);
    }
    return s;
}

TEST(Telemetry, SummaryFromCounterAndFromIntegratedPower) {
    const auto s = synthetic();
    const tel::Summary counter = tel::summarize(s, true);
    EXPECT_DOUBLE_EQ(counter.duration_s, 2.0);
    EXPECT_DOUBLE_EQ(counter.energy_j, 300.0);
    EXPECT_DOUBLE_EQ(counter.mean_power_w, 150.0);
    EXPECT_DOUBLE_EQ(counter.peak_power_w, 300.0);
    EXPECT_DOUBLE_EQ(counter.mean_gpu_util_percent, 40.0);
    EXPECT_EQ(counter.samples, 5u);
    // Trapezoid over power: 0.5 (100 + 100) 0.5 + 0.5 (100 + 300) 0.5 + 2 x 300 x 0.5 = 50 + 100 + 300.
    const tel::Summary integral = tel::summarize(s, false);
    EXPECT_DOUBLE_EQ(integral.energy_j, 450.0);
    EXPECT_DOUBLE_EQ(integral.mean_power_w, 225.0);
    EXPECT_FALSE(integral.energy_from_counter);
    EXPECT_EQ(tel::summarize({}, true).samples, 0u);
}

std::string read_file(const std::string& path) {
    std::ifstream in(path);
    std::stringstream text;
    text << in.rdbuf();
    return text.str();
}

TEST(Telemetry, WritersMatchGoldenFiles) {
    const auto s = synthetic();
    const tel::Summary summary = tel::summarize(s, true);
    for (auto [format, file] : {std::pair{tel::Format::Seed, "trace.seed.csv"},
                                std::pair{tel::Format::Csv, "trace.csv"}, std::pair{tel::Format::Json, "trace.json"}}) {
        std::ostringstream out;
        tel::write(out, s, summary, format, "Test GPU");
        EXPECT_EQ(out.str(), read_file(environment("HPCML_TEST_DATA") + "/telemetry/" + file)) << file;
    }
    hpcml_test::expect_invalid([] { tel::parse_format("xml"); }, "format");
}

#if HPCML_TEST_FAKE_NVML
TEST(TelemetryFake, SamplerEndToEnd) {
    ASSERT_FALSE(environment("HPCML_NVML_LIBRARY").empty());  // the fake library, set by ctest
    const tel::Status st = tel::status(0);
    ASSERT_EQ(st.availability, tel::Availability::Ok) << st.message;
    EXPECT_EQ(st.device_name, "Fake GPU");
    for (bool counter : {true, false})
        for (bool instant : {true, false}) {
            setenv("FAKE_NVML_NO_ENERGY", counter ? "0" : "1", 1);
            setenv("FAKE_NVML_NO_INSTANT", instant ? "0" : "1", 1);
            tel::Sampler sampler(0, std::chrono::milliseconds(20));
            sampler.start();
            std::this_thread::sleep_for(std::chrono::milliseconds(300));
            const tel::Summary s = sampler.stop();
            const auto& samples = sampler.samples();
            EXPECT_GE(samples.size(), 8u);
            EXPECT_EQ(s.energy_from_counter, counter);
            EXPECT_EQ(s.power_instant, instant) << "the instantaneous field where the driver has it, else the average";
            EXPECT_NEAR(s.energy_j, 200.0 * s.duration_s, 0.1 * 200.0 * s.duration_s + 0.5);
            EXPECT_NEAR(s.mean_power_w, 200.0, 20.0);
            for (std::size_t k = 1; k < samples.size(); ++k) {
                EXPECT_GE(samples[k].energy_j, samples[k - 1].energy_j);
                EXPECT_GT(samples[k].time_s, samples[k - 1].time_s);
            }
            EXPECT_DOUBLE_EQ(samples.back().power_w, instant ? 205.0 : 200.0);
            EXPECT_DOUBLE_EQ(samples.back().power_percent, instant ? 51.25 : 50.0);
            EXPECT_DOUBLE_EQ(samples.back().memory_used_percent, 25.0);
            EXPECT_DOUBLE_EQ(samples.back().gpu_util_percent, 75.0);
            EXPECT_DOUBLE_EQ(samples.back().temperature_c, 55.0);
        }
    setenv("FAKE_NVML_NO_INSTANT", "0", 1);
    setenv("FAKE_NVML_NO_ENERGY", "0", 1);
    hpcml_test::expect_invalid([] { tel::Sampler bad(0, std::chrono::milliseconds(0)); }, "interval");
    EXPECT_THROW(tel::Sampler(7), hpcml::Error);  // the fake has one device
}
#else
// The real NVML: on a GPU machine, readings while kernels run (one of the GPU suite's C++ GPU
// cases, `*Cuda*`); elsewhere, its absence is a status and a NoDevice error, not a crash.
TEST(TelemetryCuda, RealNvmlReadsTheGpuOrSaysWhyNot) {
    const tel::Status st = tel::status(0);
    if (st.availability == tel::Availability::Ok) {
        // A machine with a GPU: real readings, and energy that grows while kernels run.
        tel::Sampler sampler(0, std::chrono::milliseconds(50));
        sampler.start();
        const std::vector<float> x(256 * 4096, 0.5f);
        std::vector<std::int32_t> out(4096 * 4096);
        hpcml::SimilarityOptions o;
        o.backend = hpcml::Backend::Cuda;
        const auto until = std::chrono::steady_clock::now() + std::chrono::milliseconds(1500);
        while (std::chrono::steady_clock::now() < until) hpcml::similarity({x.data(), 256, 4096}, {}, out.data(), o);
        const tel::Summary s = sampler.stop();
        EXPECT_GE(s.samples, 20u);
        EXPECT_GT(s.peak_power_w, 0.0);
        EXPECT_GT(s.energy_j, 0.0);
        const auto& samples = sampler.samples();
        EXPECT_GT(samples.back().energy_j, samples[samples.size() / 2].energy_j);
        return;
    }
    EXPECT_FALSE(st.message.empty());
    try {
        tel::Sampler sampler(0);
        FAIL() << "expected NoDevice";
    } catch (const hpcml::Error& e) {
        EXPECT_EQ(e.kind(), hpcml::ErrorKind::NoDevice);
        EXPECT_EQ(std::string(e.what()), st.message);
    }
}
#endif

// ---- CPU energy through a fake powercap tree (no machine here has powercap) ----

class FakePowercap {
public:
    FakePowercap() : root_(std::filesystem::temp_directory_path() / ("hpcml-powercap-" + std::to_string(::getpid()))) {
        std::filesystem::remove_all(root_);
        std::filesystem::create_directories(root_);
        setenv("HPCML_POWERCAP_ROOT", root_.c_str(), 1);
    }
    ~FakePowercap() {
        unsetenv("HPCML_POWERCAP_ROOT");
        std::filesystem::remove_all(root_);
    }
    void zone(const std::string& id, const std::string& name, std::uint64_t energy, std::uint64_t range) {
        std::filesystem::create_directories(root_ / id);
        write(id, "name", name);
        write(id, "max_energy_range_uj", std::to_string(range));
        set(id, energy);
    }
    void set(const std::string& id, std::uint64_t energy) { write(id, "energy_uj", std::to_string(energy)); }
    const std::filesystem::path& root() const { return root_; }

private:
    void write(const std::string& id, const char* file, const std::string& text) {
        std::ofstream(root_ / id / file) << text << "\n";
    }
    std::filesystem::path root_;
};

void wait_window() {
    std::this_thread::sleep_for(hpcml::telemetry::kCpuEnergyMinimumWindow + std::chrono::milliseconds(5));
}

// Package and DRAM advance and are summed; core, uncore, psys and the MMIO duplicate are not.
TEST(CpuEnergy, SumsPackageAndDramOnly) {
    FakePowercap tree;
    tree.zone("intel-rapl:0", "package-0", 1000, 262143328850);
    tree.zone("intel-rapl:0:0", "core", 5, 262143328850);
    tree.zone("intel-rapl:0:1", "uncore", 5, 262143328850);
    tree.zone("intel-rapl:0:2", "dram", 0, 65712999613);
    tree.zone("intel-rapl:1", "psys", 7, 262143328850);
    tree.zone("intel-rapl-mmio:0", "package-0", 9, 262143328850);
    const hpcml::telemetry::CpuEnergyStatus status = hpcml::telemetry::cpu_energy_status();
    ASSERT_TRUE(status.available) << status.message;
    EXPECT_EQ(status.domains, (std::vector<std::string>{"package-0 (intel-rapl:0)", "dram (intel-rapl:0:2)"}));
    hpcml::telemetry::CpuEnergyMeter meter;
    tree.set("intel-rapl:0", 5001000);    // +5 J
    tree.set("intel-rapl:0:2", 1000000);  // +1 J
    for (const char* other : {"intel-rapl:0:0", "intel-rapl:0:1", "intel-rapl:1", "intel-rapl-mmio:0"})
        tree.set(other, 999999999);
    wait_window();
    const hpcml::telemetry::CpuEnergy e = meter.read();
    ASSERT_TRUE(e.valid) << e.why;
    EXPECT_DOUBLE_EQ(e.energy_j, 6.0);
    EXPECT_GE(e.seconds, 0.010);
}

// A counter that passes its range between two readings wraps; samples in between fold each wrap in.
TEST(CpuEnergy, CountersWrapAtTheirRange) {
    FakePowercap tree;
    tree.zone("intel-rapl:0", "package-0", 9000000, 10000000);
    hpcml::telemetry::CpuEnergyMeter meter;
    tree.set("intel-rapl:0", 500000);  // 9 -> 10 (wrap) -> 0.5: 1.5 J
    meter.sample();
    tree.set("intel-rapl:0", 9500000);  // +9 J
    meter.sample();
    tree.set("intel-rapl:0", 1000);  // wraps again: +0.501 J
    wait_window();
    const hpcml::telemetry::CpuEnergy e = meter.read();
    ASSERT_TRUE(e.valid) << e.why;
    EXPECT_NEAR(e.energy_j, 1.5 + 9.0 + 0.501, 1e-9);
}

// Absent, without a package, unreadable, vanishing during the window, too short: a reason, never a number.
TEST(CpuEnergy, EveryFailureIsAReason) {
    {
        FakePowercap tree;
        setenv("HPCML_POWERCAP_ROOT", (tree.root() / "absent").c_str(), 1);
        hpcml::telemetry::CpuEnergyMeter meter;
        EXPECT_FALSE(meter.status().available);
        EXPECT_NE(meter.status().message.find("does not exist"), std::string::npos) << meter.status().message;
        wait_window();
        const hpcml::telemetry::CpuEnergy e = meter.read();
        EXPECT_FALSE(e.valid);
        EXPECT_EQ(e.why, meter.status().message);
    }
    {
        FakePowercap tree;
        tree.zone("intel-rapl:0", "psys", 1, 100);
        const auto status = hpcml::telemetry::cpu_energy_status();
        EXPECT_FALSE(status.available);
        EXPECT_NE(status.message.find("no package domain"), std::string::npos) << status.message;
    }
    {
        FakePowercap tree;  // root reads any file: a counter that is a folder cannot be read by anyone
        tree.zone("intel-rapl:0", "package-0", 1, 100);
        std::filesystem::remove(tree.root() / "intel-rapl:0" / "energy_uj");
        std::filesystem::create_directory(tree.root() / "intel-rapl:0" / "energy_uj");
        const auto status = hpcml::telemetry::cpu_energy_status();
        EXPECT_FALSE(status.available);
        EXPECT_NE(status.message.find("energy_uj cannot be read"), std::string::npos) << status.message;
    }
    {
        FakePowercap tree;
        tree.zone("intel-rapl:0", "package-0", 1, 100000000);
        hpcml::telemetry::CpuEnergyMeter meter;
        ASSERT_TRUE(meter.status().available);
        std::filesystem::remove_all(tree.root() / "intel-rapl:0");
        wait_window();
        const hpcml::telemetry::CpuEnergy e = meter.read();
        EXPECT_FALSE(e.valid);
        EXPECT_NE(e.why.find("package-0 (intel-rapl:0) stopped reading during the window"), std::string::npos) << e.why;
    }
    {
        FakePowercap tree;
        tree.zone("intel-rapl:0", "package-0", 1, 100000000);
        hpcml::telemetry::CpuEnergyMeter meter;
        tree.set("intel-rapl:0", 2000001);
        const hpcml::telemetry::CpuEnergy e = meter.read();  // at once
        EXPECT_FALSE(e.valid);
        EXPECT_NE(e.why.find("shorter than a few counter updates"), std::string::npos) << e.why;
    }
}

// ---- emissions: CodeCarbon 3.3's emissions.csv ----

std::vector<std::string> split_csv(const std::string& line) {  // enough for these rows: quotes hold commas
    std::vector<std::string> out(1);
    bool quoted = false;
    for (const char c : line) {
        if (c == '"') {
            quoted = !quoted;
        } else if (c == ',' && !quoted) {
            out.emplace_back();
        } else {
            out.back() += c;
        }
    }
    return out;
}

TEST(Emissions, ARowInCodeCarbonsColumnsAndUnits) {
    // CodeCarbon 3.3.2's header, as its OfflineEmissionsTracker writes it (the Python test checks
    // it against CodeCarbon itself where installed).
    const std::string codecarbon =
        "timestamp,project_name,run_id,experiment_id,duration,emissions,emissions_rate,cpu_power,gpu_power,ram_power,"
        "cpu_energy,gpu_energy,ram_energy,energy_consumed,water_consumed,country_name,country_iso_code,region,"
        "cloud_provider,cloud_region,os,python_version,codecarbon_version,cpu_count,cpu_model,gpu_count,gpu_model,"
        "longitude,latitude,ram_total_size,tracking_mode,cpu_utilization_percent,gpu_utilization_percent,"
        "ram_utilization_percent,ram_used_gb,on_cloud,pue,wue";
    ASSERT_EQ(std::string(tel::emissions_csv_header()), codecarbon);
    const std::vector<std::string> columns = split_csv(codecarbon);
    const auto at = [&](const std::vector<std::string>& row, const char* name) {
        return row[std::find(columns.begin(), columns.end(), name) - columns.begin()];
    };

    tel::EmissionsRun run;
    run.duration_s = 1800;
    run.cpu_energy_j = 3.6e6;  // 1 kWh
    run.gpu_energy_j = 1.8e6;  // 0.5 kWh
    run.gpu_count = 1;
    run.gpu_model = "Test GPU, 80 GB";
    unsetenv("HPCML_CARBON_INTENSITY");
    const tel::CarbonIntensity world = tel::carbon_intensity();
    EXPECT_TRUE(world.world_average);
    EXPECT_EQ(world.grams_per_kwh, 475.0);
    const std::vector<std::string> row = split_csv(tel::emissions_csv_row(run, world));
    ASSERT_EQ(row.size(), columns.size());
    EXPECT_DOUBLE_EQ(std::stod(at(row, "cpu_energy")), 1.0);  // kWh
    EXPECT_DOUBLE_EQ(std::stod(at(row, "gpu_energy")), 0.5);
    EXPECT_DOUBLE_EQ(std::stod(at(row, "energy_consumed")), 1.5);
    EXPECT_DOUBLE_EQ(std::stod(at(row, "emissions")), 1.5 * 0.475);              // kg CO2e
    EXPECT_DOUBLE_EQ(std::stod(at(row, "emissions_rate")), 1.5 * 0.475 / 1800);  // kg/s
    EXPECT_DOUBLE_EQ(std::stod(at(row, "cpu_power")), 2000.0);                   // W
    EXPECT_DOUBLE_EQ(std::stod(at(row, "gpu_power")), 1000.0);
    EXPECT_EQ(at(row, "gpu_model"), "Test GPU, 80 GB");
    EXPECT_NE(at(row, "country_name").find("world average"), std::string::npos) << "labelled as such";
    EXPECT_EQ(at(row, "run_id").size(), 36u);

    setenv("HPCML_CARBON_INTENSITY", "56", 1);
    const tel::CarbonIntensity france = tel::carbon_intensity();
    EXPECT_FALSE(france.world_average);
    EXPECT_EQ(france.label, "56 gCO2e/kWh (HPCML_CARBON_INTENSITY)");
    EXPECT_EQ(tel::carbon_intensity(20.0, "--carbon-intensity").label, "20 gCO2e/kWh (--carbon-intensity)");
    run.cpu_energy_j.reset();  // not measured: counts as 0
    const std::vector<std::string> gpu_only = split_csv(tel::emissions_csv_row(run, france));
    EXPECT_DOUBLE_EQ(std::stod(at(gpu_only, "emissions")), 0.5 * 0.056);
    EXPECT_EQ(at(gpu_only, "cpu_energy"), "0");
    for (const char* bad : {"abc", "-1", "inf", "3x"}) {
        setenv("HPCML_CARBON_INTENSITY", bad, 1);
        hpcml_test::expect_invalid([] { tel::carbon_intensity(); }, "HPCML_CARBON_INTENSITY");
    }
    unsetenv("HPCML_CARBON_INTENSITY");
    hpcml_test::expect_invalid([] { tel::carbon_intensity(-2.0, "--carbon-intensity"); }, "--carbon-intensity");

    // Appending: the header once, then a row per run; a file of another table is refused.
    const std::string path =
        (std::filesystem::temp_directory_path() / ("hpcml-emissions-" + std::to_string(::getpid()) + ".csv")).string();
    std::filesystem::remove(path);
    tel::append_emissions_csv(path, run, world);
    tel::append_emissions_csv(path, run, world);
    std::ifstream in(path);
    std::vector<std::string> lines;
    for (std::string line; std::getline(in, line);) lines.push_back(line);
    ASSERT_EQ(lines.size(), 3u);
    EXPECT_EQ(lines[0], codecarbon);
    std::ofstream(path) << "a,b,c\n";
    hpcml_test::expect_invalid([&] { tel::append_emissions_csv(path, run, world); }, path + ": holds another table");
    std::filesystem::remove(path);
}

}  // namespace
