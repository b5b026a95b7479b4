// Tests server/services/request_checks.cpp, model_source.cpp and the status mapping of the services over
// loopback: every bad input gets the right status code and a message naming the field.
#include <gtest/gtest.h>

#include "tests/server/server_process.hpp"

namespace torqued::testing {
namespace {

class ValidationTest : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    dir_ = new TempDir();
    server_ =
        new ServerProcess({dir_->path() / "data",
                           repository_dir(),
                           false,
                           {"--max-batch-states=1000", "--max-urdf-bytes=20000", "--max-bodies=30",
                            "--max-dof=20", "--max-message-bytes=200000"}});
    grpc::ClientContext context;
    context.set_deadline(deadline_in(30));
    v1::ListModelsResponse list;
    ASSERT_TRUE(server_->models()->ListModels(&context, {}, &list).ok());
    for (const auto& m : list.models()) {
      grpc::ClientContext get_context;
      get_context.set_deadline(deadline_in(30));
      v1::GetModelRequest request;
      request.set_model_id(m.id());
      ASSERT_TRUE(server_->models()->GetModel(&get_context, request, &(*layouts_)[m.name()]).ok());
    }
  }
  static void TearDownTestSuite() {
    delete server_;
    delete dir_;
  }

  static const v1::Model& layout(const std::string& name) { return layouts_->at(name); }

  // A valid InverseDynamics request of `states` states for a model.
  static v1::InverseDynamicsRequest id_request(const std::string& name, int states) {
    const v1::Model& m = layout(name);
    v1::InverseDynamicsRequest r;
    r.set_model_id(m.id());
    r.set_batch_size(states);
    const auto q = random_configurations(m, states, 1);
    r.mutable_q()->Add(q.begin(), q.end());
    for (int i = 0; i < states * m.nv(); ++i) {
      r.add_v(0.1);
      r.add_a(0.2);
    }
    return r;
  }

  static grpc::Status call(const v1::InverseDynamicsRequest& r) {
    grpc::ClientContext context;
    context.set_deadline(deadline_in(30));
    v1::InverseDynamicsResponse response;
    return server_->dynamics()->InverseDynamics(&context, r, &response);
  }
  static grpc::Status register_model(const v1::RegisterModelRequest& r) {
    grpc::ClientContext context;
    context.set_deadline(deadline_in(30));
    v1::RegisterModelResponse response;
    return server_->models()->RegisterModel(&context, r, &response);
  }

  static TempDir* dir_;
  static ServerProcess* server_;
  static std::map<std::string, v1::Model>* layouts_;
};

TempDir* ValidationTest::dir_ = nullptr;
ServerProcess* ValidationTest::server_ = nullptr;
std::map<std::string, v1::Model>* ValidationTest::layouts_ = new std::map<std::string, v1::Model>();

#define EXPECT_STATUS(status, code, ...)                                          \
  do {                                                                            \
    const grpc::Status s_ = (status);                                             \
    EXPECT_EQ(s_.error_code(), grpc::StatusCode::code) << s_.error_message();     \
    for (const char* part : {__VA_ARGS__}) {                                      \
      EXPECT_NE(s_.error_message().find(part), std::string::npos)                 \
          << "message \"" << s_.error_message() << "\" lacks \"" << part << "\""; \
    }                                                                             \
  } while (0)

TEST_F(ValidationTest, ValidRequestPasses) { EXPECT_TRUE(call(id_request("puma560", 3)).ok()); }

TEST_F(ValidationTest, UnknownModelIsNotFound) {
  auto r = id_request("puma560", 1);
  r.set_model_id("0123456789abcdef0123456789abcdef");
  EXPECT_STATUS(call(r), NOT_FOUND, "model_id", "0123456789abcdef0123456789abcdef");
  grpc::ClientContext context;
  context.set_deadline(deadline_in(30));
  v1::GetModelRequest get;
  get.set_model_id("nope");
  v1::Model m;
  EXPECT_STATUS(server_->models()->GetModel(&context, get, &m), NOT_FOUND, "model_id");
}

