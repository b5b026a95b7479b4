// Tests server/services/session_stream.cpp end to end: DynamicsService.Session over loopback
// answers every message in order with what the unary RPC answers (bitwise, through both the inline
// and the executor paths), answers a failing message with its status and goes on, and ends cleanly
// on half-close (OK), on client cancellation (CANCELLED, server unharmed) and on server shutdown
// with the stream open (UNAVAILABLE, long before the drain deadline, exit 0).
#include <gtest/gtest.h>
#include <signal.h>
#include <sys/wait.h>

#include <chrono>
#include <functional>
#include <thread>

#include "tests/server/server_process.hpp"

namespace torqued::testing {
namespace {

using Stream = grpc::ClientReaderWriter<v1::SessionRequest, v1::SessionResponse>;

class SessionTest : public ::testing::Test {
 protected:
  void SetUp() override {
    // Chunks of 16 states: the 100-state messages below run split across the workers, the
    // 1-state ones inline (at most 16 states).
    server_ = std::make_unique<ServerProcess>(ServerProcess::Options{
        dir_.path() / "data",
        repository_dir(),
        false,
        {"--workers=2", "--split-min-states=16", "--inline-max-states=16", "--drain-seconds=60"}});
    ASSERT_TRUE(server_->running());
    dynamics_ = server_->dynamics();
    pendulum_ = layout("double_pendulum");
    quadruped_ = layout("quadruped");
  }

  v1::Model layout(const std::string& name) {
    grpc::ClientContext list_context;
    v1::ListModelsResponse list;
    EXPECT_TRUE(server_->models()->ListModels(&list_context, {}, &list).ok());
    for (const auto& summary : list.models()) {
      if (summary.name() == name) return server_->model_layout(summary.id());
    }
    ADD_FAILURE() << "no bundled model " << name;
    return {};
  }

  // One unary call of `rpc` with the request's model id set to `model_id` (Echo has none).
  template <typename Request, typename Response>
  grpc::Status call(grpc::Status (v1::DynamicsService::Stub::*rpc)(grpc::ClientContext*,
                                                                   const Request&, Response*),
                    Request request, const std::string& model_id, Response* response) {
    if constexpr (requires { request.set_model_id(model_id); }) request.set_model_id(model_id);
    grpc::ClientContext context;
    context.set_deadline(deadline_in(60));
    return ((*dynamics_).*rpc)(&context, request, response);
  }

