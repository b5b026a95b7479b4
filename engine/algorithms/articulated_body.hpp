// The articulated-body core: the passes of the articulated-body algorithm (Featherstone 1987,
// ch. 6, eqs 6.37-6.47; §7.2-7.4 for trees and multi-DOF joints; Kim 2012, §2.2) as small
// functions of one body, in world coordinates, with a mask saying which DOFs have their force
// given and which their acceleration (hybrid dynamics, Featherstone 1987, §7.5.2; Kim 2012, §2.3;
// spatial_v2's HD.m is FDab.m with that mask). ABA, hybrid dynamics, floating-base inverse
// dynamics, the innovations factorization and M⁻¹ are all written with them.
//
// World coordinates turn the congruence ᵖX* I^A ⁱX_p of each body into a plain addition; what
// they cost instead is one rigid-inertia rotation per body (10 parameters, not 21). Gravity is a
// fictitious base acceleration −g. Per joint, S splits into the columns S_f (τ given) and S_a (q̈
// given); ABA has S_a empty:
//   pass 1, i = 1..N (load_body):     ⁰S_i,  v_i = v_λ + ⁰S_i q̇_i,  c_i = v_i × ⁰S_i q̇_i + S_a q̈_a,
//                                     I^A_i = ⁰I_i,  p^A_i = v_i ×* ⁰I_i v_i − f_ext,i
//   pass 2, i = N..1 (eliminate):     U = I^A_i S_f,  D = S_fᵀ U,
//                                     I^A_λ += I^A_i − U D⁻¹ Uᵀ       (just I^A_i when S_f is
//                                     empty)
//            (propagate_bias):        u = τ_f − S_fᵀ p^A_i,
//                                     p^A_λ += p^A_i + I^A_i c_i + U D⁻¹ (u − Uᵀ c_i)
//   pass 3, i = 1..N (accelerate):    a' = a_λ + c_i,  q̈_f = D⁻¹ (u − Uᵀ a'),  a_i = a' + S_f q̈_f,
//                                     τ_a = S_aᵀ (I^A_i a_i + p^A_i)                        (7.38)
// The force across joint i is I^A_i a_i + p^A_i because I^A_i and p^A_i describe the whole
// subtree i with its force-given joints articulated and its acceleration-given joints driven.
// Pass 2's two halves are separate because the Riccati half (eliminate) needs q only: the
// innovations factorization and M⁻¹ run it alone and then their own right-hand sides. The
// functions of one body work in the ArticulatedBodyWorkspace, which their caller binds
// (kAbaWorkspaces).
#pragma once

#include <Eigen/Cholesky>
#include <cmath>
#include <span>
#include <string>
#include <type_traits>

#include "engine/algorithms/aba.hpp"
#include "engine/algorithms/hybrid_dynamics.hpp"
#include "engine/algorithms/world_frame.hpp"

