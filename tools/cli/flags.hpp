// The command line of every hpcml program (the tools and the bench_* programs): flags declared
// with a default and a line of help, given as `--name VALUE` or `--name=VALUE`; switches take no
// value. Errors are hpcml::Error of kind InvalidArgument whose message names the flag.
#pragma once

#include <hpcml/core.hpp>

#include <cstddef>
#include <cstdio>
#include <map>
#include <string>
#include <string_view>
#include <vector>

namespace hpcml::cli {

class Flags {
public:
    // What parse() does with an argument it does not know.
    enum class Unknown {
        Reject,  // "unknown option '--x'"; other arguments are positionals
        Keep     // left in argv for another parser (Google Benchmark's), in order
    };

    // A flag with a value; `value_name` is what --help shows after it ("N", "FILE").
    void add(const std::string& name, const std::string& default_value, const std::string& help,
             const std::string& value_name = "VALUE");
    // A flag without a value: on() is true when it was given.
    void add_switch(const std::string& name, const std::string& help);

    // Reads argv[1..argc). `--help`/`-h` sets help_requested(); `--` ends the flags, and what
    // follows is rest() (a command to run, say). Recognised flags are removed from argv.
    void parse(int& argc, char** argv, Unknown unknown = Unknown::Reject);

    bool help_requested() const { return help_; }
    const std::vector<std::string>& positionals() const { return positionals_; }
    // The arguments after `--`, null-terminated (for execvp); {nullptr} when there were none.
    const std::vector<char*>& rest() const { return rest_; }

    const std::string& str(const std::string& name) const;
    bool given(const std::string& name) const;  // set on the command line, not defaulted
    bool on(const std::string& name) const;     // a switch that was given
    // An integer >= minimum, or InvalidArgument naming the flag.
    long long integer(const std::string& name, long long minimum = 1) const;
    double real(const std::string& name) const;
    // The value, which must be one of `choices`, or InvalidArgument naming the flag.
    const std::string& choice(const std::string& name, const std::vector<std::string>& choices) const;
    Backend backend(const std::string& name = "backend") const;

    // Each flag in declaration order, "  --name VALUE   help (default: ...)", wrapped to
    // kHelpColumns.
    void print(std::FILE* out) const;
    static constexpr std::size_t kHelpColumns = 100;

private:
    struct Entry {
        std::string value, default_value, help, value_name;
        bool is_switch = false, given = false;
    };
    const Entry& entry(const std::string& name) const;

    std::map<std::string, Entry> entries_;
    std::vector<std::string> order_;
    std::vector<std::string> positionals_;
    std::vector<char*> rest_{nullptr};
    bool help_ = false;
};

// The names a flag accepts, for its help: "auto|cpu|cuda" from the library's hpcml::backend_names().
std::string one_of(const std::vector<std::string_view>& names, std::string_view separator = "|");

}  // namespace hpcml::cli