TEST_F(ValidationTest, ArraySizesNameFieldExpectedAndReceived) {
  auto r = id_request("puma560", 2);
  r.mutable_q()->RemoveLast();
  EXPECT_STATUS(call(r), INVALID_ARGUMENT, "q:", "expected 12", "got 11");
  r = id_request("puma560", 2);
  r.add_v(0.0);
  EXPECT_STATUS(call(r), INVALID_ARGUMENT, "v:", "expected 12", "got 13");
  r = id_request("puma560", 2);
  r.clear_a();
  EXPECT_STATUS(call(r), INVALID_ARGUMENT, "a:", "expected 12", "got 0");
  r = id_request("puma560", 2);
  r.add_external_forces(1.0);
  EXPECT_STATUS(call(r), INVALID_ARGUMENT, "external_forces:", "expected 72", "got 1");
}

TEST_F(ValidationTest, NonFiniteNumbersAreRejected) {
  auto r = id_request("puma560", 2);
  r.set_a(3, std::numeric_limits<double>::quiet_NaN());
  EXPECT_STATUS(call(r), INVALID_ARGUMENT, "a[3]", "NaN");
  r = id_request("puma560", 2);
  r.set_q(7, std::numeric_limits<double>::infinity());
  EXPECT_STATUS(call(r), INVALID_ARGUMENT, "q[7]", "infinite");
  // The last value (the tail of the vectorized scan) and the negative encodings.
  r = id_request("puma560", 3);
  r.set_v(17, -std::numeric_limits<double>::infinity());
  EXPECT_STATUS(call(r), INVALID_ARGUMENT, "v[17]", "infinite");
  r = id_request("puma560", 3);
  r.set_a(10, -std::numeric_limits<double>::quiet_NaN());
  EXPECT_STATUS(call(r), INVALID_ARGUMENT, "a[10]", "NaN");
}

TEST_F(ValidationTest, ExtremeFiniteNumbersPass) {
  auto r = id_request("puma560", 3);
  r.set_v(0, std::numeric_limits<double>::denorm_min());
  r.set_v(1, -0.0);
  r.set_a(17, 1e300);
  r.set_a(16, -1e300);
  EXPECT_TRUE(call(r).ok());
}

TEST_F(ValidationTest, NonUnitQuaternionsAreRejected) {
  auto r = id_request("quadruped", 2);
  const int nq = layout("quadruped").nq();
  r.set_q(nq + 6, r.q(nq + 6) * (1.0 + 1e-5));  // qw of the second state
  EXPECT_STATUS(call(r), INVALID_ARGUMENT, "quaternion", "root_joint", "state 1");
  // Within 1e-6 is accepted.
  r = id_request("quadruped", 1);
  r.set_q(6, r.q(6) * (1.0 + 1e-7));
  EXPECT_TRUE(call(r).ok());
}

TEST_F(ValidationTest, UnknownFrameIsNamed) {
  v1::KinematicsRequest r;
  r.set_model_id(layout("puma560").id());
  for (int i = 0; i < 6; ++i) r.add_q(0.1);
  r.add_frames("link6");
  r.add_frames("no_such_frame");
  grpc::ClientContext context;
  context.set_deadline(deadline_in(30));
  v1::KinematicsResponse response;
  EXPECT_STATUS(server_->dynamics()->Kinematics(&context, r, &response), INVALID_ARGUMENT,
                "frames[1]", "no_such_frame");
}

