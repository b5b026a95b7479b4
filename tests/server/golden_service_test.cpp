// The service and torquectl against the Pinocchio 3.7 reference results of ../shared/golden (its
// README gives the layout and the conventions), for every golden file: the MJCF and SDF models of
// ../shared/models/mjcf and ../shared/models/sdf, and the URDF models beside them. One real torqued
// serves the whole suite. Each model is registered from its file's text with the golden file's base
// and gravity, and every quantity the RPCs expose is checked on all the file's states at once, in
// one batched call per RPC:
//   - the layout (ModelService): joint names, idx_q, idx_v, nq, nv in the reference's order;
//   - InverseDynamics (RNEA, and RNEA with the reference's external force), NonlinearEffects,
//     Gravity, MassMatrix (M and M⁻¹), ForwardDynamics (ABA), Derivatives of inverse and forward
//     dynamics (∂/∂q, ∂/∂v, and ∂τ/∂a = M, ∂a/∂τ = M⁻¹), Kinematics (the world placements of every
//     joint and link frame of the reference);
//   - ConstrainedDynamics (q̈ and λ), where the file gives constrained dynamics, and the constraint
//     Jacobian J as Kinematics gives the frames' LOCAL Jacobians; no RPC exposes the drift γ,
//     which q̈ and λ depend on;
//   - torquectl: `torquectl register FILE` (--floating-base or --fixed-base, as the reference)
//   prints the
//     id the service gave, and `torquectl inverse-dynamics` on JSON gives the reference's RNEA.
//
// Tolerances are the engine tests' (tests/engine/algorithms/golden_test.cpp, derivatives_test.cpp)
// and the project's bar: max|x − y| / max(1, max|y|) ≤ 1e-9 for values (RNEA, nle, g, M, M⁻¹, ABA,
// placements), ≤ 1e-8 for the derivatives, and max|x − y| / max|y| ≤ 1e-8 for the constrained
// dynamics. The README bounds two correct implementations' agreement at ~1e-13 relative for RNEA,
// M and placements and ~1e-11 for ABA, M⁻¹ and their derivatives (conditioning proxy
// max|M⁻¹|·max|M| ≤ 8.3e4), and the service computes with the engine, so these bars leave a wide
// margin while a modelling or transport error (a wrong axis, inertia or index) is ≥ 1e-3.
//
// The MJCF references include the joints' armature A, which torqued does not model
// (golden_files.hpp: golden_armature); the checks take it out as the engine tests do: M less A,
// RNEA less A a, ABA (and constrained dynamics) run at τ − A q̈ with the reference's q̈, M⁻¹ the
// inverse of M less A, and the ABA derivatives the reference's plus M⁻¹ A times them.
//
// The worst error of each quantity is printed per file and for the whole suite at its end.
#include <google/protobuf/repeated_field.h>
#include <gtest/gtest.h>
#include <sys/wait.h>

#include <Eigen/Dense>
#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <limits>
#include <map>
#include <memory>
#include <nlohmann/json.hpp>
#include <sstream>
#include <string>
#include <utility>
#include <vector>

#include "tests/engine/support/compare.hpp"
#include "tests/engine/support/golden_files.hpp"
#include "tests/server/server_process.hpp"

namespace torqued::testing {
namespace {

using nlohmann::json;
using test_support::kGoldenDir;
using test_support::relative_error;
using test_support::to_matrix;
using test_support::to_vector;
using Flat = google::protobuf::RepeatedField<double>;

constexpr double kValueTol = 1e-9;
constexpr double kDerivativeTol = 1e-8;
constexpr double kConstrainedTol = 1e-8;
constexpr double kDeadlineSeconds = 60.0;

std::string read_text(const std::filesystem::path& path) {
  std::ifstream in(path);
  std::ostringstream text;
  text << in.rdbuf();
  return text.str();
}

// max|x − y| / max|y|: the engine test's measure for the constrained dynamics.
double error_relative_to_largest(const Eigen::MatrixXd& x, const Eigen::MatrixXd& y) {
  if (x.rows() != y.rows() || x.cols() != y.cols()) return std::numeric_limits<double>::infinity();
  return (x - y).cwiseAbs().maxCoeff() / y.cwiseAbs().maxCoeff();
}

// The model file of a golden file: it names it from the directory that holds the shared material,
// "shared/models/...".
std::filesystem::path golden_model_file(const json& golden) {
  const std::filesystem::path named(golden.at("model").at("urdf").get<std::string>());
  std::filesystem::path path(TORQUED_SHARED_DIR);
  for (auto part = std::next(named.begin()); part != named.end(); ++part) path /= *part;
  return path;
}

bool floating_reference(const json& golden) {
  return golden.at("model").at("base").get<std::string>() == "floating";
}

// A golden file's model registered through the service, and the maps between the reference's q/v
// layout and the layout the service reports (matched by joint name).
struct RegisteredCase {
  json doc;
  std::filesystem::path model_file;
  grpc::Status registration;
  v1::Model layout;
  std::string mapping_error;     // why the layouts could not be mapped, if they could not
  std::vector<int> q_of_golden;  // our q index of each golden q index
  std::vector<int> v_of_golden;  // our v index of each golden v index
  Eigen::VectorXd armature;      // of the reference, in golden v order

