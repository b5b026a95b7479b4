// Status messages (see status_messages.hpp).
#include "server/base/status_messages.hpp"

#include "engine/model/quoted.hpp"

namespace torqued::server {

grpc::Status invalid(const std::string& message) {
  return {grpc::StatusCode::INVALID_ARGUMENT, message};
}

grpc::Status over_limit(const std::string& what, std::int64_t value, std::int64_t limit,
                        const char* flag) {
  return {grpc::StatusCode::RESOURCE_EXHAUSTED, what + ": " + std::to_string(value) +
                                                    " exceeds the server's limit of " +
                                                    std::to_string(limit) + " (" + flag + ")"};
}

// The opening quote is a char, not a one-character string: GCC 12 before 12.4 warns wrongly
// (-Wrestrict, GCC bug 105651) on a string literal prepended to a std::string.
std::string quote_input(std::string_view text) {
  constexpr std::size_t kShown = 64;
  if (text.size() <= kShown) return '"' + std::string(text) + "\"";
  return '"' + std::string(utf8_prefix(text, kShown)) + "...\" (" + std::to_string(text.size()) +
         " bytes)";
}

}  // namespace torqued::server