TEST_F(ValidationTest, LimitsAreResourceExhausted) {
  EXPECT_STATUS(call(id_request("puma560", 1001)), RESOURCE_EXHAUSTED, "batch_size", "1000");
  // 200 states of an 18 x 18 mass matrix do not fit in 200 kB.
  v1::MassMatrixRequest mm;
  mm.set_model_id(layout("quadruped").id());
  mm.set_batch_size(200);
  const auto q = random_configurations(layout("quadruped"), 200, 2);
  mm.mutable_q()->Add(q.begin(), q.end());
  grpc::ClientContext context;
  context.set_deadline(deadline_in(30));
  v1::MassMatrixResponse response;
  EXPECT_STATUS(server_->dynamics()->MassMatrix(&context, mm, &response), RESOURCE_EXHAUSTED,
                "max message size");

  // 25,000 doubles are 200,000 bytes before framing.
  v1::EchoRequest echo;
  echo.set_response_values(25000);
  grpc::ClientContext echo_context;
  echo_context.set_deadline(deadline_in(30));
  v1::EchoResponse echo_response;
  EXPECT_STATUS(server_->dynamics()->Echo(&echo_context, echo, &echo_response), RESOURCE_EXHAUSTED,
                "response_values", "25000", "max message size");

  v1::RegisterModelRequest big;
  big.set_urdf("<robot name=\"x\">" + std::string(30000, ' ') + "</robot>");
  EXPECT_STATUS(register_model(big), RESOURCE_EXHAUSTED, "urdf", "20000");

  // A chain of 25 revolute joints: 26 links pass the body limit, 25 DOF do not.
  v1::RegisterModelRequest chain;
  for (int i = 0; i <= 25; ++i) {
    auto* link = chain.mutable_spec()->add_links();
    link->set_name('l' + std::to_string(i));
    link->mutable_inertial()->set_mass(1.0);
    link->mutable_inertial()->mutable_inertia()->set_ixx(0.01);
    link->mutable_inertial()->mutable_inertia()->set_iyy(0.01);
    link->mutable_inertial()->mutable_inertia()->set_izz(0.01);
    if (i == 0) continue;
    auto* joint = chain.mutable_spec()->add_joints();
    joint->set_name('j' + std::to_string(i));
    joint->set_type(v1::JOINT_TYPE_REVOLUTE);
    joint->set_parent_link('l' + std::to_string(i - 1));
    joint->set_child_link('l' + std::to_string(i));
  }
  EXPECT_STATUS(register_model(chain), RESOURCE_EXHAUSTED, "degrees of freedom", "20");
  for (int i = 26; i < 40; ++i)
    chain.mutable_spec()->add_links()->set_name('x' + std::to_string(i));
  EXPECT_STATUS(register_model(chain), RESOURCE_EXHAUSTED, "spec.links", "30");
}

TEST_F(ValidationTest, MalformedSourcesAreInvalidArgument) {
  v1::RegisterModelRequest none;
  EXPECT_STATUS(register_model(none), INVALID_ARGUMENT, "source");
  v1::RegisterModelRequest xml;
  xml.set_urdf("<robot name='broken'><link name='a'/><joint name='j' type='revolute'>");
  EXPECT_EQ(register_model(xml).error_code(), grpc::StatusCode::INVALID_ARGUMENT);
  v1::RegisterModelRequest spec;
  spec.mutable_spec()->add_links()->set_name("a");
  spec.mutable_spec()->add_links()->set_name("b");
  auto* joint = spec.mutable_spec()->add_joints();
  joint->set_name("j");
  joint->set_parent_link("a");
  joint->set_child_link("b");
  EXPECT_STATUS(register_model(spec), INVALID_ARGUMENT, "spec.joints[0]", "type");
  joint->set_type(v1::JOINT_TYPE_REVOLUTE);
  spec.mutable_spec()->mutable_links(1)->mutable_inertial()->set_mass(-1.0);
  EXPECT_STATUS(register_model(spec), INVALID_ARGUMENT, "b");
  v1::RegisterModelRequest dh;
  dh.mutable_dh()->add_links()->set_type(v1::JOINT_TYPE_REVOLUTE);
  EXPECT_STATUS(register_model(dh), INVALID_ARGUMENT, "dh.convention");
  dh.mutable_dh()->set_convention(v1::DH_CONVENTION_STANDARD);
  dh.mutable_dh()->mutable_links(0)->set_type(v1::JOINT_TYPE_SPHERICAL);
  EXPECT_STATUS(register_model(dh), INVALID_ARGUMENT, "dh.links[0].type");
}

