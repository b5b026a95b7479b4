// The reference files of ../shared/golden (Pinocchio's results, its README gives the layout), for
// the tests parameterized over them, and their models read by the engine's readers.
#pragma once

#include <gtest/gtest.h>

#include <Eigen/Dense>
#include <algorithm>
#include <cctype>
#include <filesystem>
#include <iterator>
#include <map>
#include <nlohmann/json.hpp>
#include <string>
#include <system_error>
#include <vector>

#include "engine/io/mjcf.hpp"
#include "engine/io/sdf.hpp"
#include "engine/io/urdf.hpp"

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

// A golden file's test name: its stem with every character that is not alphanumeric as '_'.
inline std::string golden_case_name(const ::testing::TestParamInfo<std::string>& info) {
  if (info.param.empty()) return "NoGoldenData";
  std::string name = std::filesystem::path(info.param).stem().string();
  for (char& ch : name) {
    if (!std::isalnum(static_cast<unsigned char>(ch))) ch = '_';
  }
  return name;
}

// A JSON array of numbers, and an array of rows of numbers, as the golden files hold them.
inline Eigen::VectorXd to_vector(const nlohmann::json& j) {
  Eigen::VectorXd x(static_cast<Eigen::Index>(j.size()));
  for (std::size_t i = 0; i < j.size(); ++i) x[static_cast<Eigen::Index>(i)] = j[i].get<double>();
  return x;
}

inline Eigen::MatrixXd to_matrix(const nlohmann::json& j) {
  const auto rows = static_cast<Eigen::Index>(j.size());
  const auto cols = rows == 0 ? Eigen::Index{0} : static_cast<Eigen::Index>(j[0].size());
  Eigen::MatrixXd x(rows, cols);
  for (Eigen::Index r = 0; r < rows; ++r) {
    for (Eigen::Index c = 0; c < cols; ++c) x(r, c) = j[r][c].get<double>();
  }
  return x;
}

// A reader of a model format: the file at `path` with the golden file's base and gravity.
using GoldenModelReader = ModelSpec (*)(const std::string& path, bool floating_base,
                                        const Vec3& gravity);

// The golden files' model formats ("source_format"; absent means URDF) that the engine reads.
inline const std::map<std::string, GoldenModelReader>& golden_model_readers() {
  static const std::map<std::string, GoldenModelReader> readers = {
      {"urdf",
       [](const std::string& path, bool floating_base, const Vec3& gravity) {
         return read_urdf_file(path, {.floating_base = floating_base, .gravity = gravity});
       }},
      {"mjcf",
       [](const std::string& path, bool floating_base, const Vec3& gravity) {
         return read_mjcf_file(path, {.floating_base = floating_base, .gravity = gravity});
       }},
      {"sdf",
       [](const std::string& path, bool floating_base, const Vec3& gravity) {
         return read_sdf_file(path, {.floating_base = floating_base, .gravity = gravity});
       }},
  };
  return readers;
}

// Why a golden file cannot be checked here, or "": its model's source format, when it is one
// torqued does not read.
inline std::string unread_source_format(const nlohmann::json& golden, const std::string& file) {
  const std::string format = golden.value("source_format", "urdf");
  if (golden_model_readers().contains(format)) return "";
  return file + ": its model is " + format + ", which torqued does not read";
}

// The model of a golden file, read from ../shared/models by the reader of its format with the
// file's base and gravity.
inline ModelSpec golden_model_spec(const nlohmann::json& golden) {
  const nlohmann::json& model = golden.at("model");
  // The file is named from the directory that holds the shared material: "shared/models/...".
  const std::filesystem::path named(model.at("urdf").get<std::string>());
  std::filesystem::path path(TORQUED_SHARED_DIR);
  for (auto part = std::next(named.begin()); part != named.end(); ++part) path /= *part;
  const nlohmann::json& g = model.at("gravity");
  return golden_model_readers().at(golden.value("source_format", "urdf"))(
      path.string(), model.at("base").get<std::string>() == "floating",
      Vec3(g.at(0).get<double>(), g.at(1).get<double>(), g.at(2).get<double>()));
}

// The armature (rotor inertia) in a golden file's references, per golden v index (zero for the
// URDF files). The MJCF references include it although the README says they do not: Pinocchio
// 3.7's MJCF parser keeps the joints' armature, its CRBA, RNEA and ABA add it to the diagonal of
// the mass matrix, and the generator left it there. go2.xml's hinges take armature="0.01" from its
// class go2, panda.xml's hinges and slides 0.1 from its class panda. torqued models no armature
// (its MJCF reader warns that it ignores it), so the checks take the armature's terms out of the
// references, or evaluate torqued where the reference's dynamics and its own coincide.
inline Eigen::VectorXd golden_armature(const nlohmann::json& golden) {
  static const std::map<std::string, double> kArmatureOfEveryOneDofJoint = {{"go2_mjcf", 0.01},
                                                                            {"panda_mjcf", 0.1}};
  const nlohmann::json& model = golden.at("model");
  Eigen::VectorXd armature = Eigen::VectorXd::Zero(model.at("nv").get<int>());
  const auto it = kArmatureOfEveryOneDofJoint.find(model.at("name").get<std::string>());
  if (it == kArmatureOfEveryOneDofJoint.end()) return armature;
  for (const nlohmann::json& joint : model.at("joints")) {
    if (joint.at("nv").get<int>() == 1) armature[joint.at("idx_v").get<int>()] = it->second;
  }
  return armature;
}

// A state's M⁻¹ without the armature: the reference's own, or, where the reference includes
// armature, the inverse of its mass matrix less the armature (exact to ~1e-13 relative at these
// models' conditioning).
inline Eigen::MatrixXd golden_minv_without_armature(const nlohmann::json& state,
                                                    const Eigen::VectorXd& armature) {
  const nlohmann::json& key = state.at(armature.isZero(0.0) ? "Minv" : "M");
  const auto n = static_cast<Eigen::Index>(key.size());
  Eigen::MatrixXd x(n, n);
  for (Eigen::Index r = 0; r < n; ++r) {
    for (Eigen::Index c = 0; c < n; ++c) x(r, c) = key.at(r).at(c).get<double>();
  }
  if (armature.isZero(0.0)) return x;
  x.diagonal() -= armature;
  return x.inverse();
}

}  // namespace torqued::test_support
