// MJCF reader: the document, once xml_guard.hpp's check bounds it, parsed by TinyXML 2.6 (the
// parser urdfdom uses, so the guard's reasoning holds) and read as MuJoCo's compiler reads it:
// compiler settings and default classes first, then the body tree, then the equality
// constraints. See mjcf.hpp for what is read, refused and warned about.
//
// The tree is walked with an explicit stack, as MuJoCo's own reader does: a document may nest
// kMaxMjcfDepth levels. MuJoCo's numbers where this file follows them: the geom inertia formulas
// and the fromto, zaxis and xyaxes constructions (user_objects.cc, user_util.cc), the euler
// sequence (mjCAlternative::Set), the equality anchors computed at the reference configuration
// (engine_setconst.c) and their meaning (engine_core_constraint.c).
#include "engine/io/mjcf.hpp"

#include <tinyxml.h>

#include <Eigen/Geometry>
#include <algorithm>
#include <array>
#include <charconv>
#include <cmath>
#include <cstring>
#include <functional>
#include <map>
#include <numbers>
#include <set>
#include <span>
#include <utility>
#include <vector>

#include "engine/io/xml_guard.hpp"
#include "engine/model/quoted.hpp"

namespace torqued {
namespace {

// MuJoCo's thresholds: mjEPS for a vector too short to give a direction, mjMINVAL for a volume
// or a mass too small to divide by.
constexpr double kMujocoEps = 1e-14;
constexpr double kMujocoMinVal = 1e-15;

constexpr std::array<const char*, 5> kOrientationAttributes = {"quat", "axisangle", "xyaxes",
                                                               "zaxis", "euler"};

bool is_orientation(const char* attribute) {
  return std::any_of(kOrientationAttributes.begin(), kOrientationAttributes.end(),
                     [attribute](const char* name) { return std::strcmp(name, attribute) == 0; });
}

// Out of line, so that the flattened functions below do not take in every error path.
[[noreturn, gnu::noinline]] void fail(const TiXmlElement& element, const std::string& message) {
  throw ModelError("MJCF line " + std::to_string(element.Row()) + ": " + message);
}

std::string tag(const TiXmlElement& element) {
  // Appended piecewise: GCC 12 warns (-Wrestrict, a false positive) on "<" + std::string.
  std::string out = "<";
  out += printable(element.ValueStr());
  out += ">";
  return out;
}

// "joint 'knee'", or "<joint>" when it has no name: how messages name an element.
std::string describe(const TiXmlElement& element) {
  const char* name = element.Attribute("name");
  return name != nullptr ? element.ValueStr() + " " + quoted(name) : tag(element);
}

// Whether the element gives an orientation itself; two are refused (MuJoCo refuses them too).
bool gives_orientation(const TiXmlElement& element) {
  const auto given =
      std::count_if(kOrientationAttributes.begin(), kOrientationAttributes.end(),
                    [&element](const char* name) { return element.Attribute(name) != nullptr; });
  if (given > 1) fail(element, describe(element) + ": several orientations given");
  return given == 1;
}

bool is_space(char c) { return c == ' ' || c == '\t' || c == '\n' || c == '\r'; }

// The numbers of a whitespace-separated list, or nothing when an item is not a finite number.
std::optional<std::vector<double>> parse_numbers(std::string_view text) {
  std::vector<double> numbers;
  std::size_t at = 0;
  for (;;) {
    while (at < text.size() && is_space(text[at])) ++at;
    if (at == text.size()) return numbers;
    std::size_t end = at;
    while (end < text.size() && !is_space(text[end])) ++end;
    std::string_view item = text.substr(at, end - at);
    // from_chars reads no '+' sign; MuJoCo's reader (strtod) does.
    if (item.size() > 1 && item[0] == '+' && item[1] != '-') item.remove_prefix(1);
    double value = 0.0;
    const auto [last, error] = std::from_chars(item.data(), item.data() + item.size(), value);
    if (error != std::errc() || last != item.data() + item.size() || !std::isfinite(value)) {
      return std::nullopt;
    }
    numbers.push_back(value);
    at = end;
  }
}

// The attributes of the elements that take default classes, the ones the reader reads.
constexpr std::array<const char*, 11> kJointAttributes = {
    "type",    "pos",      "axis",         "range",     "limited",     "ref",
    "damping", "armature", "frictionloss", "stiffness", "springdamper"};
constexpr std::array<const char*, 15> kGeomAttributes = {
    "type",  "size", "fromto",  "pos",   "quat", "axisangle", "xyaxes",      "zaxis",
    "euler", "mass", "density", "group", "mesh", "hfield",    "shellinertia"};
constexpr std::array<const char*, 1> kEqualityAttributes = {"active"};

// What a default class gives one kind of element: for each of `names`, a value (pointing into the
// document, which outlives the reading) or none. Only the attributes the reader reads are kept,
// so that a class costs the same whatever its elements hold and a nested class copies little.
class ClassValues {
 public:
  explicit ClassValues(std::span<const char* const> names)
      : names_(names), values_(names.size(), nullptr) {}

  // `element`'s own values laid over these. An orientation given in any form replaces an
  // inherited one in any form.
  void overlay(const TiXmlElement& element) {
    const bool orientation = gives_orientation(element);
    for (std::size_t i = 0; i < names_.size(); ++i) {
      if (const char* own = element.Attribute(names_[i])) {
        values_[i] = own;
      } else if (orientation && is_orientation(names_[i])) {
        values_[i] = nullptr;
      }
    }
  }

  const char* find(const char* name) const {
    for (std::size_t i = 0; i < names_.size(); ++i) {
      if (std::strcmp(names_[i], name) == 0) return values_[i];
    }
    return nullptr;
  }

 private:
  std::span<const char* const> names_;
  std::vector<const char*> values_;
};

// An element's attributes: its own, over those of its default class if it takes one.
class Element {
 public:
  explicit Element(const TiXmlElement& element, const ClassValues* defaults = nullptr)
      : element_(element), defaults_(defaults) {}

  const TiXmlElement& xml() const { return element_; }

  [[noreturn, gnu::noinline]] void fail(const std::string& message) const {
    torqued::fail(element_, describe(element_) + ": " + message);
  }

