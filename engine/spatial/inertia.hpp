// Rigid-body and articulated-body inertias (Featherstone 1987, §3.2-3.6 and §8.3).
//
// RigidInertia keeps the 10 inertial parameters about the frame origin: mass m, first moment
// h = m·c (c: centre of mass) and the rotational inertia about the origin I_O. In that form the
// sum of two inertias is the sum of their parameters, which is what the composite-rigid-body
// algorithm needs, and the momentum of a body moving with twist (v, w) is
//   linear  = m v − h × w,        angular = I_O w + h × v.
// An articulated-body inertia is a general symmetric 6x6 (it is not a rigid inertia), stored as
// a Mat6 in [linear; angular] order; only ABA uses it.
#pragma once

#include "engine/spatial/transform.hpp"

namespace torqued {

struct RigidInertia {
  double mass = 0.0;
  Vec3 first_moment = Vec3::Zero();  // h = m c
  Mat3 rotational = Mat3::Zero();    // I_O, about the frame origin

  static RigidInertia Zero() { return {}; }
  // From the mass, the centre of mass and the rotational inertia about the centre of mass, all
  // expressed in this frame (URDF's <inertial> after its origin is applied).
  static RigidInertia FromMassComInertia(double mass, const Vec3& com, const Mat3& inertia_com) {
    RigidInertia y;
    y.mass = mass;
    y.first_moment = mass * com;
    y.rotational =
        inertia_com + mass * (com.squaredNorm() * Mat3::Identity() - com * com.transpose());
    return y;
  }

  Vec3 com() const { return mass > 0.0 ? Vec3(first_moment / mass) : Vec3::Zero(); }
  // Rotational inertia about the centre of mass.
  Mat3 inertia_about_com() const {
    if (mass <= 0.0) return rotational;
    const Vec3 c = com();
    return rotational - mass * (c.squaredNorm() * Mat3::Identity() - c * c.transpose());
  }

  RigidInertia operator+(const RigidInertia& y) const {
    return {mass + y.mass, first_moment + y.first_moment, rotational + y.rotational};
  }
  RigidInertia& operator+=(const RigidInertia& y) {
    mass += y.mass;
    first_moment += y.first_moment;
    rotational += y.rotational;
    return *this;
  }

  // Momentum of the body moving with twist m.
  Force operator*(const Motion& m) const {
    return {mass * m.linear - first_moment.cross(m.angular),
            rotational * m.angular + first_moment.cross(m.linear)};
  }

  // (*this) * m for m = e_axis in the angular part (a rotation about a coordinate axis at unit
  // rate): a column of the rotational inertia and −first_moment × e_axis, no products.
  template <int kAxis>
  Force times_unit_rotation() const {
    constexpr int b = (kAxis + 1) % 3;
    constexpr int c = (kAxis + 2) % 3;
    Force f;
    f.linear[kAxis] = 0.0;
    f.linear[b] = -first_moment[c];
    f.linear[c] = first_moment[b];
    f.angular = rotational.col(kAxis);
    return f;
  }

  // The same body expressed in frame a, given aMb (this inertia is expressed in b). Shifting the
  // origin by p: I_O' = R I_O Rᵀ − [Rh]×[p]× − [p]×[Rh]× − m [p]×².
  RigidInertia transformed_by(const Transform& aMb) const {
    const Mat3& r = aMb.rotation;
    const Vec3& p = aMb.translation;
    const Vec3 rh = r * first_moment;
    RigidInertia y;
    y.mass = mass;
    y.first_moment = rh + mass * p;
    // R I_O Rᵀ is symmetric: form T = R I_O once, then only the upper triangle of T Rᵀ. Written
    // out because Eigen's expression for the whole formula builds several 3x3 temporaries.
    const Mat3 t = r * rotational;
    // −[a]×[b]× − [b]×[a]× = 2(a·b) I − a bᵀ − b aᵀ and −[p]×² = (p·p) I − p pᵀ, with a = Rh.
    const double diagonal_shift = 2.0 * rh.dot(p) + mass * p.squaredNorm();
    for (int i = 0; i < 3; ++i) {
      for (int j = i; j < 3; ++j) {
        double value = t(i, 0) * r(j, 0) + t(i, 1) * r(j, 1) + t(i, 2) * r(j, 2) -
                       (rh[i] * p[j] + p[i] * rh[j] + mass * p[i] * p[j]);
        if (i == j) value += diagonal_shift;
        y.rotational(i, j) = value;
        y.rotational(j, i) = value;
      }
    }
    return y;
  }

  // The 6x6 matrix acting on [linear; angular] motions.
  Mat6 matrix() const {
    Mat6 x;
    x.topLeftCorner<3, 3>() = mass * Mat3::Identity();
    x.topRightCorner<3, 3>() = -skew(first_moment);
    x.bottomLeftCorner<3, 3>() = skew(first_moment);
    x.bottomRightCorner<3, 3>() = rotational;
    return x;
  }
};

// Articulated inertia expressed in b, moved to a given aMb: the congruence aXb* I bXa written in
// 3x3 blocks (I = [[A, B], [Bᵀ, C]] in [linear; angular] order). Rotating gives A', B', C' and
// shifting the origin by p gives
//   A'' = A',  B'' = B' − A'[p]×,  C'' = C' + [p]×B' − B'ᵀ[p]× − [p]×A'[p]×.
// The result is added into `out` (ABA accumulates children into their parent).
inline void add_transformed_articulated_inertia(const Transform& aMb, const Mat6& inertia,
                                                Mat6& out) {
  const Mat3& r = aMb.rotation;
  const Mat3 px = skew(aMb.translation);
  const Mat3 a = r * inertia.topLeftCorner<3, 3>() * r.transpose();
  const Mat3 b = r * inertia.topRightCorner<3, 3>() * r.transpose();
  const Mat3 c = r * inertia.bottomRightCorner<3, 3>() * r.transpose();
  const Mat3 b2 = b - a * px;
  const Mat3 pxb2 = px * b2;
  out.topLeftCorner<3, 3>() += a;
  out.topRightCorner<3, 3>() += b2;
  out.bottomLeftCorner<3, 3>() += b2.transpose();
  // C'' = C' + [p]×B'' − B'ᵀ[p]×, using B'' = B' − A'[p]× (so [p]×B'' already holds −[p]×A'[p]×).
  out.bottomRightCorner<3, 3>() += c + pxb2 - b.transpose() * px;
}

inline Force operator*(const Mat6& inertia, const Motion& m) {
  return {
      inertia.topLeftCorner<3, 3>() * m.linear + inertia.topRightCorner<3, 3>() * m.angular,
      inertia.bottomLeftCorner<3, 3>() * m.linear + inertia.bottomRightCorner<3, 3>() * m.angular};
}

}  // namespace torqued
