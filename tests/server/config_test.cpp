// Tests server/config.cpp: what --help tells an operator about where the two ports listen, and
// that the defaults are what it says.
#include "server/config.hpp"

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

}  // namespace
}  // namespace torqued::server
