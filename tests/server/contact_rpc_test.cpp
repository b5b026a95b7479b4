// Tests server/services/contact_plans.cpp end to end: over loopback, ContactDynamics, Impact and
// Simulate return bitwise what the engine returns in-process for the same inputs (bundled
// quadruped on its *_foot frames, solo12 on its *_FOOT frames when /work/shared is present, and a
// box registered from a spec), a box resting on the ground stays at rest, bad inputs are
// INVALID_ARGUMENT naming the field, a singular system is FAILED_PRECONDITION, large results are
// RESOURCE_EXHAUSTED naming the limit, and Session carries the three requests.
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <limits>
#include <map>
#include <sstream>

#include "engine/algorithms/impact.hpp"
#include "engine/algorithms/simulate.hpp"
#include "server/models/bundled_models.hpp"
#include "server/models/model_from_request.hpp"
#include "tests/server/bitwise.hpp"
#include "tests/server/server_process.hpp"
#include "torqued/client.hpp"

namespace torqued::testing {
namespace {

using Vector = Eigen::VectorXd;

constexpr int kStates = 21;  // split across the workers (chunks of 8)

// The solver summary the server reports, per state, as the engine's enum order.
struct Summary {
  std::vector<int> status;
  std::vector<std::uint32_t> iterations;
  std::vector<double> residual;
  std::vector<int> modes;
};

int mode_of(ContactMode m) { return static_cast<int>(m); }

struct LocalModel {
  ModelPtr model;
  std::string id;
};

// The engine form of a contact given by frame name, point in that frame, normal and friction.
PointContact engine_contact(const Model& m, const v1::PointContact& c) {
  const Frame& f = m.frames[m.find_frame(c.frame())];
  PointContact out;
  out.body = f.body;
  Vec3 p = Vec3::Zero();
  if (!c.point().empty()) p = Vec3(c.point(0), c.point(1), c.point(2));
  out.point = f.placement.act(p);
  if (!c.normal().empty()) out.normal = Vec3(c.normal(0), c.normal(1), c.normal(2));
  out.friction = c.friction();
  return out;
}

v1::PointContact contact(const std::string& frame, const Vec3& point, const Vec3& normal,
                         double friction) {
  v1::PointContact c;
  c.set_frame(frame);
  c.mutable_point()->Add(point.data(), point.data() + 3);
  c.mutable_normal()->Add(normal.data(), normal.data() + 3);
  c.set_friction(friction);
  return c;
}

v1::ContactCandidate candidate(const std::string& frame, const Vec3& point) {
  v1::ContactCandidate c;
  c.set_frame(frame);
  c.mutable_point()->Add(point.data(), point.data() + 3);
  return c;
}

// A solid box 0.4 x 0.3 x 0.2 m of 2 kg on a free-flyer, as a RegisterModelRequest.
v1::RegisterModelRequest box_request() {
  v1::RegisterModelRequest request;
  request.set_name("box");
  request.set_base(v1::BASE_TYPE_FLOATING);
  auto* link = request.mutable_spec()->add_links();
  link->set_name("box");
  link->mutable_inertial()->set_mass(2.0);
  link->mutable_inertial()->mutable_inertia()->set_ixx(2.0 / 12.0 * (0.09 + 0.04));
  link->mutable_inertial()->mutable_inertia()->set_iyy(2.0 / 12.0 * (0.16 + 0.04));
  link->mutable_inertial()->mutable_inertia()->set_izz(2.0 / 12.0 * (0.16 + 0.09));
  return request;
}

const Vec3 kBoxHalf(0.2, 0.15, 0.1);

std::vector<Vec3> box_corners() {
  return {Vec3(kBoxHalf.x(), kBoxHalf.y(), -kBoxHalf.z()),
          Vec3(-kBoxHalf.x(), kBoxHalf.y(), -kBoxHalf.z()),
          Vec3(-kBoxHalf.x(), -kBoxHalf.y(), -kBoxHalf.z()),
          Vec3(kBoxHalf.x(), -kBoxHalf.y(), -kBoxHalf.z())};
}

class ContactRpcTest : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    dir_ = new TempDir();
    server_ = new ServerProcess({dir_->path() / "data",
                                 repository_dir(),
                                 false,
                                 {"--workers=3", "--split-min-states=8", "--inline-max-states=4",
                                  "--max-message-bytes=1000000"}});
    std::vector<std::string> errors;
    for (const auto& entry : server::read_bundled_models(repository_dir(), errors)) {
      if (entry.request.name() == "quadruped") add(entry.request);
    }
    add(box_request());
    v1::RegisterModelRequest massless;
    massless.set_name("massless_leaf");
    massless.mutable_spec()->add_links()->set_name("base");
    massless.mutable_spec()->add_links()->set_name("leaf");
    auto* joint = massless.mutable_spec()->add_joints();
    joint->set_name("j");
    joint->set_type(v1::JOINT_TYPE_REVOLUTE);
    joint->set_parent_link("base");
    joint->set_child_link("leaf");
    add(massless);
    const std::filesystem::path solo =
        std::filesystem::path(TORQUED_SHARED_DIR) / "models" / "solo12.urdf";
    if (std::filesystem::exists(solo)) {
      std::ifstream in(solo);
      std::stringstream text;
      text << in.rdbuf();
      v1::RegisterModelRequest request;
      request.set_urdf(text.str());
      request.set_base(v1::BASE_TYPE_FLOATING);
      add(request);
    }
  }
  static void TearDownTestSuite() {
    delete server_;
    delete dir_;
    models_->clear();
  }

