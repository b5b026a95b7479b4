// Reading the model repository directory (see bundled_models.hpp).
#include "server/models/bundled_models.hpp"

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

bool read_model_file(const std::filesystem::path& path, v1::RegisterModelRequest& request,
                     std::string& error) {
  std::string text;
  if (path.extension() == ".txtpb") {
    if (!read_file(path, text) || !google::protobuf::TextFormat::ParseFromString(text, &request)) {
      error = path.string() + ": not a RegisterModelRequest in text format";
      return false;
    }
    return true;
  }
  if (!read_file(path, text)) {
    error = path.string() + ": cannot be read";
    return false;
  }
  std::filesystem::path options_path = path;
  options_path.replace_extension(std::string(kOptionsSuffix));
  std::string options_text;
  if (std::filesystem::exists(options_path) &&
      (!read_file(options_path, options_text) ||
       !google::protobuf::TextFormat::ParseFromString(options_text, &request) ||
       request.source_case() != v1::RegisterModelRequest::SOURCE_NOT_SET)) {
    error = options_path.string() + ": not a RegisterModelRequest in text format without a source";
    return false;
  }
  const std::string extension = path.extension().string();
  if (extension == ".xml") {
    request.set_mjcf(std::move(text));
  } else if (extension == ".sdf") {
    request.set_sdf(std::move(text));
  } else {
    request.set_urdf(std::move(text));
  }
  return true;
}

std::vector<BundledModel> read_bundled_models(const std::string& directory,
                                              std::vector<std::string>& errors) {
  std::vector<std::filesystem::path> paths;
  for (const auto& entry : std::filesystem::directory_iterator(directory)) {
    if (entry.is_regular_file()) paths.push_back(entry.path());
  }
  std::sort(paths.begin(), paths.end());
  std::vector<BundledModel> entries;
  for (const auto& path : paths) {
    if (ends_with(path.filename().string(), kOptionsSuffix)) continue;  // read with its model
    const std::filesystem::path extension = path.extension();
    if (extension != ".txtpb" && extension != ".urdf" && extension != ".xml" &&
        extension != ".sdf") {
      continue;
    }
    BundledModel entry;
    entry.path = path.string();
    std::string error;
    if (!read_model_file(path, entry.request, error)) {
      errors.push_back(error);
      continue;
    }
    entries.push_back(std::move(entry));
  }
  return entries;
}

}  // namespace torqued::server
