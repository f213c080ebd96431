// GPU tests skip, with the reason, on machines without a usable CUDA device.
#pragma once

#include <gtest/gtest.h>
#include <hpcml/device.hpp>

#include <ostream>
#include <string>

namespace hpcml_test {

inline const hpcml::DeviceQuery& device_query() {
    static const hpcml::DeviceQuery query = hpcml::query_devices();
    return query;
}

inline bool gpu_available() { return device_query().status == hpcml::CudaStatus::Ok; }

// Suites that run on every backend: INSTANTIATE_TEST_SUITE_P(..., ::testing::ValuesIn(kBackends),
// backend_name), and HPCML_SKIP_UNLESS_AVAILABLE(GetParam()) first in each test (or SetUp).
inline const hpcml::Backend kBackends[] = {hpcml::Backend::Cpu, hpcml::Backend::Cuda};
inline std::string backend_name(const ::testing::TestParamInfo<hpcml::Backend>& info) {
    return std::string(hpcml::to_string(info.param));
}

}  // namespace hpcml_test

namespace hpcml {
// GoogleTest prints a parameterised backend by name ("cuda"), not as bytes.
inline void PrintTo(Backend backend, std::ostream* os) { *os << to_string(backend); }
}  // namespace hpcml

#define HPCML_SKIP_WITHOUT_GPU()                                                               \
    do {                                                                                       \
        if (!::hpcml_test::gpu_available())                                                    \
            GTEST_SKIP() << "no usable CUDA device: " << ::hpcml_test::device_query().message; \
    } while (0)

#define HPCML_SKIP_UNLESS_AVAILABLE(backend)                               \
    do {                                                                   \
        if ((backend) == ::hpcml::Backend::Cuda) HPCML_SKIP_WITHOUT_GPU(); \
    } while (0)
