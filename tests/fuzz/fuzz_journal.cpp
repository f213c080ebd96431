// libFuzzer target: the journal's log reader on arbitrary text. Every claim it returns names a
// block below the count, and the text's claims are the same read whole or line by line.
#include <cstdint>
#include <cstdlib>
#include <map>
#include <string_view>

#include "similarity/journal.hpp"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
    if (size < 1) return 0;
    const std::size_t blocks = data[0];
    const std::string_view log(reinterpret_cast<const char*>(data + 1), size - 1);
    std::map<std::size_t, std::uint64_t> whole, by_line;
    hpcml::tools::read_claims(log, blocks, whole);
    for (std::size_t start = 0, eol; (eol = log.find('\n', start)) != std::string_view::npos; start = eol + 1)
        hpcml::tools::read_claims(log.substr(start, eol - start + 1), blocks, by_line);
    if (whole != by_line) std::abort();
    for (const auto& [block, sum] : whole)
        if (block >= blocks) std::abort();
    return 0;
}
