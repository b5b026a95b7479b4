// sin_cos (engine/spatial/sin_cos.hpp) against the C library's sin and cos.
//
// Tolerance: the rotation matrices built from it hold numbers of order 1, so what matters is the
// absolute error: at most 2.3e-16 (one ulp of 1, i.e. the rounding of the last Taylor terms and of
// the reduction). Relative error within 2 ulp away from the zeros, checked on |x| ≤ 100 where
// joint angles live.
#include "engine/spatial/sin_cos.hpp"

#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <cstring>
#include <limits>
#include <random>

namespace torqued {
namespace {

std::int64_t ulp_distance(double a, double b) {
  std::int64_t x, y;
  std::memcpy(&x, &a, sizeof x);
  std::memcpy(&y, &b, sizeof y);
  if (x < 0) x = std::numeric_limits<std::int64_t>::min() - x;
  if (y < 0) y = std::numeric_limits<std::int64_t>::min() - y;
  return x > y ? x - y : y - x;
}

TEST(SinCosTest, MatchesLibraryOnJointAngleRanges) {
  std::mt19937_64 rng(7);
  for (const double range : {0.5, 3.5, 10.0, 100.0, 9.9e4}) {
    std::uniform_real_distribution<double> draw(-range, range);
    double max_abs_error = 0.0;
    for (int k = 0; k < 200000; ++k) {
      const double x = draw(rng);
      double s, c;
      sin_cos(x, s, c);
      max_abs_error =
          std::max({max_abs_error, std::abs(s - std::sin(x)), std::abs(c - std::cos(x))});
      if (range <= 100.0) {
        if (std::abs(std::sin(x)) > 0.1) {
          EXPECT_LE(ulp_distance(s, std::sin(x)), 2) << x;
        }
        if (std::abs(std::cos(x)) > 0.1) {
          EXPECT_LE(ulp_distance(c, std::cos(x)), 2) << x;
        }
      }
    }
    EXPECT_LE(max_abs_error, 2.3e-16) << "range " << range;
  }
}

TEST(SinCosTest, QuadrantBoundariesAndSpecialValues) {
  const double pi = 3.141592653589793;
  for (int k = -8; k <= 8; ++k) {
    for (const double offset : {-1e-9, 0.0, 1e-9, pi / 4, -pi / 4}) {
      const double x = k * pi / 2 + offset;
      double s, c;
      sin_cos(x, s, c);
      EXPECT_NEAR(s, std::sin(x), 2.3e-16) << x;
      EXPECT_NEAR(c, std::cos(x), 2.3e-16) << x;
    }
  }
  double s, c;
  sin_cos(0.0, s, c);
  EXPECT_EQ(s, 0.0);
  EXPECT_EQ(c, 1.0);
  // Outside the reduction's range and non-finite inputs go to the library.
  sin_cos(1e10, s, c);
  EXPECT_EQ(s, std::sin(1e10));
  EXPECT_EQ(c, std::cos(1e10));
  sin_cos(std::numeric_limits<double>::infinity(), s, c);
  EXPECT_TRUE(std::isnan(s) && std::isnan(c));
  sin_cos(std::numeric_limits<double>::quiet_NaN(), s, c);
  EXPECT_TRUE(std::isnan(s) && std::isnan(c));
}

}  // namespace
}  // namespace torqued
