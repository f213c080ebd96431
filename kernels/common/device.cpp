// The device query's CUDA-free half: status names, the architecture list's wording and
// checks, and the usable devices (the query itself: cuda_device.cpp; without CUDA, no_cuda.cpp).
#include <hpcml/device.hpp>

#include <algorithm>
#include <cctype>
#include <cstdio>
#include <utility>
#include <vector>

#include "architectures.hpp"
#include "names.hpp"

namespace hpcml {

std::string format_cuda_version(int version) {
    if (version <= 0) return "none";
    return std::to_string(version / 1000) + "." + std::to_string((version % 1000) / 10);
}

namespace {
constexpr std::array<detail::Named<CudaStatus>, 7> kCudaStatusNames{{{CudaStatus::Ok, "ok"},
                                                                     {CudaStatus::NotCompiled, "not_compiled"},
                                                                     {CudaStatus::NoDriver, "no_driver"},
                                                                     {CudaStatus::DriverTooOld, "driver_too_old"},
                                                                     {CudaStatus::NoDevice, "no_device"},
                                                                     {CudaStatus::NoKernelImage, "no_kernel_image"},
                                                                     {CudaStatus::Error, "error"}}};
}  // namespace

std::string_view to_string(CudaStatus status) noexcept { return detail::name_in(kCudaStatusNames, status); }

namespace detail {

namespace {

// The entries of the list: number (as written, "90"), suffix letter ('a', 'f' or 0), and kind.
struct Architecture {
    int number = 0;
    char suffix = 0;
    bool machine_code = false, ptx = false;
};

// Parses "75-real,80-real,90,90a-virtual"; returns false for CMake's own words ("all", "native").
bool parse_architectures(const std::string& list, std::vector<Architecture>& out) {
    std::size_t begin = 0;
    while (begin <= list.size()) {
        const std::size_t end = std::min(list.find(',', begin), list.size());
        const std::string item = list.substr(begin, end - begin);
        begin = end + 1;
        if (item.empty()) continue;
        const std::size_t digits = item.find_first_not_of("0123456789");
        if (digits == 0) return false;
        Architecture a;
        a.number = std::stoi(item.substr(0, digits));
        std::string rest = digits == std::string::npos ? "" : item.substr(digits);
        if (!rest.empty() && std::isalpha(static_cast<unsigned char>(rest[0]))) {
            a.suffix = rest[0];
            rest = rest.substr(1);
        }
        if (rest != "" && rest != "-real" && rest != "-virtual") return false;
        a.machine_code = rest != "-virtual";
        a.ptx = rest != "-real";
        out.push_back(a);
    }
    return true;
}

std::string spelled(const char* prefix, const Architecture& a) {
    return prefix + std::to_string(a.number) + (a.suffix ? std::string(1, a.suffix) : "");
}

}  // namespace

std::string describe_architectures(const std::string& list) {
    std::vector<Architecture> parsed;
    if (!parse_architectures(list, parsed)) return list;  // "all", "all-major": CMake's own words
    std::string machine, ptx;
    for (const Architecture& a : parsed) {
        if (a.machine_code) machine += (machine.empty() ? "" : ", ") + spelled("sm_", a);
        if (a.ptx) ptx += (ptx.empty() ? "" : ", ") + spelled("compute_", a);
    }
    std::string out = machine.empty() ? "" : machine + " machine code";
    if (!ptx.empty()) out += (out.empty() ? "" : " and ") + ptx + " PTX, which the driver compiles for newer GPUs";
    return out;
}

std::string architecture_problem(const std::string& list, int major, int minor) {
    std::vector<Architecture> parsed;
    if (!parse_architectures(list, parsed)) return "";  // CMake chose; trust it
    const int capability = 10 * major + minor;
    for (const Architecture& a : parsed) {
        const bool exact = a.number == capability;
        if (a.machine_code && (exact || (!a.suffix && a.number / 10 == major && a.number % 10 <= minor))) return "";
        if (a.ptx && (exact || (!a.suffix && a.number <= capability))) return "";
    }
    return "this build of hpcml has no code for compute capability " + std::to_string(major) + "." +
           std::to_string(minor) + " (it holds " + describe_architectures(list) +
           "); rebuild with -DCMAKE_CUDA_ARCHITECTURES=" + std::to_string(capability) + " or add it to the list";
}

}  // namespace detail

std::vector<DeviceInfo> devices() {
    std::vector<DeviceInfo> usable;
    for (DeviceInfo& d : query_devices().devices)
        if (d.usable) usable.push_back(std::move(d));
    return usable;
}

}  // namespace hpcml
