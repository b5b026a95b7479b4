// The XML structure check in front of urdfdom: every real robot description passes, nesting is
// bounded (a 40,000-level document, which overflowed TinyXML's stack and killed the server, is
// refused with a message), and every construct on which TinyXML's reading could differ from the
// check's is refused rather than counted differently.
#include "engine/io/xml_guard.hpp"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>

#include "engine/io/urdf.hpp"

namespace torqued {
namespace {

using ::testing::HasSubstr;

const std::filesystem::path kSharedDir = TORQUED_SHARED_DIR;
const std::filesystem::path kRepository = TORQUED_REPOSITORY_DIR;

XmlLimits depth_limit(int depth) {
  XmlLimits limits;
  limits.max_depth = depth;
  return limits;
}

std::string nested(int depth) {
  std::string xml;
  for (int i = 0; i < depth; ++i) xml += "<a>";
  for (int i = 0; i < depth; ++i) xml += "</a>";
  return xml;
}

// The message of the ModelError the check throws, or "" when it accepts.
std::string refusal(const std::string& xml, XmlLimits limits = {}) {
  try {
    check_xml_structure(xml, limits);
  } catch (const ModelError& e) {
    return e.what();
  }
  return "";
}

std::string read_file(const std::filesystem::path& path) {
  std::ifstream in(path, std::ios::binary);
  std::ostringstream text;
  text << in.rdbuf();
  return text.str();
}

TEST(XmlGuardTest, AcceptsTheBundledAndSharedRobots) {
  int checked = 0;
  for (const auto& dir : {kRepository, kSharedDir / "models"}) {
    if (!std::filesystem::exists(dir)) continue;
    for (const auto& entry : std::filesystem::directory_iterator(dir)) {
      if (entry.path().extension() != ".urdf") continue;
      EXPECT_EQ(refusal(read_file(entry.path()), depth_limit(kMaxUrdfDepth)), "") << entry.path();
      ++checked;
    }
  }
  EXPECT_GE(checked, 4);
}

TEST(XmlGuardTest, BoundsNesting) {
  EXPECT_EQ(refusal(nested(64), depth_limit(64)), "");
  EXPECT_THAT(refusal(nested(65), depth_limit(64)), HasSubstr("nested deeper than 64 levels"));
  // Self-closing elements at the limit do not open a level.
  EXPECT_EQ(refusal(nested(63).insert(63 * 3, "<b/>"), depth_limit(64)), "");
}

// Regression: 40,000 levels (about 280 KB, under the server's URDF limit) crashed the server in
// TinyXML's recursive descent. Now the reader refuses the document before it is parsed.
TEST(XmlGuardTest, DeeplyNestedUrdfIsRefusedNotParsed) {
  std::string xml = "<robot name=\"r\"><link name=\"l\">";
  for (int i = 0; i < 40000; ++i) xml += "<a>";
  for (int i = 0; i < 40000; ++i) xml += "</a>";
  xml += "</link></robot>";
  try {
    read_urdf_string(xml);
    FAIL() << "accepted";
  } catch (const ModelError& e) {
    EXPECT_THAT(e.what(), HasSubstr("nested deeper than 64 levels"));
    EXPECT_THAT(e.what(), HasSubstr("line 1"));
  }
}

TEST(XmlGuardTest, CountsLinksBeforeParsing) {
  std::string xml = "<robot name=\"r\">";
  for (int i = 0; i < 5; ++i) xml += "<link name=\"l" + std::to_string(i) + "\"/>";
  xml += "<gazebo><link/></gazebo></robot>";  // only the robot's own links count
  EXPECT_EQ(refusal(xml, XmlLimits{64, "link", 5}), "");
  try {
    check_xml_structure(xml, XmlLimits{64, "link", 4});
    FAIL() << "accepted";
  } catch (const TooManyElementsError& e) {
    EXPECT_THAT(e.what(), HasSubstr("more than 4 <link> elements"));
  }
}

TEST(XmlGuardTest, AcceptsCommentsCdataDeclarationsAndText) {
  EXPECT_EQ(refusal("\xEF\xBB\xBF<?xml version=\"1.0\" encoding='UTF-8'?>\n"
                    "<!DOCTYPE robot>\n<!-- <a><a><a> not elements -->\n"
                    "<robot name=\"r\" a = 'x > y'>text &amp; more > <![CDATA[<a><a>]]>"
                    "<?tool anything goes ?><link name=\"l\" /></robot >\n<!-- after -->\n"),
            "");
}

TEST(XmlGuardTest, RefusesWhatTinyXmlMightReadDifferently) {
  const std::pair<const char*, const char*> cases[] = {
      {"<robot a=b/>", "not quoted"},
      {"<robot a=\"<\"/>", "'<' inside an attribute value"},
      {"<robot></link>", "closes <robot>"},
      {"<robot>", "is not closed"},
      {"</robot>", "without a start tag"},
      {"<robot><!-- open </robot>", "a comment is not closed"},
      {"<robot><![CDATA[ open </robot>", "CDATA section is not closed"},
      {"<!DOCTYPE robot [ <!ENTITY a 'b'> ]><robot/>", "internal subset"},
      {"<?xml version= \"1.0\"?><robot/>", "must read name=\"value\""},
      {"<?xml version=\"1 .0\"?><robot/>", "holds whitespace"},
      {"<?pi > ?><robot/>", "inside a processing instruction"},
      {"text<robot/>", "text before the root element"},
      {"<robot/>text", "text after the root element"},
      {"< robot/>", "bad element name"},
      {"<robot a='1'b='2'/>", "not separated"},
      {"<robot/ >", "'/' not followed by '>'"},
      {"", "no root element"},
  };
  for (const auto& [xml, message] : cases) {
    EXPECT_THAT(refusal(xml), HasSubstr(message)) << xml;
  }
  EXPECT_THAT(refusal(std::string("<robot>\0</robot>", 16)), HasSubstr("NUL byte"));
}

TEST(XmlGuardTest, NamesTheLine) {
  EXPECT_THAT(refusal("<robot>\n<a>\n<b>\n</a>\n</robot>"), HasSubstr("line 4: end tag </a>"));
}

}  // namespace
}  // namespace torqued
