// Tests loop closures through the service end to end: registration with loop closures beside
// any source (server/models/model_from_request.cpp), their rows in the layout (layout.cpp), the
// bundled closed chains (deploy/models/four_bar.txtpb, slider_crank.txtpb) and
// ConstrainedDynamics's checks and physics (dynamics_service.cpp). Bitwise equivalence with the
// engine for every bundled model is in rpc_equivalence_test.cpp.
#include <gtest/gtest.h>

#include <Eigen/LU>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <functional>
#include <limits>
#include <sstream>

#include "engine/algorithms/closed_chain_inverse_dynamics.hpp"
#include "engine/algorithms/constrained_dynamics.hpp"
#include "engine/model/build.hpp"
#include "server/models/bundled_models.hpp"
#include "server/models/model_from_request.hpp"
#include "server/models/model_id.hpp"
#include "tests/engine/support/closed_chains.hpp"
#include "tests/server/server_process.hpp"

namespace torqued::testing {
namespace {

namespace ts = torqued::test_support;

#define EXPECT_STATUS(status, code, ...)                                                  \
  do {                                                                                    \
    const grpc::Status s_ = (status);                                                     \
    EXPECT_EQ(s_.error_code(), grpc::StatusCode::code) << s_.error_message();             \
    for (const std::string& part_ : {__VA_ARGS__}) {                                      \
      EXPECT_NE(s_.error_message().find(part_), std::string::npos) << s_.error_message(); \
    }                                                                                     \
  } while (false)

std::string read_text(const std::string& path) {
  std::ifstream in(path);
  std::ostringstream s;
  s << in.rdbuf();
  return s.str();
}

v1::RegisterModelRequest repository_request(const std::string& file) {
  v1::RegisterModelRequest request;
  std::string error;
  EXPECT_TRUE(server::read_model_file(repository_dir() + "/" + file, request, error)) << error;
  return request;
}

v1::LoopClosure* add_loop(google::protobuf::RepeatedPtrField<v1::LoopClosure>* loops,
                          const std::string& name, v1::ConstraintType type,
                          const std::string& link1, const std::string& link2) {
  v1::LoopClosure* loop = loops->Add();
  loop->set_name(name);
  loop->set_type(type);
  loop->set_link1(link1);
  loop->set_link2(link2);
  return loop;
}

class LoopClosureTest : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    dir_ = new TempDir();
    // Inverse calls give accelerations that no motion of the loops or feet has: the server's
    // least-squares answers are compared with the engine's, which checks no residual (the
    // refusal is bad_input_test's).
    server_ = new ServerProcess({dir_->path() / "data",
                                 repository_dir(),
                                 false,
                                 {"--workers=2", "--max-constraint-residual=inf"}});
  }
  static void TearDownTestSuite() {
    delete server_;
    delete dir_;
  }

  static grpc::Status register_model(const v1::RegisterModelRequest& request,
                                     v1::RegisterModelResponse& response) {
    return with_deadline(30, [&](grpc::ClientContext* c) {
      return server_->models()->RegisterModel(c, request, &response);
    });
  }

  static grpc::Status constrained(const v1::ConstrainedDynamicsRequest& request,
                                  v1::ConstrainedDynamicsResponse& response) {
    return with_deadline(60, [&](grpc::ClientContext* c) {
      return server_->dynamics()->ConstrainedDynamics(c, request, &response);
    });
  }

  static grpc::Status constrained(const v1::ConstrainedDynamicsRequest& request) {
    v1::ConstrainedDynamicsResponse response;
    return constrained(request, response);
  }

  // A repository model's layout, registered again (idempotently) to learn it.
  static v1::Model bundled(const std::string& file) {
    v1::RegisterModelResponse response;
    EXPECT_TRUE(register_model(repository_request(file), response).ok()) << file;
    EXPECT_FALSE(response.created()) << file << " should already be served from the repository";
    return response.model();
  }

  static TempDir* dir_;
  static ServerProcess* server_;
};

TempDir* LoopClosureTest::dir_ = nullptr;
ServerProcess* LoopClosureTest::server_ = nullptr;