TEST_F(ValidationTest, SingularSystemIsFailedPrecondition) {
  // A massless, inertia-free leaf: it loads (with a warning) but forward dynamics is undefined.
  v1::RegisterModelRequest spec;
  spec.set_name("massless_leaf");
  spec.mutable_spec()->add_links()->set_name("base");
  spec.mutable_spec()->add_links()->set_name("leaf");
  auto* joint = spec.mutable_spec()->add_joints();
  joint->set_name("j");
  joint->set_type(v1::JOINT_TYPE_REVOLUTE);
  joint->set_parent_link("base");
  joint->set_child_link("leaf");
  grpc::ClientContext context;
  context.set_deadline(deadline_in(30));
  v1::RegisterModelResponse registered;
  ASSERT_TRUE(server_->models()->RegisterModel(&context, spec, &registered).ok());
  EXPECT_GT(registered.model().warnings_size(), 0);
  v1::ForwardDynamicsRequest fd;
  fd.set_model_id(registered.model().id());
  fd.add_q(0.0);
  fd.add_v(0.0);
  fd.add_tau(1.0);
  grpc::ClientContext fd_context;
  fd_context.set_deadline(deadline_in(30));
  v1::ForwardDynamicsResponse response;
  EXPECT_STATUS(server_->dynamics()->ForwardDynamics(&fd_context, fd, &response),
                FAILED_PRECONDITION, "j");
  v1::MassMatrixRequest mm;
  mm.set_model_id(registered.model().id());
  mm.add_q(0.0);
  mm.set_inverse(true);
  grpc::ClientContext mm_context;
  mm_context.set_deadline(deadline_in(30));
  v1::MassMatrixResponse mm_response;
  EXPECT_STATUS(server_->dynamics()->MassMatrix(&mm_context, mm, &mm_response), FAILED_PRECONDITION,
                "singular", "'j'");
}

TEST_F(ValidationTest, AlgorithmOptionsAreChecked) {
  auto id = id_request("puma560", 2);
  id.set_algorithm(static_cast<v1::InverseDynamicsAlgorithm>(7));
  EXPECT_STATUS(call(id), INVALID_ARGUMENT, "algorithm:", "7");
  id = id_request("puma560", 2);
  id.set_algorithm(v1::INVERSE_DYNAMICS_ALGORITHM_LAGRANGE_HOMOGENEOUS);
  EXPECT_TRUE(call(id).ok());
  for (int i = 0; i < 2 * 6 * 6; ++i) id.add_external_forces(0.5);
  EXPECT_STATUS(call(id), INVALID_ARGUMENT, "external_forces", "LAGRANGE_HOMOGENEOUS");

  v1::ForwardDynamicsRequest fd;
  fd.set_model_id(layout("puma560").id());
  for (int i = 0; i < 6; ++i) {
    fd.add_q(0.1);
    fd.add_v(0.2);
    fd.add_tau(0.3);
  }
  v1::ForwardDynamicsResponse fd_response;
  const auto forward = [&] {
    return with_deadline(30, [&](grpc::ClientContext* c) {
      return server_->dynamics()->ForwardDynamics(c, fd, &fd_response);
    });
  };
  fd.set_algorithm(static_cast<v1::ForwardDynamicsAlgorithm>(9));
  EXPECT_STATUS(forward(), INVALID_ARGUMENT, "algorithm:", "9");
  fd.set_algorithm(v1::FORWARD_DYNAMICS_ALGORITHM_FACTORIZATION);
  for (int i = 0; i < 6 * 6; ++i) fd.add_external_forces(0.5);
  EXPECT_STATUS(forward(), INVALID_ARGUMENT, "external_forces", "FACTORIZATION");
  fd.set_algorithm(v1::FORWARD_DYNAMICS_ALGORITHM_AUTO);
  EXPECT_TRUE(forward().ok());

  v1::MassMatrixRequest mm;
  mm.set_model_id(layout("puma560").id());
  for (int i = 0; i < 6; ++i) mm.add_q(0.1);
  mm.set_algorithm(static_cast<v1::MassMatrixAlgorithm>(5));
  v1::MassMatrixResponse mm_response;
  EXPECT_STATUS(with_deadline(30,
                              [&](grpc::ClientContext* c) {
                                return server_->dynamics()->MassMatrix(c, mm, &mm_response);
                              }),
                INVALID_ARGUMENT, "algorithm:", "5");
}