  // Builds `request` here as the server does and registers it there.
  static void add(const v1::RegisterModelRequest& request) {
    server::BuiltModel built;
    ASSERT_TRUE(server::build_from_request(request, server::model_limits(server::Config{}), built).ok()) << request.name();
    grpc::ClientContext context;
    context.set_deadline(deadline_in(30));
    v1::RegisterModelResponse response;
    const grpc::Status status = server_->models()->RegisterModel(&context, request, &response);
    ASSERT_TRUE(status.ok()) << status.error_message();
    ASSERT_EQ(response.model().id(), built.id);
    models_->emplace(built.model->name, LocalModel{built.model, built.id});
  }

  static const LocalModel* find(const std::string& name) {
    auto it = models_->find(name);
    return it == models_->end() ? nullptr : &it->second;
  }

  static v1::Model layout(const LocalModel& local) { return server_->model_layout(local.id); }

  template <typename Request, typename Response>
  static grpc::Status call(grpc::Status (v1::DynamicsService::Stub::*rpc)(grpc::ClientContext*,
                                                                          const Request&,
                                                                          Response*),
                           const Request& request, Response* response) {
    grpc::ClientContext context;
    context.set_deadline(deadline_in(120));
    return ((*server_->dynamics()).*rpc)(&context, request, response);
  }

  // ContactDynamics on kStates random states against the engine, with `contacts`.
  static void check_contact_dynamics(const LocalModel& local,
                                     const std::vector<v1::PointContact>& contacts,
                                     const std::string& what) {
    const Model& m = *local.model;
    const auto q = random_configurations(layout(local), kStates, 11);
    const auto v = random_values(kStates * m.nv, 12);
    const auto tau = random_values(kStates * m.nv, 13);
    v1::ContactDynamicsRequest request;
    request.set_model_id(local.id);
    request.set_batch_size(kStates);
    request.mutable_q()->Add(q.begin(), q.end());
    request.mutable_v()->Add(v.begin(), v.end());
    request.mutable_tau()->Add(tau.begin(), tau.end());
    for (const auto& c : contacts) *request.add_contacts() = c;
    request.mutable_solver()->set_max_iterations(300);
    v1::ContactDynamicsResponse response;
    const grpc::Status status =
        call(&v1::DynamicsService::Stub::ContactDynamics, request, &response);
    ASSERT_TRUE(status.ok()) << what << ": " << status.error_message();

    std::vector<PointContact> engine;
    for (const auto& c : contacts) engine.push_back(engine_contact(m, c));
    Data data(m);
    ContactWorkspace ws(m, static_cast<int>(engine.size()));
    ContactOptions options;
    options.max_iterations = 300;
    std::vector<double> a, forces, residual;
    for (int s = 0; s < kStates; ++s) {
      const ComplementarityResult r = contact_dynamics(
          m, data, ws, row(q, s, m.nq), row(v, s, m.nv), row(tau, s, m.nv), engine, options);
      append(a, ws.acceleration);
      for (std::size_t c = 0; c < engine.size(); ++c) {
        append(forces, ws.forces[c]);
        EXPECT_EQ(response.modes(s * engine.size() + c), mode_of(ws.modes[c])) << what;
      }
      EXPECT_EQ(response.status(s), static_cast<int>(r.status)) << what << " state " << s;
      EXPECT_EQ(response.iterations(s), static_cast<std::uint32_t>(r.iterations)) << what;
      residual.push_back(r.residual);
    }
    expect_bitwise_equal(response.a(), a, what + " a");
    expect_bitwise_equal(response.forces(), forces, what + " forces");
    expect_bitwise_equal(response.residual(), residual, what + " residual");
  }

