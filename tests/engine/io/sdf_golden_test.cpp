// The SDF reader against Pinocchio 3.7's reading of the SDF models in ../shared/models/sdf
// (sdf::buildModel over libsdformat 12.3; ../shared/golden/README.md, "MJCF and SDF models"):
// for iiwa14 (fixed base) and simple_humanoid (fixed and floating), the joint layout, and at each
// of the 4 states the joint and link placements, rnea, rnea with an external force, nle, gravity,
// M, aba, M⁻¹ and the RNEA and ABA derivatives. The worst error of each quantity over the states
// is printed.
//
// Tolerances, relative (max|x − y| / max(1, max|y|)), as the URDF golden tests use them:
// 1e-9 for the placements, rnea, nle, gravity, M, aba and M⁻¹ (golden_test.cpp: the references
// are exact to ~1e-13 for these and ~1e-11 for ABA and M⁻¹ at the worst conditioning, here
// max|M⁻¹|·max|M| ≤ 5.6e3), 1e-8 for the derivatives (derivatives_test.cpp).
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <map>
#include <memory>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "engine/algorithms/aba.hpp"
#include "engine/algorithms/aba_derivatives.hpp"
#include "engine/algorithms/crba.hpp"
#include "engine/algorithms/kinematics.hpp"
#include "engine/algorithms/minverse.hpp"
#include "engine/algorithms/rnea.hpp"
#include "engine/algorithms/rnea_derivatives.hpp"
#include "engine/io/sdf.hpp"
#include "engine/model/data.hpp"
#include "tests/engine/support/compare.hpp"
#include "tests/engine/support/golden_files.hpp"

namespace torqued {
namespace {

using nlohmann::json;
using test_support::kGoldenDir;
using test_support::relative_error;

constexpr double kValueTol = 1e-9;
constexpr double kDerivativeTol = 1e-8;

const std::filesystem::path kSharedDir = TORQUED_SHARED_DIR;

// A JSON number array (a column) or array of rows (a matrix).
Eigen::MatrixXd to_matrix(const json& j) {
  if (!j.at(0).is_array()) {
    const std::vector<double> column = j.get<std::vector<double>>();
    return Eigen::Map<const Eigen::VectorXd>(column.data(),
                                             static_cast<Eigen::Index>(column.size()));
  }
  const std::vector<std::vector<double>> rows = j.get<std::vector<std::vector<double>>>();
  Eigen::MatrixXd x(static_cast<Eigen::Index>(rows.size()),
                    static_cast<Eigen::Index>(rows[0].size()));
  for (Eigen::Index r = 0; r < x.rows(); ++r) {
    x.row(r) = Eigen::Map<const Eigen::RowVectorXd>(rows[r].data(), x.cols());
  }
  return x;
}

// A placement {"R": 3x3, "p": 3} against ours: the larger of the rotation's and the position's
// errors.
double placement_error(const Transform& ours, const json& golden) {
  return std::max(relative_error(ours.rotation, to_matrix(golden.at("R"))),
                  relative_error(ours.translation, to_matrix(golden.at("p"))));
}

// Our index of each golden index of q (coordinate "q") or of v, joints matched by name; -1 where
// no joint of ours has that name.
std::vector<int> index_map(const Model& model, const json& golden_model,
                           const std::string& coordinate) {
  std::vector<int> map(golden_model.at("n" + coordinate).get<std::size_t>(), -1);
  for (const json& golden_joint : golden_model.at("joints")) {
    const int body = model.find_joint(golden_joint.at("name").get<std::string>());
    if (body <= 0) continue;
    const Joint& joint = model.joints[body];
    const bool q = coordinate == "q";
    const int first = golden_joint.at("idx_" + coordinate).get<int>();
    for (int k = 0; k < (q ? joint.nq : joint.nv); ++k) {
      map.at(first + k) = (q ? joint.idx_q : joint.idx_v) + k;
    }
  }
  return map;
}

class SdfGoldenTest : public ::testing::TestWithParam<std::string> {
 protected:
  void SetUp() override {
    const std::filesystem::path file = kGoldenDir / GetParam();
    if (!std::filesystem::exists(file)) {
      GTEST_SKIP() << "no golden data: " << file << " is absent (the shared reference material "
                   << "is not checked out next to the repository)";
    }
    std::ifstream in(file);
    doc_ = json::parse(in);
    const json& m = doc_.at("model");
    ASSERT_EQ(m.at("source_format").get<std::string>(), "sdf");
    SdfOptions options;
    options.floating_base = m.at("base").get<std::string>() == "floating";
    options.gravity = to_matrix(m.at("gravity"));
    const std::filesystem::path source =
        kSharedDir / "models" / "sdf" /
        std::filesystem::path(m.at("source_file").get<std::string>()).filename();
    model_ = build_model(read_sdf_file(source.string(), options));
    q_of_golden_ = index_map(*model_, m, "q");
    v_of_golden_ = index_map(*model_, m, "v");
    ASSERT_EQ(std::count(q_of_golden_.begin(), q_of_golden_.end(), -1), 0);
    ASSERT_EQ(std::count(v_of_golden_.begin(), v_of_golden_.end(), -1), 0);
    ASSERT_EQ(model_->nq, static_cast<int>(q_of_golden_.size()));
    ASSERT_EQ(model_->nv, static_cast<int>(v_of_golden_.size()));
    data_ = std::make_unique<Data>(*model_);
  }

