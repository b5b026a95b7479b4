// Sizing of the per-thread workspace and of each family's workspace: the one place where
// algorithm memory is allocated. Each workspace's bytes() mirrors its constructor
// (tests/engine/model/data_test.cpp holds them equal).
#include "engine/model/data.hpp"

#include <algorithm>
#include <type_traits>

#include "engine/model/heap_bytes.hpp"

namespace torqued {

namespace {

// λ of Featherstone's LᵀDL factorization (RBDA §6.5): the DOFs of a multi-DOF joint form a chain
// (its block of M is dense), whose first DOF hangs from the last DOF of the parent joint.
std::vector<int> dof_parents(const Model& model) {
  std::vector<int> parents(model.nv, -1);
  for (int i = 1; i < model.nbodies(); ++i) {
    const Joint& joint = model.joints[i];
    if (joint.nv == 0) continue;
    int ancestor = model.parent[i];
    while (ancestor > 0 && model.joints[ancestor].nv == 0) ancestor = model.parent[ancestor];
    parents[joint.idx_v] =
        ancestor > 0 ? model.joints[ancestor].idx_v + model.joints[ancestor].nv - 1 : -1;
    for (int k = 1; k < joint.nv; ++k) parents[joint.idx_v + k] = joint.idx_v + k - 1;
  }
  return parents;
}

// A body's subtree is bodies i .. subtree_end[i] - 1, so its DOFs run up to the first DOF of the
// body after it; the later DOFs of a multi-DOF joint are below its earlier ones.
std::vector<int> dof_subtree_ends(const Model& model) {
  std::vector<int> ends(model.nv, model.nv);
  for (int i = 1; i < model.nbodies(); ++i) {
    const Joint& joint = model.joints[i];
    const int end = model.subtree_end[i] < model.nbodies()
                        ? model.joints[model.subtree_end[i]].idx_v
                        : model.nv;
    for (int k = 0; k < joint.nv; ++k) ends[joint.idx_v + k] = end;
  }
  return ends;
}

int loop_rows(const Model& model) {
  int rows = 0;
  for (const BilateralConstraint& loop : model.loop_closures) {
    rows += constraint_dimension(loop.type);
  }
  return rows;
}

int max_depth(const Model& model) {
  return *std::max_element(model.depth.begin(), model.depth.end());
}

// Doubles (or ints) in an r x c matrix and bytes of n objects, as the sizes below count them.
template <typename T = double>
std::size_t matrix(std::size_t rows, std::size_t cols) {
  return rows * cols * sizeof(T);
}
template <typename T>
std::size_t objects(std::size_t n) {
  return n * sizeof(T);
}

std::size_t dofs(const Model& model) { return static_cast<std::size_t>(model.nv); }
std::size_t bodies(const Model& model) { return static_cast<std::size_t>(model.nbodies()); }

// Each workspace of Data with its Workspace value, for bind() and the byte counts.
template <typename Visit>
void for_each_workspace(Visit&& visit) {
  visit(Workspace::kMassMatrix, &Data::mass_matrix);
  visit(Workspace::kArticulatedBody, &Data::articulated);
  visit(Workspace::kMassInverse, &Data::mass_inverse);
  visit(Workspace::kMassFactor, &Data::mass_factor);
  visit(Workspace::kRneaDerivatives, &Data::rnea_derivatives);
  visit(Workspace::kAbaDerivatives, &Data::aba_derivatives);
  visit(Workspace::kCoriolis, &Data::coriolis);
  visit(Workspace::kCentroidal, &Data::centroidal);
  visit(Workspace::kHomogeneous, &Data::homogeneous);
  visit(Workspace::kConstraints, &Data::constraints);
  visit(Workspace::kClosedChain, &Data::closed_chain);
}

// The bytes of the workspaces of `set` that `data` (null: a Data with none) has not bound.
std::size_t bytes_to_bind(const Model& model, WorkspaceSet set, const Data* data) {
  std::size_t bytes = 0;
  for_each_workspace([&](Workspace w, auto slot) {
    using Bound = typename std::remove_reference_t<decltype(data->*slot)>::value_type;
    if (set.contains(w) && !(data != nullptr && (data->*slot).has_value())) {
      bytes += Bound::bytes(model);
    }
  });
  return bytes;
}

}  // namespace

MassMatrixWorkspace::MassMatrixWorkspace(const Model& model)
    : Ycrb(model.nbodies()), M(Eigen::MatrixXd::Zero(model.nv, model.nv)) {}

std::size_t MassMatrixWorkspace::bytes(const Model& model) {
  return objects<RigidInertia>(bodies(model)) + matrix(dofs(model), dofs(model));
}

std::size_t MassMatrixWorkspace::heap_bytes() const { return total_heap_bytes(Ycrb, M); }

ArticulatedBodyWorkspace::ArticulatedBodyWorkspace(const Model& model)
    : Ia(model.nbodies(), Mat6::Zero()),
      pa(model.nbodies(), Force::Zero()),
      c(model.nbodies(), Motion::Zero()),
      U(Eigen::Matrix<double, 6, Eigen::Dynamic>::Zero(6, model.nv)),
      Dinv(model.nbodies(), Mat6::Zero()),
      u(Eigen::VectorXd::Zero(model.nv)) {}

std::size_t ArticulatedBodyWorkspace::bytes(const Model& model) {
  return objects<Mat6>(2 * bodies(model)) + objects<Force>(bodies(model)) +
         objects<Motion>(bodies(model)) + matrix(6, dofs(model)) + matrix(dofs(model), 1);
}

std::size_t ArticulatedBodyWorkspace::heap_bytes() const {
  return total_heap_bytes(Ia, pa, c, U, Dinv, u);
}

MassInverseWorkspace::MassInverseWorkspace(const Model& model)
    : Minv(Eigen::MatrixXd::Zero(model.nv, model.nv)),
      bias(Eigen::Matrix<double, 6, Eigen::Dynamic>::Zero(6, model.nv)),
      acceleration(max_depth(model) + 1,
                   Eigen::Matrix<double, 6, Eigen::Dynamic>::Zero(6, model.nv)) {}

std::size_t MassInverseWorkspace::bytes(const Model& model) {
  const std::size_t depths = static_cast<std::size_t>(max_depth(model)) + 1;
  return matrix(dofs(model), dofs(model)) + matrix(6, dofs(model)) +
         objects<Eigen::Matrix<double, 6, Eigen::Dynamic>>(depths) +
         depths * matrix(6, dofs(model));
}

std::size_t MassInverseWorkspace::heap_bytes() const {
  std::size_t bytes = total_heap_bytes(Minv, bias, acceleration);
  for (const auto& per_depth : acceleration) bytes += torqued::heap_bytes(per_depth);
  return bytes;
}

MassFactorWorkspace::MassFactorWorkspace(const Model& model)
    : ltdl(Eigen::MatrixXd::Zero(model.nv, model.nv)) {}

std::size_t MassFactorWorkspace::bytes(const Model& model) {
  return matrix(dofs(model), dofs(model));
}

std::size_t MassFactorWorkspace::heap_bytes() const { return total_heap_bytes(ltdl); }

RneaDerivativesWorkspace::RneaDerivativesWorkspace(const Model& model)
    : dv_dq(Eigen::Matrix<double, 6, Eigen::Dynamic>::Zero(6, model.nv)),
      da_dq(Eigen::Matrix<double, 6, Eigen::Dynamic>::Zero(6, model.nv)),
      da_dv(Eigen::Matrix<double, 6, Eigen::Dynamic>::Zero(6, model.nv)),
      composite(model.nbodies()),
      momentum(model.nbodies(), Vec3::Zero()),
      coupling(model.nbodies(), Mat3::Zero()),
      force(model.nbodies(), Force::Zero()),
      dtau_dq(Eigen::MatrixXd::Zero(model.nv, model.nv)),
      dtau_dv(Eigen::MatrixXd::Zero(model.nv, model.nv)) {}

std::size_t RneaDerivativesWorkspace::bytes(const Model& model) {
  return 3 * matrix(6, dofs(model)) + objects<RigidInertia>(bodies(model)) +
         objects<Vec3>(bodies(model)) + objects<Mat3>(bodies(model)) +
         objects<Force>(bodies(model)) + 2 * matrix(dofs(model), dofs(model));
}

std::size_t RneaDerivativesWorkspace::heap_bytes() const {
  return total_heap_bytes(dv_dq, da_dq, da_dv, composite, momentum, coupling, force, dtau_dq,
                          dtau_dv);
}

AbaDerivativesWorkspace::AbaDerivativesWorkspace(const Model& model)
    : ddq_dq(Eigen::MatrixXd::Zero(model.nv, model.nv)),
      ddq_dv(Eigen::MatrixXd::Zero(model.nv, model.nv)),
      ddq_dtau(Eigen::MatrixXd::Zero(model.nv, model.nv)),
      factor_inverse(Eigen::MatrixXd::Zero(model.nv, model.nv)) {}

std::size_t AbaDerivativesWorkspace::bytes(const Model& model) {
  return 4 * matrix(dofs(model), dofs(model));
}

std::size_t AbaDerivativesWorkspace::heap_bytes() const {
  return total_heap_bytes(ddq_dq, ddq_dv, ddq_dtau, factor_inverse);
}

CoriolisWorkspace::CoriolisWorkspace(const Model& model)
    : composite(model.nbodies()),
      coupling(model.nbodies(), Mat6::Zero()),
      odS(Eigen::Matrix<double, 6, Eigen::Dynamic>::Zero(6, model.nv)),
      C(Eigen::MatrixXd::Zero(model.nv, model.nv)) {}

std::size_t CoriolisWorkspace::bytes(const Model& model) {
  return objects<RigidInertia>(bodies(model)) + objects<Mat6>(bodies(model)) +
         matrix(6, dofs(model)) + matrix(dofs(model), dofs(model));
}

std::size_t CoriolisWorkspace::heap_bytes() const {
  return total_heap_bytes(composite, coupling, odS, C);
}

CentroidalWorkspace::CentroidalWorkspace(const Model& model)
    : composite(model.nbodies()),
      Jcom(Eigen::Matrix<double, 3, Eigen::Dynamic>::Zero(3, model.nv)),
      Ag(Eigen::Matrix<double, 6, Eigen::Dynamic>::Zero(6, model.nv)) {}

std::size_t CentroidalWorkspace::bytes(const Model& model) {
  return objects<RigidInertia>(bodies(model)) + matrix(3, dofs(model)) + matrix(6, dofs(model));
}

std::size_t CentroidalWorkspace::heap_bytes() const {
  return total_heap_bytes(composite, Jcom, Ag);
}

HomogeneousWorkspace::HomogeneousWorkspace(const Model& model)
    : oMi(model.nbodies(), Eigen::Matrix4d::Identity()),
      W(model.nbodies(), Eigen::Matrix4d::Zero()),
      H(model.nbodies(), Eigen::Matrix4d::Zero()),
      J(model.nbodies(), Eigen::Matrix4d::Zero()),
      P(model.nbodies(), Eigen::Matrix4d::Zero()),
      L(model.nv, Eigen::Matrix4d::Zero()),
      tau(Eigen::VectorXd::Zero(model.nv)),
      M(Eigen::MatrixXd::Zero(model.nv, model.nv)) {}

std::size_t HomogeneousWorkspace::bytes(const Model& model) {
  return objects<Eigen::Matrix4d>(5 * bodies(model) + dofs(model)) + matrix(dofs(model), 1) +
         matrix(dofs(model), dofs(model));
}

std::size_t HomogeneousWorkspace::heap_bytes() const {
  return total_heap_bytes(oMi, W, H, J, P, L, tau, M);
}

ConstraintWorkspace::ConstraintWorkspace(const Model& model)
    : dof_work(Eigen::VectorXd::Zero(model.nv)), dof_scale(Eigen::VectorXd::Zero(model.nv)) {
  reserve_rows(loop_rows(model));
}

void ConstraintWorkspace::reserve_rows(int rows) {
  if (rows <= capacity) return;
  const auto nv = dof_work.size();
  capacity = rows;
  jacobian.setZero(capacity, nv);
  bias.setZero(capacity);
  gain.setZero(nv, capacity);
  system.setZero(capacity, capacity);
  scratch.setZero(capacity, capacity);
  permutation.setZero(capacity);
  rhs.setZero(capacity);
  work.setZero(2 * capacity);
  passive_columns.setZero(capacity, nv);
  actuated_columns.setZero(capacity, nv);
}

std::size_t ConstraintWorkspace::bytes(const Model& model) {
  return bytes(model, loop_rows(model));
}

std::size_t ConstraintWorkspace::bytes(const Model& model, int constraint_rows) {
  const auto rows = static_cast<std::size_t>(std::max(constraint_rows, loop_rows(model)));
  // bias and rhs hold `rows` entries, work twice as many.
  return 4 * matrix(rows, dofs(model)) + 2 * matrix(rows, rows) + matrix<int>(rows, 1) +
         4 * matrix(rows, 1) + 2 * matrix(dofs(model), 1);
}

std::size_t ConstraintWorkspace::heap_bytes() const {
  return total_heap_bytes(jacobian, bias, gain, system, scratch, permutation, rhs, work, dof_work,
                          dof_scale, passive_columns, actuated_columns);
}

ClosedChainWorkspace::ClosedChainWorkspace(const Model& model)
    : passive_gram(Eigen::MatrixXd::Zero(model.nv, model.nv)),
      passive_reduced(Eigen::MatrixXd::Zero(model.nv, model.nv)),
      passive_permutation(Eigen::VectorXi::Zero(model.nv)),
      dof_work(Eigen::VectorXd::Zero(2 * model.nv)),
      dof_order(Eigen::VectorXi::Zero(model.nv)) {}

std::size_t ClosedChainWorkspace::bytes(const Model& model) {
  return 2 * matrix(dofs(model), dofs(model)) + 2 * matrix<int>(dofs(model), 1) +
         matrix(2 * dofs(model), 1);
}

std::size_t ClosedChainWorkspace::heap_bytes() const {
  return total_heap_bytes(passive_gram, passive_reduced, passive_permutation, dof_work, dof_order);
}

Data::Data(const Model& model)
    : nq(model.nq),
      nv(model.nv),
      nbodies(model.nbodies()),
      liMi(model.nbodies(), Transform::Identity()),
      oMi(model.nbodies(), Transform::Identity()),
      v(model.nbodies(), Motion::Zero()),
      a(model.nbodies(), Motion::Zero()),
      oMf(model.frames.size(), Transform::Identity()),
      a_gf(model.nbodies(), Motion::Zero()),
      f(model.nbodies(), Force::Zero()),
      tau(Eigen::VectorXd::Zero(model.nv)),
      ddq(Eigen::VectorXd::Zero(model.nv)),
      oS(Eigen::Matrix<double, 6, Eigen::Dynamic>::Zero(6, model.nv)),
      ov(model.nbodies(), Motion::Zero()),
      oa_gf(model.nbodies(), Motion::Zero()),
      J(Eigen::Matrix<double, 6, Eigen::Dynamic>::Zero(6, model.nv)),
      dof_parent(dof_parents(model)),
      dof_subtree_end(dof_subtree_ends(model)) {}

void Data::bind(const Model& model, WorkspaceSet set) {
  for_each_workspace([&](Workspace w, auto slot) {
    if (set.contains(w) && !(this->*slot).has_value()) (this->*slot).emplace(model);
  });
}

std::size_t Data::heap_bytes() const {
  std::size_t bytes = total_heap_bytes(liMi, oMi, v, a, oMf, a_gf, f, tau, ddq, oS, ov, oa_gf, J,
                                       dof_parent, dof_subtree_end);
  for_each_workspace([&](Workspace, auto slot) {
    if ((this->*slot).has_value()) bytes += (this->*slot)->heap_bytes();
  });
  return bytes;
}

std::size_t Data::heap_bytes_with(const Model& model, WorkspaceSet set) const {
  return heap_bytes() + bytes_to_bind(model, set, this);
}

std::size_t Data::workspace_bytes(const Model& model, WorkspaceSet set) {
  const std::size_t n = bodies(model);
  const std::size_t shared =
      objects<Transform>(2 * n + model.frames.size()) + objects<Motion>(5 * n) + objects<Force>(n) +
      2 * matrix(dofs(model), 1) + 2 * matrix(6, dofs(model)) + 2 * objects<int>(dofs(model));
  return shared + bytes_to_bind(model, set, nullptr);
}

}  // namespace torqued