  static void check_impact(const LocalModel& local, const std::vector<v1::PointContact>& contacts,
                           double restitution, const std::string& what) {
    const Model& m = *local.model;
    const auto q = random_configurations(layout(local), kStates, 21);
    const auto v = random_values(kStates * m.nv, 22);
    v1::ImpactRequest request;
    request.set_model_id(local.id);
    request.set_batch_size(kStates);
    request.mutable_q()->Add(q.begin(), q.end());
    request.mutable_v()->Add(v.begin(), v.end());
    for (const auto& c : contacts) *request.add_contacts() = c;
    request.set_restitution(restitution);
    v1::ImpactResponse response;
    const grpc::Status status = call(&v1::DynamicsService::Stub::Impact, request, &response);
    ASSERT_TRUE(status.ok()) << what << ": " << status.error_message();

    std::vector<PointContact> engine;
    for (const auto& c : contacts) engine.push_back(engine_contact(m, c));
    Data data(m);
    ContactWorkspace ws(m, static_cast<int>(engine.size()));
    std::vector<double> velocity, impulses, residual;
    for (int s = 0; s < kStates; ++s) {
      const ComplementarityResult r =
          impact(m, data, ws, row(q, s, m.nq), row(v, s, m.nv), engine, restitution);
      append(velocity, ws.velocity);
      for (std::size_t c = 0; c < engine.size(); ++c) {
        append(impulses, ws.forces[c]);
        EXPECT_EQ(response.modes(s * engine.size() + c), mode_of(ws.modes[c])) << what;
      }
      EXPECT_EQ(response.status(s), static_cast<int>(r.status)) << what;
      EXPECT_EQ(response.iterations(s), static_cast<std::uint32_t>(r.iterations)) << what;
      residual.push_back(r.residual);
    }
    expect_bitwise_equal(response.v(), velocity, what + " v");
    expect_bitwise_equal(response.impulses(), impulses, what + " impulses");
    expect_bitwise_equal(response.residual(), residual, what + " residual");
  }

  // Simulate of `request` (its model, q, v, steps, tau and options set) against the engine with
  // `options`; returns the response.
  static v1::SimulateResponse check_simulate(const LocalModel& local,
                                             const v1::SimulateRequest& request,
                                             const SimulationOptions& options,
                                             const std::string& what) {
    const Model& m = *local.model;
    v1::SimulateResponse response;
    const grpc::Status status = call(&v1::DynamicsService::Stub::Simulate, request, &response);
    EXPECT_TRUE(status.ok()) << what << ": " << status.error_message();
    if (!status.ok()) return response;
    const int n = static_cast<int>(std::max(1u, request.batch_size()));
    const int steps = static_cast<int>(request.steps());
    std::vector<ContactCandidate> candidates;
    for (const auto& c : request.candidates()) {
      const Frame& f = m.frames[m.find_frame(c.frame())];
      candidates.push_back({f.body, f.placement.act(Vec3(c.point(0), c.point(1), c.point(2)))});
    }
    const int columns = request.tau().empty() ? 0 : request.tau().size() == n * m.nv ? 1 : steps;
    Data data(m);
    SimulationWorkspace ws(m, std::max<int>(1, static_cast<int>(candidates.size())));
    std::vector<double> q, v;
    for (int s = 0; s < n; ++s) {
      Eigen::MatrixXd q_out(m.nq, steps), v_out(m.nv, steps);
      const Eigen::Map<const Eigen::MatrixXd> torques(
          request.tau().data() + static_cast<std::ptrdiff_t>(s) * columns * m.nv, m.nv, columns);
      const SimulationResult r =
          simulate(m, data, ws, Eigen::Map<const Vector>(request.q().data() + s * m.nq, m.nq),
                   Eigen::Map<const Vector>(request.v().data() + s * m.nv, m.nv), torques,
                   candidates, options, q_out, v_out);
      append(q, q_out);
      append(v, v_out);
      EXPECT_EQ(response.status(s), static_cast<int>(r.status)) << what;
      EXPECT_EQ(response.max_iterations(s), static_cast<std::uint32_t>(r.max_iterations)) << what;
      EXPECT_EQ(response.max_contacts(s), static_cast<std::uint32_t>(r.max_contacts)) << what;
      EXPECT_EQ(0, std::memcmp(&r.max_residual, response.max_residual().data() + s, sizeof(double)))
          << what;
    }
    EXPECT_EQ(response.steps(), request.steps());
    expect_bitwise_equal(response.q(), q, what + " q");
    expect_bitwise_equal(response.v(), v, what + " v");
    return response;
  }