TEST_F(LoopClosureTest, IdsOfModelsWithoutLoopsAreUnchanged) {
  // The ids these models had before loop closures existed: content hashes must not move.
  const std::map<std::string, std::string> ids = {
      {"double_pendulum.urdf", "3b3b57d3eea9ce76805dfae9c476b431"},
      {"puma560.dh.txtpb", "a0ef5da835ea910be5bf8a2ea0e14d7a"},
      {"quadruped.urdf", "eca783f531dfa819975ae7cc9250b9cc"},
      {"stanford_arm.dh.txtpb", "29af925d5d532d925b0073c57eafccd8"}};
  for (const auto& [file, id] : ids) {
    const v1::Model layout = bundled(file);
    EXPECT_EQ(layout.id(), id) << file;
    EXPECT_EQ(layout.loop_closures_size(), 0) << file;
  }
}

TEST_F(LoopClosureTest, BundledClosedChainsAreTheEngineTestMechanisms) {
  // Same id = same canonical model, bit for bit: the text files hold the test support's numbers.
  // Only the slider guide's quarter turn is rounded differently, as roll-pitch-yaw goes through
  // a quaternion: within 16 ulps (3.6e-15, a handful of roundings on numbers of order one, with
  // or without FMA) of the test support's rotation, then the same.
  ModelSpec four_bar = ts::four_bar_spec(ts::FourBarClosure::kRevolute);
  ModelSpec slider_crank = ts::slider_crank_spec(ts::SliderCrankClosure::kPrismatic);
  v1::Placement quarter_turn;
  quarter_turn.mutable_rpy()->set_y(M_PI / 2.0);
  const Transform guide = server::to_transform(quarter_turn);
  for (Transform* origin :
       {&slider_crank.loop_closures[0].origin1, &slider_crank.loop_closures[0].origin2}) {
    EXPECT_LT((origin->rotation - guide.rotation).norm(),
              16 * std::numeric_limits<double>::epsilon());
    *origin = guide;
  }
  const v1::Model four_bar_layout = bundled("four_bar.txtpb");
  const v1::Model slider_crank_layout = bundled("slider_crank.txtpb");
  EXPECT_EQ(four_bar_layout.id(), server::model_id(*build_model(four_bar)));
  EXPECT_EQ(slider_crank_layout.id(), server::model_id(*build_model(slider_crank)));
  ASSERT_EQ(four_bar_layout.loop_closures_size(), 1);
  EXPECT_EQ(four_bar_layout.loop_closures(0).name(), "rocker_pivot");
  EXPECT_EQ(four_bar_layout.loop_closures(0).type(), v1::CONSTRAINT_TYPE_REVOLUTE);
  EXPECT_EQ(four_bar_layout.loop_closures(0).offset(), 0);
  EXPECT_EQ(four_bar_layout.loop_closures(0).dimension(), 5);
  ASSERT_EQ(slider_crank_layout.loop_closures_size(), 1);
  EXPECT_EQ(slider_crank_layout.loop_closures(0).name(), "slider_guide");
  EXPECT_EQ(slider_crank_layout.loop_closures(0).type(), v1::CONSTRAINT_TYPE_PRISMATIC);
  EXPECT_EQ(slider_crank_layout.loop_closures(0).dimension(), 5);
}

TEST_F(LoopClosureTest, LoopsInTheSpecOrBesideItGiveOneModelWithTheSameIdOnAnyServer) {
  v1::RegisterModelRequest beside = repository_request("four_bar.txtpb");
  beside.set_name("four_bar_copy");
  v1::RegisterModelRequest inside = beside;
  *inside.mutable_spec()->mutable_loop_closures() = inside.loop_closures();
  inside.clear_loop_closures();
  v1::RegisterModelResponse first, second;
  ASSERT_TRUE(register_model(beside, first).ok());
  ASSERT_TRUE(register_model(inside, second).ok());
  EXPECT_EQ(first.model().id(), second.model().id());
  EXPECT_FALSE(second.created());

  TempDir other_dir;
  ServerProcess other({other_dir.path() / "data", ""});
  v1::RegisterModelResponse elsewhere;
  ASSERT_TRUE(with_deadline(30, [&](grpc::ClientContext* c) {
                return other.models()->RegisterModel(c, beside, &elsewhere);
              }).ok());
  EXPECT_TRUE(elsewhere.created());
  EXPECT_EQ(elsewhere.model().id(), first.model().id());
}

