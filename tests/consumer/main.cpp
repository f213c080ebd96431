// Links against an installed libhpcml and calls it: prints the version and the backends.
#include <hpcml/hpcml.hpp>

#include <cstdio>

int main() {
    std::printf("hpcml %s (header %s), cuda compiled: %s, backends:", hpcml::version().c_str(), HPCML_VERSION_STRING,
                hpcml::cuda_compiled() ? "yes" : "no");
    for (hpcml::Backend backend : hpcml::available_backends()) {
        std::printf(" %s", std::string(hpcml::to_string(backend)).c_str());
    }
    std::printf("\n");
    const hpcml::Context context = hpcml::make_context(hpcml::Backend::Cpu);
    return context.backend == hpcml::Backend::Cpu ? 0 : 1;
}
