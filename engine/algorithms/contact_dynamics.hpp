// Forward dynamics with unilateral point contacts (Featherstone 1987, §9.6-9.8, eqs 9.40-9.53).
//
// Contact k presses body b at a point p with a force λ_n n + λ_t (n the unit normal, λ_t in the
// tangent plane). With J_k the rows [n t1 t2]ᵀ J_p of the point's linear Jacobian and γ_k the
// point's acceleration at q̈ = 0 on the same axes:
//   M q̈ = τ − C + Jᵀ λ,   a = J q̈ + γ = A λ + b,   A = J M⁻¹ Jᵀ (Delassus),  b = J M⁻¹(τ − C) + γ
//   frictionless:  λ_n ≥ 0, a_n ≥ 0, λ_n a_n = 0   — an LCP, solved by Lemke's method (lcp.hpp),
//                  which also settles the positive semi-definite case (dependent normals);
//   Coulomb:       ‖λ_t‖ ≤ μ λ_n, sticking (a_t = 0) inside the cone, a_t opposing λ_t on its rim;
//                  a contact already sliding (tangential velocity above options.slip_velocity)
//                  gets λ_t = −μ λ_n û along its velocity û. Solved on the exact cone by projected
//                  Gauss-Seidel (lcp.hpp).
// M comes from CRBA and the sparse LᵀDL factorization (ltdl.hpp); M⁻¹Jᵀ is one sparse solve per
// row of J, and q̈ = q̈_free + M⁻¹Jᵀ λ reuses them. Contacts are taken as closed (zero normal
// velocity): dropping the separating ones is the caller's choice.
#pragma once

#include <span>
#include <vector>

#include "engine/algorithms/kinematics.hpp"
#include "engine/algorithms/lcp.hpp"

namespace torqued {

// A point of a body touching the environment (a static surface).
struct PointContact {
  int body = 0;                 // moving body index (1 .. nbodies − 1)
  Vec3 point = Vec3::Zero();    // in the body frame
  Vec3 normal = Vec3::UnitZ();  // unit, world frame, from the surface into the body
  double friction = 0.0;        // Coulomb coefficient μ ≥ 0; 0 is frictionless
};

enum class ContactMode : std::uint8_t {
  kSeparating,  // no force (λ_n = 0)
  kSticking,    // pressed, tangential force strictly inside the friction cone
  kSliding,     // pressed, tangential force on the rim of the cone (always, when frictionless)
};

struct ContactOptions {
  double tolerance = 1e-10;     // residual of the complementarity conditions, in the units of w
  int max_iterations = 1000;    // Lemke pivots or Gauss-Seidel sweeps
  double slip_velocity = 1e-6;  // m/s: a faster tangential velocity is an already sliding contact
  // Polled by the solvers between iterations (and by simulate() between steps): when it asks,
  // they throw Interrupted and the workspace's results are undefined.
  Interruption interruption{};
};

// Preallocated buffers for up to max_contacts contacts on one Model; results of the last call.
struct ContactWorkspace {
  ContactWorkspace(const Model& model, int max_contacts);

  std::size_t heap_bytes() const;

  int max_contacts;
  Eigen::VectorXd acceleration;  // contact_dynamics: q̈
  Eigen::VectorXd velocity;      // impact: v⁺
  std::vector<Vec3> forces;      // per contact, on the body at the point, world frame (N or N·s)
  std::vector<ContactMode> modes;
  // The solved unknowns, per contact [λ_n; λ_t1; λ_t2] on the axes `axes` (frictionless: λ_n).
  Eigen::VectorXd lambda;

  // The contact problem a = A λ + b as assembled for the last call.
  int rows_per_contact = 1;  // 3 with friction, else 1
  std::vector<Mat3> axes;    // columns n, t1, t2 (world) per contact
  std::vector<Vec3> points;  // contact points in the world
  Eigen::Matrix<double, Eigen::Dynamic, Eigen::Dynamic, Eigen::RowMajor> jacobian;  // rows x nv
  Eigen::MatrixXd minv_jacobian_t;  // M⁻¹ Jᵀ, nv x rows
  Eigen::MatrixXd delassus;         // A = J M⁻¹ Jᵀ
  Eigen::VectorXd bias;             // b
  std::vector<double> friction;
  std::vector<Eigen::Vector2d> slide_direction;  // unit tangential velocity of sliding contacts
  Eigen::MatrixXd normal_delassus;               // impact: the normal rows and columns of A
  Eigen::VectorXd normal_bias;
  Eigen::VectorXd normal_lambda;
  LemkeSolver lemke;
  FrictionConeSolver cone;
};

// q̈ in ws.acceleration and the contact forces in ws.forces / ws.modes / ws.lambda.
// Throws SingularSystemError (aba.hpp) when M is singular.
ComplementarityResult contact_dynamics(const Model& model, Data& data, ContactWorkspace& ws,
                                       const ConstVectorRef& q, const ConstVectorRef& v,
                                       const ConstVectorRef& tau,
                                       std::span<const PointContact> contacts,
                                       const ContactOptions& options = {});

// Building blocks shared with impact() and simulate().

// What contact_dynamics() and impact() bind in Data (beside their ContactWorkspace): CRBA's and
// the LᵀDL's workspaces.
inline constexpr WorkspaceSet kContactWorkspaces =
    WorkspaceSet::of<MassMatrixWorkspace, MassFactorWorkspace>();

// M(q) by CRBA factored into MassFactorWorkspace::ltdl, and data.oMi placed from the joint
// transforms CRBA leaves in data.liMi.
void factor_mass_and_place_bodies(const Model& model, Data& data, const ConstVectorRef& q);

// True when some contact has friction (the problem then has 3 rows per contact).
bool has_friction(std::span<const PointContact> contacts);

// The axes, points, Jacobian rows, M⁻¹Jᵀ and A of `contacts`, 3 rows per contact with friction,
// after factor_mass_and_place_bodies().
void assemble_contact_problem(const Model& model, const Data& data, ContactWorkspace& ws,
                              std::span<const PointContact> contacts, bool with_friction);

// Solves for ws.lambda from ws.delassus and ws.bias: Lemke when frictionless, else projected
// Gauss-Seidel on the cone starting from ws.lambda (set it to zero or to a warm start).
ComplementarityResult solve_contact_problem(ContactWorkspace& ws, int contacts,
                                            const ContactOptions& options);

// ws.forces and ws.modes from ws.lambda.
void classify_contacts(ContactWorkspace& ws, int contacts);

}  // namespace torqued
