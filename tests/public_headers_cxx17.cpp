// The public headers are C++17 (the library itself is C++20): this file is compiled as C++17 in
// every build, so a C++20-only construct in include/hpcml fails the build.
#include <hpcml/hpcml.hpp>

static_assert(__cplusplus == 201703L, "compiled as C++17");

hpcml::SimilarityOptions public_headers_cxx17_options() {
    hpcml::SimilarityOptions options;
    options.backend = hpcml::Backend::Cpu;  // ExecutionOptions' fields, as in C++20 code
    return options;
}
