// The constraint rates and forces of constraint_rates.hpp.
// The constraint residual c is constraint_jacobian.hpp's, in frame 1:
//   6D types: ¹X₀ (A₁ − A₂ + V₁ × V₂) + K_d ¹X₀ (V₁ − V₂) + K_p e, rows selected;
//   point:    ¹R₀ (p̈₁ − p̈₂) + K_d ¹R₀ (ṗ₁ − ṗ₂) + K_p ¹R₀ (p₁ − p₂),
// with V_b, A_b body b's world twist and real acceleration, p_b frame b's origin, ṗ = V_l + ω × p
// and p̈ = A_l + α × p + ω × ṗ. Along a DOF k supporting body b (rnea_derivatives.cpp),
//   ∂V/∂q_k = s × V + ψ_k,  ∂A/∂q_k = s × A + φ_k + ψ_k × V,  ∂p/∂q_k = s_l + s_ω × p,
//   ∂V/∂q̇_k = s,           ∂A/∂q̇_k = s × V + χ_k,
// and when k supports body1, frame 1 turns: ∂(¹X₀ x)/∂q_k = −¹X₀ (s × x), ∂(¹R₀ x)/∂q_k =
// ¹R₀ (x × s_ω). The rotation errors: e = −log(¹R₂) (weld, prismatic), whose rate is
// −J_l⁻¹(log ¹R₂) ¹R₀ (δθ₂ − δθ₁) with J_l the left Jacobian of SO(3), and e = −z × ¹R₂ z
// (revolute), whose rate is −z × ((¹R₀ (δθ₂ − δθ₁)) × ¹R₂ z).
#include "engine/algorithms/constraint_rates.hpp"

#include <algorithm>
#include <cassert>
#include <cmath>
#include <tuple>
#include <utility>

#include "engine/algorithms/pivoted_ldlt.hpp"
#include "engine/algorithms/tree_sparse_product.hpp"