  std::optional<std::string_view> text(const char* name) const {
    if (const char* own = element_.Attribute(name)) return own;
    if (defaults_ == nullptr || (is_orientation(name) && gives_orientation(element_))) {
      return std::nullopt;
    }
    if (const char* inherited = defaults_->find(name)) return inherited;
    return std::nullopt;
  }

  // Between `min_count` and `max_count` numbers, or nothing when the attribute is absent.
  std::optional<std::vector<double>> numbers(const char* name, std::size_t min_count,
                                             std::size_t max_count) const {
    const std::optional<std::string_view> value = text(name);
    if (!value) return std::nullopt;
    std::optional<std::vector<double>> numbers = parse_numbers(*value);
    if (!numbers) fail(attribute(name, *value) + " is not a list of finite numbers");
    if (numbers->size() < min_count || numbers->size() > max_count) {
      fail(attribute(name, *value) + " has " + std::to_string(numbers->size()) + " numbers, " +
           (min_count == max_count
                ? std::to_string(min_count)
                : std::to_string(min_count) + " to " + std::to_string(max_count)) +
           " expected");
    }
    return numbers;
  }

  double number(const char* name, double fallback) const {
    const std::optional<std::vector<double>> value = numbers(name, 1, 1);
    return value ? (*value)[0] : fallback;
  }

  Vec3 vec3(const char* name, const Vec3& fallback) const {
    const std::optional<std::vector<double>> value = numbers(name, 3, 3);
    return value ? Vec3((*value)[0], (*value)[1], (*value)[2]) : fallback;
  }

  // One of `keywords`, or `fallback` when the attribute is absent.
  std::string_view keyword(const char* name, std::initializer_list<std::string_view> keywords,
                           std::string_view fallback) const {
    const std::optional<std::string_view> value = text(name);
    if (!value) return fallback;
    for (const std::string_view k : keywords) {
      if (*value == k) return k;
    }
    std::string allowed;
    for (const std::string_view k : keywords) {
      allowed += (allowed.empty() ? "" : ", ") + std::string(k);
    }
    fail(attribute(name, *value) + " is not one of " + allowed);
  }

  bool flag(const char* name, bool fallback) const {
    return keyword(name, {"false", "true"}, fallback ? "true" : "false") == "true";
  }

  int integer(const char* name, int fallback) const {
    const double value = number(name, fallback);
    if (value != std::floor(value) || std::abs(value) > 1e9) {
      fail(attribute(name, *text(name)) + " is not an integer");
    }
    return static_cast<int>(value);
  }

 private:
  static std::string attribute(const char* name, std::string_view value) {
    return std::string(name) + "=" + quoted(value);
  }

  const TiXmlElement& element_;
  const ClassValues* defaults_;
};

// ---- compiler, option --------------------------------------------------------------------------

enum class InertiaFromGeom { kFalse, kTrue, kAuto };

struct Compiler {
  bool degrees = true;
  std::string eulerseq = "xyz";
  InertiaFromGeom inertia_from_geom = InertiaFromGeom::kAuto;
  int inertia_group_low = 0;
  int inertia_group_high = 5;

  double angle(double value) const { return degrees ? value * std::numbers::pi / 180.0 : value; }
};

void read_compiler(const Element& compiler, Compiler& out) {
  out.degrees = compiler.keyword("angle", {"degree", "radian"},
                                 out.degrees ? "degree" : "radian") == "degree";
  if (const std::optional<std::string_view> sequence = compiler.text("eulerseq")) {
    if (sequence->size() != 3 || sequence->find_first_not_of("xyzXYZ") != std::string_view::npos) {
      compiler.fail("eulerseq=" + quoted(*sequence) + " is not three of x, y, z, X, Y, Z");
    }
    out.eulerseq = *sequence;
  }
  const std::string_view from_geom =
      compiler.keyword("inertiafromgeom", {"false", "true", "auto"}, "");
  if (from_geom == "false") out.inertia_from_geom = InertiaFromGeom::kFalse;
  if (from_geom == "true") out.inertia_from_geom = InertiaFromGeom::kTrue;
  if (from_geom == "auto") out.inertia_from_geom = InertiaFromGeom::kAuto;
  if (const std::optional<std::vector<double>> range =
          compiler.numbers("inertiagrouprange", 2, 2)) {
    for (const double group : *range) {
      if (group != std::floor(group) || std::abs(group) > 1e9) {
        compiler.fail("inertiagrouprange holds a number that is not an integer");
      }
    }
    out.inertia_group_low = static_cast<int>((*range)[0]);
    out.inertia_group_high = static_cast<int>((*range)[1]);
  }
  if (compiler.keyword("coordinate", {"local", "global"}, "local") == "global") {
    compiler.fail("coordinate=\"global\" is not supported (MuJoCo 2.3.3 and later refuse it)");
  }
  const auto refuse_if = [&compiler](bool set, const char* attribute) {
    if (set) {
      compiler.fail(std::string(attribute) +
                    " is not supported: it changes the bodies' inertias in ways not implemented");
    }
  };
  refuse_if(compiler.number("boundmass", 0.0) != 0.0, "boundmass");
  refuse_if(compiler.number("boundinertia", 0.0) != 0.0, "boundinertia");
  refuse_if(compiler.number("settotalmass", -1.0) > 0.0, "settotalmass");
  refuse_if(compiler.flag("balanceinertia", false), "balanceinertia");
  refuse_if(compiler.flag("alignfree", false), "alignfree");
}

struct Option {
  Vec3 gravity = Vec3(0.0, 0.0, -9.81);  // MuJoCo's default
  bool gravity_enabled = true;
  bool fluid = false;  // a medium with density or viscosity: fluid forces on geoms
};

void read_option(const Element& option, Option& out) {
  out.gravity = option.vec3("gravity", out.gravity);
  if (option.number("density", 0.0) != 0.0 || option.number("viscosity", 0.0) != 0.0) {
    out.fluid = true;
  }
  for (const TiXmlElement* flag = option.xml().FirstChildElement("flag"); flag != nullptr;
       flag = flag->NextSiblingElement("flag")) {
    const std::string_view gravity = Element(*flag).keyword("gravity", {"enable", "disable"}, "");
    if (!gravity.empty()) out.gravity_enabled = gravity == "enable";
  }
}

// ---- default classes ---------------------------------------------------------------------------

// What a default class gives the elements the reader reads.
struct DefaultClass {
  ClassValues joint{kJointAttributes};
  ClassValues geom{kGeomAttributes};
  ClassValues equality{kEqualityAttributes};
};

class Classes {
 public:
  Classes() { classes_.emplace("main", DefaultClass{}); }