TEST_F(ValidationTest, HybridDynamicsInputsAreChecked) {
  const v1::Model& m = layout("puma560");
  v1::HybridDynamicsRequest r;
  r.set_model_id(m.id());
  for (int i = 0; i < 6; ++i) {
    r.add_q(0.1);
    r.add_v(0.2);
    r.add_a(0.3);
    r.add_tau(0.4);
    r.add_inputs(i % 2 == 0 ? v1::DOF_INPUT_FORCE : v1::DOF_INPUT_ACCELERATION);
  }
  v1::HybridDynamicsResponse response;
  const auto hybrid = [&](const v1::HybridDynamicsRequest& request) {
    return with_deadline(30, [&](grpc::ClientContext* c) {
      return server_->dynamics()->HybridDynamics(c, request, &response);
    });
  };
  EXPECT_TRUE(hybrid(r).ok());
  auto bad = r;
  bad.mutable_inputs()->RemoveLast();
  EXPECT_STATUS(hybrid(bad), INVALID_ARGUMENT, "inputs:", "expected 6", "got 5");
  bad = r;
  bad.set_inputs(2, v1::DOF_INPUT_UNSPECIFIED);
  EXPECT_STATUS(hybrid(bad), INVALID_ARGUMENT, "inputs[2]", "DOF_INPUT_UNSPECIFIED");
  bad = r;
  bad.set_tau(4, std::numeric_limits<double>::quiet_NaN());
  EXPECT_STATUS(hybrid(bad), INVALID_ARGUMENT, "tau[4]", "NaN");
  bad = r;
  bad.add_a(0.0);
  EXPECT_STATUS(hybrid(bad), INVALID_ARGUMENT, "a:", "expected 6", "got 7");
}

TEST_F(ValidationTest, FloatingBaseInverseDynamicsNeedsAFreeFlyerRoot) {
  v1::FloatingBaseInverseDynamicsRequest r;
  r.set_model_id(layout("puma560").id());
  for (int i = 0; i < 6; ++i) {
    r.add_q(0.1);
    r.add_v(0.2);
    r.add_a(0.3);
  }
  v1::FloatingBaseInverseDynamicsResponse response;
  const auto floating = [&](const v1::FloatingBaseInverseDynamicsRequest& request) {
    return with_deadline(30, [&](grpc::ClientContext* c) {
      return server_->dynamics()->FloatingBaseInverseDynamics(c, request, &response);
    });
  };
  EXPECT_STATUS(floating(r), FAILED_PRECONDITION, "puma560", "free-flyer");
  const v1::Model& quadruped = layout("quadruped");
  r.set_model_id(quadruped.id());
  r.clear_q();
  const auto q = random_configurations(quadruped, 1, 3);
  r.mutable_q()->Add(q.begin(), q.end());
  r.clear_v();
  r.clear_a();
  for (int i = 0; i < quadruped.nv(); ++i) {
    r.add_v(0.1);
    r.add_a(0.2);
  }
  EXPECT_TRUE(floating(r).ok());
  r.mutable_a()->RemoveLast();
  EXPECT_STATUS(floating(r), INVALID_ARGUMENT, "a:", "expected 18", "got 17");
  r.add_a(0.2);
  r.set_q(3, 2.0);  // the base quaternion's x
  EXPECT_STATUS(floating(r), INVALID_ARGUMENT, "quaternion", "root_joint");
}

