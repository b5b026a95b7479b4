// torquectl's batch I/O (see tables.hpp).
#include "torquectl/tables.hpp"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <map>
#include <nlohmann/json.hpp>
#include <ostream>
#include <set>
#include <sstream>

namespace torqued::torquectl {
namespace {

using Json = nlohmann::json;

std::vector<std::string> join_labels(const std::string& prefix,
                                     const std::vector<std::string>& labels) {
  std::vector<std::string> out;
  out.reserve(labels.size());
  for (const std::string& l : labels) out.push_back(prefix + ":" + l);
  return out;
}

std::string format_number(double x) {
  char buffer[32];
  std::snprintf(buffer, sizeof(buffer), "%.17g", x);
  return buffer;
}

// A JSON list of numbers as one state's row of `width` values.
std::vector<double> json_row(const Json& list, const std::string& field) {
  std::vector<double> row;
  for (const Json& x : list) {
    if (!x.is_number())
      throw InputError("input: " + field + " holds " + x.dump() + ", not a number");
    row.push_back(x.get<double>());
  }
  return row;
}

bool is_list_of_lists(const Json& value) { return !value.empty() && value.front().is_array(); }

// name → rows, from either JSON shape.
std::map<std::string, std::vector<std::vector<double>>> json_fields(const std::string& text) {
  Json document;
  try {
    document = Json::parse(text);
  } catch (const Json::parse_error& e) {
    throw InputError(std::string("input: malformed JSON: ") + e.what());
  }
  std::map<std::string, std::vector<std::vector<double>>> fields;
  auto add_state = [&](const std::string& name, const Json& value) {
    if (!value.is_array()) throw InputError("input: " + name + " must be a list of numbers");
    fields[name].push_back(json_row(value, name));
  };
  if (document.is_object()) {
    for (const auto& [name, value] : document.items()) {
      if (!value.is_array()) throw InputError("input: " + name + " must be a list");
      if (is_list_of_lists(value)) {
        for (const Json& state : value) add_state(name, state);
      } else {
        add_state(name, value);
      }
    }
  } else if (document.is_array()) {
    for (const Json& state : document) {
      if (!state.is_object()) throw InputError("input: a list must hold one object per state");
      for (const auto& [name, value] : state.items()) add_state(name, value);
    }
  } else {
    throw InputError("input: JSON must be an object of fields or a list of states");
  }
  return fields;
}

std::string trim(const std::string& s) {
  const std::size_t begin = s.find_first_not_of(" \t\r");
  if (begin == std::string::npos) return "";
  return s.substr(begin, s.find_last_not_of(" \t\r") - begin + 1);
}

std::vector<std::string> split_csv_line(const std::string& line) {
  std::vector<std::string> cells;
  std::stringstream stream(line);
  std::string cell;
  while (std::getline(stream, cell, ',')) cells.push_back(trim(cell));
  if (!line.empty() && line.back() == ',') cells.emplace_back();
  return cells;
}

bool parse_number(const std::string& cell, double& out) {
  if (cell.empty()) return false;
  char* end = nullptr;
  out = std::strtod(cell.c_str(), &end);
  return end == cell.c_str() + cell.size();
}

std::vector<Matrix> csv_fields(const std::string& text, const std::vector<InputField>& fields) {
  std::vector<std::vector<std::string>> lines;
  std::stringstream stream(text);
  std::string line;
  while (std::getline(stream, line)) {
    if (!trim(line).empty()) lines.push_back(split_csv_line(line));
  }
  if (lines.empty()) throw InputError("input: no states");
  bool header = false;
  for (const std::string& cell : lines.front()) {
    double ignored;
    if (!parse_number(cell, ignored)) header = true;
  }
  const std::size_t first_row = header ? 1 : 0;
  const Eigen::Index states = static_cast<Eigen::Index>(lines.size() - first_row);
  const std::size_t width = lines.front().size();

  // Column of every (field, label), -1 where absent.
  std::vector<std::vector<int>> columns(fields.size());
  if (header) {
    std::map<std::string, int> by_name;
    for (std::size_t c = 0; c < width; ++c) {
      if (!by_name.emplace(lines.front()[c], static_cast<int>(c)).second) {
        throw InputError("input: column \"" + lines.front()[c] + "\" appears twice");
      }
    }
    std::map<std::string, bool> used;
    for (std::size_t f = 0; f < fields.size(); ++f) {
      for (const std::string& label : fields[f].labels) {
        auto it = by_name.find(fields[f].name + ":" + label);
        if (it == by_name.end() && fields[f].name == "q") it = by_name.find(label);
        columns[f].push_back(it == by_name.end() ? -1 : it->second);
        if (it != by_name.end()) used[it->first] = true;
      }
    }
    for (const auto& [name, column] : by_name) {
      if (!used.count(name)) throw InputError("input: unknown column \"" + name + "\"");
    }
  } else {
    std::size_t required = 0, all = 0;
    for (const InputField& f : fields) {
      all += f.labels.size();
      if (f.required) required += f.labels.size();
    }
    if (width != required && width != all) {
      throw InputError("input: CSV rows without a header must have " + std::to_string(required) +
                       (all != required ? " or " + std::to_string(all) : std::string()) +
                       " columns, got " + std::to_string(width));
    }
    int next = 0;
    for (std::size_t f = 0; f < fields.size(); ++f) {
      const bool present = fields[f].required || width == all;
      for (std::size_t k = 0; k < fields[f].labels.size(); ++k) {
        columns[f].push_back(present ? next++ : -1);
      }
    }
  }

  std::vector<Matrix> out;
  for (std::size_t f = 0; f < fields.size(); ++f) {
    int found = 0;
    for (const int c : columns[f]) found += c >= 0;
    if (found == 0 && !fields[f].required) {
      out.emplace_back(states, 0);
      continue;
    }
    for (std::size_t k = 0; k < columns[f].size(); ++k) {
      if (columns[f][k] < 0) {
        throw InputError("input: missing column \"" + fields[f].name + ":" + fields[f].labels[k] +
                         "\"");
      }
    }
    Matrix m(states, static_cast<Eigen::Index>(columns[f].size()));
    for (Eigen::Index s = 0; s < states; ++s) {
      const std::vector<std::string>& cells = lines[first_row + s];
      if (cells.size() != width) {
        throw InputError("input: line " + std::to_string(first_row + s + 1) + " has " +
                         std::to_string(cells.size()) + " cells, expected " +
                         std::to_string(width));
      }
      for (Eigen::Index k = 0; k < m.cols(); ++k) {
        if (!parse_number(cells[columns[f][k]], m(s, k))) {
          throw InputError("input: line " + std::to_string(first_row + s + 1) + ": \"" +
                           cells[columns[f][k]] + "\" is not a number");
        }
      }
    }
    out.push_back(std::move(m));
  }
  return out;
}

std::vector<Matrix> json_states(const std::string& text, const std::vector<InputField>& fields) {
  std::map<std::string, std::vector<std::vector<double>>> rows = json_fields(text);
  // A field of another command (one file of states for several commands) is left unread.
  static const std::set<std::string> kStateFields = {"q", "v", "a", "tau", "u", "external_forces"};
  for (const auto& entry : rows) {
    const std::string& name = entry.first;
    const bool known = kStateFields.count(name) > 0 ||
                       std::any_of(fields.begin(), fields.end(),
                                   [&](const InputField& f) { return f.name == name; });
    if (!known) {
      std::string names;
      for (const InputField& f : fields) names += (names.empty() ? "" : ", ") + f.name;
      throw InputError("input: unknown field \"" + name + "\" (fields are " + names + ")");
    }
  }
  Eigen::Index states = -1;
  std::string counted_by;
  for (const InputField& f : fields) {
    auto it = rows.find(f.name);
    if (it == rows.end()) continue;
    const Eigen::Index n = static_cast<Eigen::Index>(it->second.size());
    if (states >= 0 && n != states) {
      throw InputError("input: " + f.name + " has " + std::to_string(n) + " states, " + counted_by +
                       " has " + std::to_string(states));
    }
    states = n;
    counted_by = f.name;
  }
  if (states <= 0) throw InputError("input: no states");
  std::vector<Matrix> out;
  for (const InputField& f : fields) {
    auto it = rows.find(f.name);
    if (it == rows.end()) {
      if (f.required) throw InputError("input: missing field \"" + f.name + "\"");
      out.emplace_back(states, 0);
      continue;
    }
    Matrix m(states, static_cast<Eigen::Index>(f.labels.size()));
    for (Eigen::Index s = 0; s < states; ++s) {
      const std::vector<double>& row = it->second[s];
      if (row.size() != f.labels.size()) {
        throw InputError("input: " + f.name + " of state " + std::to_string(s) + " has " +
                         std::to_string(row.size()) + " values, expected " +
                         std::to_string(f.labels.size()));
      }
      m.row(s) = Eigen::Map<const Eigen::RowVectorXd>(row.data(), m.cols());
    }
    out.push_back(std::move(m));
  }
  return out;
}

// Prints the array of one state starting at `data`, nested by dims[d..].
void write_json_array(std::ostream& out, const double* data,
                      const std::vector<std::vector<std::string>>& dims, std::size_t d) {
  if (dims.empty()) {  // one number per state
    out << (std::isfinite(*data) ? format_number(*data) : "null");
    return;
  }
  std::size_t stride = 1;
  for (std::size_t k = d + 1; k < dims.size(); ++k) stride *= dims[k].size();
  out << '[';
  for (std::size_t i = 0; i < dims[d].size(); ++i) {
    if (i > 0) out << ", ";
    if (d + 1 < dims.size()) {
      write_json_array(out, data + i * stride, dims, d + 1);
    } else {
      out << (std::isfinite(data[i]) ? format_number(data[i]) : "null");
    }
  }
  out << ']';
}

// Every combination of the dims' labels, the last dimension fastest.
std::vector<std::string> column_names(const OutputField& field) {
  std::vector<std::string> names = {field.name};
  for (const std::vector<std::string>& dim : field.dims) {
    std::vector<std::string> next;
    for (const std::string& prefix : names) {
      for (const std::string& label : dim) next.push_back(prefix + ":" + label);
    }
    names = std::move(next);
  }
  return names;
}

}  // namespace

std::vector<std::string> coordinate_labels(const v1::Model& model, bool velocity) {
  std::vector<std::string> labels;
  for (const v1::Joint& joint : model.joints()) {
    const int n = velocity ? joint.nv() : joint.nq();
    if (n == 1) {
      labels.push_back(joint.name());
      continue;
    }
    for (int k = 0; k < n; ++k) labels.push_back(joint.name() + ":" + std::to_string(k));
  }
  return labels;
}

const std::vector<std::string>& spatial_labels() {
  static const std::vector<std::string> labels = {"lin_x", "lin_y", "lin_z",
                                                  "ang_x", "ang_y", "ang_z"};
  return labels;
}

std::vector<std::string> wrench_labels(const v1::Model& model) {
  std::vector<std::string> labels;
  for (int b = 1; b < model.bodies_size(); ++b) {
    const std::vector<std::string> parts = join_labels(model.bodies(b).name(), spatial_labels());
    labels.insert(labels.end(), parts.begin(), parts.end());
  }
  return labels;
}

std::vector<Matrix> read_states(const std::string& text, const std::vector<InputField>& fields) {
  const std::size_t first = text.find_first_not_of(" \t\r\n");
  if (first == std::string::npos) throw InputError("input: empty");
  if (text[first] == '{' || text[first] == '[') return json_states(text, fields);
  return csv_fields(text, fields);
}

void write_json(std::ostream& out, const Output& output) {
  const Eigen::Index states = output.fields.empty() ? 0 : output.fields.front().values.rows();
  out << "{\"batch_size\": " << states;
  for (const auto& [name, list] : output.lists)
    out << ", " << Json(name).dump() << ": " << Json(list).dump();
  for (const OutputField& field : output.fields) {
    out << ",\n \"" << field.name << "\": [";
    for (Eigen::Index s = 0; s < states; ++s) {
      out << (s > 0 ? ",\n  " : "\n  ");
      write_json_array(out, field.values.row(s).data(), field.dims, 0);
    }
    out << "]";
  }
  out << "}\n";
}

void write_csv(std::ostream& out, const Output& output) {
  const Eigen::Index states = output.fields.empty() ? 0 : output.fields.front().values.rows();
  bool first = true;
  for (const OutputField& field : output.fields) {
    for (const std::string& name : column_names(field)) {
      out << (first ? "" : ",") << name;
      first = false;
    }
  }
  out << '\n';
  for (Eigen::Index s = 0; s < states; ++s) {
    first = true;
    for (const OutputField& field : output.fields) {
      for (Eigen::Index k = 0; k < field.values.cols(); ++k) {
        out << (first ? "" : ",") << format_number(field.values(s, k));
        first = false;
      }
    }
    out << '\n';
  }
}

void write_text_table(std::ostream& out, const std::vector<std::vector<std::string>>& rows) {
  std::vector<std::size_t> widths;
  for (const std::vector<std::string>& row : rows) {
    if (widths.size() < row.size()) widths.resize(row.size(), 0);
    for (std::size_t c = 0; c < row.size(); ++c) widths[c] = std::max(widths[c], row[c].size());
  }
  for (const std::vector<std::string>& row : rows) {
    std::string line;
    for (std::size_t c = 0; c < row.size(); ++c) {
      line += row[c];
      if (c + 1 < row.size()) line += std::string(widths[c] - row[c].size() + 2, ' ');
    }
    out << line.substr(0, line.find_last_not_of(' ') + 1) << '\n';
  }
}

Matrix flatten(const client::Matrices& per_state) {
  if (per_state.empty()) return Matrix();
  Matrix out(static_cast<Eigen::Index>(per_state.size()), per_state.front().size());
  for (std::size_t s = 0; s < per_state.size(); ++s) {
    out.row(static_cast<Eigen::Index>(s)) =
        Eigen::Map<const Eigen::RowVectorXd>(per_state[s].data(), per_state[s].size());
  }
  return out;
}

}  // namespace torqued::torquectl