  // A golden q- or v-indexed vector in our layout.
  Eigen::VectorXd ours(const json& j, const std::vector<int>& layout) const {
    const Eigen::MatrixXd x = to_matrix(j);
    Eigen::VectorXd y(x.rows());
    for (std::size_t k = 0; k < layout.size(); ++k)
      y[layout[k]] = x(static_cast<Eigen::Index>(k), 0);
    return y;
  }
  // Our v-indexed vector or nv x nv matrix in the golden layout.
  Eigen::MatrixXd golden_layout(const Eigen::MatrixXd& x) const {
    const auto n = static_cast<Eigen::Index>(v_of_golden_.size());
    Eigen::MatrixXd y(n, x.cols() == 1 ? 1 : n);
    for (Eigen::Index r = 0; r < n; ++r) {
      for (Eigen::Index c = 0; c < y.cols(); ++c) {
        y(r, c) = x.cols() == 1 ? x(v_of_golden_[r], 0) : x(v_of_golden_[r], v_of_golden_[c]);
      }
    }
    return y;
  }

  // The frame of a joint (want_joint) or of a link.
  int frame_of(const std::string& name, bool want_joint) const {
    for (int f = 0; f < static_cast<int>(model_->frames.size()); ++f) {
      const Frame& frame = model_->frames[f];
      if (frame.name == name && (frame.kind == FrameKind::kJoint) == want_joint) return f;
    }
    return -1;
  }

