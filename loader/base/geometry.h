// Small value types shared by the operators: a 3x3 double matrix (homogeneous 2-D transforms,
// row-major, points are column vectors: p' = M p) and a pixel-space xyxy box with its class.
#pragma once

#include <array>
#include <cstdint>

namespace yc {

struct Mat3 {
  std::array<double, 9> m{1, 0, 0, 0, 1, 0, 0, 0, 1};

  static Mat3 Identity() { return Mat3(); }
  static Mat3 Translation(double tx, double ty) { return Mat3{{1, 0, tx, 0, 1, ty, 0, 0, 1}}; }
  static Mat3 Scaling(double sx, double sy) { return Mat3{{sx, 0, 0, 0, sy, 0, 0, 0, 1}}; }
  double operator()(int r, int c) const { return m[r * 3 + c]; }
  double& operator()(int r, int c) { return m[r * 3 + c]; }
  bool IsAffine() const { return m[6] == 0.0 && m[7] == 0.0 && m[8] == 1.0; }
  bool IsIdentity() const { return m == Mat3().m; }
  // Inverse; returns false (and leaves *out alone) when the matrix is singular.
  bool Inverse(Mat3* out) const;
  // Applies to (x, y, 1). `project` divides by the third coordinate (perspective).
  void Apply(double x, double y, bool project, double* ox, double* oy) const;
};

Mat3 operator*(const Mat3& a, const Mat3& b);

// Pixel-space box, corners in continuous coordinates (x2 = x1 + width).
struct BoxXyxy {
  float x1 = 0, y1 = 0, x2 = 0, y2 = 0;
  int32_t cls = 0;
  float Width() const { return x2 - x1; }
  float Height() const { return y2 - y1; }
};

}  // namespace yc
