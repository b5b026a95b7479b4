// Process-wide logging on spdlog: human-readable text or one JSON object per line (for log
// collectors), chosen at start.
#pragma once

#include <string>

namespace torqued::server {

// Installs the default spdlog logger writing to stdout. `format` is "text" or "json"; `level` an
// spdlog level name.
void setup_logging(const std::string& format, const std::string& level);

}  // namespace torqued::server
