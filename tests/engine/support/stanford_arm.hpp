// The Stanford arm of ../shared/seeds/digest-001-004.md: geometry of §3.6 (Legnani et al. part 2,
// §4; standard DH, d2 = 0.2 m, d4 = 0.1 m) with the masses, inertias and state of §7.1, whose
// derived results (three formulations agreeing to 4e-15, printed with 11 significant digits) the
// tests compare against.
#pragma once

#include <numbers>

#include "engine/io/dh.hpp"

namespace torqued::test_support {

inline DhTable stanford_arm() {
  const auto link = [](JointType type, double alpha, double d, double mass, const Vec3& com,
                       const Vec3& inertia) {
    DhLink l;
    l.type = type;
    l.alpha = alpha;
    l.d = d;
    l.mass = mass;
    l.com = com;
    l.inertia = inertia.asDiagonal();
    return l;
  };
  constexpr double kHalfPi = std::numbers::pi / 2;
  DhTable table;
  table.name = "stanford_arm";
  table.convention = DhConvention::kStandard;
  table.links = {
      link(JointType::kRevolute, -kHalfPi, 0.0, 5.0, {0, 0.05, 0}, {0.10, 0.12, 0.08}),
      link(JointType::kRevolute, kHalfPi, 0.2, 4.0, {0, 0, -0.05}, {0.06, 0.05, 0.04}),
      link(JointType::kPrismatic, 0.0, 0.0, 3.0, {0, 0, -0.30}, {0.20, 0.20, 0.01}),
      link(JointType::kRevolute, -kHalfPi, 0.1, 1.0, {0, 0.02, 0}, {0.004, 0.003, 0.004}),
      link(JointType::kRevolute, kHalfPi, 0.0, 0.6, {0, 0, 0.03}, {0.002, 0.002, 0.001}),
      link(JointType::kRevolute, 0.0, 0.0, 0.5, {0, 0, 0.05}, {0.001, 0.001, 0.0005})};
  return table;
}

// The state of §7.1 and the results without external action.
struct StanfordArmCase {
  Eigen::VectorXd q = (Eigen::VectorXd(6) << 0.3, -0.6, 0.5, 0.8, -0.4, 0.2).finished();
  Eigen::VectorXd v = (Eigen::VectorXd(6) << 0.5, -0.3, 0.2, 0.7, -0.6, 0.4).finished();
  Eigen::VectorXd a = (Eigen::VectorXd(6) << 0.2, 0.1, -0.3, 0.5, 0.4, -0.2).finished();
  Eigen::VectorXd tau = (Eigen::VectorXd(6) << 0.33465973068, 9.4151400848, 39.530340085,
                         0.075500824308, 0.27348638154, 5.2415510786e-05)
                            .finished();
  Eigen::VectorXd gravity =
      (Eigen::VectorXd(6) << 0, 9.3980322284, 41.292366150, 0.066536844437, 0.28842086108, 0)
          .finished();
  Eigen::MatrixXd mass = (Eigen::MatrixXd(6, 6) << 0.89967220892, -0.26942392154, 0.56915276991,
                          0.0065595876673, -0.014229329727, 0.00030349554122,  //
                          -0.26942392154, 1.1684600045, 0.011666345989, 0.0080537883970,
                          0.019893326993, -0.00013967580988,                         //
                          0.56915276991, 0.011666345989, 5.1, 0, 0.016744988719, 0,  //
                          0.0065595876673, 0.0080537883970, 0, 0.0049989174631, 0,
                          0.00046053049700,                                                //
                          -0.014229329727, 0.019893326993, 0.016744988719, 0, 0.00479, 0,  //
                          0.00030349554122, -0.00013967580988, 0, 0.00046053049700, 0, 0.0005)
                             .finished();
};

}  // namespace torqued::test_support
