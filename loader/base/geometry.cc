#include "loader/base/geometry.h"

#include <cmath>

namespace yc {

Mat3 operator*(const Mat3& a, const Mat3& b) {
  Mat3 r;
  for (int i = 0; i < 3; ++i)
    for (int j = 0; j < 3; ++j) r(i, j) = a(i, 0) * b(0, j) + a(i, 1) * b(1, j) + a(i, 2) * b(2, j);
  return r;
}

bool Mat3::Inverse(Mat3* out) const {
  const Mat3& a = *this;
  const double c00 = a(1, 1) * a(2, 2) - a(1, 2) * a(2, 1);
  const double c01 = a(1, 2) * a(2, 0) - a(1, 0) * a(2, 2);
  const double c02 = a(1, 0) * a(2, 1) - a(1, 1) * a(2, 0);
  const double det = a(0, 0) * c00 + a(0, 1) * c01 + a(0, 2) * c02;
  if (!std::isfinite(det) || std::fabs(det) < 1e-300) return false;
  const double inv = 1.0 / det;
  Mat3 r;
  r(0, 0) = c00 * inv;
  r(0, 1) = (a(0, 2) * a(2, 1) - a(0, 1) * a(2, 2)) * inv;
  r(0, 2) = (a(0, 1) * a(1, 2) - a(0, 2) * a(1, 1)) * inv;
  r(1, 0) = c01 * inv;
  r(1, 1) = (a(0, 0) * a(2, 2) - a(0, 2) * a(2, 0)) * inv;
  r(1, 2) = (a(0, 2) * a(1, 0) - a(0, 0) * a(1, 2)) * inv;
  r(2, 0) = c02 * inv;
  r(2, 1) = (a(0, 1) * a(2, 0) - a(0, 0) * a(2, 1)) * inv;
  r(2, 2) = (a(0, 0) * a(1, 1) - a(0, 1) * a(1, 0)) * inv;
  if (IsAffine()) {  // keep affine matrices exactly affine
    r(2, 0) = 0;
    r(2, 1) = 0;
    r(2, 2) = 1;
  }
  *out = r;
  return true;
}

void Mat3::Apply(double x, double y, bool project, double* ox, double* oy) const {
  double u = m[0] * x + m[1] * y + m[2];
  double v = m[3] * x + m[4] * y + m[5];
  if (project) {
    const double w = m[6] * x + m[7] * y + m[8];
    u /= w;
    v /= w;
  }
  *ox = u;
  *oy = v;
}

}  // namespace yc
