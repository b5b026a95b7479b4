// Bounded, printable names for messages (see quoted.hpp).
#include "engine/model/quoted.hpp"

namespace torqued {

std::string_view utf8_prefix(std::string_view text, std::size_t max_bytes) {
  if (text.size() <= max_bytes) return text;
  std::size_t end = max_bytes;
  // Back off the continuation bytes (10xxxxxx) of the character the cut falls in.
  while (end > 0 && (static_cast<unsigned char>(text[end]) & 0xc0) == 0x80) --end;
  return text.substr(0, end);
}

std::string printable(std::string_view text) {
  static constexpr char kHex[] = "0123456789abcdef";
  std::string out;
  out.reserve(text.size());
  for (const char c : text) {
    const auto byte = static_cast<unsigned char>(c);
    if (byte < 0x20 || byte == 0x7f) {
      out += "\\x";
      out += kHex[byte >> 4];
      out += kHex[byte & 0xf];
    } else {
      out += c;
    }
  }
  return out;
}

std::string quoted(std::string_view name) {
  constexpr std::size_t kShown = 64;
  // Appended piecewise: GCC 12 warns (-Wrestrict, a false positive) on "'" + std::string.
  std::string out = "'";
  out += printable(utf8_prefix(name, kShown));
  out += name.size() > kShown ? "...' (" + std::to_string(name.size()) + " bytes)" : "'";
  return out;
}

}  // namespace torqued
