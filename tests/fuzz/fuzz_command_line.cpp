// libFuzzer target: the command lines of hpcml-similarity and of the shared flag parser, the
// input split at NUL bytes into arguments. A bad command line is an Exit or an hpcml::Error
// naming the argument; nothing else may escape.
#include <hpcml/core.hpp>

#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <vector>

#include "cli/flags.hpp"
#include "similarity/command_line.hpp"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
    std::vector<std::string> args{"prog"};
    std::string current;
    for (std::size_t i = 0; i < size; ++i) {
        if (data[i] == 0) {
            args.push_back(current);
            current.clear();
        } else {
            current += static_cast<char>(data[i]);
        }
    }
    args.push_back(current);
    auto argv_of = [](std::vector<std::string>& strings) {
        std::vector<char*> argv;
        for (std::string& s : strings) argv.push_back(s.data());
        argv.push_back(nullptr);
        return argv;
    };

    std::vector<std::string> copy = args;
    std::vector<char*> argv = argv_of(copy);
    try {
        (void)hpcml::tools::parse_command_line(static_cast<int>(args.size()), argv.data());
    } catch (const hpcml::tools::Exit& e) {
        if (e.code != 0 && e.message.empty()) std::abort();
    }

    copy = args;
    argv = argv_of(copy);
    int argc = static_cast<int>(args.size());
    hpcml::cli::Flags flags;
    flags.add("tile", "1000", "tile");
    flags.add("threshold", "1", "threshold");
    flags.add_switch("quiet", "quiet");
    try {
        flags.parse(argc, argv.data(), hpcml::cli::Flags::Unknown::Keep);
        if (argc < 1 || argv[static_cast<std::size_t>(argc)] != nullptr) std::abort();
        (void)flags.integer("tile", 1);
        (void)flags.real("threshold");
    } catch (const hpcml::Error& e) {
        if (e.kind() != hpcml::ErrorKind::InvalidArgument) std::abort();
    }
    return 0;
}
