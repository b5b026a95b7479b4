// Tests the Jacobians of the discrete step (engine/algorithms/discrete_step.hpp), semi-implicit and
// explicit Euler and RK4: each step against its definition (ABA at the
// stages, then integrate()); Fx, Fu against fourth-order central differences of the engine's own
// step taken in the tangent space, on random trees with every joint kind, fully actuated and with
// an unactuated free-flyer root, free, in rigid contact with the world, and at a touchdown (the
// impact of impulse_dynamics.hpp first), and the contacts' friction-cone residuals
// (friction_cone.hpp) and their derivatives in the same way; the placements that the Euler steps
// on a free tree leave; the semi-implicit step against Pinocchio's, free and with legged robots'
// feet in 3D and 6D contact.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <numeric>
#include <random>
#include <span>
#include <string>
#include <utility>
#include <vector>

#include "engine/algorithms/constrained_dynamics.hpp"
#include "engine/algorithms/discrete_step.hpp"
#include "engine/algorithms/impulse_dynamics.hpp"
#include "engine/algorithms/world_frame.hpp"
#include "engine/io/urdf.hpp"
#include "engine/model/build.hpp"
#include "engine/model/configuration.hpp"
#include "tests/engine/support/random_tree.hpp"

namespace torqued {
namespace {

// Step h = 1e-4: truncation ~h⁴ |f⁽⁵⁾|, rounding ~ε |f| / h ≈ 1e-12 relative; q̈'s amplification by
// κ(M), up to ~1e4 on these trees, and dt = 0.01 keep the error of Fx and Fu below 1e-8. The bar
// 1e-6 (relative to the largest entry of the block) separates a correct Jacobian from one with a
// dropped term.
constexpr double kStep = 1e-4;
constexpr double kTolerance = 1e-6;
constexpr double kDt = 0.01;

// The contacts' friction cones, a surface tilted from the horizontal so that every axis counts.
const FrictionCone kCone{.friction = 0.7, .faces = 4, .normal = Vec3(0.2, -0.1, 1.0).normalized()};

struct Step {
  Eigen::VectorXd q_next, v_next;
  RowMajorMatrix fx, fu;
  // In contact: the friction-cone residuals at the knot, and their derivatives along x and u.
  Eigen::VectorXd cones;
  RowMajorMatrix dcones_dx, dcones_du;
};

struct Case {
  std::uint64_t seed;
  bool unactuated_root;
  Integrator scheme;
  bool in_contact;   // a 6D and a 3D contact with the world on the tree's last bodies
  double touchdown;  // < 0: none; else the contacts begin at the knot, with this restitution
};

Step taken_step(const Model& model, Data& data, const Case& c, const Eigen::VectorXd& q,
                const Eigen::VectorXd& v, const Eigen::VectorXd& u,
                const std::vector<int>& actuated, std::span<const BilateralConstraint> contacts) {
  const int cones = static_cast<int>(contacts.size()) * friction_cone_values(kCone);
  Step s{Eigen::VectorXd(model.nq),
         Eigen::VectorXd(model.nv),
         RowMajorMatrix(2 * model.nv, 2 * model.nv),
         RowMajorMatrix(2 * model.nv, u.size()),
         Eigen::VectorXd(cones),
         RowMajorMatrix(cones, 2 * model.nv),
         RowMajorMatrix(cones, u.size())};
  torqued::step(
      model, data, q, v, u,
      {.dt = kDt,
       .integrator = c.scheme,
       .actuated_dofs = actuated,
       .constraints = contacts,
       .touchdown = c.touchdown >= 0.0,
       .restitution = std::max(c.touchdown, 0.0),
       .friction_cone = kCone},
      {.q_next = s.q_next,
       .v_next = s.v_next,
       .fx = s.fx,
       .fu = s.fu,
       .friction_cones = {s.cones.data(), static_cast<std::size_t>(cones)},
       .dfriction_cones_dx = {s.dcones_dx.data(), static_cast<std::size_t>(s.dcones_dx.size())},
       .dfriction_cones_du = {s.dcones_du.data(), static_cast<std::size_t>(s.dcones_du.size())}});
  return s;
}

// (q⁺, v⁺) of a perturbed step relative to the unperturbed one, in the tangent space, and the
// change of the cones.
Eigen::VectorXd tangent(const Model& model, const Step& at, const Step& moved) {
  Eigen::VectorXd out(2 * model.nv + at.cones.size());
  out << difference(model, at.q_next, moved.q_next), moved.v_next - at.v_next,
      moved.cones - at.cones;
  return out;
}

template <typename Moved>
Eigen::MatrixXd finite_difference(const Model& model, const Step& at, int columns, Moved&& moved) {
  Eigen::MatrixXd out(2 * model.nv + at.cones.size(), columns);
  for (int k = 0; k < columns; ++k) {
    auto f = [&](double h) { return tangent(model, at, moved(k, h)); };
    out.col(k) = (8.0 * (f(kStep) - f(-kStep)) - (f(2 * kStep) - f(-2 * kStep))) / (12.0 * kStep);
  }
  return out;
}

double relative_error(const Eigen::MatrixXd& got, const Eigen::MatrixXd& expected) {
  return (got - expected).cwiseAbs().maxCoeff() / std::max(1.0, expected.cwiseAbs().maxCoeff());
}

// The step by its definition, from ABA (or constrained_dynamics() in contact, after
// impulse_dynamics() at a touchdown) and integrate() alone: (q⁺, v⁺).
std::pair<Eigen::VectorXd, Eigen::VectorXd> defined_step(
    const Model& model, const Case& c, const Eigen::VectorXd& q, const Eigen::VectorXd& v_minus,
    const Eigen::VectorXd& tau, std::span<const BilateralConstraint> contacts) {
  Data data(model);
  const Integrator scheme = c.scheme;
  Eigen::VectorXd v = v_minus;
  if (c.touchdown >= 0.0) {
    Eigen::VectorXd impulses(constraint_rows(model, contacts));
    impulse_dynamics(model, data, q, v_minus, contacts, c.touchdown, {}, v, impulses);
  }
  const auto forward_dynamics = [&](const Eigen::VectorXd& at_q, const Eigen::VectorXd& at_v) {
    if (contacts.empty()) return Eigen::VectorXd(aba(model, data, at_q, at_v, tau));
    Eigen::VectorXd ddq(model.nv), lambda(constraint_rows(model, contacts));
    constrained_dynamics(model, data, at_q, at_v, tau, contacts, {}, ddq, lambda);
    return ddq;
  };
  auto slope = [&](double h, const Eigen::VectorXd& dq, const Eigen::VectorXd& dv) {
    const Eigen::VectorXd stage_q = integrate(model, q, h * dq);
    const Eigen::VectorXd stage_v = v + h * dv;
    return std::pair<Eigen::VectorXd, Eigen::VectorXd>(stage_v, forward_dynamics(stage_q, stage_v));
  };
  if (scheme != Integrator::kRungeKutta4) {
    const Eigen::VectorXd v_next = v + kDt * forward_dynamics(q, v);
    const Eigen::VectorXd& moved_with = scheme == Integrator::kSemiImplicitEuler ? v_next : v;
    return {integrate(model, q, kDt * moved_with), v_next};
  }
  const Eigen::VectorXd zero = Eigen::VectorXd::Zero(model.nv);
  const auto k1 = slope(0.0, zero, zero);
  const auto k2 = slope(kDt / 2, k1.first, k1.second);
  const auto k3 = slope(kDt / 2, k2.first, k2.second);
  const auto k4 = slope(kDt, k3.first, k3.second);
  const Eigen::VectorXd dq = (k1.first + 2 * k2.first + 2 * k3.first + k4.first) / 6;
  const Eigen::VectorXd dv = (k1.second + 2 * k2.second + 2 * k3.second + k4.second) / 6;
  return {integrate(model, q, kDt * dq), v + kDt * dv};
}

// The case's random tree: 6-12 links with every joint kind, on a floating base.
ModelPtr case_tree(const Case& c) {
  test_support::RandomTreeOptions options;
  options.min_links = 6;
  options.max_links = 12;
  options.floating_base = true;
  return build_model(test_support::random_tree_spec(c.seed, options));
}

class DiscreteStepDerivativesTest : public ::testing::TestWithParam<Case> {};

TEST_P(DiscreteStepDerivativesTest, StepAndJacobiansMatchItsDefinitionAndFiniteDifferences) {
  const Case c = GetParam();
  const ModelPtr model_ptr = case_tree(c);
  const Model& model = *model_ptr;
  std::mt19937_64 rng(c.seed);
  const test_support::RandomState state = test_support::random_state(model, rng);
  std::vector<int> actuated(model.nv - (c.unactuated_root ? 6 : 0));
  std::iota(actuated.begin(), actuated.end(), c.unactuated_root ? 6 : 0);
  const Eigen::VectorXd u =
      test_support::uniform_vector(rng, static_cast<int>(actuated.size()), -10.0, 10.0);
  std::vector<BilateralConstraint> contacts;
  if (c.in_contact) {
    contacts = test_support::random_constraints(model, rng, 4);
    for (int k = 0; k < 4; ++k) {
      contacts[k].type = k % 2 == 0 ? ConstraintType::kWeld : ConstraintType::kPoint;
      contacts[k].body1 = std::max(1, model.nbodies() - 1 - k);
      contacts[k].body2 = 0;
    }
    contacts = test_support::independent_constraints(model, state.q, contacts);
    ASSERT_FALSE(contacts.empty());
  }
  Data data(model);
  const Step at = taken_step(model, data, c, state.q, state.v, u, actuated, contacts);

  Eigen::VectorXd tau = Eigen::VectorXd::Zero(model.nv);
  for (std::size_t k = 0; k < actuated.size(); ++k) tau[actuated[k]] = u[k];
  const auto [q_next, v_next] = defined_step(model, c, state.q, state.v, tau, contacts);
  // Relative to the state's size (velocities of these cases reach 114): the step and its
  // definition solve the same contact dynamics in different orders, and with FMA (-march=native)
  // seed 19's touchdown differed by 3.9e-12 at |v| = 6.7.
  EXPECT_LT((at.v_next - v_next).cwiseAbs().maxCoeff(),
            1e-12 * (1.0 + v_next.cwiseAbs().maxCoeff()));
  EXPECT_LT((at.q_next - q_next).cwiseAbs().maxCoeff(),
            1e-12 * (1.0 + q_next.cwiseAbs().maxCoeff()));

  Data scratch(model);
  const int nv = model.nv;
  const Eigen::MatrixXd fx_q = finite_difference(model, at, nv, [&](int k, double h) {
    return taken_step(model, scratch, c,
                      integrate(model, state.q, Eigen::VectorXd::Unit(nv, k) * h), state.v, u,
                      actuated, contacts);
  });
  const Eigen::MatrixXd fx_v = finite_difference(model, at, nv, [&](int k, double h) {
    return taken_step(model, scratch, c, state.q, state.v + Eigen::VectorXd::Unit(nv, k) * h, u,
                      actuated, contacts);
  });
  const Eigen::MatrixXd fu = finite_difference(model, at, u.size(), [&](int k, double h) {
    return taken_step(model, scratch, c, state.q, state.v,
                      u + Eigen::VectorXd::Unit(u.size(), k) * h, actuated, contacts);
  });
  const int nx = 2 * nv;
  EXPECT_LT(relative_error(at.fx.leftCols(nv), fx_q.topRows(nx)), kTolerance) << "Fx, q columns";
  EXPECT_LT(relative_error(at.fx.rightCols(nv), fx_v.topRows(nx)), kTolerance) << "Fx, v columns";
  EXPECT_LT(relative_error(at.fu, fu.topRows(nx)), kTolerance) << "Fu";
  if (!c.in_contact) return;
  const auto cones = static_cast<Eigen::Index>(at.cones.size());
  EXPECT_LT(relative_error(at.dcones_dx.leftCols(nv), fx_q.bottomRows(cones)), kTolerance)
      << "cones, q columns";
  EXPECT_LT(relative_error(at.dcones_dx.rightCols(nv), fx_v.bottomRows(cones)), kTolerance)
      << "cones, v columns";
  EXPECT_LT(relative_error(at.dcones_du, fu.bottomRows(cones)), kTolerance) << "cones, u";
}

std::vector<Case> cases() {
  std::vector<Case> out;
  for (std::uint64_t seed = 1; seed <= 12; ++seed) {
    out.push_back({seed, seed % 2 == 0,
                   seed <= 6   ? Integrator::kSemiImplicitEuler
                   : seed <= 8 ? Integrator::kExplicitEuler
                               : Integrator::kRungeKutta4,
                   false, -1.0});
  }
  // In contact: the constrained dynamics' derivatives through each scheme.
  for (std::uint64_t seed = 13; seed <= 16; ++seed) {
    out.push_back({seed, seed % 2 == 0,
                   seed <= 14   ? Integrator::kSemiImplicitEuler
                   : seed == 15 ? Integrator::kExplicitEuler
                                : Integrator::kRungeKutta4,
                   true, -1.0});
  }
  // At a touchdown: the impact's derivatives chained into each scheme's, plastic and not.
  for (std::uint64_t seed = 17; seed <= 20; ++seed) {
    out.push_back({seed, seed % 2 == 0,
                   seed <= 18   ? Integrator::kSemiImplicitEuler
                   : seed == 19 ? Integrator::kExplicitEuler
                                : Integrator::kRungeKutta4,
                   true, seed == 18 ? 0.5 : 0.0});
  }
  return out;
}

std::string case_name(const ::testing::TestParamInfo<Case>& info) {
  static constexpr const char* kSchemes[] = {"_semi_implicit_euler", "_explicit_euler",
                                             "_runge_kutta_4"};
  return "seed" + std::to_string(info.param.seed) +
         (info.param.unactuated_root ? "_unactuated_root" : "_actuated") +
         kSchemes[static_cast<int>(info.param.scheme)] +
         (info.param.in_contact ? "_in_contact" : "") +
         (info.param.touchdown >= 0.0 ? "_touchdown" : "");
}

// A step that says it leaves the knot's placements (the Euler steps on a free tree) leaves data.oMi
// and data.oS as placing every body at q does, with and without the Jacobians: the same
// place_in_world() at the same q, to rounding (1e-14). RK4, contacts and touchdowns say not.
TEST(DiscreteStepPlacementsTest, StepsThatSaySoLeaveTheKnotPlacements) {
  for (const Case& c : cases()) {
    SCOPED_TRACE(c.seed);
    const ModelPtr model_ptr = case_tree(c);
    const Model& model = *model_ptr;
    std::mt19937_64 rng(c.seed);
    const test_support::RandomState state = test_support::random_state(model, rng);
    std::vector<int> actuated(model.nv);
    std::iota(actuated.begin(), actuated.end(), 0);
    const Eigen::VectorXd u = test_support::uniform_vector(rng, model.nv, -10.0, 10.0);
    BilateralConstraint contact;
    contact.body1 = model.nbodies() - 1;
    const StepSettings settings{.dt = kDt,
                                .integrator = c.scheme,
                                .actuated_dofs = actuated,
                                .constraints = {&contact, c.in_contact ? 1u : 0u},
                                .touchdown = c.touchdown >= 0.0};
    const bool leaves = step_leaves_knot_placements(model, settings);
    EXPECT_EQ(leaves, c.scheme != Integrator::kRungeKutta4 && !c.in_contact);
    if (!leaves) continue;

    Data placed(model);
    place_in_world(model, placed, state.q.data());
    Eigen::VectorXd q_next(model.nq), v_next(model.nv);
    RowMajorMatrix fx(2 * model.nv, 2 * model.nv), fu(2 * model.nv, model.nv);
    for (const bool jacobians : {false, true}) {
      SCOPED_TRACE(jacobians ? "with the Jacobians" : "without the Jacobians");
      Data data(model);
      torqued::step(model, data, state.q, state.v, u, settings,
                    jacobians ? StepOutput{.q_next = q_next, .v_next = v_next, .fx = fx, .fu = fu}
                              : StepOutput{.q_next = q_next, .v_next = v_next});
      for (int i = 1; i < model.nbodies(); ++i) {
        EXPECT_LT((data.oMi[i].rotation - placed.oMi[i].rotation).cwiseAbs().maxCoeff(), 1e-14);
        EXPECT_LT((data.oMi[i].translation - placed.oMi[i].translation).cwiseAbs().maxCoeff(),
                  1e-14 * (1.0 + placed.oMi[i].translation.norm()));
      }
      EXPECT_LT((data.oS - placed.oS).cwiseAbs().maxCoeff(),
                1e-14 * (1.0 + placed.oS.cwiseAbs().maxCoeff()));
    }
  }
}

INSTANTIATE_TEST_SUITE_P(RandomTrees, DiscreteStepDerivativesTest, ::testing::ValuesIn(cases()),
                         case_name);

// ---- Against Pinocchio -------------------------------------------------------------------------

// anchor_horizon, as ../shared/anchors/build.sh leaves it ($ANCHORS_DIR, by default
// ~/.cache/torqued-anchors), or "" when it is not built here.
std::string anchor_horizon() {
  const char* dir = std::getenv("ANCHORS_DIR");
  const char* home = std::getenv("HOME");
  const std::filesystem::path root =
      dir != nullptr
          ? std::filesystem::path(dir)
          : std::filesystem::path(home != nullptr ? home : "/") / ".cache/torqued-anchors";
  const std::filesystem::path exe = root / "native" / "anchor_horizon";
  std::error_code ec;
  return std::filesystem::is_regular_file(exe, ec) ? exe.string() : "";
}

Eigen::MatrixXd to_matrix(const nlohmann::json& rows) {
  Eigen::MatrixXd out(rows.size(), rows[0].size());
  for (std::size_t r = 0; r < rows.size(); ++r) {
    for (std::size_t c = 0; c < rows[r].size(); ++c) out(r, c) = rows[r][c].get<double>();
  }
  return out;
}

Eigen::VectorXd to_vector(const nlohmann::json& values) {
  Eigen::VectorXd out(values.size());
  for (std::size_t k = 0; k < values.size(); ++k) out[k] = values[k].get<double>();
  return out;
}

struct Robot {
  const char* name;
  bool floating;
  std::vector<std::string> contacts = {};  // frames in rigid contact with the world
  ConstraintType contact_type = ConstraintType::kPoint;
};

class EulerStepAgainstPinocchioTest : public ::testing::TestWithParam<Robot> {};

// Both are analytic: they differ by rounding, amplified by κ(M) (up to ~1e4 on talos_reduced), so
// 1e-9 of the largest entry separates agreement from a wrong term (≳ 1e-4).
TEST_P(EulerStepAgainstPinocchioTest, SemiImplicitStepMatchesAnchorHorizon) {
  const Robot robot = GetParam();
  const std::filesystem::path urdf =
      std::filesystem::path(TORQUED_SHARED_DIR) / "models" / (std::string(robot.name) + ".urdf");
  if (!std::filesystem::exists(urdf)) GTEST_SKIP() << urdf << " is not checked out";
  const std::string exe = anchor_horizon();
  // Pinocchio is built from source by the anchors' build.sh, which the test command does not run
  // (it takes longer than CI's whole run): this skip is listed, not failed.
  if (exe.empty()) GTEST_SKIP() << "anchor_horizon is not built (the anchors' build.sh builds it)";
  std::string contact_options;
  for (const std::string& frame : robot.contacts) {
    contact_options += (contact_options.empty() ? " --contacts " : ",") + frame;
  }
  if (!robot.contacts.empty()) {
    contact_options +=
        robot.contact_type == ConstraintType::kWeld ? " --contact-type 6d" : " --contact-type 3d";
  }
  const std::filesystem::path dump =
      std::filesystem::temp_directory_path() /
      ("euler_step_" + std::string(robot.name) + std::to_string(robot.contacts.size()) + ".json");
  const std::string command =
      exe + " --urdf " + urdf.string() + " --base " + (robot.floating ? "floating" : "fixed") +
      " --knots 3 --seconds 0.01 --dump " + dump.string() + contact_options + " > /dev/null";
  ASSERT_EQ(std::system(command.c_str()), 0) << command;
  std::ifstream in(dump);
  const nlohmann::json reference = nlohmann::json::parse(in);
  std::filesystem::remove(dump);

  UrdfOptions options;
  options.floating_base = robot.floating;
  const ModelPtr model_ptr = build_model(read_urdf_file(urdf.string(), options));
  const Model& model = *model_ptr;
  const int nv = model.nv;
  // Pinocchio's coordinates in ours, by joint name; its controls drive its DOFs past the root's.
  std::vector<int> q_of(model.nq), v_of(nv);
  for (const nlohmann::json& j : reference.at("joints")) {
    const int body = model.find_joint(j.at("name").get<std::string>());
    ASSERT_GT(body, 0) << j.at("name");
    const Joint& joint = model.joints[body];
    for (int k = 0; k < joint.nq; ++k) q_of[j.at("idx_q").get<int>() + k] = joint.idx_q + k;
    for (int k = 0; k < joint.nv; ++k) v_of[j.at("idx_v").get<int>() + k] = joint.idx_v + k;
  }
  const int nu = reference.at("nu").get<int>();
  std::vector<int> actuated(nu);
  for (int c = 0; c < nu; ++c) actuated[c] = v_of[nv - nu + c];
  auto tangent_index = [&](int k) { return k < nv ? v_of[k] : nv + v_of[k - nv]; };

  std::vector<BilateralConstraint> contacts;
  for (const std::string& name : robot.contacts) {
    const Frame& frame = model.frames[model.find_frame(name)];
    BilateralConstraint contact;
    contact.name = name;
    contact.type = robot.contact_type;
    contact.body1 = frame.body;
    contact.placement1 = frame.placement;
    contacts.push_back(contact);
  }

  Data data(model);
  for (const nlohmann::json& knot : reference.at("knots")) {
    const Eigen::VectorXd q_pin = to_vector(knot.at("q")), v_pin = to_vector(knot.at("v"));
    Eigen::VectorXd q(model.nq), v(nv);
    for (int k = 0; k < model.nq; ++k) q[q_of[k]] = q_pin[k];
    for (int k = 0; k < nv; ++k) v[v_of[k]] = v_pin[k];
    const Eigen::VectorXd u = to_vector(knot.at("u"));
    RowMajorMatrix fx(2 * nv, 2 * nv), fu(2 * nv, nu);
    Eigen::VectorXd q_next(model.nq), v_next(nv);
    torqued::step(model, data, q, v, u,
                  {.dt = reference.at("dt").get<double>(),
                   .actuated_dofs = actuated,
                   .constraints = contacts},
                  {.q_next = q_next, .v_next = v_next, .fx = fx, .fu = fu});

    const Eigen::MatrixXd fx_pin = to_matrix(knot.at("Fx")), fu_pin = to_matrix(knot.at("Fu"));
    Eigen::MatrixXd fx_ours(2 * nv, 2 * nv), fu_ours(2 * nv, nu);
    for (int r = 0; r < 2 * nv; ++r) {
      for (int c = 0; c < 2 * nv; ++c) fx_ours(r, c) = fx(tangent_index(r), tangent_index(c));
      for (int c = 0; c < nu; ++c) fu_ours(r, c) = fu(tangent_index(r), c);
    }
    const Eigen::VectorXd q_next_pin = to_vector(knot.at("q_next"));
    const Eigen::VectorXd v_next_pin = to_vector(knot.at("v_next"));
    for (int k = 0; k < model.nq; ++k) EXPECT_NEAR(q_next[q_of[k]], q_next_pin[k], 1e-12) << k;
    for (int k = 0; k < nv; ++k) EXPECT_NEAR(v_next[v_of[k]], v_next_pin[k], 1e-9) << k;
    EXPECT_LT(relative_error(fx_ours, fx_pin), 1e-9) << "Fx";
    EXPECT_LT(relative_error(fu_ours, fu_pin), 1e-9) << "Fu";
  }
}

INSTANTIATE_TEST_SUITE_P(
    SharedRobots, EulerStepAgainstPinocchioTest,
    ::testing::Values(
        Robot{"ur5", false}, Robot{"panda", false}, Robot{"solo12", true},
        Robot{"talos_reduced", true},
        Robot{"solo12", true, {"FL_FOOT", "FR_FOOT", "HL_FOOT", "HR_FOOT"}},
        Robot{"talos_reduced", true, {"left_sole_link", "right_sole_link"}, ConstraintType::kWeld}),
    [](const ::testing::TestParamInfo<Robot>& info) {
      const Robot& robot = info.param;
      std::string contacts;
      if (!robot.contacts.empty()) {
        contacts = robot.contact_type == ConstraintType::kWeld ? "_6d_contacts" : "_3d_contacts";
      }
      return std::string(robot.name) + (robot.floating ? "_floating" : "_fixed") + contacts;
    });

}  // namespace
}  // namespace torqued