TEST_F(LoopClosureTest, UrdfAndDhSourcesTakeLoopClosures) {
  // The double pendulum's second link tip pinned to a world point, next to the URDF source.
  v1::RegisterModelRequest urdf;
  urdf.set_name("pinned_pendulum");
  urdf.set_urdf(read_text(repository_dir() + "/double_pendulum.urdf"));
  v1::LoopClosure* pin =
      add_loop(urdf.mutable_loop_closures(), "pin", v1::CONSTRAINT_TYPE_POINT, "link2", "");
  pin->mutable_origin1()->mutable_xyz()->set_z(0.2);
  pin->mutable_origin2()->mutable_xyz()->set_y(0.3);
  v1::RegisterModelResponse pinned;
  ASSERT_TRUE(register_model(urdf, pinned).ok());
  ASSERT_EQ(pinned.model().loop_closures_size(), 1);
  EXPECT_EQ(pinned.model().loop_closures(0).name(), "pin");
  EXPECT_EQ(pinned.model().loop_closures(0).dimension(), 3);
  urdf.clear_loop_closures();
  v1::RegisterModelResponse open;
  ASSERT_TRUE(register_model(urdf, open).ok());
  EXPECT_NE(open.model().id(), pinned.model().id());

  // The PUMA's flange welded to the world, named as the DH reader names links.
  v1::RegisterModelRequest dh = repository_request("puma560.dh.txtpb");
  dh.set_name("welded_puma");
  add_loop(dh.mutable_loop_closures(), "flange", v1::CONSTRAINT_TYPE_WELD, "link6", "world");
  v1::RegisterModelResponse welded;
  ASSERT_TRUE(register_model(dh, welded).ok());
  ASSERT_EQ(welded.model().loop_closures_size(), 1);
  EXPECT_EQ(welded.model().loop_closures(0).type(), v1::CONSTRAINT_TYPE_WELD);
  EXPECT_EQ(welded.model().loop_closures(0).dimension(), 6);
}

TEST_F(LoopClosureTest, BadLoopClosuresAreRejectedNamingTheLoop) {
  const v1::RegisterModelRequest good = repository_request("four_bar.txtpb");
  v1::RegisterModelResponse response;

  v1::RegisterModelRequest unknown_link = good;
  unknown_link.mutable_loop_closures(0)->set_link1("tibia");
  EXPECT_STATUS(register_model(unknown_link, response), INVALID_ARGUMENT, "rocker_pivot", "tibia");

  v1::RegisterModelRequest untyped = good;
  untyped.mutable_loop_closures(0)->set_type(v1::CONSTRAINT_TYPE_UNSPECIFIED);
  EXPECT_STATUS(register_model(untyped, response), INVALID_ARGUMENT, "loop_closures[0]",
                "rocker_pivot", "type");

  v1::RegisterModelRequest in_spec = good;
  *in_spec.mutable_spec()->add_loop_closures() = good.loop_closures(0);
  in_spec.mutable_spec()->mutable_loop_closures(0)->set_type(static_cast<v1::ConstraintType>(9));
  EXPECT_STATUS(register_model(in_spec, response), INVALID_ARGUMENT, "spec.loop_closures[0]",
                "type");

  v1::RegisterModelRequest duplicate = good;
  *duplicate.add_loop_closures() = good.loop_closures(0);
  EXPECT_STATUS(register_model(duplicate, response), INVALID_ARGUMENT, "duplicate", "rocker_pivot");

  v1::RegisterModelRequest itself = good;
  itself.mutable_loop_closures(0)->set_link2("rocker");
  EXPECT_STATUS(register_model(itself, response), INVALID_ARGUMENT, "rocker_pivot", "itself");

  v1::RegisterModelRequest not_finite = good;
  not_finite.mutable_loop_closures(0)->mutable_origin2()->mutable_xyz()->set_x(NAN);
  EXPECT_STATUS(register_model(not_finite, response), INVALID_ARGUMENT, "rocker_pivot");
}