  // A top-level <default> (the class "main") and the classes nested in it.
  void read(const TiXmlElement& top) {
    const char* top_name = top.Attribute("class");
    if (top_name != nullptr && std::string_view(top_name) != "main") {
      fail(top, "the top-level <default> is the class 'main', not " + quoted(top_name));
    }
    // <default> elements to read, each with the name of its parent class.
    std::vector<std::pair<const TiXmlElement*, std::string>> pending{{&top, ""}};
    while (!pending.empty()) {
      const auto [element, parent] = pending.back();
      pending.pop_back();
      DefaultClass* current = &classes_.at("main");
      if (element != &top) {
        const char* name = element->Attribute("class");
        if (name == nullptr || *name == '\0') fail(*element, "a nested <default> without a class");
        const auto [it, added] = classes_.emplace(name, classes_.at(parent));
        if (!added) fail(*element, "default class " + quoted(name) + " is defined twice");
        current = &it->second;
      }
      const std::string name = element == &top ? "main" : element->Attribute("class");
      for (const TiXmlElement* child = element->FirstChildElement(); child != nullptr;
           child = child->NextSiblingElement()) {
        const std::string_view kind = child->ValueStr();
        if (kind == "joint") current->joint.overlay(*child);
        if (kind == "geom") current->geom.overlay(*child);
        if (kind == "equality") current->equality.overlay(*child);
      }
      // Nested classes start from all of their parent's values: MuJoCo reads a class's own
      // elements before its nested classes, wherever they stand.
      std::vector<const TiXmlElement*> nested;
      for (const TiXmlElement* child = element->FirstChildElement("default"); child != nullptr;
           child = child->NextSiblingElement("default")) {
        nested.push_back(child);
      }
      for (auto it = nested.rbegin(); it != nested.rend(); ++it) pending.emplace_back(*it, name);
    }
  }

  const DefaultClass& find(const TiXmlElement& element, const std::string& name) const {
    const auto it = classes_.find(name);
    if (it == classes_.end()) fail(element, describe(element) + ": unknown class " + quoted(name));
    return it->second;
  }

  // The class an element uses: its own `class`, else `scope_class` (a childclass around it).
  const DefaultClass& of(const TiXmlElement& element, const std::string& scope_class) const {
    const char* own = element.Attribute("class");
    return find(element, own != nullptr ? std::string(own) : scope_class);
  }

