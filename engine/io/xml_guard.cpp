// The structural pre-check of XML documents (see xml_guard.hpp).
//
// The grammar accepted, and why each rule keeps TinyXML 2.6's reading of the document the same
// as this one (so that the depth counted here is the depth it recurses to):
// - Elements: '<' name, attributes name="value" or name='value' (no '<' in a value), then '>' or
//   "/>"; end tags "</name>" matching the open element. TinyXML reads quoted values up to the
//   same quote, as here; unquoted values, which TinyXML guesses at, are refused.
// - Text: anything but '<' (TinyXML reads text up to the next '<'; its entity reader never steps
//   over one).
// - Comments "<!--" to "-->", CDATA "<![CDATA[" to "]]>": the same terminators as TinyXML.
// - "<!DOCTYPE ...>" and other "<!" declarations up to the first '>', with no '<' or '[' inside:
//   TinyXML reads them to the first '>' too.
// - Processing instructions "<?target ...?>" with no '<' or '>' inside. TinyXML reads "<?xml..."
//   as a declaration whose version, encoding and standalone values it reads as quoted strings,
//   and skips other words up to whitespace; so that its reading cannot leave the instruction
//   early or late, values there are quoted, and hold no whitespace, quote, '=' or '?'.
// - No NUL byte (TinyXML would stop reading there) and no text outside the root element.
#include "engine/io/xml_guard.hpp"

#include <cerrno>
#include <cstring>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

namespace torqued {
namespace {

bool is_space(char c) {
  return c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '\v' || c == '\f';
}
bool is_name_start(char c) { return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c == '_'; }
bool is_name_char(char c) {
  return is_name_start(c) || (c >= '0' && c <= '9') || c == '-' || c == '.' || c == ':';
}
// An element's tag for a message: its name is cut to 64 bytes, since a name can be megabytes long.
std::string tag(std::string_view element, std::string_view opening = "<") {
  constexpr std::size_t kShown = 64;
  return std::string(opening) + std::string(element.substr(0, kShown)) +
         (element.size() > kShown ? "...>" : ">");
}
bool starts_with(std::string_view text, std::size_t at, std::string_view prefix) {
  return text.substr(at, prefix.size()) == prefix;
}
bool starts_with_ignoring_case(std::string_view text, std::size_t at, std::string_view prefix) {
  if (text.size() - at < prefix.size()) return false;
  for (std::size_t i = 0; i < prefix.size(); ++i) {
    char c = text[at + i];
    if (c >= 'A' && c <= 'Z') c = static_cast<char>(c - 'A' + 'a');
    if (c != prefix[i]) return false;
  }
  return true;
}

class Scanner {
 public:
  Scanner(std::string_view xml, const XmlLimits& limits,
          const std::function<void(const XmlElement&)>& on_element)
      : xml_(xml), limits_(limits), on_element_(on_element) {}

  void run() {
    if (xml_.find('\0') != std::string_view::npos) fail("the document contains a NUL byte");
    if (starts_with(xml_, 0, "\xEF\xBB\xBF")) at_ = 3;
    while (at_ < xml_.size()) {
      if (xml_[at_] != '<') {
        if (open_.empty() && !is_space(xml_[at_])) {
          fail(seen_root_ ? "text after the root element" : "text before the root element");
        }
        ++at_;
        continue;
      }
      markup();
    }
    if (!open_.empty()) fail("element " + tag(open_.back()) + " is not closed");
    if (!seen_root_) fail("no root element");
  }

 private:
  template <typename Error = ModelError>
  [[noreturn]] void fail(const std::string& what) {
    throw Error("invalid " + std::string(limits_.format) + ": line " +
                std::to_string(line_at(at_)) + ": " + what);
  }

  // The line `offset` is on, counting on from the offset asked for last (they never decrease).
  std::size_t line_at(std::size_t offset) {
    for (; lines_counted_to_ < offset && lines_counted_to_ < xml_.size(); ++lines_counted_to_) {
      if (xml_[lines_counted_to_] == '\n') ++line_;
    }
    return line_;
  }

