// The algorithms that grow faster than the model poll Data::interruption (interruption.hpp): the
// ABA and RNEA derivatives, the sparse LᵀDL factorization (under forward_dynamics_crba) and M⁻¹.
// A test that never says stop is polled and changes nothing, bitwise; one that says stop ends the
// call with Interrupted; and the Data computes as before once its interruption is cleared.
#include "engine/algorithms/interruption.hpp"

#include <gtest/gtest.h>

#include <functional>
#include <random>
#include <string>
#include <vector>

#include "engine/algorithms/aba_derivatives.hpp"
#include "engine/algorithms/constrained_dynamics_derivatives.hpp"
#include "engine/algorithms/forward_dynamics_crba.hpp"
#include "engine/algorithms/minverse.hpp"
#include "engine/algorithms/rnea_derivatives.hpp"
#include "engine/model/build.hpp"
#include "engine/model/configuration.hpp"
#include "engine/model/data.hpp"
#include "engine/model/spec.hpp"
#include "tests/engine/support/random_tree.hpp"

namespace torqued {
namespace {

// Counts its polls and says stop from poll `stop_at` on (never when it is 0).
struct CountingTest {
  static bool requested(const void* state) {
    auto* self = static_cast<CountingTest*>(const_cast<void*>(state));
    ++self->polls;
    return self->stop_at > 0 && self->polls >= self->stop_at;
  }
  Interruption interruption() { return {&CountingTest::requested, this}; }

  int polls = 0;
  int stop_at = 0;
};

struct Case {
  std::string name;
  // Runs the algorithm and returns its result, flattened.
  std::function<Eigen::VectorXd(const Model&, Data&, const Eigen::VectorXd& q,
                                const Eigen::VectorXd& v, const Eigen::VectorXd& u)>
      run;
};

Eigen::VectorXd flat(const Eigen::MatrixXd& m) {
  return Eigen::Map<const Eigen::VectorXd>(m.data(), m.size());
}

std::vector<Case> cases() {
  return {
      {"aba_derivatives",
       [](const Model& m, Data& d, const Eigen::VectorXd& q, const Eigen::VectorXd& v,
          const Eigen::VectorXd& u) {
         const AbaDerivativesWorkspace& w = aba_derivatives(m, d, q, v, u);
         Eigen::VectorXd out(3 * w.ddq_dq.size());
         out << flat(w.ddq_dq), flat(w.ddq_dv), flat(w.ddq_dtau);
         return out;
       }},
      {"constrained_dynamics_derivatives",
       [](const Model& m, Data& d, const Eigen::VectorXd& q, const Eigen::VectorXd& v,
          const Eigen::VectorXd& u) {
         BilateralConstraint contact;
         contact.type = ConstraintType::kPoint;
         contact.body1 = m.nbodies() - 1;
         const ConstrainedDerivativesWorkspace& w =
             constrained_dynamics_derivatives(m, d, q, v, u, {&contact, 1});
         const AbaDerivativesWorkspace& a = d.workspace<AbaDerivativesWorkspace>();
         Eigen::VectorXd out(3 * a.ddq_dq.size() + w.dlambda_dq.size());
         out << flat(a.ddq_dq), flat(a.ddq_dv), flat(a.ddq_dtau), flat(w.dlambda_dq);
         return out;
       }},
      {"rnea_derivatives",
       [](const Model& m, Data& d, const Eigen::VectorXd& q, const Eigen::VectorXd& v,
          const Eigen::VectorXd& u) {
         const RneaDerivativesWorkspace& w = rnea_derivatives(m, d, q, v, u);
         Eigen::VectorXd out(2 * w.dtau_dq.size());
         out << flat(w.dtau_dq), flat(w.dtau_dv);
         return out;
       }},
      {"forward_dynamics_crba",
       [](const Model& m, Data& d, const Eigen::VectorXd& q, const Eigen::VectorXd& v,
          const Eigen::VectorXd& u) -> Eigen::VectorXd {
         return forward_dynamics_crba(m, d, q, v, u);
       }},
      {"minverse", [](const Model& m, Data& d, const Eigen::VectorXd& q, const Eigen::VectorXd&,
                      const Eigen::VectorXd&) { return flat(minverse(m, d, q)); }},
  };
}

class InterruptionTest : public ::testing::TestWithParam<int> {
 protected:
  // A serial chain of 150 revolute bodies: deep, so that the factorizations' work (cubic in the
  // depth) passes the polling interval several times.
  void SetUp() override {
    ModelSpec spec;
    spec.name = "chain";
    spec.links.push_back({"link0", {}});
    for (int i = 1; i <= 150; ++i) {
      LinkSpec link;
      link.name = "link" + std::to_string(i);
      link.inertial.mass = 1.0 + 0.01 * i;
      link.inertial.origin.translation = Vec3(0.05, -0.02, 0.1);
      link.inertial.inertia = Vec3(0.02, 0.025, 0.03).asDiagonal();
      spec.links.push_back(link);
      JointSpec joint;
      joint.name = "joint" + std::to_string(i);
      joint.type = JointType::kRevolute;
      joint.parent_link = "link" + std::to_string(i - 1);
      joint.child_link = link.name;
      joint.origin.translation = Vec3(0.0, 0.0, 0.2);
      joint.axis = Vec3::Unit(i % 3);
      spec.joints.push_back(joint);
    }
    model_ = build_model(spec);
    std::mt19937_64 rng(11);
    q_ = random_configuration(*model_, rng);
    v_ = test_support::uniform_vector(rng, model_->nv, -1.0, 1.0);
    u_ = test_support::uniform_vector(rng, model_->nv, -1.0, 1.0);
  }

