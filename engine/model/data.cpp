// Sizing of the per-thread workspace: the one place where algorithm memory is allocated.
#include "engine/model/data.hpp"

namespace torqued {

Data::Data(const Model& model)
    : liMi(model.nbodies(), Transform::Identity()),
      oMi(model.nbodies(), Transform::Identity()),
      v(model.nbodies(), Motion::Zero()),
      a(model.nbodies(), Motion::Zero()),
      oMf(model.frames.size(), Transform::Identity()),
      a_gf(model.nbodies(), Motion::Zero()),
      f(model.nbodies(), Force::Zero()),
      tau(Eigen::VectorXd::Zero(model.nv)),
      Ycrb(model.nbodies()),
      oS(Eigen::Matrix<double, 6, Eigen::Dynamic>::Zero(6, model.nv)),
      M(Eigen::MatrixXd::Zero(model.nv, model.nv)),
      ov(model.nbodies(), Motion::Zero()),
      oa_gf(model.nbodies(), Motion::Zero()),
      Ia(model.nbodies(), Mat6::Zero()),
      pa(model.nbodies(), Force::Zero()),
      c(model.nbodies(), Motion::Zero()),
      U(Eigen::Matrix<double, 6, Eigen::Dynamic>::Zero(6, model.nv)),
      Dinv(model.nbodies(), Mat6::Zero()),
      u(Eigen::VectorXd::Zero(model.nv)),
      ddq(Eigen::VectorXd::Zero(model.nv)),
      J(Eigen::Matrix<double, 6, Eigen::Dynamic>::Zero(6, model.nv)) {}

}  // namespace torqued