  static TempDir* dir_;
  static ServerProcess* server_;
  static std::map<std::string, LocalModel>* models_;
};

TempDir* ContactRpcTest::dir_ = nullptr;
ServerProcess* ContactRpcTest::server_ = nullptr;
std::map<std::string, LocalModel>* ContactRpcTest::models_ =
    new std::map<std::string, LocalModel>();

const char* const kQuadrupedFeet[] = {"FL_foot", "FR_foot", "HL_foot", "HR_foot"};
const char* const kSoloFeet[] = {"FL_FOOT", "FR_FOOT", "HL_FOOT", "HR_FOOT"};

// The four feet with friction `mu`; one normal tilted, one point off the frame origin.
std::vector<v1::PointContact> feet(const char* const (&names)[4], double mu) {
  std::vector<v1::PointContact> out;
  for (int k = 0; k < 4; ++k) {
    const Vec3 normal = k == 1 ? Vec3(0.0, 0.6, 0.8) : Vec3::UnitZ();
    const Vec3 point = k == 2 ? Vec3(0.0, 0.0, -0.01) : Vec3::Zero();
    out.push_back(contact(names[k], point, normal, mu));
  }
  return out;
}

TEST_F(ContactRpcTest, ContactDynamicsMatchesTheEngine) {
  const LocalModel& quadruped = *find("quadruped");
  check_contact_dynamics(quadruped, feet(kQuadrupedFeet, 0.8), "quadruped, friction 0.8");
  check_contact_dynamics(quadruped, feet(kQuadrupedFeet, 0.0), "quadruped, frictionless");
  // Fewer contacts than the workers' cached workspaces hold, and a link name.
  check_contact_dynamics(quadruped, {contact("FL_shank", Vec3(0, 0, -0.2), Vec3::UnitZ(), 0.5)},
                         "quadruped, one contact on a link");
}

TEST_F(ContactRpcTest, ImpactMatchesTheEngine) {
  const LocalModel& quadruped = *find("quadruped");
  check_impact(quadruped, feet(kQuadrupedFeet, 0.8), 0.5, "quadruped, e 0.5, friction 0.8");
  check_impact(quadruped, feet(kQuadrupedFeet, 0.0), 1.0, "quadruped, e 1, frictionless");
}

TEST_F(ContactRpcTest, SimulateMatchesTheEngine) {
  const LocalModel& quadruped = *find("quadruped");
  const Model& m = *quadruped.model;
  constexpr int kRuns = 3;
  constexpr int kSteps = 200;
  v1::SimulateRequest request;
  request.set_model_id(quadruped.id);
  request.set_batch_size(kRuns);
  for (int s = 0; s < kRuns; ++s) {
    Vector q = m.neutral_configuration();
    q[2] = 0.45 + 0.05 * s;  // legs stretched: the feet start above the ground, then land
    request.mutable_q()->Add(q.data(), q.data() + q.size());
  }
  const auto v = random_values(kRuns * m.nv, 31);
  request.mutable_v()->Add(v.begin(), v.end());
  request.set_steps(kSteps);
  const auto tau = random_values(static_cast<std::size_t>(kRuns) * kSteps * m.nv, 32);
  request.mutable_tau()->Add(tau.begin(), tau.end());
  request.mutable_ground()->set_friction(0.8);
  request.mutable_ground()->set_restitution(0.3);
  request.mutable_ground()->set_height(0.01);
  for (const char* foot : kQuadrupedFeet) *request.add_candidates() = candidate(foot, Vec3::Zero());
  request.set_time_step(2e-3);
  request.set_contact_margin(0.02);
  SimulationOptions options;
  options.time_step = 2e-3;
  options.friction = 0.8;
  options.restitution = 0.3;
  options.ground_height = 0.01;
  options.contact_margin = 0.02;
  const v1::SimulateResponse contact = check_simulate(quadruped, request, options, "feet");
  EXPECT_GT(contact.max_contacts(0), 0u) << "the feet land within the run";

  // Held torques, RK4, contact-free.
  request.clear_candidates();
  request.clear_tau();
  request.mutable_tau()->Add(tau.begin(), tau.begin() + kRuns * m.nv);
  request.set_integrator(v1::INTEGRATOR_RK4);
  options.integrator = Integrator::kRungeKutta4;
  check_simulate(quadruped, request, options, "RK4, held torques");
}