TEST_F(ValidationTest, DerivativesInputsAndSizeAreChecked) {
  const v1::Model& m = layout("quadruped");
  const auto derivatives_request = [&](int states) {
    v1::DerivativesRequest r;
    r.set_model_id(m.id());
    r.set_batch_size(states);
    const auto q = random_configurations(m, states, 4);
    r.mutable_q()->Add(q.begin(), q.end());
    for (int i = 0; i < states * m.nv(); ++i) {
      r.add_v(0.1);
      r.add_a(0.2);
    }
    return r;
  };
  v1::DerivativesResponse response;
  const auto derivatives = [&](const v1::DerivativesRequest& request) {
    return with_deadline(30, [&](grpc::ClientContext* c) {
      return server_->dynamics()->Derivatives(c, request, &response);
    });
  };
  auto r = derivatives_request(2);
  EXPECT_TRUE(derivatives(r).ok());
  r.set_of(v1::DERIVATIVES_OF_FORWARD_DYNAMICS);
  EXPECT_STATUS(derivatives(r), INVALID_ARGUMENT, "a:", "must be empty",
                "DERIVATIVES_OF_FORWARD_DYNAMICS");
  r.clear_a();
  EXPECT_STATUS(derivatives(r), INVALID_ARGUMENT, "tau:", "expected 36", "got 0");
  r.set_of(static_cast<v1::DerivativesOf>(4));
  EXPECT_STATUS(derivatives(r), INVALID_ARGUMENT, "of:", "4");
  r = derivatives_request(2);
  r.set_v(5, std::numeric_limits<double>::infinity());
  EXPECT_STATUS(derivatives(r), INVALID_ARGUMENT, "v[5]", "infinite");
  // 30 states of three 18 × 18 matrices take 233,344 bytes, more than 200 kB.
  EXPECT_STATUS(derivatives(derivatives_request(30)), RESOURCE_EXHAUSTED, "233344", "200000",
                "max message size", "batch_size");
}

TEST_F(ValidationTest, CoriolisAndCentroidalInputsAreChecked) {
  const v1::Model& m = layout("quadruped");
  const auto q = random_configurations(m, 2, 5);
  v1::CoriolisMatrixRequest coriolis;
  coriolis.set_model_id(m.id());
  coriolis.set_batch_size(2);
  coriolis.mutable_q()->Add(q.begin(), q.end());
  for (int i = 0; i < 2 * m.nv() - 1; ++i) coriolis.add_v(0.1);
  v1::CoriolisMatrixResponse coriolis_response;
  EXPECT_STATUS(with_deadline(30,
                              [&](grpc::ClientContext* c) {
                                return server_->dynamics()->CoriolisMatrix(c, coriolis,
                                                                           &coriolis_response);
                              }),
                INVALID_ARGUMENT, "v:", "expected 36", "got 35");
  v1::CentroidalRequest centroidal;
  centroidal.set_model_id(m.id());
  centroidal.set_batch_size(2);
  centroidal.mutable_q()->Add(q.begin(), q.end());
  centroidal.set_q(m.nq() + 6, 2.0);  // qw of the second state
  for (int i = 0; i < 2 * m.nv(); ++i) centroidal.add_v(0.1);
  v1::CentroidalResponse centroidal_response;
  EXPECT_STATUS(with_deadline(30,
                              [&](grpc::ClientContext* c) {
                                return server_->dynamics()->Centroidal(c, centroidal,
                                                                       &centroidal_response);
                              }),
                INVALID_ARGUMENT, "quaternion", "state 1");
}

TEST_F(ValidationTest, ExpiredDeadlineIsDeadlineExceeded) {
  // 400 states of forward dynamics (176 KB, under this server's message limit) take the server
  // over 0.6 ms of computing alone, twice the deadline.
  const auto id = id_request("quadruped", 400);
  v1::ForwardDynamicsRequest r;
  r.set_model_id(id.model_id());
  r.set_batch_size(400);
  *r.mutable_q() = id.q();
  *r.mutable_v() = id.v();
  *r.mutable_tau() = id.a();
  grpc::ClientContext context;
  context.set_deadline(deadline_in(0.0003));
  v1::ForwardDynamicsResponse response;
  const grpc::Status status = server_->dynamics()->ForwardDynamics(&context, r, &response);
  EXPECT_EQ(status.error_code(), grpc::StatusCode::DEADLINE_EXCEEDED) << status.error_message();
}

}  // namespace
}  // namespace torqued::testing
