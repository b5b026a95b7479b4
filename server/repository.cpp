// Reading the model repository directory (see repository.hpp).
#include "server/repository.hpp"

#include <google/protobuf/text_format.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <sstream>

namespace torqued::server {
namespace {

constexpr std::string_view kOptionsSuffix = ".options.txtpb";

bool read_file(const std::filesystem::path& path, std::string& out) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return false;
  std::ostringstream bytes;
  bytes << in.rdbuf();
  out = bytes.str();
  return true;
}

bool ends_with(const std::string& s, std::string_view suffix) {
  return s.size() >= suffix.size() &&
         s.compare(s.size() - suffix.size(), suffix.size(), suffix) == 0;
}

}  // namespace

std::vector<RepositoryEntry> read_repository(const std::string& directory,
                                             std::vector<std::string>& errors) {
  std::vector<std::filesystem::path> paths;
  for (const auto& entry : std::filesystem::directory_iterator(directory)) {
    if (entry.is_regular_file()) paths.push_back(entry.path());
  }
  std::sort(paths.begin(), paths.end());
  std::vector<RepositoryEntry> entries;
  for (const auto& path : paths) {
    const std::string name = path.filename().string();
    RepositoryEntry entry;
    entry.path = path.string();
    std::string text;
    if (ends_with(name, kOptionsSuffix)) continue;  // read with its URDF
    if (path.extension() == ".txtpb") {
      if (!read_file(path, text) ||
          !google::protobuf::TextFormat::ParseFromString(text, &entry.request)) {
        errors.push_back(entry.path + ": not a RegisterModelRequest in text format");
        continue;
      }
    } else if (path.extension() == ".urdf") {
      if (!read_file(path, text)) {
        errors.push_back(entry.path + ": cannot be read");
        continue;
      }
      std::filesystem::path options_path = path;
      options_path.replace_extension(std::string(kOptionsSuffix));
      std::string options_text;
      if (std::filesystem::exists(options_path) &&
          (!read_file(options_path, options_text) ||
           !google::protobuf::TextFormat::ParseFromString(options_text, &entry.request) ||
           entry.request.source_case() != v1::RegisterModelRequest::SOURCE_NOT_SET)) {
        errors.push_back(options_path.string() +
                         ": not a RegisterModelRequest in text format without a source");
        continue;
      }
      entry.request.set_urdf(std::move(text));
    } else {
      continue;
    }
    entries.push_back(std::move(entry));
  }
  return entries;
}

}  // namespace torqued::server
