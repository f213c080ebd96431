// hpcml-devicequery: what CUDA devices this machine has, in words or JSON, and why one is not
// usable when that is so. This build must have code for each device's architecture, and each
// usable device runs a one-thread kernel, so "ok" means code built for
// CMAKE_CUDA_ARCHITECTURES actually executes there.
//
// Exit status: 0 every device runs hpcml's kernels; 2 no driver, no device, or a device that
// cannot run them (the reason is printed); 1 bad command line.
#include <hpcml/core.hpp>
#include <hpcml/device.hpp>

#include "cli/flags.hpp"

#include <cuda_runtime.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <string>
#include <string_view>
#include <vector>

namespace {

__global__ void devicequery_probe_kernel(int* out) { *out = 42; }

// "ok", or why hpcml's kernels cannot run on `device`.
std::string probe(const hpcml::DeviceInfo& d) {
    if (!d.usable) return "not usable: " + d.unusable_reason;
    const int device = d.index;
    if (cudaSetDevice(device) != cudaSuccess) return cudaGetErrorString(cudaGetLastError());
    int* value = nullptr;
    cudaError_t status = cudaMalloc(&value, sizeof(int));
    if (status == cudaSuccess) {
        devicequery_probe_kernel<<<1, 1>>>(value);
        status = cudaGetLastError();
        int host = 0;
        if (status == cudaSuccess) status = cudaMemcpy(&host, value, sizeof host, cudaMemcpyDeviceToHost);
        if (status == cudaSuccess && host != 42) return "kernel ran but wrote a wrong value";
        cudaFree(value);
    }
    (void)cudaGetLastError();
    if (status == cudaSuccess) return "ok";
    return std::string(cudaGetErrorName(status)) + ": " + cudaGetErrorString(status);
}

// --link: the host link's copy rates, the floor of every call whose data crosses it (a host
// array uploaded, a result downloaded). Both directions, from page-locked memory (cudaHostAlloc:
// the copy engine reads or writes it directly), pageable memory (the driver stages it through
// buffers of its own) and pageable memory registered for the copy (cudaHostRegister, the copy,
// cudaHostUnregister: what a call would pay to make a caller's pageable buffer page-locked, the
// alternative to hpcml's own staging), at a size a result tile takes and at a large one; each
// the median of five whole copies by the host's clock, as a user's call sees them.
struct LinkRate {
    const char* direction;  // "host_to_device" or "device_to_host"
    const char* memory;     // "pinned", "pageable" or "registered"
    std::size_t bytes;
    double gbps;  // 1e9 bytes per second; 0 where the copy failed
    std::string error;
};

std::vector<LinkRate> measure_link(int device) {
    std::vector<LinkRate> rates;
    for (const std::size_t bytes : {std::size_t(16) << 20, std::size_t(400) << 20}) {
        void* on_device = nullptr;
        void* pinned = nullptr;
        std::vector<unsigned char> pageable(bytes, 1);  // its pages faulted in before timing
        cudaError_t setup = cudaSetDevice(device);
        if (setup == cudaSuccess) setup = cudaMalloc(&on_device, bytes);
        if (setup == cudaSuccess) setup = cudaHostAlloc(&pinned, bytes, cudaHostAllocDefault);
        if (setup == cudaSuccess) std::memset(pinned, 1, bytes);
        for (const bool to_device : {true, false})
            for (const char* memory : {"pinned", "pageable", "registered"}) {
                void* host = std::string_view(memory) == "pinned" ? pinned : static_cast<void*>(pageable.data());
                const bool registered = std::string_view(memory) == "registered";
                LinkRate rate{to_device ? "host_to_device" : "device_to_host", memory, bytes, 0.0, ""};
                std::vector<double> seconds;
                cudaError_t status = setup;  // each row's own: one failure leaves the others measured
                for (int repeat = 0; repeat < 6 && status == cudaSuccess; ++repeat) {
                    const auto start = std::chrono::steady_clock::now();
                    if (registered) status = cudaHostRegister(host, bytes, cudaHostRegisterDefault);
                    if (status == cudaSuccess) {
                        status = to_device ? cudaMemcpy(on_device, host, bytes, cudaMemcpyHostToDevice)
                                           : cudaMemcpy(host, on_device, bytes, cudaMemcpyDeviceToHost);
                        if (registered) {  // unregistered whatever the copy did; the first error kept
                            const cudaError_t unregistered = cudaHostUnregister(host);
                            if (status == cudaSuccess) status = unregistered;
                        }
                    }
                    const std::chrono::duration<double> took = std::chrono::steady_clock::now() - start;
                    if (repeat > 0) seconds.push_back(took.count());  // the first warms the path
                }
                (void)cudaGetLastError();
                if (status == cudaSuccess) {
                    std::nth_element(seconds.begin(), seconds.begin() + seconds.size() / 2, seconds.end());
                    rate.gbps = bytes / seconds[seconds.size() / 2] / 1e9;
                } else {
                    rate.error = std::string(cudaGetErrorName(status)) + ": " + cudaGetErrorString(status);
                }
                rates.push_back(rate);
            }
        cudaFreeHost(pinned);
        cudaFree(on_device);
        (void)cudaGetLastError();
    }
    return rates;
}

std::string json_string(const std::string& text) {
    std::string out = "\"";
    for (const char c : text) {
        if (c == '"' || c == '\\') {
            out += '\\';
            out += c;
        } else if (static_cast<unsigned char>(c) < 0x20) {
            char escaped[8];
            std::snprintf(escaped, sizeof escaped, "\\u%04x", c);
            out += escaped;
        } else {
            out += c;
        }
    }
    return out + "\"";
}

bool all_pass(const std::vector<std::string>& probes) {
    return !probes.empty() && std::all_of(probes.begin(), probes.end(), [](const std::string& p) { return p == "ok"; });
}

const char* verdict(const hpcml::DeviceQuery& query) {
    if (query.driver_version == 0) return "no driver";
    if (query.driver_version >= query.runtime_version) return "compatible";
    return "driver older than runtime";
}

void print_text(const hpcml::DeviceQuery& query, const std::vector<std::string>& probes,
                const std::vector<std::vector<LinkRate>>& links) {
    std::printf("hpcml %s device query\n", hpcml::version().c_str());
    std::printf("CUDA driver version:  %s\n", hpcml::format_cuda_version(query.driver_version).c_str());
    std::printf("CUDA runtime version: %s (linked statically into hpcml)\n",
                hpcml::format_cuda_version(query.runtime_version).c_str());
    std::printf("Compatibility:        %s\n", verdict(query));
    if (query.devices.empty()) {
        std::printf("\nNo usable CUDA device: %s\n", query.message.c_str());
        return;
    }
    std::printf("Devices:              %zu\n", query.devices.size());
    for (std::size_t i = 0; i < query.devices.size(); ++i) {
        const hpcml::DeviceInfo& d = query.devices[i];
        std::printf("\nDevice %d: %s\n", d.index, d.name.c_str());
        std::printf("  PCI bus id                        %s\n", d.pci_bus_id.c_str());
        std::printf("  Integrated                        %s\n", d.integrated ? "yes" : "no");
        std::printf("  Compute capability                %d.%d\n", d.compute_capability_major,
                    d.compute_capability_minor);
        std::printf("  Multiprocessors                   %d\n", d.multiprocessor_count);
        std::printf("  Global memory                     %.2f GiB (%zu bytes)\n",
                    d.total_global_memory_bytes / 1073741824.0, d.total_global_memory_bytes);
        std::printf("  L2 cache                          %d KiB\n", d.l2_cache_bytes / 1024);
        std::printf("  Shared memory per block           %zu KiB (opt-in %zu KiB)\n",
                    d.shared_memory_per_block_bytes / 1024, d.shared_memory_per_block_optin_bytes / 1024);
        std::printf("  Shared memory per multiprocessor  %zu KiB\n", d.shared_memory_per_multiprocessor_bytes / 1024);
        std::printf("  SM clock                          %d MHz\n", d.sm_clock_khz / 1000);
        std::printf("  Memory clock                      %d MHz\n", d.memory_clock_khz / 1000);
        std::printf("  Memory bus width                  %d bits\n", d.memory_bus_width_bits);
        std::printf("  Peak memory bandwidth             %.1f GB/s\n", d.peak_memory_bandwidth_gbps);
        std::printf("  hpcml kernels                     %s\n", probes[i].c_str());
        for (const LinkRate& r : links[i]) {
            std::printf("  Host link %-14s %-8s %3zu MiB  ", r.direction, r.memory, r.bytes >> 20);
            if (r.error.empty()) {
                std::printf("%.1f GB/s\n", r.gbps);
            } else {
                std::printf("failed: %s\n", r.error.c_str());
            }
        }
    }
    if (query.status != hpcml::CudaStatus::Ok) std::printf("\nNo usable CUDA device: %s\n", query.message.c_str());
    std::printf("\nhpcml's kernels are built for %s\n", hpcml::cuda_architectures().c_str());
    std::printf("\nResult = %s\n", all_pass(probes) ? "PASS" : "FAIL");
}

void print_json(const hpcml::DeviceQuery& query, const std::vector<std::string>& probes,
                const std::vector<std::vector<LinkRate>>& links) {
    std::printf("{\n  \"hpcml_version\": %s,\n", json_string(hpcml::version()).c_str());
    std::printf("  \"driver_version\": %s,\n", json_string(hpcml::format_cuda_version(query.driver_version)).c_str());
    std::printf("  \"runtime_version\": %s,\n", json_string(hpcml::format_cuda_version(query.runtime_version)).c_str());
    std::printf("  \"compatibility\": %s,\n", json_string(verdict(query)).c_str());
    std::printf("  \"status\": %s,\n", json_string(std::string(hpcml::to_string(query.status))).c_str());
    std::printf("  \"usable\": %s,\n", query.status == hpcml::CudaStatus::Ok ? "true" : "false");
    std::printf("  \"all_devices_pass\": %s,\n", all_pass(probes) ? "true" : "false");
    std::printf("  \"cuda_architectures\": %s,\n", json_string(hpcml::cuda_architectures()).c_str());
    std::printf("  \"message\": %s,\n", json_string(query.message).c_str());
    std::printf("  \"devices\": [");
    for (std::size_t i = 0; i < query.devices.size(); ++i) {
        const hpcml::DeviceInfo& d = query.devices[i];
        std::printf(
            "%s\n    {\"index\": %d, \"name\": %s, \"pci_bus_id\": %s, \"integrated\": %s, "
            "\"compute_capability\": \"%d.%d\", \"multiprocessors\": %d, "
            "\"global_memory_bytes\": %zu, \"l2_cache_bytes\": %d, "
            "\"shared_memory_per_block_bytes\": %zu, \"shared_memory_per_block_optin_bytes\": %zu, "
            "\"shared_memory_per_multiprocessor_bytes\": %zu, \"sm_clock_khz\": %d, "
            "\"memory_clock_khz\": %d, \"memory_bus_width_bits\": %d, "
            "\"peak_memory_bandwidth_gbps\": %.1f, \"usable\": %s, \"kernel_launch\": %s",
            i ? "," : "", d.index, json_string(d.name).c_str(), json_string(d.pci_bus_id).c_str(),
            d.integrated ? "true" : "false", d.compute_capability_major, d.compute_capability_minor,
            d.multiprocessor_count, d.total_global_memory_bytes, d.l2_cache_bytes, d.shared_memory_per_block_bytes,
            d.shared_memory_per_block_optin_bytes, d.shared_memory_per_multiprocessor_bytes, d.sm_clock_khz,
            d.memory_clock_khz, d.memory_bus_width_bits, d.peak_memory_bandwidth_gbps, d.usable ? "true" : "false",
            json_string(probes[i]).c_str());
        if (!links[i].empty()) {
            std::printf(", \"host_link\": [");
            for (std::size_t k = 0; k < links[i].size(); ++k) {
                const LinkRate& r = links[i][k];
                std::printf(
                    "%s{\"direction\": \"%s\", \"memory\": \"%s\", \"bytes\": %zu, \"gbps\": %.2f, \"error\": %s}",
                    k ? ", " : "", r.direction, r.memory, r.bytes, r.gbps, json_string(r.error).c_str());
            }
            std::printf("]");
        }
        std::printf("}");
    }
    std::printf("%s]\n}\n", query.devices.empty() ? "" : "\n  ");
}

void usage(std::FILE* out, const hpcml::cli::Flags& flags) {
    std::fprintf(out,
                 "usage: hpcml-devicequery [--json] [--link] [--help]\n"
                 "\n"
                 "Lists the CUDA devices: name, compute capability, memory, caches, clocks, peak\n"
                 "bandwidth, and whether hpcml's kernels load and launch there (this build has code\n"
                 "for the architectures it prints); the driver and runtime versions and their\n"
                 "compatibility. --link adds each usable device's host link: copies of 16 and 400 MiB\n"
                 "each way, from page-locked memory, pageable memory, and pageable memory registered for\n"
                 "the copy (the median of five).\n"
                 "\n");
    flags.print(out);
    std::fprintf(out,
                 "\n"
                 "Exit status: 0 every device runs hpcml's kernels; 2 no driver, no device, or a\n"
                 "device that cannot run them (the reason is printed); 1 bad command line.\n");
}

}  // namespace

