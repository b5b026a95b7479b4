// Impacts with restitution (Featherstone 1987, §9.9.2); see impact.hpp for the model.
#include "engine/algorithms/impact.hpp"

#include <algorithm>
#include <cassert>

namespace torqued {

ComplementarityResult impact(const Model& model, Data& data, ContactWorkspace& ws,
                             const ConstVectorRef& q, const ConstVectorRef& v,
                             std::span<const PointContact> contacts, double restitution,
                             const ContactOptions& options) {
  assert(fits(model, data, q, v));
  const int m = static_cast<int>(contacts.size());
  factor_mass_and_place_bodies(model, data, q);
  assemble_contact_problem(model, data, ws, contacts, has_friction(contacts));
  const int r = ws.rows_per_contact;
  const int rows = r * m;
  const auto jacobian = ws.jacobian.topRows(rows);
  const auto minv_jt = ws.minv_jacobian_t.leftCols(rows);
  auto lambda = ws.lambda.head(rows);

  ws.bias.head(rows).noalias() = jacobian.lazyProduct(v);
  lambda.setZero();
  ComplementarityResult result = solve_contact_problem(ws, m, options);
  lambda *= 1.0 + restitution;
  ws.velocity = v;
  ws.velocity.noalias() += minv_jt.lazyProduct(lambda);

  // Decompression: the extra normal impulse λ_x, needed only where (1 + e) λ_c leaves a contact
  // approaching (never when every contact has the same e and the problem is frictionless).
  auto g = ws.normal_bias.head(m);
  for (int c = 0; c < m; ++c) g[c] = jacobian.row(r * c).dot(ws.velocity);
  if (m > 0 && g.minCoeff() < -options.tolerance) {
    auto a_nn = ws.normal_delassus.topLeftCorner(m, m);
    for (int i = 0; i < m; ++i) {
      for (int k = 0; k < m; ++k) a_nn(i, k) = ws.delassus(r * i, r * k);
    }
    auto extra = ws.normal_lambda.head(m);
    const ComplementarityResult correction =
        ws.lemke.solve(a_nn, g, extra, options.max_iterations, options.interruption);
    for (int c = 0; c < m; ++c) {
      ws.velocity += minv_jt.col(r * c) * extra[c];
      lambda[r * c] += extra[c];
    }
    result.iterations += correction.iterations;
    result.residual = std::max(result.residual, correction.residual);
    if (result.status == ComplementarityStatus::kSolved) result.status = correction.status;
  }
  classify_contacts(ws, m);
  return result;
}

}  // namespace torqued
