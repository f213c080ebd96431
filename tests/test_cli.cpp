// The command-line parser every hpcml program shares (tools/cli/flags.hpp).
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "cli/flags.hpp"
#include "support/errors.hpp"

namespace {

using hpcml::cli::Flags;

// argv as main() gets it: writable strings, null-terminated.
struct Argv {
    explicit Argv(std::vector<std::string> args) : strings(std::move(args)) {
        for (std::string& s : strings) pointers.push_back(s.data());
        pointers.push_back(nullptr);
        argc = static_cast<int>(strings.size());
    }
    std::vector<std::string> strings;
    std::vector<char*> pointers;
    int argc;
    char** argv() { return pointers.data(); }
};

Flags declare() {
    Flags f;
    f.add("tile", "1000", "tile edge", "N");
    f.add("mode", "count", "count|all");
    f.add_switch("quiet", "no progress");
    return f;
}

TEST(Flags, ValuesSwitchesPositionalsAndDefaults) {
    Flags f = declare();
    Argv a({"prog", "in.npy", "--tile", "17", "--mode=all", "--quiet", "more"});
    f.parse(a.argc, a.argv());
    EXPECT_EQ(f.integer("tile"), 17);
    EXPECT_EQ(f.str("mode"), "all");
    EXPECT_TRUE(f.on("quiet"));
    EXPECT_TRUE(f.given("tile"));
    EXPECT_EQ(f.positionals(), (std::vector<std::string>{"in.npy", "more"}));
    EXPECT_FALSE(f.help_requested());
    EXPECT_EQ(f.rest().size(), 1u);  // just the terminating null

    Flags d = declare();
    Argv b({"prog"});
    d.parse(b.argc, b.argv());
    EXPECT_EQ(d.integer("tile"), 1000);
    EXPECT_FALSE(d.given("tile"));
    EXPECT_FALSE(d.on("quiet"));
}

TEST(Flags, RestAfterSeparatorAndHelp) {
    Flags f = declare();
    Argv a({"prog", "-h", "--tile", "3", "--", "sh", "-c", "--tile"});
    f.parse(a.argc, a.argv());
    EXPECT_TRUE(f.help_requested());
    EXPECT_EQ(f.integer("tile"), 3);
    ASSERT_EQ(f.rest().size(), 4u);
    EXPECT_STREQ(f.rest()[0], "sh");
    EXPECT_STREQ(f.rest()[2], "--tile");
    EXPECT_EQ(f.rest()[3], nullptr);
}

TEST(Flags, KeepLeavesUnknownArgumentsInOrder) {
    Flags f = declare();
    Argv a({"prog", "--benchmark_filter=x", "--tile=5", "--benchmark_format", "json"});
    f.parse(a.argc, a.argv(), Flags::Unknown::Keep);
    ASSERT_EQ(a.argc, 4);
    EXPECT_STREQ(a.argv()[1], "--benchmark_filter=x");
    EXPECT_STREQ(a.argv()[2], "--benchmark_format");
    EXPECT_STREQ(a.argv()[3], "json");
    EXPECT_EQ(a.argv()[4], nullptr);
    EXPECT_EQ(f.integer("tile"), 5);
}

TEST(Flags, BadInputNamesTheFlag) {
    auto parse = [](std::vector<std::string> args) {
        Flags f = declare();
        Argv a(std::move(args));
        f.parse(a.argc, a.argv());
        return f;
    };
    hpcml_test::expect_invalid([&] { (void)parse({"prog", "--bogus"}); }, "unknown option '--bogus'");
    hpcml_test::expect_invalid([&] { (void)parse({"prog", "--tile"}); }, "--tile: missing value");
    hpcml_test::expect_invalid([&] { (void)parse({"prog", "--quiet=yes"}); }, "--quiet: takes no value");
    hpcml_test::expect_invalid(
        [&] {
            (void)parse({"prog", "--tile", "0"}).integer("tile");
        },
        "--tile: expected an integer >= 1, got '0'");
    hpcml_test::expect_invalid(
        [&] {
            (void)parse({"prog", "--tile", "12x"}).integer("tile");
        },
        "--tile: expected an integer >= 1, got '12x'");
    hpcml_test::expect_invalid(
        [&] {
            (void)parse({"prog", "--tile", "99999999999999999999"}).integer("tile");
        },
        "--tile");
    hpcml_test::expect_invalid(
        [&] {
            (void)parse({"prog", "--mode", "x"}).choice("mode", {"count", "all"});
        },
        "--mode: expected count|all, got 'x'");
    hpcml_test::expect_invalid([&] { (void)parse({"prog", "--mode", ""}).real("mode"); }, "--mode: expected a number");
}

}  // namespace
