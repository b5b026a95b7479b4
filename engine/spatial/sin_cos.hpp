// Sine and cosine of one angle together, for the joint transforms of every recursive algorithm.
//
// glibc's sincos costs ~125 instructions per call here (a library call plus range checks for
// arguments up to 1e300), about 8% of a CRBA call. Joint angles are small, so this reduces
// x = k·π/2 + r with |r| ≤ π/4 in two steps (π/2 split into a 33-bit head, so k·head is exact for
// |k| < 2^20, and a tail) and evaluates the Taylor series of sin and cos in r² to the terms where
// the remainder is below half an ulp on [-π/4, π/4] (r¹⁷/17! and r¹⁸/18!). Measured against
// glibc (tests/engine/spatial/sin_cos_test.cpp): absolute error at most 2.3e-16, within 2 ulp for
// |x| ≤ 100. Large or non-finite arguments go to the library.
#pragma once

#include <cmath>

namespace torqued {

inline void sin_cos(double x, double& sine, double& cosine) {
  constexpr double kTwoOverPi = 0.6366197723675814;
  constexpr double kHalfPiHead = 1.5707963267341256;  // 33 significant bits
  constexpr double kHalfPiTail = 6.077100506506192e-11;
  if (!(std::abs(x) < 1e5)) {
    sine = std::sin(x);
    cosine = std::cos(x);
    return;
  }
  const double k = std::nearbyint(x * kTwoOverPi);
  const double r = (x - k * kHalfPiHead) - k * kHalfPiTail;
  const double z = r * r;
  // (-1)^n / (2n+1)! and (-1)^n / (2n)!.
  const double sin_r =
      r + r * z *
              (-1.0 / 6 +
               z * (1.0 / 120 + z * (-1.0 / 5040 +
                                     z * (1.0 / 362880 + z * (-1.0 / 39916800 +
                                                              z * (1.0 / 6227020800 +
                                                                   z * (-1.0 / 1307674368000)))))));
  const double cos_r =
      1.0 - 0.5 * z +
      z * z *
          (1.0 / 24 +
           z * (-1.0 / 720 +
                z * (1.0 / 40320 + z * (-1.0 / 3628800 + z * (1.0 / 479001600 +
                                                              z * (-1.0 / 87178291200 +
                                                                   z * (1.0 / 20922789888000)))))));
  switch (static_cast<long>(k) & 3) {
    case 0:
      sine = sin_r;
      cosine = cos_r;
      return;
    case 1:
      sine = cos_r;
      cosine = -sin_r;
      return;
    case 2:
      sine = -sin_r;
      cosine = -cos_r;
      return;
    default:
      sine = -cos_r;
      cosine = sin_r;
      return;
  }
}

}  // namespace torqued