// Each worker's workspace holds rows² numbers for a model's loop closures, and the catalog builds
// one at registration: 40 KB of request for 20,000 rows would have allocated 6.4 GB. The loops
// count against --max-constraint-rows (512 by default) before the model is built.
TEST_F(LoopClosureTest, LoopClosureRowsAreBoundedByTheConstraintRowLimit) {
  v1::RegisterModelRequest request = repository_request("four_bar.txtpb");
  request.clear_loop_closures();
  for (int i = 0; i < 171; ++i) {
    add_loop(request.mutable_loop_closures(), 'p' + std::to_string(i), v1::CONSTRAINT_TYPE_POINT,
             "rocker", "coupler");
  }
  v1::RegisterModelResponse response;
  EXPECT_STATUS(register_model(request, response), RESOURCE_EXHAUSTED, "loop_closures",
                "513 exceeds", "--max-constraint-rows");
  request.mutable_loop_closures()->RemoveLast();
  const grpc::Status accepted = register_model(request, response);
  EXPECT_TRUE(accepted.ok()) << accepted.error_message();
  EXPECT_EQ(response.model().loop_closures_size(), 170);
}

// The accelerations the service returns for a closed chain satisfy its constraints: at closed
// configurations with velocities along the mechanism's one free direction, K q̈ = k (K and k
// recomputed here with the engine) to 1e-9, well above the rounding of O(10) entries and far
// below any modelling error.
TEST_F(LoopClosureTest, BundledClosedChainsSatisfyTheirConstraints) {
  struct Case {
    std::string file;
    std::function<Eigen::VectorXd(double)> closed_q;
  };
  const std::vector<Case> cases = {
      {"four_bar.txtpb",
       [](double phi) { return ts::four_bar_pose(ts::FourBarClosure::kRevolute, phi).q; }},
      {"slider_crank.txtpb", [](double phi) {
         return ts::slider_crank_pose(ts::SliderCrankClosure::kPrismatic, phi).q;
       }}};
  for (const Case& test : cases) {
    const v1::Model layout = bundled(test.file);
    server::BuiltModel local;
    ASSERT_TRUE(server::build_from_request(repository_request(test.file),
                                           server::model_limits(server::Config{}), local)
                    .ok());
    const Model& m = *local.model;
    Data data(m);
    const int states = 12;
    for (const bool inverse : {false, true}) {
      v1::ConstrainedDynamicsRequest request;
      request.set_model_id(layout.id());
      request.set_batch_size(states);
      request.mutable_gains()->set_position(100.0);
      request.mutable_gains()->set_velocity(20.0);
      for (int s = 0; s < states; ++s) {
        const Eigen::VectorXd q = test.closed_q(0.5 * s - 2.5);
        // A velocity in the null space of K (rank 2 of 3 columns): the loop stays closed.
        Eigen::MatrixXd k(constraint_rows(m, {}), m.nv);
        Eigen::VectorXd bias(k.rows());
        constraint_jacobian(m, data, q, Eigen::VectorXd::Zero(m.nv), {}, {}, k, bias);
        const Eigen::VectorXd v = 1.5 * Eigen::FullPivLU<Eigen::MatrixXd>(k).kernel().col(0);
        request.mutable_q()->Add(q.data(), q.data() + q.size());
        request.mutable_v()->Add(v.data(), v.data() + v.size());
        for (int i = 0; i < m.nv; ++i) request.add_tau(i == 0 ? 2.0 : 0.0);
        if (inverse) {
          for (int i = 0; i < m.nv; ++i) request.add_a(i == 0 ? -3.0 : 0.0);
        }
      }
      if (inverse) {
        request.set_mode(v1::CONSTRAINED_DYNAMICS_MODE_INVERSE);
        for (int i = 0; i < m.nv; ++i) {
          request.add_inputs(i == 0 ? v1::DOF_INPUT_ACCELERATION : v1::DOF_INPUT_FORCE);
        }
      }
      v1::ConstrainedDynamicsResponse response;
      const grpc::Status status = constrained(request, response);
      ASSERT_TRUE(status.ok()) << test.file << ": " << status.error_message();
      ASSERT_EQ(response.a_size(), states * m.nv);
      ASSERT_EQ(response.multipliers_size(), states * 5);
      for (int s = 0; s < states; ++s) {
        const Eigen::Map<const Eigen::VectorXd> q(request.q().data() + s * m.nq, m.nq);
        const Eigen::Map<const Eigen::VectorXd> v(request.v().data() + s * m.nv, m.nv);
        const Eigen::Map<const Eigen::VectorXd> a(response.a().data() + s * m.nv, m.nv);
        Eigen::MatrixXd k(5, m.nv);
        Eigen::VectorXd bias(5);
        constraint_jacobian(m, data, q, v, {}, {100.0, 20.0}, k, bias);
        EXPECT_LT((k * a - bias).norm(), 1e-9) << test.file << " state " << s;
        if (inverse) {
          // The actuated DOF's acceleration is the one given; feeding τ back gives q̈ again.
          EXPECT_EQ(a[0], -3.0);
          const Eigen::Map<const Eigen::VectorXd> tau(response.tau().data() + s * m.nv, m.nv);
          EXPECT_EQ(tau[1], 0.0);
          EXPECT_EQ(tau[2], 0.0);
          Eigen::VectorXd ddq(m.nv), lambda(5);
          constrained_dynamics(m, data, q, v, tau, {}, {100.0, 20.0}, ddq, lambda);
          EXPECT_LT((ddq - a).norm(), 1e-8) << test.file << " state " << s;
        }
      }
    }
  }
}

