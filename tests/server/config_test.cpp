// Tests server/base/config.cpp: what --help tells an operator about where the two ports listen, that
// the defaults are what it says, and that limits contradicting each other are named.
#include "server/base/config.hpp"

#include <gtest/gtest.h>

namespace torqued::server {
namespace {

// The --help entry of `flag`: from its line to the next flag's.
std::string help_entry(const std::string& flag) {
  const std::string help = config_help();
  const std::size_t start = help.find("  --" + flag + " (");
  if (start == std::string::npos) return "";
  return help.substr(start, help.find("\n  --", start + 1) - start);
}

TEST(ConfigTest, HelpSaysBothPortsBindEveryInterfaceByDefault) {
  const Config defaults;
  EXPECT_EQ(defaults.address, "0.0.0.0");
  EXPECT_EQ(defaults.metrics_address, "0.0.0.0");
  for (const std::string flag : {"address", "metrics-address"}) {
    const std::string entry = help_entry(flag);
    EXPECT_NE(entry.find("the default binds every interface"), std::string::npos) << entry;
    EXPECT_NE(entry.find("127.0.0.1: this host only"), std::string::npos) << entry;
    EXPECT_NE(entry.find("[default: \"0.0.0.0\"]"), std::string::npos) << entry;
  }
}

TEST(ConfigTest, TheDefaultsContradictNothing) {
  Config defaults;
  defaults.workers = 2;
  EXPECT_TRUE(contradictions(defaults).empty());
}

// Each limit that another makes unreachable is named with both flags.
TEST(ConfigTest, LimitsThatContradictEachOtherAreNamed) {
  const ParseResult parsed = parse_config(
      {"--workers=2", "--max-model-bytes=16777216", "--max-message-bytes=8388608",
       "--memory-budget-bytes=134217728", "--max-connections=4", "--max-calls-per-peer=3"});
  ASSERT_TRUE(parsed.config) << parsed.message;
  const std::vector<std::string> found = contradictions(*parsed.config);
  const auto named = [&](const std::string& first, const std::string& second) {
    for (const std::string& line : found) {
      if (line.find(first) != std::string::npos && line.find(second) != std::string::npos) {
        return true;
      }
    }
    return false;
  };
  EXPECT_TRUE(named("--max-model-bytes (16777216)", "--max-message-bytes (8388608)"));
  EXPECT_TRUE(named("--max-workspace-bytes", "half of --memory-budget-bytes (67108864)"));
  EXPECT_TRUE(named("--workspace-cache-bytes", "half of --memory-budget-bytes"));
  EXPECT_TRUE(named("--max-connections-per-peer (32)", "--max-connections (4)"));
  EXPECT_TRUE(named("--max-calls-per-peer (3)", "--workers (2)"));
  EXPECT_EQ(found.size(), 5u) << ::testing::PrintToString(found);
}

}  // namespace
}  // namespace torqued::server
