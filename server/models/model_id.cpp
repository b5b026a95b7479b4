// Canonical serialization of a Model and its SHA-256 content hash (OpenSSL's EVP digest).
#include "server/models/model_id.hpp"

#include <openssl/evp.h>

#include <bit>
#include <cstdint>
#include <stdexcept>

namespace torqued::server {
namespace {

class CanonicalWriter {
 public:
  void u64(std::uint64_t x) {
    for (int i = 0; i < 8; ++i) bytes_.push_back(static_cast<char>((x >> (8 * i)) & 0xff));
  }
  void i64(std::int64_t x) { u64(static_cast<std::uint64_t>(x)); }
  void f64(double x) { u64(std::bit_cast<std::uint64_t>(x == 0.0 ? 0.0 : x)); }
  void str(const std::string& s) {
    u64(s.size());
    bytes_.append(s);
  }
  void vec3(const Vec3& v) {
    for (int i = 0; i < 3; ++i) f64(v[i]);
  }
  void mat3(const Mat3& m) {
    for (int r = 0; r < 3; ++r) {
      for (int c = 0; c < 3; ++c) f64(m(r, c));
    }
  }
  void transform(const Transform& t) {
    mat3(t.rotation);
    vec3(t.translation);
  }
  std::string take() { return std::move(bytes_); }

 private:
  std::string bytes_;
};

}  // namespace

std::string canonical_model_bytes(const Model& model) {
  CanonicalWriter w;
  w.str("torqued-model-v1");
  w.str(model.name);
  w.i64(model.nq);
  w.i64(model.nv);
  w.vec3(model.gravity);
  w.i64(model.floating_base ? 1 : 0);
  const int n = model.nbodies();
  w.i64(n);
  for (int i = 0; i < n; ++i) {
    w.i64(model.parent[i]);
    w.str(model.body_names[i]);
    w.str(model.joint_names[i]);
    const Joint& j = model.joints[i];
    w.i64(static_cast<int>(j.type));
    w.vec3(j.axis);
    w.f64(j.pitch);
    w.i64(j.idx_q);
    w.i64(j.idx_v);
    w.i64(j.nq);
    w.i64(j.nv);
    const JointLimits& l = model.limits[i];
    w.f64(l.lower);
    w.f64(l.upper);
    w.f64(l.velocity);
    w.f64(l.effort);
    w.transform(model.joint_placements[i]);
    const RigidInertia& y = model.inertias[i];
    w.f64(y.mass);
    w.vec3(y.first_moment);
    w.mat3(y.rotational);
  }
  w.i64(static_cast<std::int64_t>(model.frames.size()));
  for (const Frame& f : model.frames) {
    w.str(f.name);
    w.i64(static_cast<int>(f.kind));
    w.i64(f.body);
    w.transform(f.placement);
  }
  // Only models with loops carry the section, so the ids of tree models stay what they were.
  if (!model.loop_closures.empty()) w.i64(static_cast<std::int64_t>(model.loop_closures.size()));
  for (const BilateralConstraint& c : model.loop_closures) {
    w.str(c.name);
    w.i64(static_cast<int>(c.type));
    w.i64(c.body1);
    w.transform(c.placement1);
    w.i64(c.body2);
    w.transform(c.placement2);
  }
  return w.take();
}

std::string model_id(const Model& model) {
  const std::string bytes = canonical_model_bytes(model);
  unsigned char digest[EVP_MAX_MD_SIZE];
  unsigned int length = 0;
  if (EVP_Digest(bytes.data(), bytes.size(), digest, &length, EVP_sha256(), nullptr) != 1) {
    throw std::runtime_error("SHA-256 failed");
  }
  static constexpr char kHex[] = "0123456789abcdef";
  std::string id;
  for (int i = 0; i < 16; ++i) {
    id.push_back(kHex[digest[i] >> 4]);
    id.push_back(kHex[digest[i] & 0xf]);
  }
  return id;
}

bool looks_like_model_id(const std::string& text) {
  if (text.size() != 32) return false;
  for (const char c : text) {
    if (!((c >= '0' && c <= '9') || (c >= 'a' && c <= 'f'))) return false;
  }
  return true;
}

}  // namespace torqued::server
