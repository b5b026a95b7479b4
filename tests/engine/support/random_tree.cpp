#include "tests/engine/support/random_tree.hpp"

#include <Eigen/SVD>
#include <algorithm>
#include <string>

#include "engine/algorithms/constraint_jacobian.hpp"
#include "engine/model/configuration.hpp"

namespace torqued::test_support {

namespace {

// The kinds a random joint is drawn from. Revolute appears twice: about a (signed) unit axis,
// which the engine specialises, and about a general, non-normalised axis.
enum class Kind {
  kRevoluteUnitAxis,
  kRevoluteGeneralAxis,
  kContinuous,
  kPrismatic,
  kHelical,
  kSpherical,
  kPlanar,
  kFreeFlyer,
  kFixed,
};

std::vector<Kind> allowed_kinds(const RandomTreeOptions& options) {
  std::vector<Kind> kinds = {Kind::kRevoluteUnitAxis, Kind::kRevoluteGeneralAxis, Kind::kContinuous,
                             Kind::kPrismatic, Kind::kHelical};
  if (options.allow_spherical) kinds.push_back(Kind::kSpherical);
  if (options.allow_planar) kinds.push_back(Kind::kPlanar);
  if (options.allow_free_flyer) kinds.push_back(Kind::kFreeFlyer);
  if (options.allow_fixed) kinds.push_back(Kind::kFixed);
  return kinds;
}

int uniform_int(std::mt19937_64& rng, int lo, int hi) {  // in [lo, hi]
  return std::uniform_int_distribution<int>(lo, hi)(rng);
}

Vec3 random_unit_vector(std::mt19937_64& rng) {
  for (;;) {
    const Vec3 x(uniform(rng, -1.0, 1.0), uniform(rng, -1.0, 1.0), uniform(rng, -1.0, 1.0));
    const double n = x.norm();
    if (n > 0.1 && n <= 1.0) return x / n;
  }
}

Vec3 random_signed_unit_axis(std::mt19937_64& rng) {
  Vec3 axis = Vec3::Zero();
  axis[uniform_int(rng, 0, 2)] = uniform(rng, 0.0, 1.0) < 0.5 ? -1.0 : 1.0;
  return axis;
}

JointLimits random_limits(std::mt19937_64& rng) {
  JointLimits limits;
  if (uniform(rng, 0.0, 1.0) < 0.5) {
    limits.lower = uniform(rng, -3.0, 0.0);
    limits.upper = limits.lower + uniform(rng, 0.1, 3.0);
    limits.velocity = uniform(rng, 1.0, 10.0);
    limits.effort = uniform(rng, 10.0, 100.0);
  }
  return limits;
}

JointSpec random_joint(std::mt19937_64& rng, Kind kind) {
  JointSpec joint;
  switch (kind) {
    case Kind::kRevoluteUnitAxis:
      joint.type = JointType::kRevolute;
      joint.axis = random_signed_unit_axis(rng);
      joint.limits = random_limits(rng);
      break;
    case Kind::kRevoluteGeneralAxis:
      joint.type = JointType::kRevolute;
      joint.axis = random_unit_vector(rng) * uniform(rng, 0.5, 2.0);  // not normalised
      joint.limits = random_limits(rng);
      break;
    case Kind::kContinuous:
      joint.type = JointType::kContinuous;
      joint.axis =
          uniform(rng, 0.0, 1.0) < 0.5 ? random_signed_unit_axis(rng) : random_unit_vector(rng);
      break;
    case Kind::kPrismatic:
      joint.type = JointType::kPrismatic;
      joint.axis = uniform(rng, 0.0, 1.0) < 0.5 ? random_signed_unit_axis(rng)
                                                : random_unit_vector(rng) * uniform(rng, 0.5, 2.0);
      joint.limits = random_limits(rng);
      break;
    case Kind::kHelical:
      joint.type = JointType::kHelical;
      joint.axis =
          uniform(rng, 0.0, 1.0) < 0.5 ? random_signed_unit_axis(rng) : random_unit_vector(rng);
      joint.pitch = uniform(rng, -0.5, 0.5);
      joint.limits = random_limits(rng);
      break;
    case Kind::kSpherical:
      joint.type = JointType::kSpherical;
      break;
    case Kind::kPlanar:
      joint.type = JointType::kPlanar;
      break;
    case Kind::kFreeFlyer:
      joint.type = JointType::kFreeFlyer;
      break;
    case Kind::kFixed:
      joint.type = JointType::kFixed;
      break;
  }
  return joint;
}

}  // namespace

double uniform(std::mt19937_64& rng, double lo, double hi) {
  const double u = static_cast<double>(rng() >> 11) * 0x1.0p-53;
  return lo + (hi - lo) * u;
}

Eigen::VectorXd uniform_vector(std::mt19937_64& rng, int size, double lo, double hi) {
  Eigen::VectorXd x(size);
  for (int i = 0; i < size; ++i) x[i] = uniform(rng, lo, hi);
  return x;
}

Mat3 random_rotation(std::mt19937_64& rng) {
  for (;;) {
    const Eigen::Vector4d x(uniform(rng, -1.0, 1.0), uniform(rng, -1.0, 1.0),
                            uniform(rng, -1.0, 1.0), uniform(rng, -1.0, 1.0));
    const double n2 = x.squaredNorm();
    if (n2 > 0.01 && n2 <= 1.0) {
      const Eigen::Vector4d u = x / std::sqrt(n2);
      return Eigen::Quaterniond(u[3], u[0], u[1], u[2]).toRotationMatrix();
    }
  }
}

Transform random_transform(std::mt19937_64& rng, double max_translation) {
  Transform t;
  t.rotation = random_rotation(rng);
  t.translation = Vec3(uniform(rng, -max_translation, max_translation),
                       uniform(rng, -max_translation, max_translation),
                       uniform(rng, -max_translation, max_translation));
  return t;
}

InertialSpec random_inertial(std::mt19937_64& rng) {
  InertialSpec inertial;
  inertial.mass = uniform(rng, 0.1, 5.0);
  inertial.origin = random_transform(rng, 0.3);
  // Principal moments of a solid box: each is at most the sum of the other two.
  const double x = uniform(rng, 0.05, 0.8);
  const double y = uniform(rng, 0.05, 0.8);
  const double z = uniform(rng, 0.05, 0.8);
  const double k = inertial.mass / 12.0;
  // The inertial frame's own axes are principal here; a further random rotation inside the
  // tensor exercises off-diagonal terms.
  const Mat3 r = random_rotation(rng);
  inertial.inertia =
      r * Vec3(k * (y * y + z * z), k * (x * x + z * z), k * (x * x + y * y)).asDiagonal() *
      r.transpose();
  inertial.inertia = 0.5 * (inertial.inertia + inertial.inertia.transpose()).eval();
  return inertial;
}

RigidInertia random_rigid_inertia(std::mt19937_64& rng) {
  const InertialSpec s = random_inertial(rng);
  return RigidInertia::FromMassComInertia(
      s.mass, s.origin.translation, s.origin.rotation * s.inertia * s.origin.rotation.transpose());
}

Mat6 random_symmetric6(std::mt19937_64& rng) {
  Mat6 x;
  for (int i = 0; i < 6; ++i) {
    for (int j = 0; j < 6; ++j) x(i, j) = uniform(rng, -1.0, 1.0);
  }
  return 0.5 * (x + x.transpose());
}

ModelSpec random_tree_spec(std::uint64_t seed, const RandomTreeOptions& options) {
  std::mt19937_64 rng(seed);
  const std::vector<Kind> kinds = allowed_kinds(options);
  const int n_links = uniform_int(rng, options.min_links, options.max_links);

  ModelSpec spec;
  spec.name = "random_tree_" + std::to_string(seed);
  spec.floating_base = options.floating_base;
  spec.gravity = options.gravity;

  std::vector<Kind> forced;
  if (options.cover_every_kind && n_links - 1 >= static_cast<int>(kinds.size())) {
    forced = kinds;
    std::shuffle(forced.begin(), forced.end(), rng);
  }

  for (int i = 0; i < n_links; ++i) {
    LinkSpec link;
    link.name = "link_" + std::to_string(i);
    link.inertial = random_inertial(rng);
    spec.links.push_back(link);
    if (i == 0) continue;

    // Mostly chains (depth), sometimes a branch off any earlier link.
    const int parent = uniform(rng, 0.0, 1.0) < 0.6 ? i - 1 : uniform_int(rng, 0, i - 1);
    const Kind kind = i - 1 < static_cast<int>(forced.size())
                          ? forced[i - 1]
                          : kinds[uniform_int(rng, 0, static_cast<int>(kinds.size()) - 1)];
    JointSpec joint = random_joint(rng, kind);
    // Random two-letter prefixes make the name order (which build_model() follows for
    // siblings) differ from the creation order.
    std::string name = "j";
    name += static_cast<char>('a' + uniform_int(rng, 0, 25));
    name += static_cast<char>('a' + uniform_int(rng, 0, 25));
    joint.name = name + "_" + std::to_string(i);
    joint.parent_link = spec.links[parent].name;
    joint.child_link = link.name;
    joint.origin = random_transform(rng, 0.5);
    // URDFs mostly place joints without a rotation; a third of these do too, so that the
    // algorithms' paths for axis-aligned joint rotations (Model::parent_rotation_axis) run.
    if (i % 3 == 0) joint.origin.rotation = Mat3::Identity();
    spec.joints.push_back(joint);
  }
  return spec;
}

RandomState random_state(const Model& model, std::mt19937_64& rng) {
  RandomState s;
  s.q = random_configuration(model, rng);
  s.v = uniform_vector(rng, model.nv, -1.0, 1.0);
  s.a = uniform_vector(rng, model.nv, -1.0, 1.0);
  s.tau = uniform_vector(rng, model.nv, -10.0, 10.0);
  s.f_ext.assign(model.nbodies(), Force::Zero());
  for (int i = 1; i < model.nbodies(); ++i) {
    s.f_ext[i] = Force::FromVector(uniform_vector(rng, 6, -10.0, 10.0));
  }
  return s;
}

std::vector<BilateralConstraint> random_constraints(const Model& model, std::mt19937_64& rng,
                                                    int count) {
  std::vector<BilateralConstraint> out;
  for (int k = 0; k < count; ++k) {
    BilateralConstraint c;
    c.name = "constraint_" + std::to_string(k);
    c.type = static_cast<ConstraintType>(k % 4);
    c.body1 = 1 + static_cast<int>(rng() % (model.nbodies() - 1));
    do {
      c.body2 = static_cast<int>(rng() % model.nbodies());
    } while (c.body2 == c.body1);
    c.placement1 = random_transform(rng, 0.3);
    c.placement2 = random_transform(rng, 0.3);
    out.push_back(c);
  }
  return out;
}

std::vector<BilateralConstraint> independent_constraints(
    const Model& model, const Eigen::VectorXd& q,
    const std::vector<BilateralConstraint>& candidates) {
  std::vector<BilateralConstraint> kept;
  Data data(model);
  const Eigen::VectorXd v = Eigen::VectorXd::Zero(model.nv);
  for (const BilateralConstraint& c : candidates) {
    kept.push_back(c);
    const int rows = constraint_rows(model, kept);
    if (rows > model.nv) {  // more rows than DOFs: dependent
      kept.pop_back();
      continue;
    }
    Eigen::MatrixXd k(rows, model.nv);
    Eigen::VectorXd bias(rows);
    constraint_jacobian(model, data, q, v, kept, {}, k, bias);
    const Eigen::VectorXd sigma = Eigen::JacobiSVD<Eigen::MatrixXd>(k).singularValues();
    if (sigma[rows - 1] < 1e-2 * sigma[0]) kept.pop_back();
  }
  return kept;
}

std::vector<BilateralConstraint> random_feet(const Model& model, std::mt19937_64& rng,
                                             const Eigen::VectorXd& q) {
  std::vector<BilateralConstraint> candidates = random_constraints(model, rng, 2);
  for (int k = 0; k < 2; ++k) {
    candidates[k].type = k == 0 ? ConstraintType::kWeld : ConstraintType::kPoint;
    candidates[k].body1 = std::max(1, model.nbodies() - 1 - k);
    candidates[k].body2 = 0;
  }
  return independent_constraints(model, q, candidates);
}

std::string tree_case_name(const TreeCase& tree) {
  return "seed" + std::to_string(tree.seed) + (tree.floating_base ? "_floating_" : "_fixed_") +
         std::to_string(tree.min_links) + "to" + std::to_string(tree.max_links) + "links";
}

void PrintTo(const TreeCase& tree, std::ostream* os) { *os << tree_case_name(tree); }

}  // namespace torqued::test_support