namespace torqued::articulated {

// A pivot D = Sᵀ I^A S below this fraction of the articulated inertia's trace is a joint that
// moves no inertia: relative, so that it holds in any units.
inline constexpr double kSingularPivot = 1e-12;

[[noreturn]] inline void throw_singular(const Model& model, int body) {
  throw SingularSystemError("forward dynamics is singular at joint '" + model.joint_names[body] +
                            "': it moves no inertia (a massless subtree or a mass on its axis)");
}

inline bool is_degenerate(double pivot, const Mat6& articulated) {
  return !(pivot > kSingularPivot * articulated.trace()) || !std::isfinite(pivot);
}

// The 6 doubles of a [linear; angular] column as a Motion.
inline Motion motion_at(const double* x) {
  return {Vec3(x[0], x[1], x[2]), Vec3(x[3], x[4], x[5])};
}

// The masks. Each says which DOFs have their force given (the others their acceleration) and
// holds the given values; kEveryForceGiven lets ABA's instantiation drop the tests.
struct EveryForceGiven {  // ABA, the factorization, M⁻¹
  static constexpr bool kEveryForceGiven = true;
  const double* tau;
  bool force_given(int) const { return true; }
  double force(int dof) const { return tau[dof]; }
  double acceleration(int) const { return 0.0; }
};

struct GivenInputs {  // hybrid dynamics: the caller's mask
  static constexpr bool kEveryForceGiven = false;
  const DofInput* input;
  const double* tau;
  const double* ddq;
  bool force_given(int dof) const { return input[dof] == DofInput::kForce; }
  double force(int dof) const { return tau[dof]; }
  double acceleration(int dof) const { return ddq[dof]; }
};

struct UnactuatedRoot {  // floating-base inverse dynamics: zero force on the free-flyer root
  static constexpr bool kEveryForceGiven = false;
  const double* ddq;
  bool force_given(int dof) const { return dof < 6; }
  double force(int) const { return 0.0; }
  double acceleration(int dof) const { return ddq[dof]; }
};

// The force-given columns of a joint: their count and their offsets within the joint.
struct ForceColumns {
  int count = 0;
  int offset[6];
};

template <class Mask>
ForceColumns force_columns(const Joint& joint, const Mask& mask) {
  ForceColumns f;
  for (int k = 0; k < joint.nv; ++k) {
    if (mask.force_given(joint.idx_v + k)) f.offset[f.count++] = k;
  }
  return f;
}

// Pass 1 for the Riccati recursion alone: places body i and sets I^A_i = ⁰I_i.
inline void load_inertia(const Model& model, Data& data, int i, const double* q) {
  ArticulatedBodyWorkspace& w = data.workspace<ArticulatedBodyWorkspace>();
  w.Ia[i] = model.inertias[i].transformed_by(place_in_world(model, data, i, q)).matrix();
}

// Pass 1: places body i, its velocity, c_i, I^A_i and p^A_i (data.ov[0] must be zero).
template <class Mask>
void load_body(const Model& model, Data& data, int i, const double* q, const double* v,
               std::span<const Force> external_forces, const Mask& mask) {
  ArticulatedBodyWorkspace& w = data.workspace<ArticulatedBodyWorkspace>();
  const Joint& joint = model.joints[i];
  const Transform& oMi = place_in_world(model, data, i, q);
  const Motion vj = world_joint_motion(joint, data, v);
  const Motion& vel = data.ov[i] = data.ov[model.parent[i]] + vj;
  Motion& c = w.c[i];
  c = vel.cross(vj);
  if constexpr (!Mask::kEveryForceGiven) {
    const double* s = data.oS.data() + 6 * joint.idx_v;
    for (int k = 0; k < joint.nv; ++k) {
      const int dof = joint.idx_v + k;
      if (!mask.force_given(dof)) c += motion_at(s + 6 * k) * mask.acceleration(dof);
    }
  }
  const RigidInertia inertia = model.inertias[i].transformed_by(oMi);
  w.Ia[i] = inertia.matrix();
  w.pa[i] = vel.cross(inertia * vel);
  if (!external_forces.empty()) w.pa[i] -= oMi.act(external_forces[i]);
}

// Each pass is written once, for the K force-given columns of a joint, with K known to the
// compiler for the common cases: 1 (revolute, prismatic, helical: the blocks are 6-vectors and the
// pivot a scalar), 6 (free-flyers) and 0 (fixed joints, and joints whose every acceleration is
// given: S_f is empty); Eigen::Dynamic, at most 6, for the others. with_column_count() calls
// step(std::integral_constant<int, K>) with the K for `count` columns.
template <class Step>
void with_column_count(int count, Step&& step) {
  switch (count) {
    case 0:
      step(std::integral_constant<int, 0>{});
      break;
    case 1:
      step(std::integral_constant<int, 1>{});
      break;
    case 6:
      step(std::integral_constant<int, 6>{});
      break;
    default:
      step(std::integral_constant<int, Eigen::Dynamic>{});
  }
}
template <int K>
inline constexpr int kMaxColumns = K == Eigen::Dynamic ? 6 : K;
template <int K>
using Columns = Eigen::Matrix<double, 6, K, 0, 6, kMaxColumns<K>>;
template <int K>
using Square = Eigen::Matrix<double, K, K, 0, kMaxColumns<K>, kMaxColumns<K>>;
template <int K>
using Entries = Eigen::Matrix<double, K, 1, 0, kMaxColumns<K>, 1>;

// The force-given columns of a joint out of a 6 x nv matrix (data.oS, the workspace's U), and
// back, each through a map of its 6 doubles: Eigen sizes a column of a matrix without columns as
// empty, so .col(r) would not compile for K = 0.
template <int K>
Columns<K> gather(const Eigen::Matrix<double, 6, Eigen::Dynamic>& all, const Joint& joint,
                  const ForceColumns& f) {
  Columns<K> out(6, f.count);
  for (int r = 0; r < out.cols(); ++r) {
    Vec6::Map(out.data() + 6 * r) = all.col(joint.idx_v + f.offset[r]);
  }
  return out;
}

template <int K>
void scatter(const Columns<K>& columns, const Joint& joint, const ForceColumns& f,
             Eigen::Matrix<double, 6, Eigen::Dynamic>& all) {
  for (int r = 0; r < columns.cols(); ++r) {
    all.col(joint.idx_v + f.offset[r]) = Vec6::Map(columns.data() + 6 * r);
  }
}

// D⁻¹ for a pivot D = Sᵀ U (K x K, U = I^A S), or SingularSystemError naming the joint when D
// is not positive definite: the reciprocal of one column's, the Cholesky factors' inverse of more.
template <int K>
Square<K> invert_pivot(const Model& model, int body, const Columns<K>& s, const Columns<K>& u,
                       const Mat6& articulated) {
  const int k = static_cast<int>(s.cols());
  Square<K> d(k, k);
  d.noalias() = s.transpose() * u;
  if constexpr (K == 0) {
    return d;
  } else if constexpr (K == 1) {
    if (is_degenerate(d(0, 0), articulated)) throw_singular(model, body);
    return Square<1>(1.0 / d(0, 0));
  } else {
    const Eigen::LLT<Square<K>> llt(d);
    if (llt.info() != Eigen::Success) throw_singular(model, body);
    const double smallest = llt.matrixLLT().diagonal().minCoeff();
    if (is_degenerate(smallest * smallest, articulated)) throw_singular(model, body);
    Square<K> d_inv = Square<K>::Identity(k, k);
    llt.solveInPlace(d_inv);
    return d_inv;
  }
}

template <int K>
void eliminate_columns(const Model& model, Data& data, int i, const ForceColumns& f) {
  ArticulatedBodyWorkspace& w = data.workspace<ArticulatedBodyWorkspace>();
  const Joint& joint = model.joints[i];
  const int parent = model.parent[i];
  const Mat6& ia = w.Ia[i];
  if constexpr (K == 0) {
    // No force-given column: the body hands its parent its whole articulated inertia. (Eigen's
    // products of 6 x 0 blocks offset their null data, which UBSan reports.)
    if (parent > 0) w.Ia[parent] += ia;
    return;
  }
  const Columns<K> s = gather<K>(data.oS, joint, f);
  Columns<K> u(6, f.count);
  u.noalias() = ia * s;
  const Square<K> d_inv = invert_pivot<K>(model, i, s, u, ia);
  w.Dinv[i].template topLeftCorner<K, K>(f.count, f.count) = d_inv;
  scatter<K>(u, joint, f, w.U);
  if (parent > 0) {
    Columns<K> u_dinv(6, f.count);
    u_dinv.noalias() = u * d_inv;
    w.Ia[parent] += ia;
    w.Ia[parent].noalias() -= u_dinv * u.transpose();
  }
}

template <int K, class Mask>
void propagate_bias_columns(const Model& model, Data& data, int i, const ForceColumns& f,
                            const Mask& mask) {
  ArticulatedBodyWorkspace& w = data.workspace<ArticulatedBodyWorkspace>();
  const Joint& joint = model.joints[i];
  const int parent = model.parent[i];
  if constexpr (K == 0) {
    // No force-given column: p^A_i + I^A_i c_i goes to the parent whole.
    if (parent > 0) w.pa[parent] += w.pa[i] + w.Ia[i] * w.c[i];
    return;
  }
  const Vec6 pa = w.pa[i].to_vector();
  Entries<K> u(f.count);
  for (int r = 0; r < u.size(); ++r) u[r] = mask.force(joint.idx_v + f.offset[r]);
  u.noalias() -= gather<K>(data.oS, joint, f).transpose() * pa;
  for (int r = 0; r < u.size(); ++r) w.u[joint.idx_v + f.offset[r]] = u[r];
  if (parent > 0) {
    const Vec6 c = w.c[i].to_vector();
    const Columns<K> u_f = gather<K>(w.U, joint, f);
    Entries<K> rhs = u;
    rhs.noalias() -= u_f.transpose() * c;
    Entries<K> gain(f.count);
    gain.noalias() = w.Dinv[i].template topLeftCorner<K, K>(f.count, f.count) * rhs;
    Vec6 pa_parent = pa;
    pa_parent.noalias() += w.Ia[i] * c;
    pa_parent.noalias() += u_f * gain;
    w.pa[parent] += Force::FromVector(pa_parent);
  }
}

template <int K, class Mask>
void accelerate_columns(const Model& model, Data& data, int i, const ForceColumns& f,
                        const Mask& mask) {
  if constexpr (K == 0) return;  // no force-given DOF: the acceleration is already complete
  const ArticulatedBodyWorkspace& w = data.workspace<ArticulatedBodyWorkspace>();
  const Joint& joint = model.joints[i];
  Motion& acc = data.oa_gf[i];
  Entries<K> rhs(f.count);
  for (int r = 0; r < rhs.size(); ++r) rhs[r] = w.u[joint.idx_v + f.offset[r]];
  rhs.noalias() -= gather<K>(w.U, joint, f).transpose() * acc.to_vector();
  Entries<K> qdd(f.count);
  qdd.noalias() = w.Dinv[i].template topLeftCorner<K, K>(f.count, f.count) * rhs;
  const double* s = data.oS.data() + 6 * joint.idx_v;
  for (int r = 0; r < qdd.size(); ++r) {
    const int dof = joint.idx_v + f.offset[r];
    data.ddq[dof] = qdd[r];
    if constexpr (!Mask::kEveryForceGiven) data.tau[dof] = mask.force(dof);
    acc += motion_at(s + 6 * f.offset[r]) * qdd[r];
  }
}

// Pass 2, the Riccati half: U (kept in the workspace's U at the force-given DOFs' columns), D⁻¹
// (top-left of its Dinv[i]) and the articulated inertia body i hands its parent.
template <class Mask>
void eliminate(const Model& model, Data& data, int i, const Mask& mask) {
  const ForceColumns f = force_columns(model.joints[i], mask);
  with_column_count(f.count, [&](auto k) { eliminate_columns<k()>(model, data, i, f); });
}

// Pass 2, the bias half, after eliminate(i): u (at the force-given DOFs) and the bias
// force body i hands its parent.
template <class Mask>
void propagate_bias(const Model& model, Data& data, int i, const Mask& mask) {
  const ForceColumns f = force_columns(model.joints[i], mask);
  with_column_count(f.count, [&](auto k) { propagate_bias_columns<k()>(model, data, i, f, mask); });
}

// Pass 3: body i's acceleration in data.oa_gf[i] from its parent's (data.oa_gf[0] must hold the
// base's), the force-given DOFs' q̈ and the acceleration-given DOFs' τ (given values copied
// alongside, so that data.ddq and data.tau are complete).
template <class Mask>
void accelerate(const Model& model, Data& data, int i, const Mask& mask) {
  const ArticulatedBodyWorkspace& w = data.workspace<ArticulatedBodyWorkspace>();
  const Joint& joint = model.joints[i];
  Motion& acc = data.oa_gf[i];
  acc = data.oa_gf[model.parent[i]] + w.c[i];
  const ForceColumns f = force_columns(joint, mask);
  with_column_count(f.count, [&](auto k) { accelerate_columns<k()>(model, data, i, f, mask); });
  if constexpr (!Mask::kEveryForceGiven) {
    if (f.count == joint.nv) return;
    // τ_a = S_aᵀ (I^A_i a_i + p^A_i), the force the driven DOFs transmit (7.38).
    const Force force = w.Ia[i] * acc + w.pa[i];
    const double* s = data.oS.data() + 6 * joint.idx_v;
    for (int k = 0; k < joint.nv; ++k) {
      const int dof = joint.idx_v + k;
      if (mask.force_given(dof)) continue;
      data.ddq[dof] = mask.acceleration(dof);
      data.tau[dof] = motion_at(s + 6 * k).dot(force);
    }
  }
}

// The three passes: q̈ of the force-given DOFs and τ of the acceleration-given ones, with the
// given values, in data.ddq and data.tau (data.ddq only when every force is given).
template <class Mask>
void articulated_body_passes(const Model& model, Data& data, const double* q, const double* v,
                             std::span<const Force> external_forces, const Mask& mask) {
  data.bind(model, kAbaWorkspaces);
  const int n = model.nbodies();
  data.ov[0] = Motion::Zero();
  for (int i = 1; i < n; ++i) load_body(model, data, i, q, v, external_forces, mask);
  for (int i = n - 1; i > 0; --i) {
    eliminate(model, data, i, mask);
    propagate_bias(model, data, i, mask);
  }
  data.oa_gf[0] = {-model.gravity, Vec3::Zero()};
  for (int i = 1; i < n; ++i) accelerate(model, data, i, mask);
}

}  // namespace torqued::articulated