  ModelPtr model_;
  Eigen::VectorXd q_, v_, u_;
};

TEST_P(InterruptionTest, IsPolledWithoutChangingTheResult) {
  const Case c = cases()[GetParam()];
  Data plain(*model_);
  const Eigen::VectorXd expected = c.run(*model_, plain, q_, v_, u_);
  CountingTest never;
  Data polled(*model_);
  polled.interruption = never.interruption();
  const Eigen::VectorXd got = c.run(*model_, polled, q_, v_, u_);
  EXPECT_GT(never.polls, 0) << c.name;
  // Bitwise: polling only counts work.
  EXPECT_EQ(got, expected) << c.name;
}

TEST_P(InterruptionTest, StopsTheCallAndLeavesTheDataUsable) {
  const Case c = cases()[GetParam()];
  Data plain(*model_);
  const Eigen::VectorXd expected = c.run(*model_, plain, q_, v_, u_);
  CountingTest stop;
  stop.stop_at = 1;
  Data data(*model_);
  data.interruption = stop.interruption();
  EXPECT_THROW(c.run(*model_, data, q_, v_, u_), Interrupted) << c.name;
  EXPECT_EQ(stop.polls, 1) << c.name;
  data.interruption = {};
  EXPECT_EQ(c.run(*model_, data, q_, v_, u_), expected) << c.name;
}

// Every poll of the call can stop it with Interrupted, not only the first: the ABA derivatives'
// last poll is inside the products kernel (tree_sparse_product.hpp), a target_clones function
// that an exception must not leave. Thrown there, it terminated the process (the server, under
// a 10,000-knot Linearize past its deadline).
TEST_P(InterruptionTest, EveryPollStopsTheCall) {
  const Case c = cases()[GetParam()];
  CountingTest never;
  Data counted(*model_);
  counted.interruption = never.interruption();
  c.run(*model_, counted, q_, v_, u_);
  for (int stop_at = 1; stop_at <= never.polls; ++stop_at) {
    CountingTest stop;
    stop.stop_at = stop_at;
    Data data(*model_);
    data.interruption = stop.interruption();
    EXPECT_THROW(c.run(*model_, data, q_, v_, u_), Interrupted) << c.name << ", poll " << stop_at;
    EXPECT_EQ(stop.polls, stop_at) << c.name;
  }
}

INSTANTIATE_TEST_SUITE_P(Algorithms, InterruptionTest,
                         ::testing::Range(0, static_cast<int>(cases().size())),
                         [](const ::testing::TestParamInfo<int>& info) {
                           return cases()[info.param].name;
                         });

}  // namespace
}  // namespace torqued