  // Moves past `terminator`, failing when the document ends first; returns where it starts.
  std::size_t skip_to(std::string_view terminator, const char* what) {
    const std::size_t end = xml_.find(terminator, at_);
    if (end == std::string_view::npos) fail(std::string(what) + " is not closed");
    at_ = end + terminator.size();
    return end;
  }

  void markup() {
    if (!starts_with(xml_, at_, "</") && limits_.max_nodes > 0 && ++nodes_ > limits_.max_nodes) {
      fail("more than " + std::to_string(limits_.max_nodes) +
           " elements, comments, CDATA sections, declarations and processing instructions");
    }
    if (starts_with(xml_, at_, "<!--")) {
      at_ += 4;
      skip_to("-->", "a comment");
    } else if (starts_with(xml_, at_, "<![CDATA[")) {
      if (open_.empty()) fail("CDATA outside the root element");
      at_ += 9;
      skip_to("]]>", "a CDATA section");
    } else if (starts_with(xml_, at_, "<!")) {
      declaration();
    } else if (starts_with(xml_, at_, "<?")) {
      processing_instruction();
    } else if (starts_with(xml_, at_, "</")) {
      end_tag();
    } else {
      start_tag();
    }
  }

  void declaration() {
    const std::size_t begin = at_ + 2;
    const std::size_t end = skip_to(">", "a <! declaration");
    const std::string_view body = xml_.substr(begin, end - begin);
    if (body.find_first_of("<[") != std::string_view::npos) {
      fail("a <! declaration with an internal subset or markup inside is not supported");
    }
  }

  void processing_instruction() {
    const std::size_t begin = at_ + 2;
    const std::size_t end = skip_to("?>", "a processing instruction");
    const std::string_view body = xml_.substr(begin, end - begin);
    if (body.find_first_of("<>") != std::string_view::npos) {
      fail("'<' or '>' inside a processing instruction");
    }
    if (!starts_with_ignoring_case(xml_, begin, "xml")) return;
    // The XML declaration: target, then name="value" words.
    std::size_t i = 0;
    while (i < body.size() && !is_space(body[i])) ++i;
    while (i < body.size()) {
      while (i < body.size() && is_space(body[i])) ++i;
      if (i == body.size()) break;
      const std::size_t name = i;
      while (i < body.size() && is_name_char(body[i])) ++i;
      if (i == name || i + 1 >= body.size() || body[i] != '=' ||
          (body[i + 1] != '"' && body[i + 1] != '\'')) {
        fail("the XML declaration's attributes must read name=\"value\"");
      }
      const char quote = body[i + 1];
      i += 2;
      const std::size_t value = i;
      while (i < body.size() && body[i] != quote) {
        if (is_space(body[i]) || body[i] == '"' || body[i] == '\'' || body[i] == '=' ||
            body[i] == '?') {
          fail("a value of the XML declaration holds whitespace, a quote, '=' or '?'");
        }
        ++i;
      }
      if (i == body.size() || i == value) fail("a value of the XML declaration is not closed");
      ++i;
      if (i < body.size() && !is_space(body[i])) {
        fail("the XML declaration's attributes must be separated by whitespace");
      }
    }
  }

  std::string_view name(const char* what) {
    const std::size_t begin = at_;
    if (at_ >= xml_.size() || !is_name_start(xml_[at_])) fail(std::string("a bad ") + what);
    while (at_ < xml_.size() && is_name_char(xml_[at_])) ++at_;
    return xml_.substr(begin, at_ - begin);
  }

  void skip_spaces() {
    while (at_ < xml_.size() && is_space(xml_[at_])) ++at_;
  }

  void start_tag() {
    const std::size_t line = line_at(at_++);
    const std::string_view element = name("element name");
    attributes_.clear();
    for (;;) {
      const std::size_t before = at_;
      skip_spaces();
      if (at_ >= xml_.size()) fail("element " + tag(element) + " is not closed");
      const char c = xml_[at_];
      if (c == '/') {
        if (at_ + 1 >= xml_.size() || xml_[at_ + 1] != '>') fail("'/' not followed by '>'");
        at_ += 2;
        opened(element, line, false);
        return;
      }
      if (c == '>') {
        ++at_;
        opened(element, line, true);
        return;
      }
      if (at_ == before) fail("attributes of " + tag(element) + " are not separated");
      attribute(element);
    }
  }

