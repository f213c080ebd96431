// Errors, names, version and backend resolution.
#include <hpcml/core.hpp>
#include <hpcml/device.hpp>
#include <hpcml/version.hpp>

#include <cstdio>
#include <cstdlib>
#include <mutex>

#include "error.hpp"
#include "names.hpp"

namespace hpcml {

Error::Error(ErrorKind kind, const std::string& message) : std::runtime_error(message), kind_(kind) {}

std::string version() { return HPCML_VERSION_STRING; }

bool cuda_compiled() noexcept {
#if HPCML_WITH_CUDA
    return true;
#else
    return false;
#endif
}

namespace {

constexpr std::array<detail::Named<Backend>, 3> kBackends{
    {{Backend::Auto, "auto"}, {Backend::Cpu, "cpu"}, {Backend::Cuda, "cuda"}}};
constexpr std::array<detail::Named<Method>, 4> kMethods{
    {{Method::Auto, "auto"}, {Method::Fused, "fused"}, {Method::Sorted, "sorted"}, {Method::Naive, "naive"}}};
constexpr std::array<detail::Named<ErrorKind>, 6> kErrorKinds{{{ErrorKind::InvalidArgument, "InvalidArgument"},
                                                               {ErrorKind::OutOfMemory, "OutOfMemory"},
                                                               {ErrorKind::NoDevice, "NoDevice"},
                                                               {ErrorKind::DriverTooOld, "DriverTooOld"},
                                                               {ErrorKind::Cuda, "Cuda"},
                                                               {ErrorKind::Internal, "Internal"}}};

}  // namespace

std::string_view to_string(Backend backend) noexcept { return detail::name_in(kBackends, backend); }
std::string_view to_string(Method method) noexcept { return detail::name_in(kMethods, method); }
std::string_view to_string(ErrorKind kind) noexcept { return detail::name_in(kErrorKinds, kind); }

Backend parse_backend(std::string_view text, std::string_view argument) {
    return detail::parse_in(kBackends, text, argument);
}

Method parse_method(std::string_view text, std::string_view argument) {
    return detail::parse_in(kMethods, text, argument);
}

std::vector<std::string_view> backend_names() { return detail::names_in(kBackends); }
std::vector<std::string_view> method_names() { return detail::names_in(kMethods); }

namespace {

// The CUDA runtime's answer cannot change during a process, so it is asked once.
const DeviceQuery& cached_query() {
    static const DeviceQuery query = query_devices();
    return query;
}

void announce_auto(const Context& context) {
    static std::once_flag once;
    std::call_once(once, [&] {
        const char* quiet = std::getenv("HPCML_QUIET");
        if (quiet && *quiet && std::string_view(quiet) != "0") return;
        const DeviceQuery& query = cached_query();
        if (context.backend == Backend::Cuda) {
            std::fprintf(stderr, "hpcml: backend auto -> cuda (device %d: %s)\n", context.device,
                         query.devices[static_cast<std::size_t>(context.device)].name.c_str());
        } else if (query.status == CudaStatus::Ok) {  // some device is usable, not this one
            const bool in_range = context.device >= 0 && context.device < static_cast<int>(query.devices.size());
            std::fprintf(stderr, "hpcml: backend auto -> cpu (CUDA device %d: %s)\n", context.device,
                         in_range ? query.devices[static_cast<std::size_t>(context.device)].unusable_reason.c_str()
                                  : "no such device");
        } else {
            std::fprintf(stderr, "hpcml: backend auto -> cpu (no usable CUDA device: %s)\n",
                         std::string(to_string(query.status)).c_str());
        }
    });
}

}  // namespace

Context make_context(Backend requested, int device, void* stream) {
    const DeviceQuery& query = cached_query();
    const bool in_range = device >= 0 && device < static_cast<int>(query.devices.size());
    Context context{Backend::Cpu, device, stream};
    const auto refuse_out_of_range = [&] {
        detail::raise(ErrorKind::InvalidArgument, "device: ordinal " + std::to_string(device) + " is out of range; " +
                                                      std::to_string(query.devices.size()) + " CUDA device(s) visible");
    };
    switch (requested) {
        case Backend::Cpu:
            return context;
        case Backend::Auto:
            // A device this machine's GPUs do not have is the caller's mistake, not a reason to
            // run on the CPU (where there is no GPU at all, auto runs there whatever the ordinal).
            if (query.status == CudaStatus::Ok && !in_range) refuse_out_of_range();
            if (query.status == CudaStatus::Ok && query.devices[static_cast<std::size_t>(device)].usable) {
                context.backend = Backend::Cuda;
            }
            announce_auto(context);
            return context;
        case Backend::Cuda:
            if (query.status != CudaStatus::Ok) {
                const ErrorKind kind =
                    query.status == CudaStatus::DriverTooOld ? ErrorKind::DriverTooOld : ErrorKind::NoDevice;
                detail::raise(kind, "backend cuda requested, but " + query.message);
            }
            if (!in_range) refuse_out_of_range();
            if (const DeviceInfo& d = query.devices[static_cast<std::size_t>(device)]; !d.usable) {
                detail::raise(ErrorKind::NoDevice, "backend cuda requested on device " + std::to_string(device) + " (" +
                                                       d.name + "), but " + d.unusable_reason);
            }
            context.backend = Backend::Cuda;
            return context;
    }
    detail::raise(ErrorKind::InvalidArgument, "backend: not a valid hpcml::Backend value");
}

std::vector<Backend> available_backends() {
    std::vector<Backend> backends{Backend::Cpu};
    if (cached_query().status == CudaStatus::Ok) backends.push_back(Backend::Cuda);
    return backends;
}

namespace detail {

void raise(ErrorKind kind, const std::string& message) { throw Error(kind, message); }

std::string format_bytes(std::size_t bytes) {
    static const char* const units[] = {"B", "kB", "MB", "GB", "TB", "PB"};
    double value = static_cast<double>(bytes);
    int unit = 0;
    while (value >= 1000.0 && unit < 5) {
        value /= 1000.0;
        ++unit;
    }
    char text[64];
    if (unit == 0) {
        std::snprintf(text, sizeof text, "%zu B", bytes);
    } else {
        std::snprintf(text, sizeof text, "%.2f %s (%zu bytes)", value, units[unit], bytes);
    }
    return text;
}

std::size_t checked_mul(std::size_t a, std::size_t b, const char* what) {
    std::size_t product = 0;
    if (__builtin_mul_overflow(a, b, &product)) {
        raise(ErrorKind::InvalidArgument,
              std::string(what) + ": size overflows (" + std::to_string(a) + " x " + std::to_string(b) + ")");
    }
    return product;
}

}  // namespace detail
}  // namespace hpcml
