// Joint kinds and their motion subspaces (Featherstone 1987, §7.3-7.4, Table 8-1).
//
// Every kind below has a constant motion subspace S in the child (joint) frame, so the velocity
// product term c_J = Ṡ q̇ vanishes and each algorithm only needs S and the joint transform.
//   revolute / continuous: S = [0; u]             nq = nv = 1, angle about unit axis u
//   prismatic:             S = [u; 0]             nq = nv = 1, displacement along u
//   helical (screw):       S = [h u; u]           nq = nv = 1, pitch h in metres per radian
//   spherical:             S = [0; I3]            q = quaternion (x, y, z, w), v = ω in the child
//   frame planar:                S = [e_x e_y 0; 0 0 e_z] q = (x, y, θ) in the joint's xy plane,
//                                                  v = (v_x, v_y, ω) in the child frame
//   free-flyer:            S = I6                 q = (p, quaternion), v = [v; ω] in the child
//   frame
#pragma once

#include <cmath>
#include <cstdint>
#include <string>
#include <string_view>

#include "engine/spatial/sin_cos.hpp"
#include "engine/spatial/transform.hpp"

namespace torqued {

enum class JointType : std::uint8_t {
  kRevolute,
  kContinuous,
  kPrismatic,
  kHelical,
  kSpherical,
  kPlanar,
  kFreeFlyer,
  kFixed,
};

std::string_view joint_type_name(JointType type);
// Accepts the names above in lower case ("revolute", "free_flyer", ...) and URDF's "floating".
bool parse_joint_type(std::string_view name, JointType& type);

int joint_nq(JointType type);
int joint_nv(JointType type);

// The axis a 1-DOF joint moves along, specialised for the unit axes that most robot files use so
// that the joint rotation composes with its placement in a few multiplications.
enum class AxisKind : std::uint8_t { kX = 0, kY = 1, kZ = 2, kGeneral = 3 };

// The joint of one moving body, as the algorithms see it.
struct Joint {
  JointType type = JointType::kRevolute;
  AxisKind axis_kind = AxisKind::kGeneral;
  Vec3 axis = Vec3::UnitZ();  // unit vector, joint frame
  double pitch = 0.0;         // helical only
  int idx_q = 0;
  int idx_v = 0;
  int nq = 1;
  int nv = 1;
  // For 1-DOF joints: the motion subspace column S (see the table above).
  Motion subspace = Motion::Zero();
};

// The placement of the child frame in the joint frame for configuration q (q points at the
// joint's own nq coordinates).
Transform joint_transform(const Joint& joint, const double* q);

// placement · joint_transform(joint, q), written out per kind: a rotation about a unit axis
// changes two columns of the placement's rotation, so the product costs 12 multiplications
// instead of 27 plus the rotation itself. This is the hot path of every recursive algorithm.
inline void compose_joint_transform(const Transform& placement, const Joint& joint, const double* q,
                                    Transform& out);

// S · v_j for the joint's velocity coordinates v_j.
inline Motion joint_motion(const Joint& joint, const double* v);
// Adds S · v_j to m.
inline void add_joint_motion(const Joint& joint, const double* v, Motion& m);
// Sᵀ f, written to the joint's nv entries of tau.
inline void project_force(const Joint& joint, const Force& f, double* tau);

// The motion subspace as a 6 x nv matrix in [linear; angular] order.
Eigen::Matrix<double, 6, Eigen::Dynamic, 0, 6, 6> joint_subspace_matrix(const Joint& joint);

// Rotation matrix of a unit quaternion stored (x, y, z, w).
inline Mat3 quaternion_rotation(const double* xyzw) {
  return Eigen::Quaterniond(xyzw[3], xyzw[0], xyzw[1], xyzw[2]).toRotationMatrix();
}

inline void compose_joint_transform(const Transform& placement, const Joint& joint, const double* q,
                                    Transform& out) {
  const Mat3& r = placement.rotation;
  switch (joint.type) {
    case JointType::kRevolute:
    case JointType::kContinuous:
    case JointType::kHelical: {
      const double angle = q[0];
      double s, c;
      sin_cos(angle, s, c);
      switch (joint.axis_kind) {
        case AxisKind::kX:
          out.rotation.col(0) = r.col(0);
          out.rotation.col(1) = c * r.col(1) + s * r.col(2);
          out.rotation.col(2) = c * r.col(2) - s * r.col(1);
          break;
        case AxisKind::kY:
          out.rotation.col(0) = c * r.col(0) - s * r.col(2);
          out.rotation.col(1) = r.col(1);
          out.rotation.col(2) = s * r.col(0) + c * r.col(2);
          break;
        case AxisKind::kZ:
          out.rotation.col(0) = c * r.col(0) + s * r.col(1);
          out.rotation.col(1) = c * r.col(1) - s * r.col(0);
          out.rotation.col(2) = r.col(2);
          break;
        case AxisKind::kGeneral: {
          // Rodrigues: R(u, θ) = c I + s [u]× + (1 − c) u uᵀ.
          const Vec3& u = joint.axis;
          Mat3 rot = (1.0 - c) * (u * u.transpose());
          rot.diagonal().array() += c;
          rot(0, 1) -= s * u.z();
          rot(1, 0) += s * u.z();
          rot(0, 2) += s * u.y();
          rot(2, 0) -= s * u.y();
          rot(1, 2) -= s * u.x();
          rot(2, 1) += s * u.x();
          out.rotation.noalias() = r * rot;
          break;
        }
      }
      if (joint.type == JointType::kHelical) {
        out.translation = placement.translation + (joint.pitch * angle) * (r * joint.axis);
      } else {
        out.translation = placement.translation;
      }
      return;
    }
    case JointType::kPrismatic:
      out.rotation = r;
      if (joint.axis_kind == AxisKind::kGeneral) {
        out.translation = placement.translation + q[0] * (r * joint.axis);
      } else {
        out.translation = placement.translation + q[0] * r.col(static_cast<int>(joint.axis_kind));
      }
      return;
    case JointType::kSpherical:
      out.rotation.noalias() = r * quaternion_rotation(q);
      out.translation = placement.translation;
      return;
    case JointType::kPlanar: {
      double s, c;
      sin_cos(q[2], s, c);
      out.rotation.col(0) = c * r.col(0) + s * r.col(1);
      out.rotation.col(1) = c * r.col(1) - s * r.col(0);
      out.rotation.col(2) = r.col(2);
      out.translation = placement.translation + q[0] * r.col(0) + q[1] * r.col(1);
      return;
    }
    case JointType::kFreeFlyer:
      out.rotation.noalias() = r * quaternion_rotation(q + 3);
      out.translation = placement.translation + r * Vec3(q[0], q[1], q[2]);
      return;
    case JointType::kFixed:
      out = placement;
      return;
  }
}

inline void add_joint_motion(const Joint& joint, const double* v, Motion& m) {
  switch (joint.type) {
    case JointType::kSpherical:
      m.angular += Vec3(v[0], v[1], v[2]);
      return;
    case JointType::kPlanar:
      m.linear.x() += v[0];
      m.linear.y() += v[1];
      m.angular.z() += v[2];
      return;
    case JointType::kFreeFlyer:
      m.linear += Vec3(v[0], v[1], v[2]);
      m.angular += Vec3(v[3], v[4], v[5]);
      return;
    case JointType::kFixed:
      return;
    default:
      m.linear += v[0] * joint.subspace.linear;
      m.angular += v[0] * joint.subspace.angular;
      return;
  }
}

inline Motion joint_motion(const Joint& joint, const double* v) {
  Motion m = Motion::Zero();
  add_joint_motion(joint, v, m);
  return m;
}

inline void project_force(const Joint& joint, const Force& f, double* tau) {
  switch (joint.type) {
    case JointType::kSpherical:
      tau[0] = f.angular.x();
      tau[1] = f.angular.y();
      tau[2] = f.angular.z();
      return;
    case JointType::kPlanar:
      tau[0] = f.linear.x();
      tau[1] = f.linear.y();
      tau[2] = f.angular.z();
      return;
    case JointType::kFreeFlyer:
      tau[0] = f.linear.x();
      tau[1] = f.linear.y();
      tau[2] = f.linear.z();
      tau[3] = f.angular.x();
      tau[4] = f.angular.y();
      tau[5] = f.angular.z();
      return;
    case JointType::kFixed:
      return;
    default:
      tau[0] = joint.subspace.dot(f);
      return;
  }
}

}  // namespace torqued
