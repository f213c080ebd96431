// GPU tests skip, with the reason, on machines without a usable CUDA device.
#pragma once

#include <gtest/gtest.h>
#include <hpcml/device.hpp>

namespace hpcml_test {

inline const hpcml::DeviceQuery& device_query() {
    static const hpcml::DeviceQuery query = hpcml::query_devices();
    return query;
}

inline bool gpu_available() { return device_query().status == hpcml::CudaStatus::Ok; }

}  // namespace hpcml_test

#define HPCML_SKIP_WITHOUT_GPU()                                                   \
    do {                                                                           \
        if (!::hpcml_test::gpu_available())                                        \
            GTEST_SKIP() << "no usable CUDA device: " << ::hpcml_test::device_query().message; \
    } while (0)