 private:
  std::map<std::string, DefaultClass, std::less<>> classes_;
};

// ---- placements --------------------------------------------------------------------------------
// These functions compute the numbers of the spec: flattened, so that the Eigen and Transform code
// they call is compiled here, without contraction into FMA (CMakeLists: model ids hash them).

[[gnu::flatten]] Mat3 quaternion_matrix(double w, double x, double y, double z) {
  return Eigen::Quaterniond(w, x, y, z).normalized().toRotationMatrix();
}

// MuJoCo's mjuu_z2quat: the shortest rotation taking +z to `direction` (a rotation of π about x
// when it points along -z).
[[gnu::flatten]] Mat3 z_to(const Vec3& direction) {
  const Vec3 unit = direction.normalized();
  Vec3 axis = Vec3::UnitZ().cross(unit);
  const double s = axis.norm();
  axis = s < 1e-10 ? Vec3::UnitX() : Vec3(axis / s);
  const double angle = std::atan2(s, unit.z());
  const double half_sin = std::sin(angle / 2.0);
  return quaternion_matrix(std::cos(angle / 2.0), half_sin * axis.x(), half_sin * axis.y(),
                           half_sin * axis.z());
}

// The orientation an element gives (the identity when it gives none).
[[gnu::flatten]] Mat3 orientation(const Element& element, const Compiler& compiler) {
  const auto given =
      std::count_if(kOrientationAttributes.begin(), kOrientationAttributes.end(),
                    [&element](const char* name) { return element.text(name).has_value(); });
  if (given > 1) element.fail("several orientations given");
  if (const auto quat = element.numbers("quat", 4, 4)) {
    const Eigen::Vector4d q((*quat)[0], (*quat)[1], (*quat)[2], (*quat)[3]);
    if (q.norm() < kMujocoEps) element.fail("quat is zero");
    return quaternion_matrix(q[0], q[1], q[2], q[3]);
  }
  if (const auto axisangle = element.numbers("axisangle", 4, 4)) {
    const Vec3 axis((*axisangle)[0], (*axisangle)[1], (*axisangle)[2]);
    if (axis.norm() < kMujocoEps) element.fail("the axis of axisangle is zero");
    const double half = compiler.angle((*axisangle)[3]) / 2.0;
    const Vec3 v = std::sin(half) * axis.normalized();
    return quaternion_matrix(std::cos(half), v.x(), v.y(), v.z());
  }
  if (const auto xyaxes = element.numbers("xyaxes", 6, 6)) {
    Vec3 x((*xyaxes)[0], (*xyaxes)[1], (*xyaxes)[2]);
    Vec3 y((*xyaxes)[3], (*xyaxes)[4], (*xyaxes)[5]);
    if (x.norm() < kMujocoEps) element.fail("the x axis of xyaxes is zero");
    x.normalize();
    y -= x.dot(y) * x;
    if (y.norm() < kMujocoEps) element.fail("the y axis of xyaxes is parallel to its x axis");
    y.normalize();
    Mat3 r;
    r << x, y, x.cross(y).normalized();
    return r;
  }
  if (const auto zaxis = element.numbers("zaxis", 3, 3)) {
    const Vec3 z((*zaxis)[0], (*zaxis)[1], (*zaxis)[2]);
    if (z.norm() < kMujocoEps) element.fail("zaxis is zero");
    return z_to(z);
  }
  if (const auto euler = element.numbers("euler", 3, 3)) {
    // Lowercase axes turn with the frame (post-multiplied), uppercase ones stay (pre-multiplied).
    Eigen::Quaterniond q = Eigen::Quaterniond::Identity();
    for (int i = 0; i < 3; ++i) {
      const char axis = compiler.eulerseq[i];
      const double half = compiler.angle((*euler)[i]) / 2.0;
      Eigen::Quaterniond turn(std::cos(half), 0.0, 0.0, 0.0);
      turn.vec()[(axis | 0x20) - 'x'] = std::sin(half);
      q = (axis >= 'a') ? q * turn : turn * q;
    }
    return q.normalized().toRotationMatrix();
  }
  return Mat3::Identity();
}

// pos and orientation.
[[gnu::flatten]] Transform placement(const Element& element, const Compiler& compiler) {
  return {orientation(element, compiler), element.vec3("pos", Vec3::Zero())};
}

[[gnu::flatten]] Transform compose(const Transform& aMb, const Transform& bMc) { return aMb * bMc; }

[[gnu::flatten]] Transform inverse_compose(const Transform& bMa, const Transform& bMc) {
  return bMa.inverse() * bMc;
}

Transform translation(const Vec3& p) { return {Mat3::Identity(), p}; }

// ---- what the walk of the body tree reads -------------------------------------------------------

struct JointRead {
  Element element;
  Transform frame;  // of the <frame> elements around it, in the body frame
  std::string name;
  std::string type;
};

struct GeomRead {
  Element element;
  Transform frame;
};

struct BodyRead {
  const TiXmlElement* xml = nullptr;
  std::string name;
  int parent = -1;                         // index in the bodies, -1 for a top-level body
  Transform pose = Transform::Identity();  // in the parent body's frame (the world's at the top)
  std::optional<InertialSpec> inertial;
  std::vector<JointRead> joints;
  std::vector<GeomRead> geoms;
};

// Where the walk is: the next element to read, in which body (-1: the world body), under which
// frames and with which default class.
struct Scope {
  const TiXmlElement* next;
  int body;
  Transform frame;
  std::string default_class;
};

[[gnu::flatten]] InertialSpec read_inertial(const Element& inertial, const Transform& frame,
                                            const Compiler& compiler) {
  if (!inertial.text("pos")) inertial.fail("pos is required");
  if (!inertial.text("mass")) inertial.fail("mass is required");
  InertialSpec out;
  out.mass = inertial.number("mass", 0.0);
  const std::optional<std::vector<double>> diagonal = inertial.numbers("diaginertia", 3, 3);
  const std::optional<std::vector<double>> full = inertial.numbers("fullinertia", 6, 6);
  if (diagonal.has_value() == full.has_value()) {
    inertial.fail("one of diaginertia and fullinertia is required");
  }
  if (full) {
    // fullinertia is itself an orientation: MuJoCo diagonalizes it for the inertial frame, so it
    // is expressed in the body frame and another orientation would contradict it.
    for (const char* name : kOrientationAttributes) {
      if (inertial.text(name)) {
        inertial.fail("fullinertia and " + std::string(name) +
                      " both orient the inertia: give one");
      }
    }
    const std::vector<double>& f = *full;
    out.inertia << f[0], f[3], f[4], f[3], f[1], f[5], f[4], f[5], f[2];
  } else {
    out.inertia = Vec3((*diagonal)[0], (*diagonal)[1], (*diagonal)[2]).asDiagonal();
  }
  out.origin = compose(frame, placement(inertial, compiler));
  return out;
}

struct Reading {
  Compiler compiler;
  Option option;
  Classes classes;
  std::vector<BodyRead> bodies;
  std::vector<std::string> warnings;
  std::set<std::string, std::less<>> warned;  // kinds of element warned about

