// The layout a client needs to build its arrays: the proto Model (joints with their q and v
// offsets, bodies, frames, warnings, loop closures) made from an engine Model.
#pragma once

#include <string>

#include "engine/model/model.hpp"
#include "torqued/v1/model.pb.h"

namespace torqued::server {

// The rows of a bilateral constraint whose first row is `offset`.
v1::ConstraintRows constraint_rows(const BilateralConstraint& constraint, int offset);

v1::Model make_layout(const Model& model, const std::string& id, v1::ModelOrigin origin);

v1::ModelSummary make_summary(const v1::Model& layout);

}  // namespace torqued::server