TEST_F(ContactRpcTest, Solo12OnItsFeet) {
  const LocalModel* solo = find("solo");
  if (solo == nullptr) {
    GTEST_SKIP() << "solo12.urdf is absent (the shared reference material is not checked out)";
  }
  check_contact_dynamics(*solo, feet(kSoloFeet, 0.8), "solo12, friction 0.8");
  check_impact(*solo, feet(kSoloFeet, 0.5), 0.2, "solo12, e 0.2");
  v1::SimulateRequest request;
  request.set_model_id(solo->id);
  Vector q = solo->model->neutral_configuration();
  q[2] = 0.4;
  request.mutable_q()->Add(q.data(), q.data() + q.size());
  request.mutable_v()->Resize(solo->model->nv, 0.0);
  request.set_steps(300);
  request.mutable_ground()->set_friction(0.8);
  for (const char* foot : kSoloFeet) *request.add_candidates() = candidate(foot, Vec3::Zero());
  SimulationOptions options;
  options.friction = 0.8;
  check_simulate(*solo, request, options, "solo12 dropped on its feet");
}

// A box set down on its four corners stays put: 1,000 steps of 1 ms move it by less than 1e-6 m
// (the engine's own test bound: the velocity-level stepping removes the normal velocity exactly
// and the stabilization term is zero at zero penetration).
TEST_F(ContactRpcTest, BoxRestingOnTheGroundStaysAtRest) {
  const LocalModel& box = *find("box");
  v1::SimulateRequest request;
  request.set_model_id(box.id);
  Vector q = box.model->neutral_configuration();
  q[2] = kBoxHalf.z();
  request.mutable_q()->Add(q.data(), q.data() + q.size());
  request.mutable_v()->Resize(6, 0.0);
  request.set_steps(1000);
  request.mutable_ground()->set_friction(0.8);
  for (const Vec3& corner : box_corners()) *request.add_candidates() = candidate("box", corner);
  SimulationOptions options;
  options.friction = 0.8;
  const v1::SimulateResponse response = check_simulate(box, request, options, "resting box");
  ASSERT_EQ(response.q_size(), 1000 * 7);
  EXPECT_EQ(response.status(0), v1::CONTACT_SOLVER_STATUS_SOLVED);
  EXPECT_EQ(response.max_contacts(0), 4u);
  const Eigen::Map<const Vector> last(response.q().data() + 999 * 7, 7);
  EXPECT_LT((last - q).cwiseAbs().maxCoeff(), 1e-6);
  const Eigen::Map<const Vector> last_v(response.v().data() + 999 * 6, 6);
  EXPECT_LT(last_v.cwiseAbs().maxCoeff(), 1e-6);
}

#define EXPECT_STATUS(expr, code, ...)                                                  \
  do {                                                                                  \
    const grpc::Status status_ = (expr);                                                \
    EXPECT_EQ(status_.error_code(), grpc::StatusCode::code) << status_.error_message(); \
    for (const char* part : {__VA_ARGS__}) {                                            \
      EXPECT_NE(status_.error_message().find(part), std::string::npos)                  \
          << "\"" << part << "\" not in: " << status_.error_message();                  \
    }                                                                                   \
  } while (false)