// solo12 (../shared/models) floating, standing on its four feet: per-call point constraints on
// named frames, forward and inverse, bitwise as the engine computes them in-process.
TEST_F(LoopClosureTest, Solo12OnItsFeetMatchesTheEngine) {
  const std::string path = std::string(TORQUED_SHARED_DIR) + "/models/solo12.urdf";
  if (!std::filesystem::exists(path)) GTEST_SKIP() << path << " is missing (no ../shared)";
  v1::RegisterModelRequest request;
  request.set_urdf(read_text(path));
  request.set_base(v1::BASE_TYPE_FLOATING);
  v1::RegisterModelResponse registered;
  ASSERT_TRUE(register_model(request, registered).ok());
  server::BuiltModel local;
  ASSERT_TRUE(
      server::build_from_request(request, server::model_limits(server::Config{}), local).ok());
  ASSERT_EQ(local.id, registered.model().id());
  const Model& m = *local.model;
  Data data(m);

  const int states = 20;
  const auto q = random_configurations(registered.model(), states, 61);
  const auto v = random_values(states * m.nv, 62);
  const auto a = random_values(states * m.nv, 63);
  const auto tau = random_values(states * m.nv, 64);
  const BaumgarteGains gains{50.0, 14.0};
  std::vector<BilateralConstraint> feet;
  v1::ConstrainedDynamicsRequest call;
  call.set_model_id(local.id);
  call.set_batch_size(states);
  call.mutable_q()->Add(q.begin(), q.end());
  call.mutable_v()->Add(v.begin(), v.end());
  call.mutable_tau()->Add(tau.begin(), tau.end());
  call.mutable_gains()->set_position(gains.position);
  call.mutable_gains()->set_velocity(gains.velocity);
  for (const char* foot : {"FL_FOOT", "FR_FOOT", "HL_FOOT", "HR_FOOT"}) {
    v1::Constraint* c = call.add_constraints();
    c->set_name(foot);
    c->set_type(v1::CONSTRAINT_TYPE_POINT);
    c->mutable_frame1()->set_frame(foot);
    c->mutable_frame2()->set_frame("world");
    c->mutable_frame2()->mutable_placement()->mutable_xyz()->set_z(-0.25);
    const Frame& frame = m.frames[m.find_frame(foot)];
    Transform ground = Transform::Identity();
    ground.translation.z() = -0.25;
    feet.push_back({foot, ConstraintType::kPoint, frame.body, frame.placement, 0, ground});
  }
  for (const bool inverse : {false, true}) {
    std::vector<DofInput> inputs;
    if (inverse) {
      call.set_mode(v1::CONSTRAINED_DYNAMICS_MODE_INVERSE);
      call.mutable_a()->Add(a.begin(), a.end());
      for (int k = 0; k < m.nv; ++k) {
        inputs.push_back(k < 6 ? DofInput::kForce : DofInput::kAcceleration);
        call.add_inputs(k < 6 ? v1::DOF_INPUT_FORCE : v1::DOF_INPUT_ACCELERATION);
      }
    }
    v1::ConstrainedDynamicsResponse response;
    const grpc::Status status = constrained(call, response);
    ASSERT_TRUE(status.ok()) << status.error_message();
    ASSERT_EQ(response.rows_size(), 4);
    EXPECT_EQ(response.rows(3).name(), "HR_FOOT");
    EXPECT_EQ(response.rows(3).offset(), 9);
    std::vector<double> want_a, want_multipliers, want_tau;
    Eigen::VectorXd ddq(m.nv), lambda(12), tau_out(m.nv);
    for (int s = 0; s < states; ++s) {
      const auto at = [](const std::vector<double>& x, int state, int n) {
        return Eigen::Map<const Eigen::VectorXd>(x.data() + state * n, n);
      };
      if (inverse) {
        closed_chain_inverse_dynamics(m, data, at(q, s, m.nq), at(v, s, m.nv), at(a, s, m.nv),
                                      at(tau, s, m.nv), inputs, feet, gains, ddq, tau_out, lambda);
        want_tau.insert(want_tau.end(), tau_out.data(), tau_out.data() + m.nv);
      } else {
        constrained_dynamics(m, data, at(q, s, m.nq), at(v, s, m.nv), at(tau, s, m.nv), feet, gains,
                             ddq, lambda);
      }
      want_a.insert(want_a.end(), ddq.data(), ddq.data() + m.nv);
      want_multipliers.insert(want_multipliers.end(), lambda.data(), lambda.data() + 12);
    }
    const auto same = [](const auto& got, const std::vector<double>& want) {
      return static_cast<std::size_t>(got.size()) == want.size() &&
             (want.empty() ||  // no memcmp of an empty field's null data() (UBSan)
              std::memcmp(got.data(), want.data(), want.size() * sizeof(double)) == 0);
    };
    EXPECT_TRUE(same(response.a(), want_a)) << (inverse ? "inverse" : "forward");
    EXPECT_TRUE(same(response.multipliers(), want_multipliers))
        << (inverse ? "inverse" : "forward");
    EXPECT_TRUE(same(response.tau(), want_tau)) << (inverse ? "inverse" : "forward");
  }
}

