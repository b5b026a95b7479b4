// spdlog set-up: a stdout sink with either a text pattern or a JSON-lines pattern whose message
// field is escaped by a custom flag, so every line is a valid JSON object.
#include "server/base/logging.hpp"

#include <spdlog/pattern_formatter.h>
#include <spdlog/sinks/stdout_sinks.h>
#include <spdlog/spdlog.h>

#include <memory>
#include <string>
#include <string_view>

#include "engine/model/quoted.hpp"

namespace torqued::server {
namespace {

// Log lines carry names and ids that clients chose, so a message is written with its control
// characters escaped (no forged lines, no terminal escape sequences) and cut at
// kMaxLoggedMessageBytes.
constexpr std::size_t kMaxLoggedMessageBytes = 4096;

// Appends `payload` escaped: for JSON strings (`json`) or for a text line (control bytes as
// \xNN, backslashes doubled).
void append_escaped(std::string_view payload, bool json, spdlog::memory_buf_t& dest) {
  static constexpr char kHex[] = "0123456789abcdef";
  // Cut at a character boundary: a JSON line must stay UTF-8.
  const std::size_t shown = utf8_prefix(payload, kMaxLoggedMessageBytes).size();
  for (const char c : payload.substr(0, shown)) {
    const auto byte = static_cast<unsigned char>(c);
    if (c == '\\') {
      dest.append(std::string_view("\\\\"));
    } else if (json && c == '"') {
      dest.append(std::string_view("\\\""));
    } else if (json && c == '\n') {
      dest.append(std::string_view("\\n"));
    } else if (json && c == '\t') {
      dest.append(std::string_view("\\t"));
    } else if (byte < 0x20 || byte == 0x7f) {
      dest.append(std::string_view(json ? "\\u00" : "\\x"));
      dest.push_back(kHex[byte >> 4]);
      dest.push_back(kHex[byte & 0xf]);
    } else {
      dest.push_back(c);
    }
  }
  if (shown < payload.size()) {
    const std::string cut = "... (" + std::to_string(payload.size()) + " bytes)";
    dest.append(cut.data(), cut.data() + cut.size());
  }
}

// %* : the log message, escaped for a JSON string or for a text line.
template <bool kJson>
class EscapedMessageFlag : public spdlog::custom_flag_formatter {
 public:
  void format(const spdlog::details::log_msg& msg, const std::tm&,
              spdlog::memory_buf_t& dest) override {
    append_escaped(std::string_view(msg.payload.data(), msg.payload.size()), kJson, dest);
  }
  std::unique_ptr<custom_flag_formatter> clone() const override {
    return std::make_unique<EscapedMessageFlag>();
  }
};

}  // namespace

void setup_logging(const std::string& format, const std::string& level) {
  auto logger = std::make_shared<spdlog::logger>("torqued",
                                                 std::make_shared<spdlog::sinks::stdout_sink_mt>());
  if (format == "json") {
    auto formatter = std::make_unique<spdlog::pattern_formatter>(spdlog::pattern_time_type::utc);
    formatter->add_flag<EscapedMessageFlag<true>>('*').set_pattern(
        R"({"time":"%Y-%m-%dT%H:%M:%S.%fZ","level":"%l","thread":%t,"msg":"%*"})");
    logger->set_formatter(std::move(formatter));
  } else {
    auto formatter = std::make_unique<spdlog::pattern_formatter>();
    formatter->add_flag<EscapedMessageFlag<false>>('*').set_pattern(
        "%Y-%m-%d %H:%M:%S.%e %^%-5l%$ %*");
    logger->set_formatter(std::move(formatter));
  }
  logger->set_level(spdlog::level::from_str(level));
  logger->flush_on(spdlog::level::info);
  spdlog::set_default_logger(std::move(logger));
}

}  // namespace torqued::server
