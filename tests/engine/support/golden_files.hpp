// The reference files of ../shared/golden (Pinocchio's results, its README gives the layout), for
// the tests parameterized over them.
#pragma once

#include <algorithm>
#include <filesystem>
#include <nlohmann/json.hpp>
#include <string>
#include <system_error>
#include <vector>

namespace torqued::test_support {

inline const std::filesystem::path kGoldenDir =
    std::filesystem::path(TORQUED_SHARED_DIR) / "golden";

// The golden files' names, sorted; one empty name when there are none, so that a suite reports
// a skip instead of silently running nothing.
inline std::vector<std::string> golden_files() {
  std::vector<std::string> files;
  std::error_code ec;
  if (std::filesystem::is_directory(kGoldenDir, ec)) {
    for (const auto& entry : std::filesystem::directory_iterator(kGoldenDir)) {
      if (entry.path().extension() == ".json") files.push_back(entry.path().filename().string());
    }
  }
  std::sort(files.begin(), files.end());
  if (files.empty()) files.push_back("");
  return files;
}

// Why a golden file cannot be checked here, or "": its model's source format, when it is one
// torqued does not read (files without "source_format" hold URDF models).
inline std::string unread_source_format(const nlohmann::json& golden, const std::string& file) {
  const std::string format = golden.value("source_format", "urdf");
  if (format == "urdf") return "";
  return file + ": its model is " + format +
         ", and torqued reads URDF, DH tables and explicit specs";
}

}  // namespace torqued::test_support
