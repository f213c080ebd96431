// Telemetry: summary arithmetic on synthetic samples, the writers against golden files, the
// sampler end to end on the fake NVML (tests/fake_nvml), and, on a GPU, real readings.
#include <hpcml/similarity.hpp>
#include <hpcml/telemetry.hpp>

#include <gtest/gtest.h>

#include <chrono>
#include <cstdint>
#include <cstdlib>
#include <ctime>
#include <fstream>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

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
    for (bool counter : {true, false}) {
        setenv("FAKE_NVML_NO_ENERGY", counter ? "0" : "1", 1);
        tel::Sampler sampler(0, std::chrono::milliseconds(20));
        sampler.start();
        std::this_thread::sleep_for(std::chrono::milliseconds(300));
        const tel::Summary s = sampler.stop();
        const auto& samples = sampler.samples();
        EXPECT_GE(samples.size(), 8u);
        EXPECT_EQ(s.energy_from_counter, counter);
        EXPECT_NEAR(s.energy_j, 200.0 * s.duration_s, 0.1 * 200.0 * s.duration_s + 0.5);
        EXPECT_NEAR(s.mean_power_w, 200.0, 20.0);
        for (std::size_t k = 1; k < samples.size(); ++k) {
            EXPECT_GE(samples[k].energy_j, samples[k - 1].energy_j);
            EXPECT_GT(samples[k].time_s, samples[k - 1].time_s);
        }
        EXPECT_DOUBLE_EQ(samples.back().power_percent, 50.0);
        EXPECT_DOUBLE_EQ(samples.back().memory_used_percent, 25.0);
        EXPECT_DOUBLE_EQ(samples.back().gpu_util_percent, 75.0);
        EXPECT_DOUBLE_EQ(samples.back().temperature_c, 55.0);
    }
    setenv("FAKE_NVML_NO_ENERGY", "0", 1);
    hpcml_test::expect_invalid([] { tel::Sampler bad(0, std::chrono::milliseconds(0)); }, "interval");
    EXPECT_THROW(tel::Sampler(7), hpcml::Error);  // the fake has one device
}
#else
TEST(Telemetry, AbsentNvmlIsAStatusNotACrash) {
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

}  // namespace