TEST_F(LoopClosureTest, BadConstrainedDynamicsRequestsAreRejectedNamingTheField) {
  const v1::Model layout = bundled("four_bar.txtpb");
  v1::ConstrainedDynamicsRequest good;
  good.set_model_id(layout.id());
  good.set_batch_size(2);
  for (int i = 0; i < 6; ++i) {
    good.add_q(0.1 * i);
    good.add_v(0.0);
    good.add_tau(1.0);
  }
  v1::Constraint* c = good.add_constraints();
  c->set_name("crank_tip");
  c->set_type(v1::CONSTRAINT_TYPE_POINT);
  c->mutable_frame1()->set_frame("crank");
  c->mutable_frame1()->mutable_placement()->mutable_xyz()->set_x(0.2);
  ASSERT_TRUE(constrained(good).ok());

  auto r = good;
  r.mutable_constraints(0)->mutable_frame1()->set_frame("tibia");
  EXPECT_STATUS(constrained(r), INVALID_ARGUMENT, "constraints[0].frame1.frame", "\"tibia\"");
  r = good;
  r.mutable_constraints(0)->mutable_frame2()->set_frame("femur");
  EXPECT_STATUS(constrained(r), INVALID_ARGUMENT, "constraints[0].frame2.frame", "\"femur\"");
  r = good;
  r.mutable_constraints(0)->set_type(v1::CONSTRAINT_TYPE_UNSPECIFIED);
  EXPECT_STATUS(constrained(r), INVALID_ARGUMENT, "constraints[0]", "crank_tip", "type");
  r = good;
  r.mutable_constraints(0)->clear_frame1();
  EXPECT_STATUS(constrained(r), INVALID_ARGUMENT, "constraints[0]", "frame1");
  r = good;
  r.mutable_constraints(0)->mutable_frame2()->set_frame("crank_joint");
  EXPECT_STATUS(constrained(r), INVALID_ARGUMENT, "constraints[0]", "same body");
  r = good;
  r.mutable_constraints(0)->set_name("rocker_pivot");
  EXPECT_STATUS(constrained(r), INVALID_ARGUMENT, "rocker_pivot", "already used");
  r = good;
  r.mutable_constraints(0)->mutable_frame1()->mutable_placement()->mutable_rpy()->set_y(INFINITY);
  EXPECT_STATUS(constrained(r), INVALID_ARGUMENT, "constraints[0].frame1.placement");
  r = good;
  r.mutable_tau()->RemoveLast();
  EXPECT_STATUS(constrained(r), INVALID_ARGUMENT, "tau", "expected 6");
  r = good;
  r.mutable_v()->Add(0.0);
  EXPECT_STATUS(constrained(r), INVALID_ARGUMENT, "v", "expected 6");
  r = good;
  r.add_a(1.0);
  EXPECT_STATUS(constrained(r), INVALID_ARGUMENT, "a", "CONSTRAINED_DYNAMICS_MODE_FORWARD");
  r = good;
  r.add_inputs(v1::DOF_INPUT_FORCE);
  EXPECT_STATUS(constrained(r), INVALID_ARGUMENT, "inputs", "CONSTRAINED_DYNAMICS_MODE_FORWARD");
  r = good;
  r.set_mode(static_cast<v1::ConstrainedDynamicsMode>(7));
  EXPECT_STATUS(constrained(r), INVALID_ARGUMENT, "mode");
  r = good;
  r.mutable_gains()->set_position(-1.0);
  EXPECT_STATUS(constrained(r), INVALID_ARGUMENT, "gains.position");
  r = good;
  r.mutable_gains()->set_velocity(NAN);
  EXPECT_STATUS(constrained(r), INVALID_ARGUMENT, "gains.velocity");
  r = good;
  for (int i = 0; i < 8; ++i) *r.add_constraints() = good.constraints(0);
  for (int i = 0; i < r.constraints_size(); ++i) {
    r.mutable_constraints(i)->set_name('c' + std::to_string(i));
    r.mutable_constraints(i)->set_type(v1::CONSTRAINT_TYPE_WELD);
  }
  EXPECT_STATUS(constrained(r), RESOURCE_EXHAUSTED, "constraints", "rows");

  // Inverse: one input per DOF, and accelerations to read.
  r = good;
  r.set_mode(v1::CONSTRAINED_DYNAMICS_MODE_INVERSE);
  for (int i = 0; i < 6; ++i) r.add_a(0.0);
  r.add_inputs(v1::DOF_INPUT_ACCELERATION);
  EXPECT_STATUS(constrained(r), INVALID_ARGUMENT, "inputs", "expected 3");
  r.add_inputs(v1::DOF_INPUT_FORCE);
  r.add_inputs(v1::DOF_INPUT_UNSPECIFIED);
  EXPECT_STATUS(constrained(r), INVALID_ARGUMENT, "inputs[2]");
  r.set_inputs(2, v1::DOF_INPUT_FORCE);
  r.mutable_a()->RemoveLast();
  EXPECT_STATUS(constrained(r), INVALID_ARGUMENT, "a", "expected 6");
  // Every DOF passive: the loop leaves the mechanism's own motion undetermined.
  r.add_a(0.0);
  r.clear_constraints();
  for (int i = 0; i < 3; ++i) r.set_inputs(i, v1::DOF_INPUT_FORCE);
  EXPECT_STATUS(constrained(r), FAILED_PRECONDITION, "joint");
}

}  // namespace
}  // namespace torqued::testing
