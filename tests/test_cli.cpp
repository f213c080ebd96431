// The command-line parser every hpcml program shares (tools/cli/flags.hpp), and hpcml-similarity's
// blocks (tools/similarity/blocks.hpp), which its resume journal records.
#include <gtest/gtest.h>

#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <string_view>
#include <vector>

#include "cli/flags.hpp"
#include "similarity/blocks.hpp"
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

// hpcml-similarity's blocks over a grid of shapes, tiles, output types, symmetry and budgets,
// hashed, equal those of the release before they came from the library's tile plan
// (similarity_tile_plan, 3792365): a journal written then vouches for the same blocks now, so a
// run interrupted before an upgrade resumes after it. A change of plan must change this number
// on purpose, and say that journals of older runs start over.
TEST(SimilarityBlocks, PlansAreThoseJournalsWrittenBeforeTheLibraryPlannedThemRecord) {
    const std::size_t sizes[] = {0, 1, 7, 13, 100, 257, 1000};
    const std::size_t tiles[] = {1, 8, 13, 100, 1000, 5000};
    const std::size_t budgets[] = {1, 300, 2000, std::size_t{1} << 20, std::size_t{1} << 28};
    std::uint64_t all = 14695981039346656037ull;  // FNV-1a over every case's hash
    for (const std::size_t n : sizes)
        for (const std::size_t m : sizes)
            for (const std::size_t tile : tiles)
                for (const std::string_view name : hpcml::similarity_output_names())
                    for (const bool symmetric : {false, true})
                        for (const std::size_t budget : budgets) {
                            if (symmetric && n != m) continue;
                            const auto output = hpcml::parse_similarity_output(name);
                            std::uint64_t h = 14695981039346656037ull;
                            auto mix = [&](std::uint64_t v) { h = (h ^ v) * 1099511628211ull; };
                            const auto blocks = hpcml::tools::plan_blocks(n, m, tile, output, symmetric, budget);
                            for (const hpcml::tools::Block& b : blocks) {
                                for (const std::size_t v : {b.r0, b.c0, b.rows, b.cols}) mix(v);
                                mix(b.mirrored);
                            }
                            mix(blocks.size());
                            all = (all ^ h) * 1099511628211ull;
                        }
    EXPECT_EQ(all, 13834728750361395282ull);
}

}  // namespace