  const json& states() const { return doc.at("states"); }
  int batch_size() const { return static_cast<int>(states().size()); }
  int nv() const { return static_cast<int>(v_of_golden.size()); }

  // `key` of every state, as a vector in the golden layout.
  std::vector<Eigen::VectorXd> per_state(const std::string& key) const {
    std::vector<Eigen::VectorXd> rows;
    for (const json& state : states()) rows.push_back(to_vector(state.at(key)));
    return rows;
  }

  // Golden-layout vectors, one per state, moved to our layout and stacked: N × size, row-major.
  static Flat stacked(const std::vector<Eigen::VectorXd>& rows, const std::vector<int>& ours) {
    Flat flat;
    for (const Eigen::VectorXd& row : rows) {
      const auto offset = flat.size();
      flat.Resize(offset + static_cast<int>(row.size()), 0.0);
      for (std::size_t k = 0; k < ours.size(); ++k) flat[offset + ours[k]] = row[k];
    }
    return flat;
  }
  Flat q_batch() const { return stacked(per_state("q"), q_of_golden); }
  Flat v_batch(const std::vector<Eigen::VectorXd>& rows) const {
    return stacked(rows, v_of_golden);
  }
  Flat v_batch(const std::string& key) const { return v_batch(per_state(key)); }

  // State `s` of an N × nv result of the service, in the golden layout.
  Eigen::VectorXd golden_vector(const Flat& flat, int s) const {
    Eigen::VectorXd x(nv());
    for (int k = 0; k < nv(); ++k) x[k] = flat[s * nv() + v_of_golden[k]];
    return x;
  }
  // State `s` of an N × nv × nv result of the service, in the golden layout.
  Eigen::MatrixXd golden_matrix(const Flat& flat, int s) const {
    Eigen::MatrixXd x(nv(), nv());
    for (int r = 0; r < nv(); ++r) {
      for (int c = 0; c < nv(); ++c) {
        x(r, c) = flat[(s * nv() + v_of_golden[r]) * nv() + v_of_golden[c]];
      }
    }
    return x;
  }
};

RegisteredCase register_case(const std::string& file, v1::ModelService::Stub& models) {
  RegisteredCase c;
  c.doc = json::parse(std::ifstream(kGoldenDir / file));
  c.model_file = golden_model_file(c.doc);
  c.armature = test_support::golden_armature(c.doc);

  v1::RegisterModelRequest request;
  const std::string format = c.doc.value("source_format", "urdf");
  const std::string text = read_text(c.model_file);
  if (format == "mjcf") {
    request.set_mjcf(text);
  } else if (format == "sdf") {
    request.set_sdf(text);
  } else {
    request.set_urdf(text);
  }
  request.set_base(floating_reference(c.doc) ? v1::BASE_TYPE_FLOATING : v1::BASE_TYPE_FIXED);
  const json& gravity = c.doc.at("model").at("gravity");
  request.mutable_gravity()->set_x(gravity.at(0).get<double>());
  request.mutable_gravity()->set_y(gravity.at(1).get<double>());
  request.mutable_gravity()->set_z(gravity.at(2).get<double>());
  v1::RegisterModelResponse response;
  c.registration = with_deadline(kDeadlineSeconds, [&](grpc::ClientContext* context) {
    return models.RegisterModel(context, request, &response);
  });
  if (!c.registration.ok()) return c;
  c.layout = response.model();

  const json& model = c.doc.at("model");
  c.q_of_golden.assign(model.at("nq").get<int>(), -1);
  c.v_of_golden.assign(model.at("nv").get<int>(), -1);
  for (const json& golden_joint : model.at("joints")) {
    const std::string name = golden_joint.at("name").get<std::string>();
    const auto joint = std::find_if(c.layout.joints().begin(), c.layout.joints().end(),
                                    [&](const v1::Joint& j) { return j.name() == name; });
    if (joint == c.layout.joints().end() || joint->nq() != golden_joint.at("nq").get<int>() ||
        joint->nv() != golden_joint.at("nv").get<int>()) {
      c.mapping_error += "joint " + name + " is missing or has another nq/nv; ";
      continue;
    }
    for (int k = 0; k < joint->nq(); ++k)
      c.q_of_golden[golden_joint.at("idx_q").get<int>() + k] = joint->idx_q() + k;
    for (int k = 0; k < joint->nv(); ++k)
      c.v_of_golden[golden_joint.at("idx_v").get<int>() + k] = joint->idx_v() + k;
  }
  if (c.layout.nq() != model.at("nq").get<int>() || c.layout.nv() != model.at("nv").get<int>()) {
    c.mapping_error +=
        "model nq/nv " + std::to_string(c.layout.nq()) + "/" + std::to_string(c.layout.nv()) + "; ";
  }
  return c;
}

// The worst error of each quantity over the suite, and the file that gave it.
struct WorstError {
  double error = 0.0;
  std::string file;
};

class GoldenServiceTest : public ::testing::TestWithParam<std::string> {
 protected:
  static void SetUpTestSuite() {
    if (!std::filesystem::is_directory(kGoldenDir)) return;
    dir_ = new TempDir();
    ServerProcess::Options options;
    options.data_dir = dir_->path() / "data";
    options.repository = (dir_->path() / "empty-repository").string();
    options.extra_args = {"--workers=2"};
    std::filesystem::create_directories(options.repository);
    server_ = new ServerProcess(options);
    cases_ = new std::map<std::string, RegisteredCase>();
    worst_ = new std::map<std::string, WorstError>();
  }

