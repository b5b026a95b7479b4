// Activations of residuals (see the header for the formulas).
#include "engine/optimal_control/activation.hpp"

#include <cmath>

namespace torqued {
namespace {

// The excess of r_i over [l_i, u_i]: r_i − l_i below, r_i − u_i above, 0 inside.
double excess(const Activation& activation, const Eigen::Ref<const Eigen::VectorXd>& r,
              Eigen::Index i) {
  if (r[i] < activation.lower[i]) return r[i] - activation.lower[i];
  if (r[i] > activation.upper[i]) return r[i] - activation.upper[i];
  return 0.0;
}

double weight(const Activation& activation, Eigen::Index i) {
  return activation.type == ActivationType::kWeightedQuadratic ||
                 activation.type == ActivationType::kWeightedQuadraticBarrier
             ? activation.weights[i]
             : 1.0;
}

// a(r) and, when `gradient` is given, a_r and a_rr.
double evaluate(const Activation& activation, const Eigen::Ref<const Eigen::VectorXd>& r,
                Eigen::Ref<Eigen::VectorXd>* gradient, Eigen::Ref<Eigen::VectorXd>* curvature) {
  double value = 0.0;
  for (Eigen::Index i = 0; i < r.size(); ++i) {
    double a_r = 0.0, a_rr = 0.0;
    switch (activation.type) {
      case ActivationType::kQuadratic:
      case ActivationType::kWeightedQuadratic: {
        const double w = weight(activation, i);
        value += 0.5 * w * r[i] * r[i];
        a_r = w * r[i];
        a_rr = w;
        break;
      }
      case ActivationType::kQuadraticBarrier:
      case ActivationType::kWeightedQuadraticBarrier: {
        const double w = weight(activation, i);
        const double e = excess(activation, r, i);
        value += 0.5 * w * e * e;
        a_r = w * e;
        a_rr = e != 0.0 ? w : 0.0;
        break;
      }
      case ActivationType::kSmooth1Norm: {
        const double s = std::sqrt(activation.smoothing + r[i] * r[i]);
        value += s;
        a_r = r[i] / s;
        a_rr = activation.smoothing / (s * s * s);
        break;
      }
    }
    if (gradient != nullptr) {
      (*gradient)[i] = a_r;
      (*curvature)[i] = a_rr;
    }
  }
  return value;
}

}  // namespace

double activation_value(const Activation& activation, const Eigen::Ref<const Eigen::VectorXd>& r) {
  return evaluate(activation, r, nullptr, nullptr);
}

double activation_derivatives(const Activation& activation,
                              const Eigen::Ref<const Eigen::VectorXd>& r,
                              Eigen::Ref<Eigen::VectorXd> gradient,
                              Eigen::Ref<Eigen::VectorXd> curvature) {
  return evaluate(activation, r, &gradient, &curvature);
}

}  // namespace torqued
