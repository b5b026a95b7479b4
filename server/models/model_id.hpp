// Model ids: the content hash of a built model's canonical form, so the same robot registered
// twice, on any replica, gets the same id, and two different robots never share one.
#pragma once

#include <string>

#include "engine/model/model.hpp"

namespace torqued::server {

// The canonical byte form of a model: a version tag, then every field that defines the model's
// dynamics and layout (name, gravity, tree, joints, limits, placements, inertias, frames) in a
// fixed order, numbers as little-endian IEEE-754 with −0 written as +0. Loader warnings and
// derived index tables are left out.
std::string canonical_model_bytes(const Model& model);

// The first 128 bits of SHA-256 over canonical_model_bytes, as 32 lowercase hex digits.
std::string model_id(const Model& model);

// True for strings shaped like a model id.
bool looks_like_model_id(const std::string& text);

}  // namespace torqued::server