  // What the unary RPC of the message's kind answers for its request (with `model_id`).
  v1::SessionResponse unary(const v1::SessionRequest& message, const std::string& model_id) {
    v1::SessionResponse out;
    out.set_sequence(message.sequence());
    grpc::Status status;
    using Stub = v1::DynamicsService::Stub;
    switch (message.request_case()) {
      case v1::SessionRequest::kInverseDynamics:
        status = call(&Stub::InverseDynamics, message.inverse_dynamics(), model_id,
                      out.mutable_inverse_dynamics());
        break;
      case v1::SessionRequest::kForwardDynamics:
        status = call(&Stub::ForwardDynamics, message.forward_dynamics(), model_id,
                      out.mutable_forward_dynamics());
        break;
      case v1::SessionRequest::kMassMatrix:
        status =
            call(&Stub::MassMatrix, message.mass_matrix(), model_id, out.mutable_mass_matrix());
        break;
      case v1::SessionRequest::kNonlinearEffects:
        status = call(&Stub::NonlinearEffects, message.nonlinear_effects(), model_id,
                      out.mutable_nonlinear_effects());
        break;
      case v1::SessionRequest::kGravity:
        status = call(&Stub::Gravity, message.gravity(), model_id, out.mutable_gravity());
        break;
      case v1::SessionRequest::kKinematics:
        status = call(&Stub::Kinematics, message.kinematics(), model_id, out.mutable_kinematics());
        break;
      case v1::SessionRequest::kHybridDynamics:
        status = call(&Stub::HybridDynamics, message.hybrid_dynamics(), model_id,
                      out.mutable_hybrid_dynamics());
        break;
      case v1::SessionRequest::kFloatingBaseInverseDynamics:
        status = call(&Stub::FloatingBaseInverseDynamics, message.floating_base_inverse_dynamics(),
                      model_id, out.mutable_floating_base_inverse_dynamics());
        break;
      case v1::SessionRequest::kDerivatives:
        status =
            call(&Stub::Derivatives, message.derivatives(), model_id, out.mutable_derivatives());
        break;
      case v1::SessionRequest::kCoriolisMatrix:
        status = call(&Stub::CoriolisMatrix, message.coriolis_matrix(), model_id,
                      out.mutable_coriolis_matrix());
        break;
      case v1::SessionRequest::kCentroidal:
        status = call(&Stub::Centroidal, message.centroidal(), model_id, out.mutable_centroidal());
        break;
      case v1::SessionRequest::kConstrainedDynamics:
        status = call(&Stub::ConstrainedDynamics, message.constrained_dynamics(), model_id,
                      out.mutable_constrained_dynamics());
        break;
      case v1::SessionRequest::kContactDynamics:
        status = call(&Stub::ContactDynamics, message.contact_dynamics(), model_id,
                      out.mutable_contact_dynamics());
        break;
      case v1::SessionRequest::kImpact:
        status = call(&Stub::Impact, message.impact(), model_id, out.mutable_impact());
        break;
      case v1::SessionRequest::kSimulate:
        status = call(&Stub::Simulate, message.simulate(), model_id, out.mutable_simulate());
        break;
      case v1::SessionRequest::kLinearize:
        status = call(&Stub::Linearize, message.linearize(), model_id, out.mutable_linearize());
        break;
      case v1::SessionRequest::kRollout:
        status = call(&Stub::Rollout, message.rollout(), model_id, out.mutable_rollout());
        break;
      case v1::SessionRequest::kEcho:
        status = call(&Stub::Echo, message.echo(), model_id, out.mutable_echo());
        break;
      case v1::SessionRequest::REQUEST_NOT_SET:
        ADD_FAILURE() << "no request in the message";
    }
    if (!status.ok()) {
      out.clear_response();
      out.mutable_status()->set_code(status.error_code());
      out.mutable_status()->set_message(status.error_message());
    }
    return out;
  }

  // Writes every message from another thread while reading the answers here, so that many
  // messages are in flight at once; half-closes after the last one.
  std::vector<v1::SessionResponse> exchange(const std::vector<v1::SessionRequest>& messages,
                                            grpc::Status& status) {
    grpc::ClientContext context;
    context.set_deadline(deadline_in(120));
    std::unique_ptr<Stream> stream = dynamics_->Session(&context);
    std::thread writer([&] {
      for (const auto& m : messages) {
        if (!stream->Write(m)) break;
      }
      stream->WritesDone();
    });
    std::vector<v1::SessionResponse> responses;
    v1::SessionResponse response;
    while (stream->Read(&response)) responses.push_back(response);
    writer.join();
    status = stream->Finish();
    return responses;
  }