  void warn_once(std::string_view kind, std::string_view reason) {
    if (warned.emplace(kind).second) {
      std::string warning = "<";
      warning += kind;
      warning += "> ignored: ";
      warning += reason;
      warnings.push_back(std::move(warning));
    }
  }
};

std::string childclass(const TiXmlElement& element, const Classes& classes,
                       const std::string& inherited) {
  const char* own = element.Attribute("childclass");
  if (own == nullptr) return inherited;
  classes.find(element, own);
  return own;
}

// Reads a <worldbody>: its bodies, in document order (MuJoCo's body ids: the world is 0), with
// what each holds.
void read_worldbody(const TiXmlElement& worldbody, Reading& reading) {
  std::vector<Scope> stack{{worldbody.FirstChildElement(), -1, Transform::Identity(), "main"}};
  while (!stack.empty()) {
    if (stack.back().next == nullptr) {
      stack.pop_back();
      continue;
    }
    const TiXmlElement& xml = *stack.back().next;
    stack.back().next = xml.NextSiblingElement();
    // Copies: the pushes below may move the stack.
    const int body = stack.back().body;
    const Transform frame = stack.back().frame;
    const std::string scope_class = stack.back().default_class;
    const std::string_view kind = xml.ValueStr();
    const std::string where =
        body < 0 ? std::string("<worldbody>") : "body " + quoted(reading.bodies[body].name);

    if (kind == "body") {
      BodyRead read;
      read.xml = &xml;
      const char* name = xml.Attribute("name");
      read.name =
          name != nullptr ? std::string(name) : "body" + std::to_string(reading.bodies.size() + 1);
      read.parent = body;
      read.pose = compose(frame, placement(Element(xml), reading.compiler));
      reading.bodies.push_back(std::move(read));
      stack.push_back({xml.FirstChildElement(), static_cast<int>(reading.bodies.size()) - 1,
                       Transform::Identity(), childclass(xml, reading.classes, scope_class)});
    } else if (kind == "frame") {
      stack.push_back({xml.FirstChildElement(), body,
                       compose(frame, placement(Element(xml), reading.compiler)),
                       childclass(xml, reading.classes, scope_class)});
    } else if (kind == "inertial" || kind == "joint" || kind == "freejoint") {
      if (body < 0) fail(xml, tag(xml) + " in <worldbody>: the world body does not move");
      BodyRead& owner = reading.bodies[body];
      if (kind == "inertial") {
        if (owner.inertial) fail(xml, where + " has a second <inertial>");
        owner.inertial = read_inertial(Element(xml), frame, reading.compiler);
      } else if (kind == "joint") {
        const Element element(xml, &reading.classes.of(xml, scope_class).joint);
        const std::string type(
            element.keyword("type", {"free", "ball", "slide", "hinge"}, "hinge"));
        owner.joints.push_back({element, frame, "", type});
      } else {
        const Element element(xml);
        if (element.flag("align", false)) element.fail("align=\"true\" is not supported");
        owner.joints.push_back({element, frame, "", "free"});
      }
    } else if (kind == "geom") {
      reading.warn_once("geom",
                        "contacts are not modelled (geoms only give the mass and inertia of bodies "
                        "without <inertial>)");
      if (body >= 0) {
        reading.bodies[body].geoms.push_back(
            {Element(xml, &reading.classes.of(xml, scope_class).geom), frame});
      }
    } else if (kind == "site") {
      reading.warn_once(kind, "sites are not read as frames of the model");
    } else if (kind == "camera" || kind == "light") {
      reading.warn_once(kind, "no bearing on the dynamics");
    } else if (kind == "plugin") {
      reading.warn_once(kind, "plugins are not run");
    } else if (kind == "composite" || kind == "flexcomp" || kind == "replicate" ||
               kind == "attach") {
      fail(xml, tag(xml) + " in " + where + " is not supported: it generates bodies and joints");
    } else {
      fail(xml, "unknown element " + tag(xml) + " in " + where);
    }
  }
}

// ---- inertia from geoms ------------------------------------------------------------------------

// A primitive geom's mass and inertia about its centre, in its frame, and that frame in the body.
struct GeomInertia {
  double mass = 0.0;
  Vec3 moments = Vec3::Zero();  // principal, about the geom's axes
  Transform placement = Transform::Identity();
};

[[gnu::flatten]] GeomInertia geom_inertia(const GeomRead& geom, const std::string& body,
                                          const Compiler& compiler) {
  const Element& g = geom.element;
  const std::string type(g.keyword(
      "type",
      {"plane", "hfield", "sphere", "capsule", "ellipsoid", "cylinder", "box", "mesh", "sdf"},
      "sphere"));
  for (const char* data : {"mesh", "hfield"}) {
    if (const std::optional<std::string_view> name = g.text(data)) {
      g.fail("body " + quoted(body) + " takes its inertia from this geom, whose shape is " + data +
             " " + quoted(*name) + ": " + data +
             " files are not read (give the body an <inertial>)");
    }
  }
  if (type == "mesh" || type == "sdf" || type == "hfield") {
    g.fail("body " + quoted(body) + " takes its inertia from this " + type +
           " geom, whose data are not read (give the body an <inertial>)");
  }
  if (g.flag("shellinertia", false)) g.fail("shellinertia=\"true\" is not supported");
  GeomInertia out;
  if (type == "plane") return out;  // no volume: MuJoCo gives it no mass

  const std::vector<double> given = g.numbers("size", 1, 3).value_or(std::vector<double>{});
  std::array<double, 3> size{0.0, 0.0, 0.0};
  std::copy(given.begin(), given.end(), size.begin());
  if (const auto fromto = g.numbers("fromto", 6, 6)) {
    if (type == "sphere") g.fail("fromto needs a capsule, cylinder, box or ellipsoid");
    if (!g.vec3("pos", Vec3::Zero()).isZero(0.0)) g.fail("both pos and fromto are given");
    const Vec3 from((*fromto)[0], (*fromto)[1], (*fromto)[2]);
    const Vec3 to((*fromto)[3], (*fromto)[4], (*fromto)[5]);
    const double half_length = (from - to).norm() / 2.0;
    if (half_length < kMujocoEps) g.fail("the two points of fromto coincide");
    if (type == "capsule" || type == "cylinder") {
      size[1] = half_length;
    } else {
      size[1] = size[0];
      size[2] = half_length;
    }
    out.placement = {z_to(from - to), (from + to) / 2.0};
  } else {
    out.placement = placement(g, compiler);
  }
  out.placement = compose(geom.frame, out.placement);

  const std::size_t needed = type == "sphere"                            ? 1
                             : (type == "capsule" || type == "cylinder") ? 2
                                                                         : 3;
  for (std::size_t i = 0; i < needed; ++i) {
    if (!(size[i] > 0.0)) g.fail("size must be positive (" + std::to_string(needed) + " numbers)");
  }
  const double r = size[0];
  const double pi = std::numbers::pi;
  double volume = 0.0;
  if (type == "sphere") volume = 4.0 * pi * r * r * r / 3.0;
  if (type == "capsule") volume = pi * (r * r * 2.0 * size[1] + 4.0 * r * r * r / 3.0);
  if (type == "cylinder") volume = pi * r * r * 2.0 * size[1];
  if (type == "ellipsoid") volume = 4.0 * pi * size[0] * size[1] * size[2] / 3.0;
  if (type == "box") volume = 8.0 * size[0] * size[1] * size[2];

  if (g.text("mass")) {
    const double mass = g.number("mass", 0.0);
    if (mass < 0.0) g.fail("negative mass");
    if (volume > kMujocoMinVal) out.mass = mass;
  } else {
    const double density = g.number("density", 1000.0);
    if (density < 0.0) g.fail("negative density");
    out.mass = density * volume;
  }
  const double m = out.mass;
  if (type == "sphere") out.moments.setConstant(2.0 * m * r * r / 5.0);
  if (type == "capsule") {
    // A cylinder and two hemispheres, displaced along z (MuJoCo's formula).
    const double height = 2.0 * size[1];
    const double sphere_mass = m * 4.0 * r / (4.0 * r + 3.0 * height);
    const double cylinder_mass = m - sphere_mass;
    const double sphere_inertia = 2.0 * sphere_mass * r * r / 5.0;
    const double across = cylinder_mass * (3.0 * r * r + height * height) / 12.0 + sphere_inertia +
                          sphere_mass * height * (3.0 * r + 2.0 * height) / 8.0;
    out.moments = Vec3(across, across, cylinder_mass * r * r / 2.0 + sphere_inertia);
  }
  if (type == "cylinder") {
    const double height = 2.0 * size[1];
    const double across = m * (3.0 * r * r + height * height) / 12.0;
    out.moments = Vec3(across, across, m * r * r / 2.0);
  }
  if (type == "ellipsoid" || type == "box") {
    const double k = type == "box" ? 3.0 : 5.0;
    const double a = size[0] * size[0], b = size[1] * size[1], c = size[2] * size[2];
    out.moments = m * Vec3(b + c, a + c, a + b) / k;
  }
  return out;
}

// The inertia MuJoCo gives a body, in its frame.
[[gnu::flatten]] InertialSpec body_inertial(const BodyRead& body, const Compiler& compiler) {
  const bool from_geoms = compiler.inertia_from_geom == InertiaFromGeom::kTrue ||
                          (compiler.inertia_from_geom == InertiaFromGeom::kAuto && !body.inertial);
  std::vector<const GeomRead*> selected;
  if (from_geoms) {
    for (const GeomRead& geom : body.geoms) {
      const int group = geom.element.integer("group", 0);
      if (group >= compiler.inertia_group_low && group <= compiler.inertia_group_high) {
        selected.push_back(&geom);
      }
    }
  }
  if (selected.empty()) return body.inertial.value_or(InertialSpec{});
  RigidInertia sum;
  for (const GeomRead* geom : selected) {
    const GeomInertia g = geom_inertia(*geom, body.name, compiler);
    sum += RigidInertia::FromMassComInertia(g.mass, Vec3::Zero(), g.moments.asDiagonal())
               .transformed_by(g.placement);
  }
  if (selected.size() > 1 && sum.mass < kMujocoMinVal) {
    fail(*body.xml, "body " + quoted(body.name) +
                        ": its geoms have no mass, so they have no centre of mass (MuJoCo refuses "
                        "this too)");
  }
  InertialSpec out;
  out.mass = sum.mass;
  out.origin = translation(sum.com());
  out.inertia = sum.inertia_about_com();
  return out;
}

// ---- joints ------------------------------------------------------------------------------------

// The joint of a body, in the frame of its parent link.
[[gnu::flatten]] JointSpec joint_spec(const BodyRead& body, const JointRead& joint,
                                      const std::string& parent_link, const Compiler& compiler,
                                      std::vector<std::string>& warnings) {
  const Element& j = joint.element;
  JointSpec out;
  out.name = joint.name;
  out.parent_link = parent_link;
  out.child_link = body.name;
  if (joint.type == "free") {
    j.fail("a free joint on body " + quoted(body.name) +
           ", which is not the root body: only the first body of <worldbody> may float");
  }
  const Vec3 pos = joint.frame.act(j.vec3("pos", Vec3::Zero()));
  const Vec3 axis = joint.frame.rotation * j.vec3("axis", Vec3::UnitZ());
  if (joint.type != "ball" && axis.norm() < kMujocoEps) j.fail("zero axis");
  const double ref = j.number("ref", 0.0);
  // The joint frame at pos with the body's axes, turned back by ref: q = ref is the placement the
  // file describes (MuJoCo's qpos0).
  Transform at_ref = translation(pos);
  if (joint.type == "hinge") {
    out.type = JointType::kRevolute;
    if (ref != 0.0) {
      at_ref.rotation =
          Eigen::AngleAxisd(-compiler.angle(ref), axis.normalized()).toRotationMatrix();
    }
  } else if (joint.type == "slide") {
    out.type = JointType::kPrismatic;
    if (ref != 0.0) at_ref.translation -= ref * axis.normalized();
  } else {
    out.type = JointType::kSpherical;
  }
  out.origin = compose(body.pose, at_ref);
  out.child_link_placement = translation(-pos);
  out.axis = joint.type == "ball" ? Vec3::UnitZ() : axis;

  const std::string_view limited = j.keyword("limited", {"false", "true", "auto"}, "auto");
  const std::vector<double> range = j.numbers("range", 2, 2).value_or(std::vector<double>{0, 0});
  const bool has_limits =
      limited == "true" || (limited == "auto" && (range[0] != 0.0 || range[1] != 0.0));
  if (has_limits && joint.type == "ball") {
    warnings.push_back("joint " + quoted(out.name) +
                       ": the range of a ball joint is ignored (spherical joints have no limits)");
  } else if (has_limits) {
    if (!(range[0] < range[1])) j.fail("range must be increasing");
    const bool angular = joint.type == "hinge";
    out.limits.lower = angular ? compiler.angle(range[0]) : range[0];
    out.limits.upper = angular ? compiler.angle(range[1]) : range[1];
  }

  std::string ignored;
  for (const char* term : {"damping", "armature", "frictionloss", "stiffness", "springdamper"}) {
    const std::optional<std::vector<double>> values = j.numbers(term, 1, 2);
    if (values && std::any_of(values->begin(), values->end(), [](double v) { return v != 0.0; })) {
      ignored +=
          std::string(ignored.empty() ? "" : " ") + term + "=\"" + printable(*j.text(term)) + "\"";
    }
  }
  if (!ignored.empty()) {
    warnings.push_back("joint " + quoted(out.name) + ": " + ignored +
                       " ignored: only rigid-body terms are modelled");
  }
  return out;
}

// ---- equality constraints ----------------------------------------------------------------------

class Equalities {
 public:
  // `world_poses`: each body's placement in the model's world at its reference configuration.
  Equalities(const Reading& reading, const std::vector<Transform>& world_poses)
      : reading_(reading), world_poses_(world_poses) {
    for (std::size_t i = 0; i < reading.bodies.size(); ++i) {
      body_index_.emplace(reading.bodies[i].name, static_cast<int>(i));
    }
  }