  json doc_;
  ModelPtr model_;
  std::unique_ptr<Data> data_;
  std::vector<int> q_of_golden_, v_of_golden_;
};

TEST_P(SdfGoldenTest, JointOrderIsTheReferences) {
  // Depth-first, a link's children in document order: the reference's order, index for index.
  for (const json& j : doc_.at("model").at("joints")) {
    const int body = model_->find_joint(j.at("name").get<std::string>());
    EXPECT_EQ(model_->joints[body].idx_q, j.at("idx_q").get<int>()) << j.at("name");
    EXPECT_EQ(model_->joints[body].idx_v, j.at("idx_v").get<int>()) << j.at("name");
  }
}

TEST_P(SdfGoldenTest, EveryQuantityAtEveryState) {
  std::map<std::string, double> worst;
  const auto record = [&worst](const std::string& what, double error) {
    worst[what] = std::max(worst[what], error);
  };
  const std::string force_joint = doc_.at("external_force_body").at("joint").get<std::string>();
  const int force_body = model_->find_joint(force_joint);
  ASSERT_GT(force_body, 0) << force_joint;
  for (const json& st : doc_.at("states")) {
    const Eigen::VectorXd q = ours(st.at("q"), q_of_golden_);
    const Eigen::VectorXd v = ours(st.at("v"), v_of_golden_);
    const Eigen::VectorXd a = ours(st.at("a"), v_of_golden_);
    const Eigen::VectorXd tau = ours(st.at("tau"), v_of_golden_);

    forward_kinematics(*model_, *data_, q);
    update_frame_placements(*model_, *data_);
    for (const auto& [key, want_joint] :
         {std::pair<const char*, bool>{"joint_placements", true}, {"link_placements", false}}) {
      for (const auto& [name, expected] : st.at(key).items()) {
        const int frame = frame_of(name, want_joint);
        ASSERT_GE(frame, 0) << key << " " << name;
        record(key, placement_error(data_->oMf[frame], expected));
      }
    }
    record("rnea",
           relative_error(golden_layout(rnea(*model_, *data_, q, v, a)), to_matrix(st.at("rnea"))));
    std::vector<Force> f_ext(model_->nbodies(), Force::Zero());
    f_ext[force_body] = Force::FromVector(to_matrix(st.at("rnea_fext").at("f_local")));
    record("rnea_fext", relative_error(golden_layout(rnea(*model_, *data_, q, v, a, f_ext)),
                                       to_matrix(st.at("rnea_fext").at("tau"))));
    record("nle", relative_error(golden_layout(nonlinear_effects(*model_, *data_, q, v)),
                                 to_matrix(st.at("nle"))));
    record("gravity", relative_error(golden_layout(generalized_gravity(*model_, *data_, q)),
                                     to_matrix(st.at("gravity"))));
    record("M", relative_error(golden_layout(crba(*model_, *data_, q)), to_matrix(st.at("M"))));
    record("aba",
           relative_error(golden_layout(aba(*model_, *data_, q, v, tau)), to_matrix(st.at("aba"))));
    record("Minv",
           relative_error(golden_layout(minverse(*model_, *data_, q)), to_matrix(st.at("Minv"))));
    const RneaDerivativesWorkspace& dr = rnea_derivatives(*model_, *data_, q, v, a);
    record("drnea_dq", relative_error(golden_layout(dr.dtau_dq), to_matrix(st.at("drnea_dq"))));
    record("drnea_dv", relative_error(golden_layout(dr.dtau_dv), to_matrix(st.at("drnea_dv"))));
    const AbaDerivativesWorkspace& da = aba_derivatives(*model_, *data_, q, v, tau);
    record("daba_dq", relative_error(golden_layout(da.ddq_dq), to_matrix(st.at("daba_dq"))));
    record("daba_dv", relative_error(golden_layout(da.ddq_dv), to_matrix(st.at("daba_dv"))));
  }
  ASSERT_EQ(worst.size(), 13u);
  std::string line = "[ errors   ] " + GetParam() + ":";
  for (const auto& [what, error] : worst) {
    const bool derivative = what.front() == 'd';
    EXPECT_LE(error, derivative ? kDerivativeTol : kValueTol) << what;
    char figure[64];
    std::snprintf(figure, sizeof figure, " %s %.1e", what.c_str(), error);
    line += figure;
  }
  std::printf("%s\n", line.c_str());
}

INSTANTIATE_TEST_SUITE_P(Golden, SdfGoldenTest,
                         ::testing::Values("iiwa14_sdf_fixed.json",
                                           "simple_humanoid_sdf_fixed.json",
                                           "simple_humanoid_sdf_floating.json"),
                         [](const ::testing::TestParamInfo<std::string>& info) {
                           return std::filesystem::path(info.param).stem().string();
                         });

}  // namespace
}  // namespace torqued
