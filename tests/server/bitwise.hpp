// Test support for comparing the server's answers with the engine's, bit for bit: results are
// gathered into flat vectors of doubles in the wire's row-major order and compared with memcmp.
#pragma once

#include <gtest/gtest.h>

#include <Eigen/Core>
#include <cstring>
#include <string>
#include <vector>

namespace torqued::testing {

// `got` (a repeated double field or a vector) holds exactly the bits of `want`.
template <typename Field>
void expect_bitwise_equal(const Field& got, const std::vector<double>& want,
                          const std::string& what) {
  ASSERT_EQ(static_cast<std::size_t>(got.size()), want.size()) << what;
  // An empty field's data() is null, which memcmp may not take even for 0 bytes (UBSan).
  if (want.empty()) return;
  EXPECT_EQ(0, std::memcmp(got.data(), want.data(), want.size() * sizeof(double))) << what;
}

// State `state` of a flat batch whose states are `width` numbers each.
inline Eigen::VectorXd row(const std::vector<double>& values, int state, int width) {
  return Eigen::Map<const Eigen::VectorXd>(values.data() + static_cast<std::size_t>(state) * width,
                                           width);
}

// Appends x in storage order (a column-major matrix of one state per column is row-major per
// state).
inline void append(std::vector<double>& out, const Eigen::Ref<const Eigen::MatrixXd>& x) {
  out.insert(out.end(), x.data(), x.data() + x.size());
}

}  // namespace torqued::testing