  void read(const TiXmlElement& section, std::vector<LoopClosureSpec>& closures,
            std::vector<std::string>& warnings) {
    for (const TiXmlElement* xml = section.FirstChildElement(); xml != nullptr;
         xml = xml->NextSiblingElement()) {
      const std::string name = xml->Attribute("name") != nullptr
                                   ? std::string(xml->Attribute("name"))
                                   : "equality" + std::to_string(count_);
      ++count_;
      const Element e(*xml, &reading_.classes.of(*xml, "main").equality);
      const std::string_view kind = xml->ValueStr();
      if (kind == "connect" || kind == "weld") {
        if (!e.flag("active", true)) {
          warnings.push_back("equality " + quoted(name) +
                             ": inactive at the start (active=\"false\"), ignored");
          continue;
        }
        closures.push_back(kind == "connect" ? connect(e, name) : weld(e, name));
      } else if (kind == "joint" || kind == "tendon" || kind == "flex" || kind == "flexvert" ||
                 kind == "flexstrain") {
        std::string what = tag(*xml);
        for (const char* a : {"joint1", "joint2", "tendon1", "tendon2", "flex"}) {
          if (const char* value = xml->Attribute(a)) {
            what += ' ';
            what += a;
            what += '=';
            what += quoted(value);
          }
        }
        warnings.push_back("equality " + quoted(name) + ": " + what +
                           " ignored: the coordinates it couples stay independent");
      } else {
        fail(*xml, "unknown or unsupported equality constraint " + tag(*xml));
      }
    }
  }