class ContactRpcErrorTest : public ContactRpcTest {
 protected:
  v1::ContactDynamicsRequest contact_request() const {
    const LocalModel& quadruped = *find("quadruped");
    v1::ContactDynamicsRequest r;
    r.set_model_id(quadruped.id);
    Vector q = quadruped.model->neutral_configuration();
    r.mutable_q()->Add(q.data(), q.data() + q.size());
    r.mutable_v()->Resize(quadruped.model->nv, 0.0);
    r.mutable_tau()->Resize(quadruped.model->nv, 0.0);
    for (const auto& c : feet(kQuadrupedFeet, 0.5)) *r.add_contacts() = c;
    return r;
  }
  grpc::Status run(const v1::ContactDynamicsRequest& r) const {
    v1::ContactDynamicsResponse response;
    return call(&v1::DynamicsService::Stub::ContactDynamics, r, &response);
  }
  v1::ImpactRequest impact_request() const {
    const v1::ContactDynamicsRequest c = contact_request();
    v1::ImpactRequest r;
    r.set_model_id(c.model_id());
    *r.mutable_q() = c.q();
    *r.mutable_v() = c.v();
    *r.mutable_contacts() = c.contacts();
    return r;
  }
  grpc::Status run(const v1::ImpactRequest& r) const {
    v1::ImpactResponse response;
    return call(&v1::DynamicsService::Stub::Impact, r, &response);
  }
  v1::SimulateRequest simulate_request() const {
    const v1::ContactDynamicsRequest c = contact_request();
    v1::SimulateRequest r;
    r.set_model_id(c.model_id());
    *r.mutable_q() = c.q();
    *r.mutable_v() = c.v();
    r.set_steps(10);
    for (const char* foot : kQuadrupedFeet) *r.add_candidates() = candidate(foot, Vec3::Zero());
    return r;
  }
  grpc::Status run(const v1::SimulateRequest& r) const {
    v1::SimulateResponse response;
    return call(&v1::DynamicsService::Stub::Simulate, r, &response);
  }
};

TEST_F(ContactRpcErrorTest, ContactInputsAreInvalidArgument) {
  ASSERT_TRUE(run(contact_request()).ok());
  auto r = contact_request();
  r.mutable_contacts(1)->set_normal(2, 0.9);
  EXPECT_STATUS(run(r), INVALID_ARGUMENT, "contacts[1].normal", "unit");
  r = contact_request();
  for (int i = 0; i < 3; ++i) r.mutable_contacts(0)->set_normal(i, 0.0);
  EXPECT_STATUS(run(r), INVALID_ARGUMENT, "contacts[0].normal", "norm 0");
  r = contact_request();
  r.mutable_contacts(2)->set_friction(-0.1);
  EXPECT_STATUS(run(r), INVALID_ARGUMENT, "contacts[2].friction", "≥ 0");
  r = contact_request();
  r.mutable_contacts(3)->set_frame("no_such_foot");
  EXPECT_STATUS(run(r), INVALID_ARGUMENT, "contacts[3].frame", "no_such_foot");
  r = contact_request();
  r.mutable_contacts(0)->add_point(1.0);
  EXPECT_STATUS(run(r), INVALID_ARGUMENT, "contacts[0].point", "expected 3");
  r = contact_request();
  r.mutable_contacts(0)->set_point(1, std::numeric_limits<double>::infinity());
  EXPECT_STATUS(run(r), INVALID_ARGUMENT, "contacts[0].point[1]", "infinite");
  r = contact_request();
  r.mutable_tau()->RemoveLast();
  EXPECT_STATUS(run(r), INVALID_ARGUMENT, "tau", "expected 18");
  r = contact_request();
  r.set_tau(4, std::nan(""));
  EXPECT_STATUS(run(r), INVALID_ARGUMENT, "tau[4]", "NaN");
  r = contact_request();
  r.mutable_solver()->set_tolerance(-1.0);
  EXPECT_STATUS(run(r), INVALID_ARGUMENT, "solver.tolerance");
  r = contact_request();
  r.mutable_solver()->set_max_iterations(0);
  EXPECT_STATUS(run(r), INVALID_ARGUMENT, "solver.max_iterations");
  r = contact_request();
  r.clear_contacts();
  for (int k = 0; k < 257; ++k)
    *r.add_contacts() = contact("FL_foot", Vec3::Zero(), Vec3::UnitZ(), 0);
  EXPECT_STATUS(run(r), RESOURCE_EXHAUSTED, "contacts", "256");

  auto i = impact_request();
  ASSERT_TRUE(run(i).ok());
  i.set_restitution(1.5);
  EXPECT_STATUS(run(i), INVALID_ARGUMENT, "restitution", "[0, 1]");
  i.set_restitution(-0.1);
  EXPECT_STATUS(run(i), INVALID_ARGUMENT, "restitution");
  i = impact_request();
  i.mutable_contacts(0)->set_frame("");
  EXPECT_STATUS(run(i), INVALID_ARGUMENT, "contacts[0].frame");
}

