// The command-line parser every hpcml program shares (tools/cli/flags.hpp).
#include <gtest/gtest.h>

#include <cstdio>
#include <cstdlib>
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

TEST(Flags, HelpWrapsAtItsWidthUnderTheFirstWord) {
    Flags f;
    std::string words;
    for (int w = 0; w < 40; ++w) words += (w ? " word" : "word") + std::to_string(w);
    f.add("long", "12345", words, "N");
    f.add("a-very-long-flag-name-indeed", "7", "short", "VALUE");
    f.add_switch("q", "no progress");
    char* text = nullptr;
    std::size_t size = 0;
    std::FILE* out = open_memstream(&text, &size);
    f.print(out);
    std::fclose(out);
    const std::string help(text, size);
    std::free(text);

    std::vector<std::string> lines;
    for (std::size_t at = 0, end; at < help.size(); at = end + 1) {
        end = help.find('\n', at);
        lines.push_back(help.substr(at, end - at));
    }
    std::string joined;
    for (const std::string& line : lines) {
        EXPECT_LE(line.size(), Flags::kHelpColumns) << line;
        joined += line.substr(line.find_first_not_of(' ')) + " ";
    }
    // The words in order, each whole, the default kept in one piece, continuations at column 23.
    EXPECT_EQ(lines[0].rfind("  --long N", 0), 0u);
    EXPECT_EQ(lines[1].rfind(std::string(23, ' ') + "word", 0), 0u) << lines[1];
    EXPECT_NE(joined.find(words + " (default: 12345)"), std::string::npos) << joined;
    EXPECT_NE(help.find("  --a-very-long-flag-name-indeed VALUE short (default: 7)\n"), std::string::npos) << help;
    EXPECT_NE(help.find("  --q                  no progress\n"), std::string::npos) << help;
}

}  // namespace