 private:
  // A body of a constraint: its index, or -1 for the world (absent, or "world").
  int body(const Element& e, const char* attribute) const {
    const std::optional<std::string_view> name = e.text(attribute);
    if (!name || *name == "world") return -1;
    const auto it = body_index_.find(*name);
    if (it == body_index_.end()) e.fail("unknown body " + quoted(*name));
    return it->second;
  }

  // body1: MuJoCo's constraints are between bodies, site-based ones are not read.
  int first_body(const Element& e) const {
    if (!e.text("body1")) {
      e.fail(e.text("site1") ? "site-based constraints (site1, site2) are not supported"
                             : "body1 is required");
    }
    return body(e, "body1");
  }

  Transform world_pose(int body) const {
    return body < 0 ? Transform::Identity() : world_poses_[body];
  }

  // The frame `on1` of body1 held to the frame `on2` of body2; a loop closure's first link is a
  // body, so a constraint whose body1 is the world is written the other way round.
  LoopClosureSpec closure(const Element& e, const std::string& name, ConstraintType type, int body1,
                          const Transform& on1, int body2, const Transform& on2) const {
    if (body1 < 0 && body2 < 0) e.fail("both bodies are the world");
    if (body1 < 0) return closure(e, name, type, body2, on2, body1, on1);
    LoopClosureSpec out;
    out.name = name;
    out.type = type;
    out.link1 = reading_.bodies[body1].name;
    out.origin1 = on1;
    out.link2 = body2 < 0 ? "" : reading_.bodies[body2].name;
    out.origin2 = on2;
    return out;
  }

  // MuJoCo's connect holds the point anchor of body1 on the point of body2 where it is at the
  // reference configuration (the frames' axes are those of the world there).
  [[gnu::flatten]] LoopClosureSpec connect(const Element& e, const std::string& name) const {
    const int body1 = first_body(e);
    const int body2 = body(e, "body2");
    if (!e.text("anchor")) e.fail("anchor is required (site1, site2 are not supported)");
    const Transform point = translation(world_pose(body1).act(e.vec3("anchor", Vec3::Zero())));
    return closure(e, name, ConstraintType::kPoint, body1,
                   inverse_compose(world_pose(body1), point), body2,
                   inverse_compose(world_pose(body2), point));
  }

  // MuJoCo's weld holds the frame relpose of body1 on the frame at anchor of body2 (its axes
  // those of body2); without relpose (its quaternion zero), the frame of body1 is where that of
  // body2 is at the reference configuration. A torquescale of 0 leaves the rotation free.
  [[gnu::flatten]] LoopClosureSpec weld(const Element& e, const std::string& name) const {
    const int body1 = first_body(e);
    const int body2 = body(e, "body2");
    const Transform on2 = translation(e.vec3("anchor", Vec3::Zero()));
    Transform on1 = inverse_compose(world_pose(body1), compose(world_pose(body2), on2));
    if (const auto relpose = e.numbers("relpose", 7, 7)) {
      const std::vector<double>& r = *relpose;
      if (r[3] != 0.0 || r[4] != 0.0 || r[5] != 0.0 || r[6] != 0.0) {
        on1 = {quaternion_matrix(r[3], r[4], r[5], r[6]), Vec3(r[0], r[1], r[2])};
      }
    }
    const ConstraintType type =
        e.number("torquescale", 1.0) == 0.0 ? ConstraintType::kPoint : ConstraintType::kWeld;
    return closure(e, name, type, body1, on1, body2, on2);
  }