TEST_F(ContactRpcErrorTest, SimulateInputsAreChecked) {
  ASSERT_TRUE(run(simulate_request()).ok());
  auto r = simulate_request();
  r.set_integrator(v1::INTEGRATOR_RK4);
  EXPECT_STATUS(run(r), INVALID_ARGUMENT, "integrator", "INTEGRATOR_RK4", "contact-free");
  r = simulate_request();
  r.set_steps(0);
  EXPECT_STATUS(run(r), INVALID_ARGUMENT, "steps");
  r.set_steps(100001);
  EXPECT_STATUS(run(r), RESOURCE_EXHAUSTED, "steps", "100000");
  r = simulate_request();
  r.set_time_step(0.0);
  EXPECT_STATUS(run(r), INVALID_ARGUMENT, "time_step");
  r = simulate_request();
  r.mutable_ground()->set_restitution(2.0);
  EXPECT_STATUS(run(r), INVALID_ARGUMENT, "ground.restitution", "[0, 1]");
  r = simulate_request();
  r.mutable_ground()->set_friction(-1.0);
  EXPECT_STATUS(run(r), INVALID_ARGUMENT, "ground.friction");
  r = simulate_request();
  r.mutable_ground()->set_height(std::nan(""));
  EXPECT_STATUS(run(r), INVALID_ARGUMENT, "ground.height", "NaN");
  r = simulate_request();
  r.set_stabilization(1.5);
  EXPECT_STATUS(run(r), INVALID_ARGUMENT, "stabilization");
  r = simulate_request();
  r.mutable_tau()->Resize(5, 0.0);
  EXPECT_STATUS(run(r), INVALID_ARGUMENT, "tau", "18", "180");
  r = simulate_request();
  r.mutable_candidates(2)->set_frame("nowhere");
  EXPECT_STATUS(run(r), INVALID_ARGUMENT, "candidates[2].frame", "nowhere");
  r = simulate_request();
  r.set_integrator(static_cast<v1::Integrator>(7));
  EXPECT_STATUS(run(r), INVALID_ARGUMENT, "integrator");
  // 10,000 steps of 19 + 18 numbers take 2,960,096 bytes, more than the 1,000,000 allowed.
  r = simulate_request();
  r.set_steps(10000);
  EXPECT_STATUS(run(r), RESOURCE_EXHAUSTED, "2960096", "1000000", "max message size", "steps");
}

TEST_F(ContactRpcErrorTest, SingularSystemAndFixedBase) {
  const LocalModel& leaf = *find("massless_leaf");
  v1::ContactDynamicsRequest r;
  r.set_model_id(leaf.id);
  r.add_q(0.3);
  r.add_v(0.0);
  r.add_tau(0.0);
  *r.add_contacts() = contact("leaf", Vec3(0.1, 0, 0), Vec3::UnitZ(), 0.0);
  EXPECT_STATUS(run(r), FAILED_PRECONDITION, "j");
  r.mutable_contacts(0)->set_frame("base");
  EXPECT_STATUS(run(r), INVALID_ARGUMENT, "contacts[0].frame", "fixed base");
}

