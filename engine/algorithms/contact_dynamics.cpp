// Contact dynamics (Featherstone 1987, §9.7-9.8); see contact_dynamics.hpp for the equations.
//
// One pass of RNEA at q̈ = 0 gives C and every body's velocity and bias acceleration, from which
// each contact point's acceleration γ at q̈ = 0 follows without another recursion:
//   a_p = R (a + α × r + ω × (v + ω × r)),   a = a_gf + Rᵀ g
// (a_gf, RNEA's acceleration, carries the fictitious base acceleration −g).
#include "engine/algorithms/contact_dynamics.hpp"

#include <algorithm>
#include <cassert>
#include <cmath>

#include "engine/algorithms/crba.hpp"
#include "engine/algorithms/ltdl.hpp"
#include "engine/algorithms/rnea.hpp"
#include "engine/model/heap_bytes.hpp"

namespace torqued {

namespace {

// A contact whose tangential force is within this fraction of the cone's edge (μ times its normal
// force) is sliding: the friction-cone solver stops on the edge only to its tolerance.
constexpr double kConeEdgeTolerance = 1e-9;

// Columns n, t1, t2 with t1 the normalized projection of the world axis least aligned with n.
Mat3 contact_axes(const Vec3& normal) {
  const Vec3 seed = std::abs(normal.x()) < 0.9 ? Vec3::UnitX() : Vec3::UnitY();
  const Vec3 t1 = (seed - seed.dot(normal) * normal).normalized();
  Mat3 axes;
  axes.col(0) = normal;
  axes.col(1) = t1;
  axes.col(2) = normal.cross(t1);
  return axes;
}

}  // namespace

ContactWorkspace::ContactWorkspace(const Model& model, int max_contacts_)
    : max_contacts(max_contacts_),
      acceleration(Eigen::VectorXd::Zero(model.nv)),
      velocity(Eigen::VectorXd::Zero(model.nv)),
      forces(max_contacts_, Vec3::Zero()),
      modes(max_contacts_, ContactMode::kSeparating),
      lambda(Eigen::VectorXd::Zero(3 * max_contacts_)),
      axes(max_contacts_, Mat3::Identity()),
      points(max_contacts_, Vec3::Zero()),
      jacobian(3 * max_contacts_, model.nv),
      minv_jacobian_t(model.nv, 3 * max_contacts_),
      delassus(3 * max_contacts_, 3 * max_contacts_),
      bias(3 * max_contacts_),
      friction(max_contacts_, 0.0),
      slide_direction(max_contacts_, Eigen::Vector2d::Zero()),
      normal_delassus(max_contacts_, max_contacts_),
      normal_bias(max_contacts_),
      normal_lambda(max_contacts_),
      lemke(max_contacts_),
      cone(max_contacts_) {}

std::size_t ContactWorkspace::heap_bytes() const {
  return total_heap_bytes(acceleration, velocity, forces, modes, lambda, axes, points, jacobian,
                          minv_jacobian_t, delassus, bias, friction, slide_direction,
                          normal_delassus, normal_bias, normal_lambda) +
         lemke.heap_bytes() + cone.heap_bytes();
}

void factor_mass_and_place_bodies(const Model& model, Data& data, const ConstVectorRef& q) {
  ltdl_factorize(model, data, crba(model, data, q));
  for (int i = 1; i < model.nbodies(); ++i) {
    data.oMi[i] = data.oMi[model.parent[i]] * data.liMi[i];
  }
}

bool has_friction(std::span<const PointContact> contacts) {
  return std::any_of(contacts.begin(), contacts.end(),
                     [](const PointContact& c) { return c.friction > 0.0; });
}

void assemble_contact_problem(const Model& model, const Data& data, ContactWorkspace& ws,
                              std::span<const PointContact> contacts, bool with_friction) {
  const int m = static_cast<int>(contacts.size());
  const int r = with_friction ? 3 : 1;
  const int rows = r * m;
  ws.rows_per_contact = r;
  auto jacobian = ws.jacobian.topRows(rows);
  jacobian.setZero();
  double unit[6] = {0.0, 0.0, 0.0, 0.0, 0.0, 0.0};
  for (int c = 0; c < m; ++c) {
    const PointContact& contact = contacts[c];
    ws.axes[c] = contact_axes(contact.normal);
    ws.friction[c] = with_friction ? contact.friction : 0.0;
    ws.slide_direction[c].setZero();
    const Vec3 p = ws.points[c] = data.oMi[contact.body].act(contact.point);
    for (int j = contact.body; j > 0; j = model.parent[j]) {
      const Joint& joint = model.joints[j];
      for (int k = 0; k < joint.nv; ++k) {
        unit[k] = 1.0;
        const Motion s = data.oMi[j].act(joint_motion(joint, unit));
        unit[k] = 0.0;
        const Vec3 point_velocity = s.linear + s.angular.cross(p);
        for (int i = 0; i < r; ++i) {
          jacobian(r * c + i, joint.idx_v + k) = ws.axes[c].col(i).dot(point_velocity);
        }
      }
    }
  }
  for (int row = 0; row < rows; ++row) {
    auto column = ws.minv_jacobian_t.col(row);
    column = jacobian.row(row).transpose();
    ltdl_solve(data, column);
  }
  for (int i = 0; i < rows; ++i) {
    for (int k = i; k < rows; ++k) {
      ws.delassus(i, k) = ws.delassus(k, i) = jacobian.row(i).dot(ws.minv_jacobian_t.col(k));
    }
  }
}

ComplementarityResult solve_contact_problem(ContactWorkspace& ws, int contacts,
                                            const ContactOptions& options) {
  const int rows = ws.rows_per_contact * contacts;
  const auto a = ws.delassus.topLeftCorner(rows, rows);
  const auto b = ws.bias.head(rows);
  if (ws.rows_per_contact == 1) {
    return ws.lemke.solve(a, b, ws.lambda.head(rows), options.max_iterations, options.interruption);
  }
  return ws.cone.solve(a, b, std::span<const double>(ws.friction.data(), contacts),
                       std::span<const Eigen::Vector2d>(ws.slide_direction.data(), contacts),
                       ws.lambda.head(rows), options.tolerance, options.max_iterations,
                       options.interruption);
}

void classify_contacts(ContactWorkspace& ws, int contacts) {
  const int r = ws.rows_per_contact;
  for (int c = 0; c < contacts; ++c) {
    const double normal = ws.lambda[r * c];
    Vec3 local(normal, 0.0, 0.0);
    if (r == 3) local.tail<2>() = ws.lambda.segment<2>(3 * c + 1);
    ws.forces[c] = ws.axes[c] * local;
    if (normal <= 0.0) {
      ws.modes[c] = ContactMode::kSeparating;
    } else {
      const bool inside =
          local.tail<2>().norm() < (1.0 - kConeEdgeTolerance) * ws.friction[c] * normal;
      ws.modes[c] = inside ? ContactMode::kSticking : ContactMode::kSliding;
    }
  }
}

ComplementarityResult contact_dynamics(const Model& model, Data& data, ContactWorkspace& ws,
                                       const ConstVectorRef& q, const ConstVectorRef& v,
                                       const ConstVectorRef& tau,
                                       std::span<const PointContact> contacts,
                                       const ContactOptions& options) {
  assert(fits(model, data, q, v, tau));
  const int m = static_cast<int>(contacts.size());
  ws.acceleration = tau - nonlinear_effects(model, data, q, v);
  factor_mass_and_place_bodies(model, data, q);
  ltdl_solve(data, ws.acceleration);

  const bool with_friction = has_friction(contacts);
  assemble_contact_problem(model, data, ws, contacts, with_friction);
  const int r = ws.rows_per_contact;
  const int rows = r * m;
  ws.bias.head(rows).noalias() = ws.jacobian.topRows(rows).lazyProduct(ws.acceleration);
  for (int c = 0; c < m; ++c) {
    const int body = contacts[c].body;
    const Mat3& rotation = data.oMi[body].rotation;
    const Motion& vel = data.v[body];
    const Motion& acc = data.a_gf[body];
    const Vec3& x = contacts[c].point;
    const Vec3 point_velocity = vel.linear + vel.angular.cross(x);
    const Vec3 linear = acc.linear + rotation.transpose() * model.gravity;
    const Vec3 gamma =
        rotation * (linear + acc.angular.cross(x) + vel.angular.cross(point_velocity));
    for (int i = 0; i < r; ++i) ws.bias[r * c + i] += ws.axes[c].col(i).dot(gamma);
    if (with_friction && ws.friction[c] > 0.0) {
      const Vec3 world_velocity = rotation * point_velocity;
      const Eigen::Vector2d tangential(ws.axes[c].col(1).dot(world_velocity),
                                       ws.axes[c].col(2).dot(world_velocity));
      const double speed = tangential.norm();
      if (speed > options.slip_velocity) ws.slide_direction[c] = tangential / speed;
    }
  }
  ws.lambda.head(rows).setZero();
  const ComplementarityResult result = solve_contact_problem(ws, m, options);
  ws.acceleration.noalias() += ws.minv_jacobian_t.leftCols(rows).lazyProduct(ws.lambda.head(rows));
  classify_contacts(ws, m);
  return result;
}

}  // namespace torqued