  TempDir dir_;
  std::unique_ptr<ServerProcess> server_;
  std::unique_ptr<v1::DynamicsService::Stub> dynamics_;
  v1::Model pendulum_, quadruped_;
};

// An InverseDynamics message of `states` random states of `model`.
v1::SessionRequest inverse_dynamics(const v1::Model& model, int states, std::uint64_t sequence) {
  v1::SessionRequest m;
  m.set_sequence(sequence);
  auto* r = m.mutable_inverse_dynamics();
  r->set_batch_size(states);
  const auto q = random_configurations(model, states, static_cast<unsigned>(sequence));
  const auto v = random_values(static_cast<std::size_t>(states) * model.nv(), 2 * sequence + 1);
  const auto a = random_values(static_cast<std::size_t>(states) * model.nv(), 2 * sequence + 2);
  r->mutable_q()->Add(q.begin(), q.end());
  r->mutable_v()->Add(v.begin(), v.end());
  r->mutable_a()->Add(a.begin(), a.end());
  return m;
}

// Bitwise equal: the same serialized bytes.
void expect_same(const v1::SessionResponse& got, const v1::SessionResponse& want) {
  EXPECT_EQ(got.sequence(), want.sequence());
  EXPECT_EQ(got.status().code(), want.status().code()) << got.status().message();
  EXPECT_EQ(got.status().message(), want.status().message());
  EXPECT_EQ(got.response_case(), want.response_case()) << "sequence " << got.sequence();
  EXPECT_EQ(got.SerializeAsString(), want.SerializeAsString()) << "sequence " << got.sequence();
}

TEST_F(SessionTest, AThousandMessagesAreAnsweredInOrderAsTheUnaryRpcAnswers) {
  std::vector<v1::SessionRequest> messages;
  for (int i = 0; i < 1000; ++i) {
    // Sequences are the client's: not increasing here, to show they are echoed, not made up.
    // Every seventh message is a 100-state batch split across the workers; the others run
    // inline, so a slow message is followed by fast ones.
    messages.push_back(inverse_dynamics(pendulum_, i % 7 == 0 ? 100 : 1, 7919ULL * (1000 - i)));
  }
  messages.front().set_model_id(pendulum_.id());
  grpc::Status status;
  const auto responses = exchange(messages, status);
  EXPECT_TRUE(status.ok()) << status.error_message();
  ASSERT_EQ(responses.size(), messages.size());
  for (std::size_t i = 0; i < messages.size(); ++i) {
    expect_same(responses[i], unary(messages[i], pendulum_.id()));
  }
}

TEST_F(SessionTest, EveryKindOfRequestMatchesItsUnaryRpc) {
  const v1::Model& m = quadruped_;
  const int n = 3;
  const auto q = random_configurations(m, n, 5);
  const auto x = random_values(static_cast<std::size_t>(n) * m.nv(), 6);
  const auto y = random_values(static_cast<std::size_t>(n) * m.nv(), 7);
  std::vector<v1::SessionRequest> messages(15);
  // n states of q, and of v when the request takes velocities.
  auto fill = [&](auto* r) {
    r->set_batch_size(n);
    r->mutable_q()->Add(q.begin(), q.end());
    if constexpr (requires { r->mutable_v(); }) r->mutable_v()->Add(x.begin(), x.end());
    return r;
  };
  fill(messages[0].mutable_inverse_dynamics())->mutable_a()->Add(y.begin(), y.end());
  fill(messages[1].mutable_forward_dynamics())->mutable_tau()->Add(y.begin(), y.end());
  fill(messages[2].mutable_mass_matrix())->set_inverse(true);
  fill(messages[3].mutable_nonlinear_effects());
  fill(messages[4].mutable_gravity());
  fill(messages[5].mutable_kinematics())->set_jacobians(true);
  auto* hybrid = fill(messages[6].mutable_hybrid_dynamics());
  for (int i = 0; i < m.nv(); ++i) {
    hybrid->add_inputs(i < 6 ? v1::DOF_INPUT_FORCE : v1::DOF_INPUT_ACCELERATION);
  }
  hybrid->mutable_a()->Add(y.begin(), y.end());
  hybrid->mutable_tau()->Add(y.begin(), y.end());
  fill(messages[7].mutable_floating_base_inverse_dynamics())->mutable_a()->Add(y.begin(), y.end());
  fill(messages[8].mutable_derivatives())->mutable_a()->Add(y.begin(), y.end());
  fill(messages[9].mutable_coriolis_matrix());
  fill(messages[10].mutable_centroidal());
  messages[11].mutable_echo()->set_payload("payload");
  messages[11].mutable_echo()->add_values(1.5);
  // The four feet as point contacts, by frame name.
  auto* constrained = fill(messages[12].mutable_constrained_dynamics());
  constrained->mutable_tau()->Add(y.begin(), y.end());
  for (const char* foot : {"FL_foot", "FR_foot", "HL_foot", "HR_foot"}) {
    v1::Constraint* c = constrained->add_constraints();
    c->set_type(v1::CONSTRAINT_TYPE_POINT);
    c->mutable_frame1()->set_frame(foot);
  }
  // A horizon of 3 knots, the legs actuated, the feet in contact.
  auto* linearize = fill(messages[13].mutable_linearize());
  linearize->mutable_u()->Add(y.begin(), y.begin() + n * (m.nv() - 6));
  linearize->set_dt(0.01);
  linearize->set_integrator(v1::INTEGRATOR_RK4);
  linearize->mutable_actuation()->set_kind(v1::ACTUATION_KIND_UNACTUATED_ROOT);
  linearize->set_continuous_derivatives(true);
  *linearize->mutable_constraints() = constrained->constraints();
  linearize->mutable_friction_cone()->set_friction(0.7);
  // 3 rollouts of 2 steps, on the four feet then on the FL-HR diagonal (a contact schedule), with
  // Fx, Fu, the feet's placements and their friction cones.
  auto* rollout = fill(messages[14].mutable_rollout());
  rollout->set_knots(2);
  const auto u = random_values(2 * static_cast<std::size_t>(n) * (m.nv() - 6), 8);
  rollout->mutable_u()->Add(u.begin(), u.end());
  rollout->set_dt(0.01);
  rollout->mutable_actuation()->set_kind(v1::ACTUATION_KIND_UNACTUATED_ROOT);
  v1::ContactPhase* four = rollout->add_phases();
  *four->mutable_contacts() = constrained->constraints();
  v1::ContactPhase* diagonal = rollout->add_phases();
  diagonal->set_first_knot(1);
  *diagonal->add_contacts() = constrained->constraints(0);
  *diagonal->add_contacts() = constrained->constraints(3);
  rollout->mutable_friction_cone()->set_friction(0.7);
  rollout->set_jacobians(true);
  rollout->add_frames("FL_foot");
  rollout->set_frame_jacobians(true);
  for (std::size_t i = 0; i < messages.size(); ++i) messages[i].set_sequence(i);
  messages[0].set_model_id(m.id());
  grpc::Status status;
  const auto responses = exchange(messages, status);
  EXPECT_TRUE(status.ok()) << status.error_message();
  ASSERT_EQ(responses.size(), messages.size());
  for (std::size_t i = 0; i < messages.size(); ++i) {
    EXPECT_EQ(responses[i].status().code(), 0) << i << ": " << responses[i].status().message();
    expect_same(responses[i], unary(messages[i], m.id()));
  }
}

TEST_F(SessionTest, AFailingMessageIsAnsweredWithItsErrorAndTheStreamGoesOn) {
  std::vector<v1::SessionRequest> messages;
  for (int i = 0; i < 10; ++i) messages.push_back(inverse_dynamics(pendulum_, 2, i));
  messages[0].set_model_id(pendulum_.id());
  messages[3].mutable_inverse_dynamics()->mutable_q()->RemoveLast();      // wrong size
  messages[5].mutable_inverse_dynamics()->set_model_id("no-such-model");  // this message only
  messages[7].clear_request();
  messages[8].set_model_id(quadruped_.id());  // switches the stream's model: q too short now
  grpc::Status status;
  const auto responses = exchange(messages, status);
  EXPECT_TRUE(status.ok()) << status.error_message();
  ASSERT_EQ(responses.size(), messages.size());
  for (int i = 0; i < 10; ++i) {
    EXPECT_EQ(responses[i].sequence(), static_cast<std::uint64_t>(i));
    if (i == 7) continue;
    const std::string model_id = i >= 8 ? quadruped_.id() : pendulum_.id();
    expect_same(responses[i], unary(messages[i], i == 5 ? "no-such-model" : model_id));
  }
  EXPECT_EQ(responses[3].status().code(), grpc::StatusCode::INVALID_ARGUMENT);
  EXPECT_NE(responses[3].status().message().find("q: expected"), std::string::npos)
      << responses[3].status().message();
  EXPECT_EQ(responses[5].status().code(), grpc::StatusCode::NOT_FOUND);
  EXPECT_EQ(responses[6].status().code(), grpc::StatusCode::OK);
  EXPECT_EQ(responses[7].status().code(), grpc::StatusCode::INVALID_ARGUMENT);
  EXPECT_EQ(responses[7].response_case(), v1::SessionResponse::RESPONSE_NOT_SET);
  EXPECT_EQ(responses[8].status().code(), grpc::StatusCode::INVALID_ARGUMENT);
}

TEST_F(SessionTest, HalfCloseAnswersEverythingSentThenEndsWithOk) {
  grpc::ClientContext context;
  context.set_deadline(deadline_in(60));
  auto stream = dynamics_->Session(&context);
  for (int i = 0; i < 5; ++i) {
    auto m = inverse_dynamics(pendulum_, i % 2 == 0 ? 1 : 64, i);
    m.set_model_id(pendulum_.id());
    ASSERT_TRUE(stream->Write(m));
  }
  ASSERT_TRUE(stream->WritesDone());
  v1::SessionResponse response;
  for (int i = 0; i < 5; ++i) {
    ASSERT_TRUE(stream->Read(&response));
    EXPECT_EQ(response.sequence(), static_cast<std::uint64_t>(i));
    EXPECT_EQ(response.status().code(), 0) << response.status().message();
  }
  EXPECT_FALSE(stream->Read(&response));
  const grpc::Status status = stream->Finish();
  EXPECT_TRUE(status.ok()) << status.error_message();
}

TEST_F(SessionTest, CancellationByTheClientEndsTheStreamAndLeavesTheServerWell) {
  for (const int states : {1, 5000}) {  // cancelled while idle, and with a batch on the workers
    grpc::ClientContext context;
    auto stream = dynamics_->Session(&context);
    auto m = inverse_dynamics(pendulum_, 1, 0);
    m.set_model_id(pendulum_.id());
    ASSERT_TRUE(stream->Write(m));
    v1::SessionResponse response;
    ASSERT_TRUE(stream->Read(&response));
    ASSERT_TRUE(stream->Write(inverse_dynamics(pendulum_, states, 1)));
    context.TryCancel();
    while (stream->Read(&response)) {
    }
    EXPECT_EQ(stream->Finish().error_code(), grpc::StatusCode::CANCELLED);
  }
  // The server goes on serving streams and unary calls.
  std::vector<v1::SessionRequest> messages = {inverse_dynamics(pendulum_, 1, 9)};
  messages[0].set_model_id(pendulum_.id());
  grpc::Status status;
  const auto responses = exchange(messages, status);
  EXPECT_TRUE(status.ok());
  ASSERT_EQ(responses.size(), 1u);
  expect_same(responses[0], unary(messages[0], pendulum_.id()));
}

TEST_F(SessionTest, ShutdownEndsAnOpenStreamWithUnavailableAndExitsCleanly) {
  grpc::ClientContext context;
  context.set_deadline(deadline_in(120));
  auto stream = dynamics_->Session(&context);
  auto m = inverse_dynamics(pendulum_, 1, 0);
  m.set_model_id(pendulum_.id());
  ASSERT_TRUE(stream->Write(m));
  v1::SessionResponse response;
  ASSERT_TRUE(stream->Read(&response));
  EXPECT_EQ(response.status().code(), 0);

  const auto start = std::chrono::steady_clock::now();
  server_->signal(SIGTERM);
  while (stream->Read(&response)) {
  }
  const grpc::Status status = stream->Finish();
  EXPECT_EQ(status.error_code(), grpc::StatusCode::UNAVAILABLE) << status.error_message();
  // The stream ends at once (milliseconds); the process then takes up to about 5 s more when, as
  // here, the client keeps its connection open.
  const int exit_status = server_->wait_exit(30.0);
  const double seconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  ASSERT_TRUE(WIFEXITED(exit_status)) << server_->log();
  EXPECT_EQ(WEXITSTATUS(exit_status), 0);
  // The drain deadline is 60 s: an open stream must not hold the shutdown until then.
  EXPECT_LT(seconds, 20.0) << server_->log();
}

}  // namespace
}  // namespace torqued::testing