  static void TearDownTestSuite() {
    if (worst_ != nullptr && !worst_->empty()) {
      std::printf("[ worst    ] over the suite (relative errors):\n");
      for (const auto& [quantity, worst] : *worst_) {
        std::printf("[ worst    ]   %-28s %.2e  %s\n", quantity.c_str(), worst.error,
                    worst.file.c_str());
      }
    }
    delete worst_;
    delete cases_;
    delete server_;
    delete dir_;
    worst_ = nullptr;
    cases_ = nullptr;
    server_ = nullptr;
    dir_ = nullptr;
  }

  void SetUp() override {
    if (GetParam().empty()) {
      GTEST_SKIP() << "no golden data: " << kGoldenDir << " is absent (the shared reference "
                   << "material, " << TORQUED_SHARED_DIR << ", is not checked out next to the "
                   << "repository)";
    }
    ASSERT_TRUE(server_->running()) << server_->log();
    auto it = cases_->find(GetParam());
    if (it == cases_->end()) {
      it = cases_->emplace(GetParam(), register_case(GetParam(), *server_->models())).first;
    }
    case_ = &it->second;
    ASSERT_TRUE(case_->registration.ok()) << GetParam() << ": registering " << case_->model_file
                                          << ": " << case_->registration.error_message();
    ASSERT_TRUE(case_->mapping_error.empty()) << GetParam() << ": " << case_->mapping_error;
  }

  // Expects `error` ≤ `tolerance` and keeps the worst per quantity for this test and the suite.
  void check(const std::string& quantity, double error, double tolerance, int state,
             const std::string& detail = "") {
    EXPECT_LE(error, tolerance) << GetParam() << ": " << quantity
                                << (detail.empty() ? "" : " " + detail) << ", state " << state;
    double& worst_here = worst_in_test_[quantity];
    worst_here = std::max(worst_here, error);
    WorstError& worst = (*worst_)[quantity];
    if (error >= worst.error) worst = {error, GetParam()};
  }

