// An environment variable set (or unset: nullptr) for a scope, then as it was: for the
// variables the library reads at each call (HPCML_CPU_KERNEL, HPCML_SORTED_GPU_BLOCKS_PER_SM).
#pragma once

#include <cstdlib>
#include <optional>
#include <string>

namespace hpcml_test {

class ScopedEnvironment {
public:
    ScopedEnvironment(std::string name, const char* value) : name_(std::move(name)) {
        if (const char* before = std::getenv(name_.c_str())) before_ = before;
        value ? ::setenv(name_.c_str(), value, 1) : ::unsetenv(name_.c_str());
    }
    ~ScopedEnvironment() { before_ ? ::setenv(name_.c_str(), before_->c_str(), 1) : ::unsetenv(name_.c_str()); }
    ScopedEnvironment(const ScopedEnvironment&) = delete;
    ScopedEnvironment& operator=(const ScopedEnvironment&) = delete;

private:
    std::string name_;
    std::optional<std::string> before_;
};

}  // namespace hpcml_test
