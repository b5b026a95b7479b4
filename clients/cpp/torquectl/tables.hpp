// torquectl's batch I/O: states read from JSON or CSV into named (batch, width) matrices, and
// results written as JSON or CSV with every number printed round-trip exact (%.17g); and text
// tables for a person to read (solve's summary).
//
// Input. JSON: {"q": [[...], ...], "v": [[...], ...]} (one row per state; a flat list is one
// state) or a list of objects, one per state, each with flat lists. CSV: with a header, columns
// are found by name, "FIELD:COORDINATE" ("v:shoulder_pan_joint", "q:root_joint:3"; a bare
// coordinate name is a q column); without a header (every cell a number), the fields' columns
// come in order, q then v then a or tau.
#pragma once

#include <iosfwd>
#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

#include "torqued/client.hpp"

namespace torqued::torquectl {

using client::Matrix;

// Bad input (unreadable, malformed, missing or wrongly sized fields): exit code 3.
class InputError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

// Names of the model's configuration (velocity = false) or velocity coordinates: a joint's name
// when it has one coordinate, "joint:k" (k from 0) otherwise.
std::vector<std::string> coordinate_labels(const v1::Model& model, bool velocity);
// "lin_x", "lin_y", "lin_z", "ang_x", "ang_y", "ang_z": the parts of a spatial vector.
const std::vector<std::string>& spatial_labels();
// "body:lin_x" ... for every moving body: the columns of external forces.
std::vector<std::string> wrench_labels(const v1::Model& model);

// A field a command reads; its width is labels.size().
struct InputField {
  std::string name;
  std::vector<std::string> labels;
  bool required = true;
};

// The fields read from `text` (JSON when it starts with '{' or '[', CSV otherwise), in the order
// of `fields`; an absent optional field is a (batch, 0) matrix. Throws InputError.
std::vector<Matrix> read_states(const std::string& text, const std::vector<InputField>& fields);

// A result: `values` holds one state per row, each the row-major flattening of an array whose
// dimensions are labelled by `dims`; no dims: one number per state.
struct OutputField {
  std::string name;
  std::vector<std::vector<std::string>> dims;
  Matrix values;
};

struct Output {
  std::vector<OutputField> fields;
  // Named lists of strings printed before the fields (the frames of Kinematics); JSON only.
  std::vector<std::pair<std::string, std::vector<std::string>>> lists = {};
};

// {"batch_size": N, "FIELD": [state arrays nested by dims], ...}; non-finite numbers as null.
void write_json(std::ostream& out, const Output& output);
// A header "FIELD:label:label,..." and one line per state.
void write_csv(std::ostream& out, const Output& output);

// Rows of cells as text columns, each as wide as its widest cell and two spaces from the next,
// left-aligned; no trailing spaces.
void write_text_table(std::ostream& out, const std::vector<std::vector<std::string>>& rows);

// One state's matrices as one row each: (batch, rows · cols).
Matrix flatten(const client::Matrices& per_state);

}  // namespace torqued::torquectl