  void attribute(std::string_view element) {
    const std::string_view attribute_name = name("attribute name");
    skip_spaces();
    if (at_ >= xml_.size() || xml_[at_] != '=') {
      fail("an attribute of " + tag(element) + " has no '='");
    }
    ++at_;
    skip_spaces();
    if (at_ >= xml_.size() || (xml_[at_] != '"' && xml_[at_] != '\'')) {
      fail("an attribute value of " + tag(element) + " is not quoted");
    }
    const char quote = xml_[at_++];
    const std::size_t end = xml_.find(quote, at_);
    if (end == std::string_view::npos) fail("an attribute value is not closed");
    const std::string_view value = xml_.substr(at_, end - at_);
    if (value.find('<') != std::string_view::npos) {
      fail("'<' inside an attribute value of " + tag(element));
    }
    if (limits_.max_element_attributes > 0 &&
        attributes_.size() == limits_.max_element_attributes) {
      fail("element " + tag(element) + " has more than " +
           std::to_string(limits_.max_element_attributes) + " attributes");
    }
    if (limits_.max_attributes > 0 && ++attributes_in_document_ > limits_.max_attributes) {
      fail("more than " + std::to_string(limits_.max_attributes) +
           " attributes in the document, at element " + tag(element));
    }
    attributes_.emplace_back(attribute_name, value);
    at_ = end + 1;
  }

  void opened(std::string_view element, std::size_t line, bool has_content) {
    if (open_.empty()) seen_root_ = true;
    const int depth = static_cast<int>(open_.size()) + 1;
    if (depth > limits_.max_depth) {
      fail("elements nested deeper than " + std::to_string(limits_.max_depth) + " levels");
    }
    if (depth == 2 && limits_.max_counted > 0 && element == limits_.counted_element &&
        ++counted_ > limits_.max_counted) {
      fail<TooManyElementsError>("more than " + std::to_string(limits_.max_counted) + " " +
                                 tag(limits_.counted_element) + " elements");
    }
    if (on_element_) on_element_(XmlElement{depth, line, element, attributes_});
    if (has_content) open_.emplace_back(element);
  }

  void end_tag() {
    at_ += 2;
    const std::string_view element = name("end tag");
    skip_spaces();
    if (at_ >= xml_.size() || xml_[at_] != '>')
      fail("end tag " + tag(element, "</") + ": only spaces may follow the name");
    ++at_;
    if (open_.empty()) fail("end tag " + tag(element, "</") + " without a start tag");
    if (open_.back() != element) {
      fail("end tag " + tag(element, "</") + " closes " + tag(open_.back()));
    }
    open_.pop_back();
  }

  const std::string_view xml_;
  const XmlLimits& limits_;
  const std::function<void(const XmlElement&)>& on_element_;
  std::vector<std::pair<std::string_view, std::string_view>> attributes_;  // of the start tag
  std::size_t at_ = 0;
  std::vector<std::string> open_;  // names of the open elements, outermost first
  bool seen_root_ = false;
  std::size_t counted_ = 0;
  std::size_t nodes_ = 0;
  std::size_t attributes_in_document_ = 0;
  std::size_t line_ = 1;  // of offset lines_counted_to_
  std::size_t lines_counted_to_ = 0;
};

}  // namespace

void check_xml_structure(std::string_view xml, const XmlLimits& limits,
                         const std::function<void(const XmlElement&)>& on_element) {
  Scanner(xml, limits, on_element).run();
}

std::string read_document_file(const std::string& path, std::string_view format) {
  const std::string what = "cannot read " + std::string(format) + " file '" + path + "'";
  std::ifstream file(path, std::ios::binary);
  if (!file) throw ModelError(what + ": " + std::strerror(errno));
  std::ostringstream contents;
  contents << file.rdbuf();
  if (file.bad()) throw ModelError(what);
  return contents.str();
}

}  // namespace torqued
