// Configuration-space operations on the joints' Lie groups (Kim 2012, §1; Featherstone 1987,
// §7.4 for the quaternion joints). Velocities of spherical, planar and free-flyer joints are
// expressed in the child frame, so integration composes on the right:
//   spherical  R ← R exp([ω]×)
//   planar     (R, p) ← (R, p) exp_SE(2)(v_x, v_y, ω)
//   free-flyer (R, p) ← (R, p) exp_SE(3)(v, ω)
#include "engine/model/configuration.hpp"

#include <cmath>
#include <numbers>

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

Eigen::Quaterniond so3_exp(const Vec3& w) {
  const double angle = w.norm();
  if (angle < 1e-12)
    return Eigen::Quaterniond(1.0, 0.5 * w.x(), 0.5 * w.y(), 0.5 * w.z()).normalized();
  return Eigen::Quaterniond(Eigen::AngleAxisd(angle, w / angle));
}

Vec3 so3_log(const Eigen::Quaterniond& quat) {
  const Eigen::AngleAxisd aa(quat.normalized());
  return aa.angle() * aa.axis();
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

Mat3 se3_left_jacobian_inverse(const Vec3& w) {
  const double t2 = w.squaredNorm();
  const Mat3 wx = skew(w);
  double b;
  if (t2 < 1e-8) {
    b = 1.0 / 12.0 + t2 / 720.0;
  } else {
    const double t = std::sqrt(t2);
    b = (1.0 - t * std::sin(t) / (2.0 * (1.0 - std::cos(t)))) / t2;
  }
  return Mat3::Identity() - 0.5 * wx + b * wx * wx;
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

Eigen::VectorXd difference(const Model& model, const Eigen::VectorXd& q0,
                           const Eigen::VectorXd& q1) {
  Eigen::VectorXd out(model.nv);
  for (int i = 1; i < model.nbodies(); ++i) {
    const Joint& joint = model.joints[i];
    const double* a = q0.data() + joint.idx_q;
    const double* b = q1.data() + joint.idx_q;
    double* vo = out.data() + joint.idx_v;
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
        const Vec3 lin = se3_left_jacobian_inverse(w) * local;
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
  return out;
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
