// CPU and DRAM energy from Linux's powercap interface: a zone per folder, each with a name, an
// energy counter (energy_uj, microjoules) and the value it wraps at (max_energy_range_uj).
#include <hpcml/telemetry.hpp>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <optional>
#include <string_view>

namespace hpcml::telemetry {

namespace {

namespace fs = std::filesystem;
using Clock = std::chrono::steady_clock;

fs::path powercap_root() {
    const char* root = std::getenv("HPCML_POWERCAP_ROOT");
    return root && *root ? fs::path(root) : fs::path("/sys/class/powercap");
}

// 1 for a folder "intel-rapl:N" (a package), 2 for "intel-rapl:N:M" (one of its subzones), 0 for
// any other (intel-rapl-mmio:N is a package again, through another interface).
int zone_depth(std::string_view name) {
    constexpr std::string_view prefix = "intel-rapl";
    if (name.substr(0, prefix.size()) != prefix) return 0;
    name.remove_prefix(prefix.size());
    int depth = 0;
    while (!name.empty()) {
        if (name[0] != ':' || depth == 2) return 0;
        name.remove_prefix(1);
        const std::size_t digits = std::min(name.size(), name.find_first_not_of("0123456789"));
        if (digits == 0) return 0;
        name.remove_prefix(digits);
        ++depth;
    }
    return depth;
}

// A whole-number file of the interface, or why it cannot be read.
std::optional<std::uint64_t> read_number(const fs::path& file, std::string& why) {
    std::ifstream in(file);
    std::uint64_t value = 0;
    if (in >> value) return value;
    const int error = errno;
    why = file.string() + " cannot be read (" +
          (error == EACCES ? std::string("permission denied: since Linux 5.10 only root reads the RAPL counters; "
                                         "run as root or make energy_uj readable")
           : fs::is_directory(file) ? std::string("not a file")
           : !fs::exists(file)      ? std::string("missing")
                                    : std::string(std::strerror(error ? error : EIO))) +
          ")";
    return std::nullopt;
}

struct Domain {
    std::string label;  // "package-0 (intel-rapl:0)"
    fs::path energy;    // energy_uj
    std::uint64_t range = 0;
    std::uint64_t first = 0;  // energy_uj when found
};

// The package zones (intel-rapl:N named package-N) and their DRAM subzones (intel-rapl:N:M named
// dram), as the class folder lists them; psys (the platform, which holds the packages), core and
// uncore (inside the package) and the intel-rapl-mmio duplicates of the package are left out.
CpuEnergyStatus find_domains(std::vector<Domain>& domains) {
    CpuEnergyStatus status;
    const fs::path root = powercap_root();
    std::error_code error;
    if (!fs::is_directory(root, error)) {
        status.message = "no CPU energy: " + root.string() +
                         " does not exist (no powercap interface: a virtual machine, or a kernel without RAPL)";
        return status;
    }
    std::vector<fs::path> zones;
    for (const fs::directory_entry& entry : fs::directory_iterator(root, error))
        if (zone_depth(entry.path().filename().string()) > 0) zones.push_back(entry.path());
    std::sort(zones.begin(), zones.end());
    for (const fs::path& zone : zones) {
        std::ifstream in(zone / "name");
        std::string name;
        in >> name;
        const std::string zone_id = zone.filename().string();
        if (zone_depth(zone_id) == 2 ? name != "dram" : name.rfind("package", 0) != 0) continue;
        Domain d{name + " (" + zone_id + ")", zone / "energy_uj", 0, 0};
        std::string why;
        const std::optional<std::uint64_t> range = read_number(zone / "max_energy_range_uj", why);
        const std::optional<std::uint64_t> first = range && *range > 0 ? read_number(d.energy, why) : std::nullopt;
        if (first) {
            d.range = *range;
            d.first = *first;
            domains.push_back(d);
            status.domains.push_back(d.label);
        } else {
            status.message =
                "no CPU energy: " + (why.empty() ? (zone / "max_energy_range_uj").string() + " is 0" : why);
            domains.clear();
            status.domains.clear();
            return status;
        }
    }
    if (domains.empty()) {
        status.message = "no CPU energy: " + root.string() + " has no package domain (intel-rapl:N named package-N)";
        return status;
    }
    status.available = true;
    status.message = "CPU energy from";
    for (const std::string& label : status.domains) status.message += " " + label;
    return status;
}

}  // namespace

CpuEnergyStatus cpu_energy_status() {
    std::vector<Domain> domains;
    return find_domains(domains);
}

struct CpuEnergyMeter::Impl {
    CpuEnergyStatus status;
    std::vector<Domain> domains;
    std::vector<std::uint64_t> last;
    std::uint64_t total_uj = 0;
    Clock::time_point start = Clock::now();
    std::string failure;  // set when a counter could not be read during the window
};

CpuEnergyMeter::CpuEnergyMeter() : impl_(std::make_unique<Impl>()) {
    impl_->status = find_domains(impl_->domains);  // each counter's first reading too
    for (const Domain& d : impl_->domains) impl_->last.push_back(d.first);
    impl_->start = Clock::now();
}

CpuEnergyMeter::~CpuEnergyMeter() = default;

const CpuEnergyStatus& CpuEnergyMeter::status() const { return impl_->status; }

void CpuEnergyMeter::sample() {
    Impl& m = *impl_;
    if (!m.status.available || !m.failure.empty()) return;
    for (std::size_t k = 0; k < m.domains.size(); ++k) {
        std::string why;
        const std::optional<std::uint64_t> now = read_number(m.domains[k].energy, why);
        if (!now) {
            m.failure = m.domains[k].label + " stopped reading during the window: " + why;
            return;
        }
        // A counter below its last reading has wrapped at its range (once: see the header).
        m.total_uj += *now >= m.last[k] ? *now - m.last[k] : *now + m.domains[k].range - m.last[k];
        m.last[k] = *now;
    }
}

CpuEnergy CpuEnergyMeter::read() {
    sample();
    const Impl& m = *impl_;
    CpuEnergy out;
    out.seconds = std::chrono::duration<double>(Clock::now() - m.start).count();
    out.energy_j = 1e-6 * static_cast<double>(m.total_uj);
    if (!m.status.available) {
        out.why = m.status.message;
    } else if (!m.failure.empty()) {
        out.why = "no CPU energy: " + m.failure;
    } else if (out.seconds < std::chrono::duration<double>(kCpuEnergyMinimumWindow).count()) {
        out.why = "no CPU energy: the window (" + std::to_string(out.seconds * 1e3) +
                  " ms) is shorter than a few counter updates (" + std::to_string(kCpuEnergyMinimumWindow.count()) +
                  " ms)";
    }
    out.valid = out.why.empty();
    if (!out.valid) out.energy_j = 0;
    return out;
}

}  // namespace hpcml::telemetry