namespace torqued {

namespace {

Motion column_at(const Eigen::Matrix<double, 6, Eigen::Dynamic>& m, int k) {
  return {m.col(k).head<3>(), m.col(k).tail<3>()};
}

Motion dof_subspace(const Data& data, int k) {
  const double* s = data.oS.data() + 6 * k;
  return {Vec3(s[0], s[1], s[2]), Vec3(s[3], s[4], s[5])};
}

// J_l(φ)⁻¹, the inverse left Jacobian of SO(3): log(exp(ε ω) R) = log R + ε J_l⁻¹(log R) ω + O(ε²).
Mat3 inverse_left_jacobian(const Vec3& phi) {
  const double theta = phi.norm();
  const Mat3 a = skew(phi);
  // 1/θ² − (1 + cos θ) / (2 θ sin θ), whose series is 1/12 + θ²/720 near 0.
  const double c = theta < 1e-4 ? 1.0 / 12.0 + theta * theta / 720.0
                                : 1.0 / (theta * theta) -
                                      (1.0 + std::cos(theta)) / (2.0 * theta * std::sin(theta));
  return Mat3::Identity() - 0.5 * a + c * a * a;
}

// One body of a constraint at the state the RNEA derivatives left: its world twist, real
// acceleration and frame origin, with the origin's velocity and classical acceleration.
struct FrameMotion {
  Motion velocity, acceleration, acceleration_gf;
  Vec3 origin, origin_velocity, origin_acceleration;
};

FrameMotion frame_motion(const Data& data, const Vec3& gravity, int body, const Vec3& origin) {
  FrameMotion f;
  f.velocity = data.ov[body];
  f.acceleration_gf = data.oa_gf[body];
  f.acceleration = {f.acceleration_gf.linear + gravity, f.acceleration_gf.angular};
  f.origin = origin;
  f.origin_velocity = f.velocity.linear + f.velocity.angular.cross(origin);
  f.origin_acceleration = f.acceleration.linear + f.acceleration.angular.cross(origin) +
                          f.velocity.angular.cross(f.origin_velocity);
  return f;
}

// The rates of one body's frame along one DOF: twist, acceleration, origin, origin velocity and
// origin acceleration.
struct FrameRates {
  Motion velocity, acceleration;
  Vec3 origin, origin_velocity, origin_acceleration;
};

FrameRates rates(const FrameMotion& f, const Motion& dv, const Motion& da, const Vec3& dp) {
  FrameRates r{dv, da, dp, Vec3::Zero(), Vec3::Zero()};
  const Vec3& w = f.velocity.angular;
  r.origin_velocity = dv.linear + dv.angular.cross(f.origin) + w.cross(dp);
  r.origin_acceleration = da.linear + da.angular.cross(f.origin) +
                          f.acceleration.angular.cross(dp) + dv.angular.cross(f.origin_velocity) +
                          w.cross(r.origin_velocity);
  return r;
}

// Along q_k and q̇_k, for a DOF k supporting the body of f.
FrameRates rates_along_q(const FrameMotion& f, const Motion& s, const Motion& psi,
                         const Motion& phi) {
  const Motion dv = s.cross(f.velocity) + psi;
  const Motion da = s.cross(f.acceleration_gf) + phi + psi.cross(f.velocity);
  return rates(f, dv, da, s.linear + s.angular.cross(f.origin));
}

FrameRates rates_along_v(const FrameMotion& f, const Motion& s, const Motion& chi) {
  return rates(f, s, s.cross(f.velocity) + chi, Vec3::Zero());
}

// Everything about one constraint that its residual's rates need.
struct ConstraintState {
  const BilateralConstraint& c;
  ConstraintRows rows;
  Transform frame1;        // ⁰M₁
  Mat3 relative_rotation;  // ¹R₂
  FrameMotion body1, body2;
  Vec6 acceleration;  // the residual's acceleration part c_w in world axes (6D) or p̈₁ − p̈₂
  Vec6 velocity;      // V₁ − V₂ (6D) or ṗ₁ − ṗ₂
  Vec3 gap;           // p₁ − p₂
  Mat3 rotation_rate;  // −J_l⁻¹(log ¹R₂) (weld, prismatic, with a position gain)
};

ConstraintState constraint_state(const Data& data, const BilateralConstraint& c,
                                 const BaumgarteGains& gains, const Vec3& gravity) {
  const Transform oM1 = data.oMi[c.body1] * c.placement1;
  const Transform oM2 = data.oMi[c.body2] * c.placement2;
  ConstraintState st{c,
                     constraint_row_selection(c.type),
                     oM1,
                     oM1.rotation.transpose() * oM2.rotation,
                     frame_motion(data, gravity, c.body1, oM1.translation),
                     frame_motion(data, gravity, c.body2, oM2.translation),
                     Vec6::Zero(),
                     Vec6::Zero(),
                     oM1.translation - oM2.translation,
                     Mat3::Zero()};
  if (c.type == ConstraintType::kPoint) {
    st.acceleration.head<3>() = st.body1.origin_acceleration - st.body2.origin_acceleration;
    st.velocity.head<3>() = st.body1.origin_velocity - st.body2.origin_velocity;
  } else {
    st.acceleration =
        (st.body1.acceleration - st.body2.acceleration + st.body1.velocity.cross(st.body2.velocity))
            .to_vector();
    st.velocity = (st.body1.velocity - st.body2.velocity).to_vector();
    // Only the position gain reads the rotation error's rate.
    if (c.type != ConstraintType::kRevolute && gains.position != 0.0) {
      const Eigen::AngleAxisd rotation(st.relative_rotation);
      st.rotation_rate = -inverse_left_jacobian(rotation.angle() * rotation.axis());
    }
  }
  return st;
}

Motion motion_of(const Vec6& x) { return {x.head<3>(), x.tail<3>()}; }

// The residual's rate (before row selection, frame-1 axes) from one DOF's rates of body1 (sign
// +1) or body2 (sign −1), s the DOF's world column; `along_q` adds frame 1's turn and the
// position error's rate.
Vec6 residual_rate(const ConstraintState& st, const BaumgarteGains& gains, const FrameRates& r,
                   const Motion& s, double sign, bool along_q) {
  const bool first = sign > 0.0;
  const Mat3 to_frame1 = st.frame1.rotation.transpose();
  Vec6 out = Vec6::Zero();
  if (st.c.type == ConstraintType::kPoint) {
    Vec3 rate = sign * (r.origin_acceleration + gains.velocity * r.origin_velocity);
    if (along_q) {
      rate += sign * gains.position * r.origin;
      // ¹R₀ turns with body1: ¹R₀ (x × s_ω) for every world-axes difference x of the residual.
      if (first) {
        rate += (st.acceleration.head<3>() + gains.velocity * st.velocity.head<3>() +
                 gains.position * st.gap)
                    .cross(s.angular);
      }
    }
    out.head<3>() = to_frame1 * rate;
    return out;
  }
  // 6D: c_w = A₁ − A₂ + V₁ × V₂ changes by dA₁ + dV₁ × V₂ (body1) or −dA₂ + V₁ × dV₂ (body2).
  const Motion acceleration = first ? r.acceleration + r.velocity.cross(st.body2.velocity)
                                    : st.body1.velocity.cross(r.velocity) - r.acceleration;
  Motion world = acceleration + r.velocity * (sign * gains.velocity);
  if (along_q && first) {
    world -= s.cross(motion_of(st.acceleration + gains.velocity * st.velocity));
  }
  out = st.frame1.act_inverse(world).to_vector();
  if (along_q && gains.position != 0.0) {
    // Translation: ¹R₀ (p₁ − p₂), as for points. Rotation: from the turn δθ = ±s_ω.
    Vec3 translation = sign * r.origin;
    if (first) translation += st.gap.cross(s.angular);
    out.head<3>() += gains.position * (to_frame1 * translation);
    const Vec3 turn = -sign * (to_frame1 * s.angular);  // ¹R₀ (δθ₂ − δθ₁)
    if (st.c.type == ConstraintType::kRevolute) {
      const Vec3 axis = st.relative_rotation.col(2);
      out.tail<3>() -= gains.position * Vec3::UnitZ().cross(turn.cross(axis));
    } else {
      out.tail<3>() += gains.position * (st.rotation_rate * turn);
    }
  }
  return out;
}

// Adds the rates of one constraint's residual along every DOF moving its bodies into its rows of
// c_q and c_q̇.
void add_constraint_rates(const Model& model, const Data& data, const RneaDerivativesWorkspace& d,
                          const ConstraintState& st, const BaumgarteGains& gains, int row,
                          Eigen::Ref<Eigen::MatrixXd> dc_dq, Eigen::Ref<Eigen::MatrixXd> dc_dv) {
  for (const auto& [body, frame, sign] :
       {std::tuple<int, const FrameMotion*, double>{st.c.body1, &st.body1, 1.0},
        std::tuple<int, const FrameMotion*, double>{st.c.body2, &st.body2, -1.0}}) {
    for (int j = body; j > 0; j = model.parent[j]) {
      const Joint& joint = model.joints[j];
      for (int k = joint.idx_v; k < joint.idx_v + joint.nv; ++k) {
        const Motion s = dof_subspace(data, k);
        const Vec6 along_q = residual_rate(
            st, gains, rates_along_q(*frame, s, column_at(d.dv_dq, k), column_at(d.da_dq, k)), s,
            sign, true);
        const Vec6 along_v = residual_rate(
            st, gains, rates_along_v(*frame, s, column_at(d.da_dv, k)), s, sign, false);
        for (int r = 0; r < st.rows.count; ++r) {
          dc_dq(row + r, k) += along_q[st.rows.rows[r]];
          dc_dv(row + r, k) += along_v[st.rows.rows[r]];
        }
      }
    }
  }
}

// λ of one constraint (its rows from `row`) as the force it applies to body1 at frame 1's origin,
// in frame-1 axes.
Force constraint_force(const BilateralConstraint& c,
                       const Eigen::Ref<const Eigen::VectorXd>& lambda, int row) {
  const ConstraintRows rows = constraint_row_selection(c.type);
  Vec6 f = Vec6::Zero();
  for (int r = 0; r < rows.count; ++r) f[rows.rows[r]] = lambda[row + r];
  return {f.head<3>(), f.tail<3>()};
}

// Adds a constraint's force f to the bodies, in their frames: f on body1 at frame 1, and its
// opposite on body2, at frame 1's origin (6D) or at frame 2's (point: a pure force).
void add_body_forces(const Data& data, const BilateralConstraint& c, const Force& f,
                     std::vector<Force>& body_forces) {
  body_forces[c.body1] += c.placement1.act(f);
  if (c.body2 == 0) return;
  const Transform m12 =
      (data.oMi[c.body1] * c.placement1).inverse() * (data.oMi[c.body2] * c.placement2);
  const Force in_frame2 = c.type == ConstraintType::kPoint
                              ? Force{-(m12.rotation.transpose() * f.linear), Vec3::Zero()}
                              : m12.act_inverse(-f);
  body_forces[c.body2] += c.placement2.act(in_frame2);
}

// The change of τ along q_k beyond RNEA's from the force on body2 turning with body1 (RNEA holds
// it fixed in body2): for the relative turn D_k = s_k (k supports body1 only), −s_k (body2 only)
// or 0, the force on body2 changes by −(D_k ×* f₁) (6D; f₁ the world force on body1) or by the
// turn of its direction F at p₂ (point), and τ by −J₂ᵀ of that.
void add_loop_force_rates(const Model& model, const Data& data, const BilateralConstraint& c,
                          const Force& f, Eigen::Ref<Eigen::MatrixXd> out) {
  const Force world1 = (data.oMi[c.body1] * c.placement1).act(f);
  const Vec3 origin2 = (data.oMi[c.body2] * c.placement2).translation;
  const Vec3 force = world1.linear;
  for (const auto& [body, sign] : {std::pair<int, double>{c.body1, 1.0}, {c.body2, -1.0}}) {
    for (int j = body; j > 0; j = model.parent[j]) {
      const Joint& joint = model.joints[j];
      for (int k = joint.idx_v; k < joint.idx_v + joint.nv; ++k) {
        const Motion turn = dof_subspace(data, k) * sign;
        Force g;
        if (c.type == ConstraintType::kPoint) {
          const Vec3 df = turn.angular.cross(force);
          g = {df, origin2.cross(df)};
        } else {
          g = turn.cross(world1);
        }
        for (int i = c.body2; i > 0; i = model.parent[i]) {
          const Joint& ji = model.joints[i];
          for (int l = ji.idx_v; l < ji.idx_v + ji.nv; ++l)
            out(l, k) += dof_subspace(data, l).dot(g);
        }
      }
    }
  }
}

}  // namespace

void operational_space_inverse(const Model& model, Data& data,
                               std::span<const BilateralConstraint> constraints,
                               const RowMatrixXd& minv) {
  const int m = constraint_rows(model, constraints);
  ConstraintWorkspace& cw = data.workspace<ConstraintWorkspace>();
  ConstrainedDerivativesWorkspace& w = data.workspace<ConstrainedDerivativesWorkspace>();
  const auto jacobian = cw.jacobian.topRows(m);
  auto minv_kt = w.minv_kt.leftCols(m);
  auto system = cw.system.topLeftCorner(m, m);
  minv_kt.setZero();
  system.setZero();
  for_each_constraint(model, constraints, [&](const BilateralConstraint& c, int row, int count) {
    for_each_constraint_dof(model, c, [&](int k) {
      for (int r = row; r < row + count; ++r)
        minv_kt.col(r) += jacobian(r, k) * minv.row(k).transpose();
    });
  });
  for_each_constraint(model, constraints, [&](const BilateralConstraint& c, int row, int count) {
    for_each_constraint_dof(model, c, [&](int k) {
      for (int r = row; r < row + count; ++r) system.row(r) += jacobian(r, k) * minv_kt.row(k);
    });
  });
  auto permutation = cw.permutation.head(m);
  const int rank = pivoted_ldlt_factorize(system, permutation);
  auto inverse = w.system_inverse.topLeftCorner(m, m);
  if (rank == m) {
    // Λ = Pᵀ L⁻ᵀ D⁻¹ L⁻¹ P from the factors P K G Pᵀ = L D Lᵀ, all columns at once.
    auto solved = cw.scratch.topLeftCorner(m, m);
    solved.setZero();
    for (int i = 0; i < m; ++i) solved(i, permutation[i]) = 1.0;
    system.triangularView<Eigen::UnitLower>().solveInPlace(solved);
    for (int i = 0; i < m; ++i) solved.row(i) /= system(i, i);
    system.triangularView<Eigen::UnitLower>().transpose().solveInPlace(solved);
    for (int i = 0; i < m; ++i) inverse.row(permutation[i]) = solved.row(i);
  } else {
    inverse.setIdentity();
    for (int r = 0; r < m; ++r) {
      pivoted_ldlt_solve(system, permutation, rank, inverse.col(r), cw.scratch, cw.work);
    }
  }
}

void constrained_inverse_inertia(ConstrainedDerivativesWorkspace& w, int rows,
                                 const RowMatrixXd& minv, Eigen::MatrixXd& inverse_inertia,
                                 InterruptionPoll& poll) {
  const int nv = static_cast<int>(minv.rows());
  const auto minv_kt = w.minv_kt.leftCols(rows);
  auto dlambda_dtau = w.dlambda_dtau.topRows(rows);
  dlambda_dtau.noalias() = -w.system_inverse.topLeftCorner(rows, rows) * minv_kt.transpose();
  poll.add(2.0 * rows * rows * nv);
  if (!tree_sparse::dense_negated_product(nv, rows, nv, minv_kt.data(), dlambda_dtau.data(),
                                          static_cast<int>(w.dlambda_dtau.rows()),
                                          inverse_inertia.data(), poll)) {
    throw Interrupted();
  }
  // P = M⁻¹ − (−G ∂λ/∂τ); M⁻¹'s row-major storage read as it lies is its transpose, itself.
  inverse_inertia = minv.transpose() - inverse_inertia;
}

void constraint_body_forces(const Model& model, const Data& data,
                            std::span<const BilateralConstraint> constraints,
                            const Eigen::Ref<const Eigen::VectorXd>& lambda,
                            std::vector<Force>& body_forces) {
  std::fill(body_forces.begin(), body_forces.end(), Force::Zero());
  for_each_constraint(model, constraints, [&](const BilateralConstraint& c, int row, int) {
    add_body_forces(data, c, constraint_force(c, lambda, row), body_forces);
  });
}

void add_constraint_residual_rates(const Model& model, const Data& data,
                                   const RneaDerivativesWorkspace& d,
                                   std::span<const BilateralConstraint> constraints,
                                   const BaumgarteGains& gains, const Vec3& gravity,
                                   Eigen::Ref<Eigen::MatrixXd> dc_dq,
                                   Eigen::Ref<Eigen::MatrixXd> dc_dv) {
  for_each_constraint(model, constraints, [&](const BilateralConstraint& c, int row, int) {
    add_constraint_rates(model, data, d, constraint_state(data, c, gains, gravity), gains, row,
                         dc_dq, dc_dv);
  });
}

bool loop_force_rates(const Model& model, const Data& data,
                      std::span<const BilateralConstraint> constraints,
                      const Eigen::Ref<const Eigen::VectorXd>& lambda,
                      Eigen::Ref<Eigen::MatrixXd> out) {
  bool any = false;
  for_each_constraint(model, constraints, [&](const BilateralConstraint& c, int row, int) {
    if (c.body2 == 0) return;
    if (!any) out.setZero();
    any = true;
    add_loop_force_rates(model, data, c, constraint_force(c, lambda, row), out);
  });
  return any;
}

namespace {

// constrained_solution_rates() for a alone, or for a and b (kBoth).
template <bool kBoth>
void solution_rates(const Model& model, const Data& data,
                    std::span<const BilateralConstraint> constraints,
                    ConstrainedDerivativesWorkspace& w, const Eigen::MatrixXd& inverse_inertia,
                    const Eigen::MatrixXd& id_a, const Eigen::MatrixXd* id_b, bool turning_forces,
                    Eigen::MatrixXd& dy_da, Eigen::MatrixXd* dy_db,
                    Eigen::Ref<Eigen::MatrixXd> dlambda_da, Eigen::Ref<Eigen::MatrixXd> dlambda_db,
                    InterruptionPoll& poll) {
  const int m = constraint_rows(model, constraints);
  const int nv = model.nv;
  const bool finished =
      kBoth ? tree_sparse::negated_products(data.dof_parent, data.dof_subtree_end, nv, nv,
                                            inverse_inertia.data(), id_a.data(), id_b->data(),
                                            dy_da.data(), dy_db->data(), poll)
            : tree_sparse::negated_product(data.dof_parent, data.dof_subtree_end, nv, nv,
                                           inverse_inertia.data(), id_a.data(), dy_da.data(), poll);
  if (!finished) throw Interrupted();
  // −(∂λ/∂τ) ID_x over the same sparsity, rows m of the workspace's taller matrices.
  const auto dlambda_dtau = w.dlambda_dtau.topRows(m);
  const int lda = static_cast<int>(w.dlambda_dtau.rows());
  assert(!kBoth || dlambda_db.outerStride() == dlambda_da.outerStride());
  const bool chained =
      kBoth ? tree_sparse::negated_products(data.dof_parent, data.dof_subtree_end, m, nv,
                                            dlambda_dtau.data(), lda, id_a.data(), id_b->data(),
                                            dlambda_da.data(), dlambda_db.data(),
                                            static_cast<int>(dlambda_da.outerStride()), poll)
            : tree_sparse::negated_product(data.dof_parent, data.dof_subtree_end, m, nv,
                                           dlambda_dtau.data(), lda, id_a.data(), dlambda_da.data(),
                                           static_cast<int>(dlambda_da.outerStride()), poll);
  if (!chained) throw Interrupted();
  // −Λ c_x and −G Λ c_x = (∂λ/∂τ)ᵀ c_x over the columns where c_x can be non-zero.
  const auto inverse = w.system_inverse.topLeftCorner(m, m);
  const auto dc_da = w.residual_dq.topRows(m);
  const auto dc_db = w.residual_dv.topRows(m);
  auto minus_g_lambda = w.minv_kt_lambda.leftCols(m);
  minus_g_lambda = dlambda_dtau.transpose();
  for_each_constraint(model, constraints, [&](const BilateralConstraint& c, int row, int count) {
    for_each_constraint_dof(model, c, [&](int k) {
      for (int r = row; r < row + count; ++r) {
        const double ca = dc_da(r, k);
        dlambda_da.col(k) -= ca * inverse.col(r);
        dy_da.col(k) += ca * minus_g_lambda.col(r);
        if constexpr (kBoth) {
          const double cb = dc_db(r, k);
          dlambda_db.col(k) -= cb * inverse.col(r);
          dy_db->col(k) += cb * minus_g_lambda.col(r);
        }
      }
    });
  });
  poll.add((kBoth ? 4.0 : 2.0) * m * nv * m);
  if (turning_forces) {
    dy_da.noalias() -= inverse_inertia * w.loop_forces_dq;
    dlambda_da.noalias() -= dlambda_dtau * w.loop_forces_dq;
    poll.add(2.0 * nv * nv * (nv + m));
  }
}

}  // namespace

void constrained_solution_rates(const Model& model, const Data& data,
                                std::span<const BilateralConstraint> constraints,
                                ConstrainedDerivativesWorkspace& w,
                                const Eigen::MatrixXd& inverse_inertia, const Eigen::MatrixXd& id_a,
                                const Eigen::MatrixXd& id_b, bool turning_forces,
                                Eigen::MatrixXd& dy_da, Eigen::MatrixXd& dy_db,
                                Eigen::Ref<Eigen::MatrixXd> dlambda_da,
                                Eigen::Ref<Eigen::MatrixXd> dlambda_db, InterruptionPoll& poll) {
  solution_rates<true>(model, data, constraints, w, inverse_inertia, id_a, &id_b, turning_forces,
                       dy_da, &dy_db, dlambda_da, dlambda_db, poll);
}

void constrained_solution_rates(const Model& model, const Data& data,
                                std::span<const BilateralConstraint> constraints,
                                ConstrainedDerivativesWorkspace& w,
                                const Eigen::MatrixXd& inverse_inertia, const Eigen::MatrixXd& id_a,
                                bool turning_forces, Eigen::MatrixXd& dy_da,
                                Eigen::Ref<Eigen::MatrixXd> dlambda_da, InterruptionPoll& poll) {
  solution_rates<false>(model, data, constraints, w, inverse_inertia, id_a, nullptr, turning_forces,
                        dy_da, nullptr, dlambda_da, dlambda_da, poll);
}

}  // namespace torqued
