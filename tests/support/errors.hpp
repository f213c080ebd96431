// Checks that a call raises hpcml::Error of kind InvalidArgument whose message starts with the
// argument's name ("x:", "threshold", ...).
#pragma once

#include <gtest/gtest.h>
#include <hpcml/core.hpp>

#include <string>

namespace hpcml_test {

template <class Call>
void expect_invalid(Call&& call, const std::string& names) {
    try {
        call();
        ADD_FAILURE() << "expected InvalidArgument naming " << names;
    } catch (const hpcml::Error& e) {
        EXPECT_EQ(e.kind(), hpcml::ErrorKind::InvalidArgument) << e.what();
        EXPECT_EQ(std::string(e.what()).rfind(names, 0), 0u) << e.what();
    }
}

}  // namespace hpcml_test
