// A build without CUDA: every CUDA entry point of the library (the common layer's in
// common/no_cuda.cpp, each family's in its own no_cuda.cpp) raises NoDevice naming `what`.
#pragma once

namespace hpcml::detail {

[[noreturn]] void no_cuda(const char* what);

}  // namespace hpcml::detail