  const Reading& reading_;
  const std::vector<Transform>& world_poses_;
  std::map<std::string, int, std::less<>> body_index_;
  int count_ = 0;  // equality elements read so far: MuJoCo's ids
};

// ---- the spec ----------------------------------------------------------------------------------

ModelSpec to_spec(const TiXmlElement& root, const MjcfOptions& options) {
  Reading reading;
  ModelSpec spec;
  const char* model_name = root.Attribute("model");
  spec.name = model_name != nullptr ? model_name : "MuJoCo Model";  // MuJoCo's default name
  spec.children_in_given_order = true;

  // MuJoCo reads every <compiler> and <option>, then the defaults, before the model tree.
  for (const TiXmlElement* e = root.FirstChildElement("compiler"); e != nullptr;
       e = e->NextSiblingElement("compiler")) {
    read_compiler(Element(*e), reading.compiler);
  }
  for (const TiXmlElement* e = root.FirstChildElement("option"); e != nullptr;
       e = e->NextSiblingElement("option")) {
    read_option(Element(*e), reading.option);
  }
  for (const TiXmlElement* e = root.FirstChildElement("default"); e != nullptr;
       e = e->NextSiblingElement("default")) {
    reading.classes.read(*e);
  }
  static const std::map<std::string_view, std::string_view> kIgnoredSections = {
      {"asset", "meshes, textures and materials are not read (no file is opened)"},
      {"actuator", "actuators are not modelled (joint torques are the caller's)"},
      {"tendon", "tendons are not modelled"},
      {"sensor", "sensors are not modelled"},
      {"contact", "contacts are not modelled"},
      {"visual", "no bearing on the dynamics"},
      {"keyframe", "keyframes are not read"},
      {"extension", "plugins are not run"},
      {"deformable", "flexes and skins are not modelled"},
  };
  for (const TiXmlElement* e = root.FirstChildElement(); e != nullptr;
       e = e->NextSiblingElement()) {
    const std::string_view kind = e->ValueStr();
    if (kind == "worldbody") {
      read_worldbody(*e, reading);
    } else if (const auto ignored = kIgnoredSections.find(kind);
               ignored != kIgnoredSections.end()) {
      reading.warn_once(kind, ignored->second);
    } else if (kind != "compiler" && kind != "option" && kind != "default" && kind != "equality" &&
               kind != "size" && kind != "statistic" && kind != "custom") {
      fail(*e, "unknown element " + tag(*e) + " in <mujoco>");
    }
  }
  if (reading.option.fluid) {
    reading.warnings.push_back(
        "<option> density and viscosity ignored: fluid forces are not modelled");
  }
  spec.gravity = options.gravity.value_or(reading.option.gravity_enabled ? reading.option.gravity
                                                                         : Vec3::Zero());

  std::vector<BodyRead>& bodies = reading.bodies;
  if (bodies.empty()) throw ModelError("MJCF: <worldbody> holds no <body>");
  int joint_id = 0;  // MuJoCo's joint ids: by body, in the order of the bodies
  for (BodyRead& body : bodies) {
    if (body.parent < 0 && &body != &bodies.front()) {
      fail(*body.xml, "body " + quoted(body.name) +
                          " is a second top-level body: only the first body of <worldbody> and "
                          "its subtree are read");
    }
    for (JointRead& joint : body.joints) {
      const std::optional<std::string_view> name = joint.element.text("name");
      joint.name = name ? std::string(*name) : "joint" + std::to_string(joint_id);
      ++joint_id;
    }
    if (body.joints.size() > 1) {
      std::string names;
      for (const JointRead& joint : body.joints) {
        names += (names.empty() ? "" : ", ") + quoted(joint.name);
      }
      fail(*body.xml, "body " + quoted(body.name) + " has several joints (" + names +
                          "): composite joints are not supported");
    }
    if (const Element element(*body.xml); element.number("gravcomp", 0.0) != 0.0) {
      reading.warnings.push_back("body " + quoted(body.name) + ": gravcomp=\"" +
                                 printable(*element.text("gravcomp")) +
                                 "\" ignored: gravity acts on the whole body");
    }
  }

  const BodyRead& root_body = bodies.front();
  const JointRead* root_joint = root_body.joints.empty() ? nullptr : &root_body.joints.front();
  const bool root_free = root_joint != nullptr && root_joint->type == "free";
  spec.floating_base = options.floating_base.value_or(root_free);
  const bool world_link = root_joint != nullptr && !root_free;
  if (world_link && spec.floating_base) {
    fail(root_joint->element.xml(),
         "root body " + quoted(root_body.name) + " has joint " + quoted(root_joint->name) +
             ": a floating base is a free joint on the root body, or no joint at all");
  }

  // Placements at the reference configuration, in the model's world: the root body is at the
  // origin when it is the (welded) base, at its pose in the file when it moves.
  std::vector<Transform> world_poses(bodies.size());
  if (world_link) spec.links.push_back({"world", InertialSpec{}});
  for (std::size_t i = 0; i < bodies.size(); ++i) {
    const BodyRead& body = bodies[i];
    spec.links.push_back({body.name, body_inertial(body, reading.compiler)});
    if (i == 0) {
      const bool moves = world_link || spec.floating_base;
      world_poses[0] = moves ? body.pose : Transform::Identity();
      if (world_link) {
        spec.joints.push_back(
            joint_spec(body, *root_joint, "world", reading.compiler, reading.warnings));
      }
      continue;
    }
    const BodyRead& parent = bodies[body.parent];
    world_poses[i] = compose(world_poses[body.parent], body.pose);
    if (body.joints.empty()) {
      JointSpec weld;
      weld.name = body.name + "_fixed";
      weld.type = JointType::kFixed;
      weld.parent_link = parent.name;
      weld.child_link = body.name;
      weld.origin = body.pose;
      spec.joints.push_back(std::move(weld));
    } else {
      spec.joints.push_back(
          joint_spec(body, body.joints.front(), parent.name, reading.compiler, reading.warnings));
    }
  }

  Equalities equalities(reading, world_poses);
  for (const TiXmlElement* e = root.FirstChildElement("equality"); e != nullptr;
       e = e->NextSiblingElement("equality")) {
    equalities.read(*e, spec.loop_closures, reading.warnings);
  }
  spec.warnings = std::move(reading.warnings);
  return spec;
}

}  // namespace

ModelSpec read_mjcf_string(std::string_view xml, const MjcfOptions& options) {
  std::size_t bodies = 0;
  const XmlLimits limits{.max_depth = kMaxMjcfDepth,
                         .counted_element = {},
                         .max_counted = 0,
                         .max_element_attributes = kMaxMjcfElementAttributes,
                         .max_attributes = kMaxMjcfAttributes,
                         .max_nodes = kMaxMjcfNodes,
                         .format = "MJCF"};
  check_xml_structure(xml, limits, [&bodies, &options](const XmlElement& element) {
    const std::string line = "line " + std::to_string(element.line);
    if (element.name == "include") {
      std::string file = "without a file";
      for (const auto& attribute : element.attributes) {
        if (attribute.first == "file") file = quoted(attribute.second);
      }
      throw ModelError("MJCF " + line + ": <include> of " + file +
                       ": included files are not read (no file is opened): inline them");
    }
    if (element.name == "body" && options.max_bodies > 0 && ++bodies > options.max_bodies) {
      throw TooManyElementsError("invalid MJCF: " + line + ": more than " +
                                 std::to_string(options.max_bodies) + " <body> elements");
    }
  });
  TiXmlDocument document;
  // The check refused NUL bytes, so the copy is the whole document.
  document.Parse(std::string(xml).c_str(), nullptr, TIXML_ENCODING_UTF8);
  if (document.Error()) {
    throw ModelError("invalid MJCF: line " + std::to_string(document.ErrorRow()) + ": " +
                     document.ErrorDesc());
  }
  const TiXmlElement* root = document.RootElement();
  if (root == nullptr || root->ValueStr() != "mujoco") {
    throw ModelError("invalid MJCF: the root element is " +
                     (root == nullptr ? std::string("missing") : tag(*root)) + ", not <mujoco>");
  }
  return to_spec(*root, options);
}

ModelSpec read_mjcf_file(const std::string& path, const MjcfOptions& options) {
  return read_mjcf_string(read_document_file(path, "MJCF"), options);
}

}  // namespace torqued