// Session answers each of the three as the unary RPC does.
TEST_F(ContactRpcErrorTest, SessionCarriesThem) {
  auto stub = server_->dynamics();
  grpc::ClientContext context;
  context.set_deadline(deadline_in(60));
  auto stream = stub->Session(&context);
  v1::SessionRequest message;
  message.set_model_id(find("quadruped")->id);
  message.set_sequence(1);
  *message.mutable_contact_dynamics() = contact_request();
  message.mutable_contact_dynamics()->clear_model_id();
  ASSERT_TRUE(stream->Write(message));
  message.set_sequence(2);
  *message.mutable_impact() = impact_request();
  message.mutable_impact()->set_restitution(0.4);
  ASSERT_TRUE(stream->Write(message));
  message.set_sequence(3);
  *message.mutable_simulate() = simulate_request();
  ASSERT_TRUE(stream->Write(message));
  message.set_sequence(4);
  message.mutable_simulate()->set_integrator(v1::INTEGRATOR_RK4);
  ASSERT_TRUE(stream->Write(message));
  stream->WritesDone();

  v1::SessionResponse got;
  ASSERT_TRUE(stream->Read(&got));
  v1::ContactDynamicsResponse contact;
  ASSERT_TRUE(run(contact_request()).ok());
  ASSERT_TRUE(call(&v1::DynamicsService::Stub::ContactDynamics, contact_request(), &contact).ok());
  EXPECT_EQ(got.sequence(), 1u);
  EXPECT_EQ(got.contact_dynamics().SerializeAsString(), contact.SerializeAsString());

  ASSERT_TRUE(stream->Read(&got));
  auto i = impact_request();
  i.set_restitution(0.4);
  v1::ImpactResponse impact;
  ASSERT_TRUE(call(&v1::DynamicsService::Stub::Impact, i, &impact).ok());
  EXPECT_EQ(got.sequence(), 2u);
  EXPECT_EQ(got.impact().SerializeAsString(), impact.SerializeAsString());

  ASSERT_TRUE(stream->Read(&got));
  v1::SimulateResponse simulate;
  ASSERT_TRUE(call(&v1::DynamicsService::Stub::Simulate, simulate_request(), &simulate).ok());
  EXPECT_EQ(got.sequence(), 3u);
  EXPECT_EQ(got.simulate().SerializeAsString(), simulate.SerializeAsString());

  ASSERT_TRUE(stream->Read(&got));
  EXPECT_EQ(got.sequence(), 4u);
  EXPECT_EQ(got.status().code(), grpc::StatusCode::INVALID_ARGUMENT);
  EXPECT_NE(got.status().message().find("integrator"), std::string::npos);
  EXPECT_FALSE(stream->Read(&got));
  EXPECT_TRUE(stream->Finish().ok());
}

// The C++ client's methods carry the same numbers, reshaped per state.
TEST_F(ContactRpcErrorTest, ClientLibraryReshapesTheResults) {
  client::Client c(server_->channel(), {});
  const v1::ContactDynamicsRequest request = contact_request();
  v1::ContactDynamicsResponse raw;
  ASSERT_TRUE(call(&v1::DynamicsService::Stub::ContactDynamics, request, &raw).ok());
  const client::Matrix q = Eigen::Map<const client::Matrix>(request.q().data(), 1, 19);
  const client::Matrix zero = client::Matrix::Zero(1, 18);
  std::vector<client::PointContact> contacts;
  for (const v1::PointContact& p : request.contacts()) {
    contacts.push_back({p.frame(), Eigen::Vector3d(p.point(0), p.point(1), p.point(2)),
                        Eigen::Vector3d(p.normal(0), p.normal(1), p.normal(2)), p.friction()});
  }
  const client::ContactResult r = c.contact_dynamics(request.model_id(), q, zero, zero, contacts);
  ASSERT_EQ(r.forces.size(), 1u);
  ASSERT_EQ(r.forces[0].rows(), 4);
  for (int k = 0; k < 4; ++k) {
    for (int i = 0; i < 3; ++i) EXPECT_EQ(r.forces[0](k, i), raw.forces(3 * k + i));
    EXPECT_EQ(static_cast<int>(r.modes[0][k]), raw.modes(k));
  }
  EXPECT_EQ(r.velocities(0, 17), raw.a(17));
  EXPECT_EQ(r.residual[0], raw.residual(0));

  client::SimulateOptions options;
  options.steps = 5;
  options.ground_friction = 0.5;
  for (const char* foot : kQuadrupedFeet) options.candidates.push_back({foot, {}});
  const client::SimulateResult sim = c.simulate(request.model_id(), q, zero, options);
  ASSERT_EQ(sim.q.size(), 1u);
  EXPECT_EQ(sim.q[0].rows(), 5);
  EXPECT_EQ(sim.q[0].cols(), 19);
  EXPECT_EQ(sim.v[0].cols(), 18);
  EXPECT_EQ(sim.status[0], v1::CONTACT_SOLVER_STATUS_SOLVED);
}

}  // namespace
}  // namespace torqued::testing
