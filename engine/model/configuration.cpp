// Configuration-space operations on the joints' Lie groups (Kim 2012, §1; Featherstone 1987,
// §7.4 for the quaternion joints). Velocities of spherical, planar and free-flyer joints are
// expressed in the child frame, so integration composes on the right:
//   spherical  R ← R exp([ω]×)
//   planar     (R, p) ← (R, p) exp_SE(2)(v_x, v_y, ω)
//   free-flyer (R, p) ← (R, p) exp_SE(3)(v, ω)
#include "engine/model/configuration.hpp"

#include <cmath>
#include <numbers>

#include "engine/spatial/lie_group.hpp"

namespace torqued {

namespace {

Eigen::Quaterniond read_quaternion(const double* xyzw) {
  return Eigen::Quaterniond(xyzw[3], xyzw[0], xyzw[1], xyzw[2]);
}

void write_quaternion(const Eigen::Quaterniond& quat, double* xyzw) {
  xyzw[0] = quat.x();
  xyzw[1] = quat.y();
  xyzw[2] = quat.z();
  xyzw[3] = quat.w();
}

// V(ω) of the SE(3) exponential: p = V(ω) v. Series below 1e-4 rad keep full precision.
Mat3 se3_left_jacobian(const Vec3& w) {
  const double t2 = w.squaredNorm();
  const Mat3 wx = skew(w);
  double a, b;
  if (t2 < 1e-8) {
    a = 0.5 - t2 / 24.0;
    b = 1.0 / 6.0 - t2 / 120.0;
  } else {
    const double t = std::sqrt(t2);
    a = (1.0 - std::cos(t)) / t2;
    b = (t - std::sin(t)) / (t2 * t);
  }
  return Mat3::Identity() + a * wx + b * wx * wx;
}

// The SE(2) analogue: displacement in the moving frame for a twist (v_x, v_y, ω) over unit time.
Eigen::Matrix2d se2_left_jacobian(double w) {
  double s, c;
  if (std::abs(w) < 1e-6) {
    s = 1.0 - w * w / 6.0;
    c = 0.5 * w - w * w * w / 24.0;
  } else {
    s = std::sin(w) / w;
    c = (1.0 - std::cos(w)) / w;
  }
  Eigen::Matrix2d v;
  v << s, -c, c, s;
  return v;
}

double uniform(std::mt19937_64& rng, double lo, double hi) {
  const double u = static_cast<double>(rng() >> 11) * 0x1.0p-53;
  return lo + (hi - lo) * u;
}

Eigen::Quaterniond random_quaternion(std::mt19937_64& rng) {
  for (;;) {
    Eigen::Vector4d x(uniform(rng, -1, 1), uniform(rng, -1, 1), uniform(rng, -1, 1),
                      uniform(rng, -1, 1));
    const double n2 = x.squaredNorm();
    if (n2 > 0.01 && n2 <= 1.0) {
      x /= std::sqrt(n2);
      return Eigen::Quaterniond(x[3], x[0], x[1], x[2]);
    }
  }
}

// J_r of SE(2) at ξ = (ρ, θ), with k = exp_coefficients(θ²).
Eigen::Matrix3d planar_right_jacobian(const Eigen::Vector2d& rho, double theta,
                                      const ExpCoefficients& k) {
  const double sinc = 1.0 - theta * theta * k.b;  // sin θ / θ
  const double cosc = theta * k.a;                // (1 − cos θ) / θ
  Eigen::Matrix3d jacobian = Eigen::Matrix3d::Identity();
  jacobian(0, 0) = sinc;
  jacobian(0, 1) = cosc;
  jacobian(1, 0) = -cosc;
  jacobian(1, 1) = sinc;
  jacobian(0, 2) = rho.x() * theta * k.b - rho.y() * k.a;
  jacobian(1, 2) = rho.x() * k.a + rho.y() * theta * k.b;
  return jacobian;
}

// q1 ⊖ q0 for one joint, its nq values at a and b, into its nv values at out.
void joint_difference(const Joint& joint, const double* a, const double* b, double* vo) {
  switch (joint.type) {
    case JointType::kSpherical: {
      const Vec3 w = so3_log(read_quaternion(a).conjugate() * read_quaternion(b));
      vo[0] = w.x();
      vo[1] = w.y();
      vo[2] = w.z();
      break;
    }
    case JointType::kPlanar: {
      const double dtheta = b[2] - a[2];
      const double c = std::cos(a[2]);
      const double s = std::sin(a[2]);
      const Eigen::Vector2d local(c * (b[0] - a[0]) + s * (b[1] - a[1]),
                                  -s * (b[0] - a[0]) + c * (b[1] - a[1]));
      const Eigen::Vector2d vxy = se2_left_jacobian(dtheta).inverse() * local;
      vo[0] = vxy.x();
      vo[1] = vxy.y();
      vo[2] = dtheta;
      break;
    }
    case JointType::kFreeFlyer: {
      const Eigen::Quaterniond ra = read_quaternion(a + 3);
      const Eigen::Quaterniond rb = read_quaternion(b + 3);
      const Vec3 w = so3_log(ra.conjugate() * rb);
      const Vec3 local = ra.conjugate() * Vec3(b[0] - a[0], b[1] - a[1], b[2] - a[2]);
      const Vec3 lin = so3_left_jacobian_inverse(w) * local;
      for (int k = 0; k < 3; ++k) {
        vo[k] = lin[k];
        vo[3 + k] = w[k];
      }
      break;
    }
    case JointType::kFixed:
      break;
    default:
      vo[0] = b[0] - a[0];
      break;
  }
}

}  // namespace

Eigen::VectorXd integrate(const Model& model, const Eigen::VectorXd& q, const Eigen::VectorXd& v) {
  Eigen::VectorXd out(q.size());
  integrate(model, q, v, out);
  return out;
}

void integrate(const Model& model, const Eigen::Ref<const Eigen::VectorXd>& q,
               const Eigen::Ref<const Eigen::VectorXd>& v, Eigen::Ref<Eigen::VectorXd> out) {
  if (out.data() != q.data()) out = q;
  for (int i = 1; i < model.nbodies(); ++i) {
    const Joint& joint = model.joints[i];
    double* qo = out.data() + joint.idx_q;
    const double* vi = v.data() + joint.idx_v;
    switch (joint.type) {
      case JointType::kSpherical:
        write_quaternion((read_quaternion(qo) * so3_exp(Vec3(vi[0], vi[1], vi[2]))).normalized(),
                         qo);
        break;
      case JointType::kPlanar: {
        const Eigen::Vector2d d = se2_left_jacobian(vi[2]) * Eigen::Vector2d(vi[0], vi[1]);
        const double c = std::cos(qo[2]);
        const double s = std::sin(qo[2]);
        qo[0] += c * d.x() - s * d.y();
        qo[1] += s * d.x() + c * d.y();
        qo[2] += vi[2];
        break;
      }
      case JointType::kFreeFlyer: {
        const Vec3 w(vi[3], vi[4], vi[5]);
        const Eigen::Quaterniond rot = read_quaternion(qo + 3);
        const Vec3 dp = rot * (se3_left_jacobian(w) * Vec3(vi[0], vi[1], vi[2]));
        qo[0] += dp.x();
        qo[1] += dp.y();
        qo[2] += dp.z();
        write_quaternion((rot * so3_exp(w)).normalized(), qo + 3);
        break;
      }
      case JointType::kFixed:
        break;
      default:
        qo[0] += vi[0];
        break;
    }
  }
}

void integrate_jacobians(const Model& model, const Eigen::Ref<const Eigen::VectorXd>& v,
                         Eigen::Ref<Eigen::MatrixXd> dq, Eigen::Ref<Eigen::MatrixXd> dv) {
  for (int i = 1; i < model.nbodies(); ++i) {
    const Joint& joint = model.joints[i];
    const int at = joint.idx_v;
    const double* vi = v.data() + at;
    switch (joint.type) {
      case JointType::kSpherical: {
        const Vec3 w(vi[0], vi[1], vi[2]);
        Mat3 rotation, right_jacobian;
        so3_exp_and_right_jacobian(w, exp_coefficients(w.squaredNorm()), rotation, right_jacobian);
        dq.block<3, 3>(at, at) = rotation.transpose();
        dv.block<3, 3>(at, at) = right_jacobian;
        break;
      }
      case JointType::kPlanar: {
        // ξ = (ρ, θ): Exp(ξ) = (R(θ), p = V(θ) ρ); Ad of (R, p) is [[R, (p_y, −p_x)ᵀ], [0, 1]].
        const double theta = vi[2];
        const ExpCoefficients k = exp_coefficients(theta * theta);
        const Eigen::Vector2d rho(vi[0], vi[1]);
        const Eigen::Vector2d p = se2_left_jacobian(theta) * rho;
        const Eigen::Rotation2Dd rotation(theta);
        const Eigen::Matrix2d rt = rotation.toRotationMatrix().transpose();
        const Eigen::Vector2d p_inverse = -rt * p;
        auto q_block = dq.block<3, 3>(at, at);
        q_block.setIdentity();
        q_block.topLeftCorner<2, 2>() = rt;
        q_block(0, 2) = p_inverse.y();
        q_block(1, 2) = -p_inverse.x();
        dv.block<3, 3>(at, at) = planar_right_jacobian(rho, theta, k);
        break;
      }
      case JointType::kFreeFlyer: {
        // ξ = (ρ, ω), linear first. Exp(ξ) = (R, p = J_l(ω) ρ); Ad(Exp(ξ)⁻¹) =
        // [[Rᵀ, −Rᵀ [p]×], [0, Rᵀ]]; J_r(ξ) = [[J_r(ω), Q(−ρ, −ω)], [0, J_r(ω)]].
        const Vec3 rho(vi[0], vi[1], vi[2]);
        const Vec3 w(vi[3], vi[4], vi[5]);
        const ExpCoefficients k = exp_coefficients(w.squaredNorm());
        Mat3 rotation, right_jacobian;
        so3_exp_and_right_jacobian(w, k, rotation, right_jacobian);
        // J_l(ω) = J_r(ω)ᵀ.
        const Vec3 p = right_jacobian.transpose() * rho;
        const Mat3 rt = rotation.transpose();
        auto q_block = dq.block<6, 6>(at, at);
        q_block.topLeftCorner<3, 3>() = rt;
        q_block.topRightCorner<3, 3>().noalias() = -rt * skew(p);
        q_block.bottomLeftCorner<3, 3>().setZero();
        q_block.bottomRightCorner<3, 3>() = rt;
        auto v_block = dv.block<6, 6>(at, at);
        v_block.topLeftCorner<3, 3>() = right_jacobian;
        v_block.topRightCorner<3, 3>() = se3_jacobian_coupling(-rho, -w, k);
        v_block.bottomLeftCorner<3, 3>().setZero();
        v_block.bottomRightCorner<3, 3>() = right_jacobian;
        break;
      }
      case JointType::kFixed:
        break;
      default:
        dq(at, at) = 1.0;
        dv(at, at) = 1.0;
        break;
    }
  }
}

Eigen::VectorXd difference(const Model& model, const Eigen::VectorXd& q0,
                           const Eigen::VectorXd& q1) {
  Eigen::VectorXd out(model.nv);
  difference(model, q0, q1, out);
  return out;
}

void difference(const Model& model, const Eigen::Ref<const Eigen::VectorXd>& q0,
                const Eigen::Ref<const Eigen::VectorXd>& q1, Eigen::Ref<Eigen::VectorXd> out) {
  for (int i = 1; i < model.nbodies(); ++i) {
    const Joint& joint = model.joints[i];
    joint_difference(joint, q0.data() + joint.idx_q, q1.data() + joint.idx_q,
                     out.data() + joint.idx_v);
  }
}

void difference_jacobian(const Model& model, const Eigen::Ref<const Eigen::VectorXd>& q0,
                         const Eigen::Ref<const Eigen::VectorXd>& q1,
                         Eigen::Ref<Eigen::MatrixXd> out) {
  for (int i = 1; i < model.nbodies(); ++i) {
    const Joint& joint = model.joints[i];
    const int at = joint.idx_v;
    double r[6];
    switch (joint.type) {
      case JointType::kSpherical:
        joint_difference(joint, q0.data() + joint.idx_q, q1.data() + joint.idx_q, r);
        out.block<3, 3>(at, at) = so3_right_jacobian_inverse(Vec3(r[0], r[1], r[2]));
        break;
      case JointType::kPlanar:
        joint_difference(joint, q0.data() + joint.idx_q, q1.data() + joint.idx_q, r);
        out.block<3, 3>(at, at) =
            planar_right_jacobian({r[0], r[1]}, r[2], exp_coefficients(r[2] * r[2])).inverse();
        break;
      case JointType::kFreeFlyer:
        joint_difference(joint, q0.data() + joint.idx_q, q1.data() + joint.idx_q, r);
        out.block<6, 6>(at, at) = se3_right_jacobian_inverse(Eigen::Map<const Vec6>(r));
        break;
      case JointType::kFixed:
        break;
      default:
        out(at, at) = 1.0;
        break;
    }
  }
}

void normalize_configuration(const Model& model, Eigen::VectorXd& q) {
  for (int i = 1; i < model.nbodies(); ++i) {
    const Joint& joint = model.joints[i];
    if (joint.type == JointType::kSpherical) {
      q.segment<4>(joint.idx_q).normalize();
    } else if (joint.type == JointType::kFreeFlyer) {
      q.segment<4>(joint.idx_q + 3).normalize();
    }
  }
}

double quaternion_norm_error(const Model& model, const double* q) {
  double worst = 0.0;
  for (int i = 1; i < model.nbodies(); ++i) {
    const Joint& joint = model.joints[i];
    int offset = -1;
    if (joint.type == JointType::kSpherical) offset = joint.idx_q;
    if (joint.type == JointType::kFreeFlyer) offset = joint.idx_q + 3;
    if (offset < 0) continue;
    const double norm = Eigen::Map<const Eigen::Vector4d>(q + offset).norm();
    worst = std::max(worst, std::abs(norm - 1.0));
  }
  return worst;
}

Eigen::VectorXd random_configuration(const Model& model, std::mt19937_64& rng) {
  Eigen::VectorXd q(model.nq);
  for (int i = 1; i < model.nbodies(); ++i) {
    const Joint& joint = model.joints[i];
    double* qo = q.data() + joint.idx_q;
    const JointLimits& limits = model.limits[i];
    const bool bounded = std::isfinite(limits.lower) && std::isfinite(limits.upper);
    switch (joint.type) {
      case JointType::kSpherical:
        write_quaternion(random_quaternion(rng), qo);
        break;
      case JointType::kPlanar:
        qo[0] = uniform(rng, -1.0, 1.0);
        qo[1] = uniform(rng, -1.0, 1.0);
        qo[2] = uniform(rng, -std::numbers::pi, std::numbers::pi);
        break;
      case JointType::kFreeFlyer:
        for (int k = 0; k < 3; ++k) qo[k] = uniform(rng, -1.0, 1.0);
        write_quaternion(random_quaternion(rng), qo + 3);
        break;
      case JointType::kFixed:
        break;
      case JointType::kPrismatic:
        qo[0] = bounded ? uniform(rng, limits.lower, limits.upper) : uniform(rng, -1.0, 1.0);
        break;
      default:
        qo[0] = bounded ? uniform(rng, limits.lower, limits.upper)
                        : uniform(rng, -std::numbers::pi, std::numbers::pi);
        break;
    }
  }
  return q;
}

}  // namespace torqued