int main(int argc, char** argv) {
    hpcml::cli::Flags flags;
    flags.add_switch("json", "print the same as one JSON object");
    flags.add_switch("link", "also measure each usable device's host link (a second or so)");
    try {
        flags.parse(argc, argv);
        if (!flags.positionals().empty())
            throw hpcml::Error(hpcml::ErrorKind::InvalidArgument,
                               "unknown argument '" + flags.positionals().front() + "'");
    } catch (const hpcml::Error& e) {
        std::fprintf(stderr, "hpcml-devicequery: %s\n\n", e.what());
        usage(stderr, flags);
        return 1;
    }
    if (flags.help_requested()) {
        usage(stdout, flags);
        return 0;
    }
    const bool json = flags.on("json");
    const hpcml::DeviceQuery query = hpcml::query_devices();
    std::vector<std::string> probes;
    std::vector<std::vector<LinkRate>> links;
    for (const hpcml::DeviceInfo& device : query.devices) {
        probes.push_back(probe(device));
        links.push_back(flags.on("link") && probes.back() == "ok" ? measure_link(device.index)
                                                                  : std::vector<LinkRate>{});
    }
    if (json) {
        print_json(query, probes, links);
    } else {
        print_text(query, probes, links);
    }
    return all_pass(probes) ? 0 : 2;
}