  void TearDown() override {
    if (worst_in_test_.empty()) return;
    std::string line;
    for (const auto& [quantity, error] : worst_in_test_) {
      char entry[96];
      std::snprintf(entry, sizeof entry, "%s%s %.2e", line.empty() ? "" : ", ", quantity.c_str(),
                    error);
      line += entry;
    }
    std::printf("[ errors   ] %s: %s\n", GetParam().c_str(), line.c_str());
  }

  const RegisteredCase& golden() const { return *case_; }
  const std::string& model_id() const { return case_->layout.id(); }
  int batch_size() const { return case_->batch_size(); }

  template <typename Request, typename Response, typename Call>
  static grpc::Status call(Call method, const Request& request, Response& response) {
    return with_deadline(kDeadlineSeconds, [&](grpc::ClientContext* context) {
      return ((*server_->dynamics()).*method)(context, request, &response);
    });
  }

  static TempDir* dir_;
  static ServerProcess* server_;
  static std::map<std::string, RegisteredCase>* cases_;
  static std::map<std::string, WorstError>* worst_;
  const RegisteredCase* case_ = nullptr;
  std::map<std::string, double> worst_in_test_;
};

TempDir* GoldenServiceTest::dir_ = nullptr;
ServerProcess* GoldenServiceTest::server_ = nullptr;
std::map<std::string, RegisteredCase>* GoldenServiceTest::cases_ = nullptr;
std::map<std::string, WorstError>* GoldenServiceTest::worst_ = nullptr;

using Dynamics = v1::DynamicsService::Stub;

TEST_P(GoldenServiceTest, LayoutIsTheReferences) {
  // The reference's order is Pinocchio's (depth-first; siblings by name for URDF, in document
  // order for MJCF and SDF), and so is ours: the layouts coincide, not just map.
  const json& model = golden().doc.at("model");
  EXPECT_EQ(golden().layout.nq(), model.at("nq").get<int>());
  EXPECT_EQ(golden().layout.nv(), model.at("nv").get<int>());
  EXPECT_EQ(golden().layout.base(),
            floating_reference(golden().doc) ? v1::BASE_TYPE_FLOATING : v1::BASE_TYPE_FIXED);
  ASSERT_EQ(golden().layout.joints_size(), static_cast<int>(model.at("joints").size()));
  for (int k = 0; k < golden().layout.joints_size(); ++k) {
    const v1::Joint& ours = golden().layout.joints(k);
    const json& reference = model.at("joints").at(k);
    EXPECT_EQ(ours.name(), reference.at("name").get<std::string>()) << "joint " << k;
    EXPECT_EQ(ours.idx_q(), reference.at("idx_q").get<int>()) << ours.name();
    EXPECT_EQ(ours.idx_v(), reference.at("idx_v").get<int>()) << ours.name();
    EXPECT_EQ(ours.nq(), reference.at("nq").get<int>()) << ours.name();
    EXPECT_EQ(ours.nv(), reference.at("nv").get<int>()) << ours.name();
  }
}

TEST_P(GoldenServiceTest, InverseDynamics) {
  const std::vector<Eigen::VectorXd> a = golden().per_state("a");
  v1::InverseDynamicsRequest request;
  request.set_model_id(model_id());
  request.set_batch_size(batch_size());
  *request.mutable_q() = golden().q_batch();
  *request.mutable_v() = golden().v_batch("v");
  *request.mutable_a() = golden().v_batch(a);
  v1::InverseDynamicsResponse response;
  grpc::Status status = call(&Dynamics::InverseDynamics, request, response);
  ASSERT_TRUE(status.ok()) << status.error_message();
  for (int s = 0; s < batch_size(); ++s) {
    const Eigen::VectorXd expected =
        to_vector(golden().states()[s].at("rnea")) - golden().armature.cwiseProduct(a[s]);
    check("rnea", relative_error(golden().golden_vector(response.tau(), s), expected), kValueTol,
          s);
  }

  // The reference's external force acts on the body of its last joint, in that body's frame (the
  // joint frame: for MJCF, where a joint's pos puts it off its link's frame, the reference's too).
  const std::string joint = golden().doc.at("external_force_body").at("joint").get<std::string>();
  const auto& bodies = golden().layout.bodies();
  const auto body = std::find_if(bodies.begin(), bodies.end(),
                                 [&](const v1::Body& b) { return b.joint() == joint; });
  ASSERT_NE(body, bodies.end()) << joint;
  const int moving_bodies = static_cast<int>(bodies.size()) - 1;
  const int slot = static_cast<int>(std::distance(bodies.begin(), body)) - 1;
  request.mutable_external_forces()->Resize(batch_size() * moving_bodies * 6, 0.0);
  for (int s = 0; s < batch_size(); ++s) {
    const json& reference = golden().states()[s].at("rnea_fext");
    ASSERT_EQ(reference.at("joint").get<std::string>(), joint);
    const Eigen::VectorXd force = to_vector(reference.at("f_local"));
    for (int k = 0; k < 6; ++k) {
      request.mutable_external_forces()->Set((s * moving_bodies + slot) * 6 + k, force[k]);
    }
  }
  status = call(&Dynamics::InverseDynamics, request, response);
  ASSERT_TRUE(status.ok()) << status.error_message();
  for (int s = 0; s < batch_size(); ++s) {
    const Eigen::VectorXd expected = to_vector(golden().states()[s].at("rnea_fext").at("tau")) -
                                     golden().armature.cwiseProduct(a[s]);
    check("rnea_fext", relative_error(golden().golden_vector(response.tau(), s), expected),
          kValueTol, s);
  }

  v1::NonlinearEffectsRequest nle_request;
  nle_request.set_model_id(model_id());
  nle_request.set_batch_size(batch_size());
  *nle_request.mutable_q() = golden().q_batch();
  *nle_request.mutable_v() = golden().v_batch("v");
  v1::NonlinearEffectsResponse nle;
  status = call(&Dynamics::NonlinearEffects, nle_request, nle);
  ASSERT_TRUE(status.ok()) << status.error_message();
  v1::GravityRequest gravity_request;
  gravity_request.set_model_id(model_id());
  gravity_request.set_batch_size(batch_size());
  *gravity_request.mutable_q() = golden().q_batch();
  v1::GravityResponse gravity;
  status = call(&Dynamics::Gravity, gravity_request, gravity);
  ASSERT_TRUE(status.ok()) << status.error_message();
  for (int s = 0; s < batch_size(); ++s) {
    const json& state = golden().states()[s];
    check("nle", relative_error(golden().golden_vector(nle.tau(), s), to_vector(state.at("nle"))),
          kValueTol, s);
    check("gravity",
          relative_error(golden().golden_vector(gravity.tau(), s), to_vector(state.at("gravity"))),
          kValueTol, s);
  }
}

TEST_P(GoldenServiceTest, MassMatrixAndInverse) {
  v1::MassMatrixRequest request;
  request.set_model_id(model_id());
  request.set_batch_size(batch_size());
  *request.mutable_q() = golden().q_batch();
  request.set_inverse(true);
  v1::MassMatrixResponse response;
  const grpc::Status status = call(&Dynamics::MassMatrix, request, response);
  ASSERT_TRUE(status.ok()) << status.error_message();
  for (int s = 0; s < batch_size(); ++s) {
    const json& state = golden().states()[s];
    Eigen::MatrixXd mass = to_matrix(state.at("M"));
    mass.diagonal() -= golden().armature;
    check("M", relative_error(golden().golden_matrix(response.mass_matrix(), s), mass), kValueTol,
          s);
    check("Minv",
          relative_error(golden().golden_matrix(response.inverse(), s),
                         test_support::golden_minv_without_armature(state, golden().armature)),
          kValueTol, s);
  }
}

TEST_P(GoldenServiceTest, ForwardDynamics) {
  const std::vector<Eigen::VectorXd> expected = golden().per_state("aba");
  std::vector<Eigen::VectorXd> tau = golden().per_state("tau");
  for (int s = 0; s < batch_size(); ++s) tau[s] -= golden().armature.cwiseProduct(expected[s]);
  v1::ForwardDynamicsRequest request;
  request.set_model_id(model_id());
  request.set_batch_size(batch_size());
  *request.mutable_q() = golden().q_batch();
  *request.mutable_v() = golden().v_batch("v");
  *request.mutable_tau() = golden().v_batch(tau);
  request.set_algorithm(v1::FORWARD_DYNAMICS_ALGORITHM_ABA);
  v1::ForwardDynamicsResponse response;
  const grpc::Status status = call(&Dynamics::ForwardDynamics, request, response);
  ASSERT_TRUE(status.ok()) << status.error_message();
  for (int s = 0; s < batch_size(); ++s) {
    check("aba", relative_error(golden().golden_vector(response.a(), s), expected[s]), kValueTol,
          s);
  }
}

TEST_P(GoldenServiceTest, InverseDynamicsDerivatives) {
  // RNEA's derivatives with respect to q and v do not depend on the armature; ∂τ/∂a = M does.
  v1::DerivativesRequest request;
  request.set_model_id(model_id());
  request.set_batch_size(batch_size());
  *request.mutable_q() = golden().q_batch();
  *request.mutable_v() = golden().v_batch("v");
  *request.mutable_a() = golden().v_batch("a");
  request.set_of(v1::DERIVATIVES_OF_INVERSE_DYNAMICS);
  v1::DerivativesResponse response;
  const grpc::Status status = call(&Dynamics::Derivatives, request, response);
  ASSERT_TRUE(status.ok()) << status.error_message();
  for (int s = 0; s < batch_size(); ++s) {
    const json& state = golden().states()[s];
    Eigen::MatrixXd mass = to_matrix(state.at("M"));
    mass.diagonal() -= golden().armature;
    check(
        "drnea_dq",
        relative_error(golden().golden_matrix(response.d_dq(), s), to_matrix(state.at("drnea_dq"))),
        kDerivativeTol, s);
    check(
        "drnea_dv",
        relative_error(golden().golden_matrix(response.d_dv(), s), to_matrix(state.at("drnea_dv"))),
        kDerivativeTol, s);
    check("drnea_da (M)", relative_error(golden().golden_matrix(response.d_du(), s), mass),
          kDerivativeTol, s);
  }
}

TEST_P(GoldenServiceTest, ForwardDynamicsDerivatives) {
  // At τ − A q̈, where the reference's q̈ is ours, (M + A) ∂q̈/∂x is our M ∂q̈/∂x: our derivatives
  // are the reference's plus M⁻¹ A times them, M⁻¹ the inverse of the reference's M less A.
  const std::vector<Eigen::VectorXd> ddq = golden().per_state("aba");
  std::vector<Eigen::VectorXd> tau = golden().per_state("tau");
  for (int s = 0; s < batch_size(); ++s) tau[s] -= golden().armature.cwiseProduct(ddq[s]);
  v1::DerivativesRequest request;
  request.set_model_id(model_id());
  request.set_batch_size(batch_size());
  *request.mutable_q() = golden().q_batch();
  *request.mutable_v() = golden().v_batch("v");
  *request.mutable_tau() = golden().v_batch(tau);
  request.set_of(v1::DERIVATIVES_OF_FORWARD_DYNAMICS);
  v1::DerivativesResponse response;
  const grpc::Status status = call(&Dynamics::Derivatives, request, response);
  ASSERT_TRUE(status.ok()) << status.error_message();
  for (int s = 0; s < batch_size(); ++s) {
    const json& state = golden().states()[s];
    const Eigen::MatrixXd minv =
        test_support::golden_minv_without_armature(state, golden().armature);
    const auto without_armature = [&](const Eigen::MatrixXd& reference) {
      return Eigen::MatrixXd(reference + minv * golden().armature.asDiagonal() * reference);
    };
    check("daba_dq",
          relative_error(golden().golden_matrix(response.d_dq(), s),
                         without_armature(to_matrix(state.at("daba_dq")))),
          kDerivativeTol, s);
    check("daba_dv",
          relative_error(golden().golden_matrix(response.d_dv(), s),
                         without_armature(to_matrix(state.at("daba_dv")))),
          kDerivativeTol, s);
    check("daba_dtau (Minv)", relative_error(golden().golden_matrix(response.d_du(), s), minv),
          kDerivativeTol, s);
  }
}

TEST_P(GoldenServiceTest, Placements) {
  // Every joint frame, then every link frame, of the reference; the names do not collide.
  const json& first_state = golden().states()[0];
  std::vector<std::pair<std::string, std::string>> frames;  // (key, name)
  v1::KinematicsRequest request;
  request.set_model_id(model_id());
  request.set_batch_size(batch_size());
  *request.mutable_q() = golden().q_batch();
  for (const std::string key : {"joint_placements", "link_placements"}) {
    for (const auto& frame : first_state.at(key).items()) {
      frames.emplace_back(key, frame.key());
      request.add_frames(frame.key());
    }
  }
  v1::KinematicsResponse response;
  const grpc::Status status = call(&Dynamics::Kinematics, request, response);
  ASSERT_TRUE(status.ok()) << status.error_message();
  const int count = static_cast<int>(frames.size());
  for (int s = 0; s < batch_size(); ++s) {
    for (int f = 0; f < count; ++f) {
      const auto& [key, name] = frames[f];
      const json& expected = golden().states()[s].at(key).at(name);
      Eigen::Matrix<double, 3, 4> want, got;
      want.leftCols<3>() = to_matrix(expected.at("R"));
      want.col(3) = to_vector(expected.at("p"));
      for (int r = 0; r < 3; ++r) {
        for (int c = 0; c < 3; ++c) got(r, c) = response.rotations((s * count + f) * 9 + r * 3 + c);
        got(r, 3) = response.positions((s * count + f) * 3 + r);
      }
      check(key, relative_error(got, want), kValueTol, s, name);
    }
  }
}

TEST_P(GoldenServiceTest, ConstrainedDynamics) {
  if (!golden().doc.contains("constrained_dynamics")) {
    GTEST_SKIP() << GetParam() << " has no constrained_dynamics section";
  }
  ASSERT_EQ(golden().layout.loop_closures_size(), 0) << "the constraint rows would follow them";
  const json& section = golden().doc.at("constrained_dynamics");
  const json& results = section.at("results");
  const int rows = section.at("dim").get<int>();
  const int states = static_cast<int>(results.size());

  // The reference's states that have results, at τ − A q̈ with the reference's q̈.
  std::vector<Eigen::VectorXd> q, v, tau;
  for (const json& result : results) {
    const json& state = golden().states().at(result.at("state").get<std::size_t>());
    q.push_back(to_vector(state.at("q")));
    v.push_back(to_vector(state.at("v")));
    tau.push_back(to_vector(state.at("tau")) -
                  golden().armature.cwiseProduct(to_vector(result.at("qdd"))));
  }
  v1::ConstrainedDynamicsRequest request;
  request.set_model_id(model_id());
  request.set_batch_size(states);
  *request.mutable_q() = RegisteredCase::stacked(q, golden().q_of_golden);
  *request.mutable_v() = golden().v_batch(v);
  *request.mutable_tau() = golden().v_batch(tau);
  request.set_mode(v1::CONSTRAINED_DYNAMICS_MODE_FORWARD);
  v1::KinematicsRequest jacobians_request;
  jacobians_request.set_model_id(model_id());
  jacobians_request.set_batch_size(states);
  *jacobians_request.mutable_q() = request.q();
  jacobians_request.set_reference(v1::REFERENCE_FRAME_LOCAL);
  jacobians_request.set_jacobians(true);
  std::vector<int> constraint_dims;
  for (const json& reference : section.at("constraints")) {
    const std::string frame = reference.at("frame").get<std::string>();
    v1::Constraint* constraint = request.add_constraints();
    constraint->set_name(frame);
    constraint->set_type(reference.at("type").get<std::string>() == "6D"
                             ? v1::CONSTRAINT_TYPE_WELD
                             : v1::CONSTRAINT_TYPE_POINT);
    constraint->mutable_frame1()->set_frame(frame);
    constraint_dims.push_back(reference.at("dim").get<int>());
    jacobians_request.add_frames(frame);
  }
  v1::ConstrainedDynamicsResponse response;
  grpc::Status status = call(&Dynamics::ConstrainedDynamics, request, response);
  ASSERT_TRUE(status.ok()) << status.error_message();
  ASSERT_EQ(response.multipliers_size(), states * rows);
  v1::KinematicsResponse kinematics;
  status = call(&Dynamics::Kinematics, jacobians_request, kinematics);
  ASSERT_TRUE(status.ok()) << status.error_message();

  const int nv = golden().nv();
  const int frame_count = static_cast<int>(constraint_dims.size());
  for (int s = 0; s < states; ++s) {
    const json& result = results[s];
    // J: each constraint's rows of its frame's LOCAL Jacobian ([linear; angular]; a point
    // contact's linear rows), columns in the golden layout.
    Eigen::MatrixXd jacobian(rows, nv);
    for (int f = 0, row = 0; f < frame_count; row += constraint_dims[f], ++f) {
      for (int r = 0; r < constraint_dims[f]; ++r) {
        for (int c = 0; c < nv; ++c) {
          jacobian(row + r, c) =
              kinematics.jacobians(((s * frame_count + f) * 6 + r) * nv + golden().v_of_golden[c]);
        }
      }
    }
    check("constrained J", error_relative_to_largest(jacobian, to_matrix(result.at("J"))),
          kConstrainedTol, s);
    check("constrained qdd",
          error_relative_to_largest(golden().golden_vector(response.a(), s),
                                    to_vector(result.at("qdd"))),
          kConstrainedTol, s);
    const Eigen::VectorXd lambda =
        Eigen::Map<const Eigen::VectorXd>(response.multipliers().data() + s * rows, rows);
    check("constrained lambda", error_relative_to_largest(lambda, to_vector(result.at("lambda"))),
          kConstrainedTol, s);
  }
}

struct TorquectlOutcome {
  int exit_code;
  std::string out;
  std::string err;
};

TEST_P(GoldenServiceTest, Torquectl) {
  const auto torquectl = [&](const std::string& args) {
    const std::filesystem::path out = dir_->path() / "stdout", err = dir_->path() / "stderr";
    const std::string command = "TORQUED_SERVER=" + server_->address() + " " + TORQUECTL_BINARY +
                                " " + args + " < /dev/null > " + out.string() + " 2> " +
                                err.string();
    const int status = std::system(command.c_str());
    return TorquectlOutcome{WIFEXITED(status) ? WEXITSTATUS(status) : -1, read_text(out),
                            read_text(err)};
  };

  const std::string base = floating_reference(golden().doc) ? " --floating-base" : " --fixed-base";
  const TorquectlOutcome registered = torquectl("register " + golden().model_file.string() + base);
  ASSERT_EQ(registered.exit_code, 0) << registered.err;
  const std::string torquectl_id = registered.out.substr(0, registered.out.find('\n'));
  EXPECT_EQ(registered.out, torquectl_id + "\n") << "one line, the id";
  if (torquectl_id != model_id()) {
    const v1::Model theirs = server_->model_layout(torquectl_id);
    ADD_FAILURE() << "torquectl register " << golden().model_file.filename().string() << base
                  << " registered " << torquectl_id << " (" << v1::BaseType_Name(theirs.base())
                  << ", nq " << theirs.nq() << "), the service " << model_id() << " ("
                  << v1::BaseType_Name(golden().layout.base()) << ", nq " << golden().layout.nq()
                  << ")";
  }

  // The reference's states as JSON rows in the model's layout, on the model the service registered
  // (the same as torquectl's when the ids agree).
  const auto rows = [&](const Flat& flat, int width) {
    json out = json::array();
    for (int s = 0; s < batch_size(); ++s) {
      out.push_back(std::vector<double>(flat.begin() + s * width, flat.begin() + (s + 1) * width));
    }
    return out;
  };
  const std::vector<Eigen::VectorXd> a = golden().per_state("a");
  const std::filesystem::path input = dir_->path() / "states.json";
  std::ofstream(input) << json{{"q", rows(golden().q_batch(), golden().layout.nq())},
                               {"v", rows(golden().v_batch("v"), golden().nv())},
                               {"a", rows(golden().v_batch(a), golden().nv())}}
                              .dump();
  const TorquectlOutcome inverse_dynamics =
      torquectl("inverse-dynamics " + model_id() + " --input " + input.string());
  ASSERT_EQ(inverse_dynamics.exit_code, 0) << inverse_dynamics.err;
  const json result = json::parse(inverse_dynamics.out);
  ASSERT_EQ(result.at("tau").size(), static_cast<std::size_t>(batch_size()));
  for (int s = 0; s < batch_size(); ++s) {
    Flat tau;
    for (const json& x : result.at("tau")[s]) tau.Add(x.get<double>());
    ASSERT_EQ(tau.size(), golden().nv());
    const Eigen::VectorXd expected =
        to_vector(golden().states()[s].at("rnea")) - golden().armature.cwiseProduct(a[s]);
    check("torquectl rnea", relative_error(golden().golden_vector(tau, 0), expected), kValueTol, s);
  }
}

INSTANTIATE_TEST_SUITE_P(Golden, GoldenServiceTest,
                         ::testing::ValuesIn(test_support::golden_files()),
                         test_support::golden_case_name);

}  // namespace
}  // namespace torqued::testing
