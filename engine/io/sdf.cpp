// SDF reader: libsdformat 12's document object model (sdf::Root) mapped onto a ModelSpec; see
// sdf.hpp for what is read, the conventions, and what is refused or warned.
//
// Every frame comes from libsdformat's frame graph. A pose written relative to exactly the frame
// wanted (a joint's relative to its parent link, a link's relative to its joint, a joint's in its
// child link by default) is an edge of that graph, taken as libsdformat read it (RawPose); any
// other pose is resolved through the graph (SemanticPose::Resolve), which composes both frames'
// poses in the model frame and so rounds in the last bits: reading the edges as written keeps a
// joint whose frame is its child link's frame exactly so (no placement of 1e-16 between them).
// Likewise an axis in its own joint's frame is read as written, any other is resolved
// (JointAxis::ResolveXyz).
//
// <include> is refused by the scan before libsdformat parses: libsdformat looks an include's URI
// up in the working directory, its install paths, as a path as given and in SDF_PATH before it
// asks ParserConfig's find callback, so no configuration keeps it from opening a file.
//
// libsdformat's console is one stream for the process (standard error) and a log file it opens
// in $HOME/.sdformat on its first message, written without synchronization, and some errors (a
// value it cannot read, say) reach only the console, not the Errors a parse returns. So parses
// are serialized, and while one runs the console writes to that parse's buffer, whose errors
// join the ModelError (the engine does no logging of its own).
#include "engine/io/sdf.hpp"

#include <cmath>
#include <iostream>
#include <limits>
#include <map>
#include <mutex>
#include <sdf/Console.hh>
#include <sdf/Error.hh>
#include <sdf/Joint.hh>
#include <sdf/JointAxis.hh>
#include <sdf/Link.hh>
#include <sdf/Model.hh>
#include <sdf/ParserConfig.hh>
#include <sdf/Root.hh>
#include <sdf/SDFImpl.hh>
#include <sdf/parser.hh>
#include <set>
#include <sstream>
#include <stdexcept>
#include <utility>
#include <vector>

#include "engine/io/urdfdom_messages.hpp"
#include "engine/io/xml_guard.hpp"
#include "engine/model/quoted.hpp"

// Ignition's headers bring std::quoted, which argument-dependent lookup would pick for a
// std::string: calls here say torqued::quoted.
namespace torqued {
namespace {

// SDF writes "no limit" as ±1e16 (its default) and -1 (effort, velocity): a bound of this
// magnitude or more is none (the golden data's threshold).
constexpr double kNoLimit = 1e10;
// How many of libsdformat's errors a ModelError quotes, and how much of each: its messages quote
// values from the document.
constexpr std::size_t kMaxQuotedErrors = 8;
constexpr std::size_t kMaxErrorBytes = 300;

[[noreturn]] void fail_at(std::size_t line, const std::string& what) {
  throw ModelError("invalid SDF: line " + std::to_string(line) + ": " + what);
}

std::string_view trimmed(std::string_view text) {
  const std::size_t begin = text.find_first_not_of(" \t\r\n");
  if (begin == std::string_view::npos) return {};
  return text.substr(begin, text.find_last_not_of(" \t\r\n") - begin + 1);
}

// What libsdformat spends on the elements it builds an object for, in units of a plain element
// (about 0.04 ms and 5 KB): Debian 12's libsdformat 12.3 takes 15 ms and 2.3 MB for a nested
// model, 3.4 ms and 0.84 MB for a link, 2.2 ms and 0.55 MB for a joint, 2.6 ms and 0.55 MB for a
// sensor, 0.6 ms and 0.15 MB for a visual or a collision, 0.35 ms for a particle emitter, 0.17 ms
// for a light, 0.06 ms for a frame (whose cost then grows with their number: kMaxSdfFrames).
// Counted wherever the name appears, which can only overcount.
struct ElementWeight {
  std::string_view name;
  std::size_t weight;
};
constexpr ElementWeight kElementWeights[] = {
    {"model", 400},           {"link", 160},  {"joint", 100},
    {"sensor", 100},          {"visual", 30}, {"collision", 30},
    {"particle_emitter", 15}, {"light", 10},  {"frame", 2}};

std::size_t weight_of(std::string_view element) {
  for (const ElementWeight& known : kElementWeights) {
    if (known.name == element) return known.weight;
  }
  return 1;
}

// What the reader checks while xml_guard scans the document, before libsdformat sees it: one
// <model> under <sdf>, the work libsdformat would do, the number of links and frames, and the
// absence of <include>.
class DocumentCheck {
 public:
  DocumentCheck(std::string_view xml, std::size_t max_links) : xml_(xml), max_links_(max_links) {}

  void check(const XmlElement& element) {
    path_.resize(element.depth - 1);  // the open elements: the last one is this one's parent
    const std::string_view parent = path_.empty() ? std::string_view() : path_.back();
    path_.push_back(element.name);
    const std::string tag = "<" + printable(utf8_prefix(element.name, 64)) + ">";
    if (element.depth == 1 && element.name != "sdf") {
      fail_at(element.line, "the root element is " + tag + ": an SDF document's is <sdf>");
    }
    if (element.depth == 1) check_version(element);
    if (element.depth == 2 && (element.name != "model" || ++models_ > 1)) {
      fail_at(element.line, tag + " under <sdf>: the SDF reader reads one <model> (no <world>)");
    }
    work_ += weight_of(element.name);
    if (work_ > kMaxSdfWork) {
      fail_at(element.line, "more than libsdformat's work bound (" + std::to_string(kMaxSdfWork) +
                                " units: sdf.hpp) at " + tag);
    }
    if (element.name == "frame" && ++frames_ > kMaxSdfFrames) {
      fail_at(element.line, "more than " + std::to_string(kMaxSdfFrames) + " <frame> elements");
    }
    if (element.name == "link" && parent == "model" && max_links_ > 0 && ++links_ > max_links_) {
      throw TooManyElementsError("invalid SDF: line " + std::to_string(element.line) +
                                 ": more than " + std::to_string(max_links_) + " <link> elements");
    }
    if (element.name == "include") include_line_ = element.line;
    if (element.name == "uri" && parent == "include") {
      fail_at(include_line_,
              "<include> of " + torqued::quoted(text_of(element)) + " refused: " + kNoFiles);
    }
  }

  // The work libsdformat would do, in units of a plain element.
  std::size_t work() const { return work_; }

  // An <include> without <uri> is refused too, once the scan is over.
  void finish() const {
    if (include_line_ > 0) fail_at(include_line_, std::string("<include> refused: ") + kNoFiles);
  }

 private:
  static constexpr const char* kNoFiles =
      "the SDF reader opens no file (write the included model into the document)";

  // libsdformat reads <sdf version> as a semantic version, whose parser throws
  // std::invalid_argument through libsdformat on a part that is not a number ("1.x", "1..9"): the
  // version is refused here unless it is MAJOR.MINOR in digits. Without one, libsdformat says so.
  static void check_version(const XmlElement& sdf) {
    for (const auto& [name, value] : sdf.attributes) {
      if (name != "version") continue;
      const std::size_t dot = value.find('.');
      const auto is_number = [](std::string_view part) {
        return !part.empty() && part.size() <= 4 &&
               part.find_first_not_of("0123456789") == std::string_view::npos;
      };
      if (dot == std::string_view::npos || !is_number(value.substr(0, dot)) ||
          !is_number(value.substr(dot + 1))) {
        fail_at(sdf.line, "<sdf> version " + torqued::quoted(value) +
                              ": a version is MAJOR.MINOR in digits, such as 1.9");
      }
    }
  }

  // The text between `element`'s start tag and the next markup, trimmed.
  std::string_view text_of(const XmlElement& element) const {
    const std::string_view& last =
        element.attributes.empty() ? element.name : element.attributes.back().second;
    // After an attribute, its closing quote.
    std::size_t at = static_cast<std::size_t>(last.data() + last.size() - xml_.data()) +
                     (element.attributes.empty() ? 0 : 1);
    at = xml_.find('>', at);
    if (at == std::string_view::npos || xml_[at - 1] == '/') return {};
    const std::size_t end = xml_.find('<', ++at);
    return trimmed(xml_.substr(at, end == std::string_view::npos ? end : end - at));
  }

  std::string_view xml_;
  std::size_t max_links_;
  std::size_t models_ = 0;  // under <sdf>
  std::size_t work_ = 0;
  std::size_t frames_ = 0;
  std::size_t links_ = 0;
  std::size_t include_line_ = 0;  // of the last <include>, 0 for none
  std::vector<std::string_view> path_;
};

// The process-wide lock of libsdformat (see the top of the file).
std::mutex& libsdformat_mutex() {
  static std::mutex mutex;
  return mutex;
}

// libsdformat's description of the specification: root.sdf and the files it includes, read into
// an element tree that a parse fills. Root::LoadSdfString reads it anew for every document, about
// half of a small document's parse (16 of 35 ms); it is read once here (under libsdformat_mutex)
// and each parse fills a copy. The reader reads one <model> under <sdf> (the scan refuses any
// other element there), so the description keeps root.sdf's <model> branch alone: the copy of
// the others, <world> above all, cost ten times as much as that of <model>.
const sdf::ElementPtr& specification() {
  static const sdf::ElementPtr description = [] {
    std::string root = sdf::SDF::EmbeddedSpec("root.sdf", false);
    for (const std::string other : {"world.sdf", "actor.sdf", "light.sdf"}) {
      const std::size_t begin = root.find("<include filename=\"" + other + "\"");
      const std::size_t end = root.find("/>", begin);
      if (begin != std::string::npos && end != std::string::npos) {
        root.erase(begin, end + 2 - begin);
      }
    }
    const sdf::SDFPtr sdf(new sdf::SDF());
    sdf::initString(root, sdf);
    return sdf->Root();
  }();
  return description;
}

// Root::LoadSdfString with the description read once: the same steps (read the text against the
// description, converting an older version; then load the DOM) and the same errors.
sdf::Errors load_sdf_string(const std::string& xml, const sdf::ParserConfig& config,
                            sdf::Root& root) {
  const sdf::SDFPtr parsed(new sdf::SDF());
  parsed->Root(specification()->Clone());
  sdf::Errors errors;
  if (!sdf::readString(xml, config, parsed, errors)) {
    errors.emplace_back(sdf::ErrorCode::STRING_READ, "Unable to read SDF string");
    return errors;
  }
  sdf::Errors load_errors = root.Load(parsed, config);
  errors.insert(errors.end(), load_errors.begin(), load_errors.end());
  return errors;
}

// Routes libsdformat's console to a buffer while the object lives (under libsdformat_mutex).
class ConsoleCapture {
 public:
  ConsoleCapture() : previous_(stream().GetStream()) { stream().SetStream(&text_); }
  ~ConsoleCapture() { stream().SetStream(previous_); }
  ConsoleCapture(const ConsoleCapture&) = delete;
  ConsoleCapture& operator=(const ConsoleCapture&) = delete;

  // The error messages written so far. The console starts each message with a coloured label,
  // "\x1b[1;31mError [Param.cc:771]\x1b[0m " for errors (warnings have their own).
  std::vector<std::string> errors() const {
    constexpr std::string_view kErrorLabel = "\x1b[1;31mError [";
    constexpr std::string_view kLabelEnd = "\x1b[0m";
    const std::string text = text_.str();
    std::vector<std::string> messages;
    for (std::size_t at = text.find(kErrorLabel); at != std::string::npos;
         at = text.find(kErrorLabel, at + 1)) {
      const std::size_t begin = text.find(kLabelEnd, at);
      if (begin == std::string::npos) break;
      const std::size_t message_begin = begin + kLabelEnd.size();
      const std::size_t end = text.find("\x1b[", message_begin);
      const std::string_view message = trimmed(std::string_view(text).substr(
          message_begin, end == std::string::npos ? end : end - message_begin));
      if (!message.empty()) messages.emplace_back(message);
    }
    return messages;
  }

 private:
  static sdf::Console::ConsoleStream& stream() { return sdf::Console::Instance()->GetMsgStream(); }

  std::ostream* previous_;
  std::ostringstream text_;
};

// Sends what is written to std::cerr to a buffer while the object lives (under libsdformat_mutex).
// libsdformat writes some errors straight there, past its console, with the document's text in
// them ("Error: Detected delimiter '::' in element name in <link name='a::b'>..."), and also
// returns them as sdf::Errors: in a server they would put a client's document on its standard
// error. Nothing else in torqued writes std::cerr once the server runs.
class CerrCapture {
 public:
  CerrCapture() : previous_(std::cerr.rdbuf(text_.rdbuf())) {}
  ~CerrCapture() { std::cerr.rdbuf(previous_); }
  CerrCapture(const CerrCapture&) = delete;
  CerrCapture& operator=(const CerrCapture&) = delete;

 private:
  std::ostringstream text_;
  std::streambuf* previous_;
};

std::string describe(const sdf::Error& error) {
  std::string text;
  if (error.LineNumber()) text = "line " + std::to_string(*error.LineNumber()) + ": ";
  text += error.Message();
  if (error.XmlPath()) text += " (" + *error.XmlPath() + ")";
  return text;
}

// libsdformat's errors worth quoting, most specific first. Left out: a link's physically invalid
// inertia (a massless link is one; build_model() judges inertias), the echo of the whole document
// that ends a failed parse, "Error reading element" of the elements enclosing the one quoted just
// before, and the two messages of libsdformat's attempt to read a document it failed to read as
// SDF as a URDF.
std::vector<std::string> quoted_errors(const std::vector<std::string>& console,
                                       const sdf::Errors& errors) {
  std::vector<std::string> messages;
  for (const std::string& message : console) {
    if (message != "Unable to call parseURDF on robot model" &&
        message != "parse as old deprecated model file failed.") {
      messages.push_back(message);
    }
  }
  std::string last_path;
  for (const sdf::Error& error : errors) {
    if (error.Code() == sdf::ErrorCode::LINK_INERTIA_INVALID ||
        error.Code() == sdf::ErrorCode::STRING_READ) {
      continue;
    }
    const std::string path = error.XmlPath().value_or("");
    const bool encloses_last = error.Code() == sdf::ErrorCode::ELEMENT_INVALID &&
                               !last_path.empty() && last_path.starts_with(path);
    if (!path.empty()) last_path = path;
    if (!encloses_last) messages.push_back(describe(error));
  }
  return messages;
}

[[noreturn]] void fail_with(const std::string& what, const std::vector<std::string>& messages) {
  std::string text = "invalid SDF: " + what;
  for (std::size_t i = 0; i < messages.size() && i < kMaxQuotedErrors; ++i) {
    text += (i == 0 ? ": " : "; ") + printable(utf8_prefix(messages[i], kMaxErrorBytes));
  }
  if (messages.size() > kMaxQuotedErrors) {
    text += " (and " + std::to_string(messages.size() - kMaxQuotedErrors) + " more)";
  }
  throw ModelError(text);
}

void check_errors(const std::string& what, const sdf::Errors& errors) {
  const std::vector<std::string> messages = quoted_errors({}, errors);
  if (!messages.empty()) fail_with(what, messages);
}

// The functions below that compute placements are flattened, and this file is compiled without
// contraction into FMA (CMakeLists): the numbers go into model ids, which must not depend on the
// build (see model/build.cpp).
[[gnu::flatten]] Transform to_transform(const ignition::math::Pose3d& pose) {
  const ignition::math::Quaterniond& r = pose.Rot();
  const ignition::math::Vector3d& p = pose.Pos();
  return {Eigen::Quaterniond(r.W(), r.X(), r.Y(), r.Z()).toRotationMatrix(),
          Vec3(p.X(), p.Y(), p.Z())};
}

[[gnu::flatten]] Transform inverse(const Transform& t) { return t.inverse(); }

[[gnu::flatten]] Transform compose(const Transform& aMb, const Transform& bMc) { return aMb * bMc; }

// A rotation whose z axis is `axis` (a loop closure's revolute or prismatic constraint frees z).
[[gnu::flatten]] Transform z_onto(const Vec3& axis) {
  Transform t = Transform::Identity();
  t.rotation.col(2) = axis.normalized();
  t.rotation.col(0) = t.rotation.col(2).unitOrthogonal();
  t.rotation.col(1) = t.rotation.col(2).cross(t.rotation.col(0));
  return t;
}

Transform resolve(const sdf::SemanticPose& pose, const std::string& frame,
                  const std::string& what) {
  ignition::math::Pose3d resolved;
  check_errors(what + ": cannot resolve its pose relative to " + torqued::quoted(frame),
               pose.Resolve(resolved, frame));
  return to_transform(resolved);
}

// A link or joint of the model or of a model nested in it, with the prefix that scopes its name
// from the top-level model ("" or "arm::").
struct ScopedLink {
  const sdf::Link* link;
  std::string scope;
};
struct ScopedJoint {
  const sdf::Joint* joint;
  std::string scope;
};

// The model's links and joints, nested models' included, in document order.
void collect(const sdf::Model& model, const std::string& scope, std::vector<ScopedLink>& links,
             std::vector<ScopedJoint>& joints) {
  for (sdf::ElementPtr element = model.Element()->GetFirstElement(); element;
       element = element->GetNextElement()) {
    const std::string& kind = element->GetName();
    if (kind != "link" && kind != "joint" && kind != "model") continue;
    const std::string name = element->Get<std::string>("name");
    const auto missing = [&]() {
      return ModelError("invalid SDF: libsdformat did not load <" + kind + "> " +
                        torqued::quoted(scope + name));
    };
    if (kind == "link") {
      const sdf::Link* link = model.LinkByName(name);
      if (link == nullptr) throw missing();
      links.push_back({link, scope});
    } else if (kind == "joint") {
      const sdf::Joint* joint = model.JointByName(name);
      if (joint == nullptr) throw missing();
      joints.push_back({joint, scope});
    } else {
      const sdf::Model* nested = model.ModelByName(name);
      if (nested == nullptr) throw missing();
      collect(*nested, scope + name + "::", links, joints);
    }
  }
}

InertialSpec to_inertial(const sdf::Link& link) {
  const ignition::math::Inertiald& inertial = link.Inertial();
  const ignition::math::MassMatrix3d& m = inertial.MassMatrix();
  InertialSpec out;
  out.mass = m.Mass();
  out.origin = to_transform(inertial.Pose());
  out.inertia << m.Ixx(), m.Ixy(), m.Ixz(), m.Ixy(), m.Iyy(), m.Iyz(), m.Ixz(), m.Iyz(), m.Izz();
  return out;
}

JointType to_joint_type(const sdf::Joint& joint, const std::string& name) {
  const std::string what = "joint " + torqued::quoted(name) + ": type ";
  switch (joint.Type()) {
    case sdf::JointType::REVOLUTE:
      return JointType::kRevolute;
    case sdf::JointType::CONTINUOUS:
      return JointType::kContinuous;
    case sdf::JointType::PRISMATIC:
      return JointType::kPrismatic;
    case sdf::JointType::FIXED:
      return JointType::kFixed;
    case sdf::JointType::BALL:
      return JointType::kSpherical;
    case sdf::JointType::SCREW:
      return JointType::kHelical;
    case sdf::JointType::UNIVERSAL:
    case sdf::JointType::REVOLUTE2:
      throw ModelError(what +
                       (joint.Type() == sdf::JointType::UNIVERSAL ? "universal" : "revolute2") +
                       " (two rotation axes) is not supported: torqued has no two-axis joint (two "
                       "revolute joints with a link between them are one)");
    case sdf::JointType::GEARBOX:
      throw ModelError(what +
                       "gearbox (a gear ratio between two joints) is not supported: torqued has no "
                       "coupling between joints");
    case sdf::JointType::INVALID:
      break;
  }
  throw ModelError(what + "unknown");
}

bool moves_along_axis(JointType type) {
  return type == JointType::kRevolute || type == JointType::kContinuous ||
         type == JointType::kPrismatic || type == JointType::kHelical;
}

double bound(double value) {
  return std::abs(value) >= kNoLimit ? std::copysign(std::numeric_limits<double>::infinity(), value)
                                     : value;
}

JointLimits to_limits(const sdf::JointAxis& axis, JointType type) {
  JointLimits limits;
  if (type != JointType::kContinuous) {
    limits.lower = bound(axis.Lower());
    limits.upper = bound(axis.Upper());
  }
  if (axis.Effort() >= 0.0) limits.effort = bound(axis.Effort());
  if (axis.MaxVelocity() >= 0.0) limits.velocity = bound(axis.MaxVelocity());
  return limits;
}

void add_dynamics_warning(const std::string& name, const sdf::JointAxis& axis,
                          std::vector<std::string>& warnings) {
  if (axis.Damping() == 0.0 && axis.Friction() == 0.0 && axis.SpringStiffness() == 0.0) return;
  std::ostringstream message;
  message << "joint " << torqued::quoted(name) << ": <dynamics> with damping " << axis.Damping()
          << ", friction " << axis.Friction() << " and spring_stiffness " << axis.SpringStiffness()
          << " ignored: only rigid-body terms are modelled";
  warnings.push_back(message.str());
}

class ModelReader {
 public:
  explicit ModelReader(const SdfOptions& options) : options_(options) {}

  ModelSpec read(const sdf::Model& model) {
    collect(model, "", links_, joints_);
    spec_.name = model.Name();
    spec_.gravity = options_.gravity;
    spec_.children_in_given_order = true;
    for (const ScopedLink& link : links_) {
      const std::string name = link.scope + link.link->Name();
      link_by_name_.emplace(name, &link);
      spec_.links.push_back({name, to_inertial(*link.link)});
    }
    std::map<std::string, std::string> world_joints;  // child link, joint
    for (const ScopedJoint& joint : joints_) read_joint(joint, world_joints);
    for (const auto& [child, joint] : world_joints) {
      if (tree_children_.count(child) > 0) {
        throw ModelError("joint " + torqued::quoted(joint) + " attaches link " +
                         torqued::quoted(child) +
                         " to the world, but other joints move that link: only the root link may "
                         "be attached to the world");
      }
    }
    // The document's own base, as a simulator reads it: a model floats unless it is <static> or
    // a joint attaches it to the world.
    spec_.floating_base = options_.floating_base.value_or(!model.Static() && world_joints.empty());
    return std::move(spec_);
  }

 private:
  void read_joint(const ScopedJoint& scoped, std::map<std::string, std::string>& world_joints) {
    const sdf::Joint& joint = *scoped.joint;
    const std::string name = scoped.scope + joint.Name();
    const std::string what = "joint " + torqued::quoted(name);
    std::string parent_local;
    std::string child_local;
    check_errors(what + ": its parent link", joint.ResolveParentLink(parent_local));
    check_errors(what + ": its child link", joint.ResolveChildLink(child_local));
    const std::string child = scoped.scope + child_local;
    if (parent_local == "world") {
      world_joints.emplace(child, name);
      if (joint.Type() != sdf::JointType::FIXED) {
        spec_.warnings.push_back(what + " between the world and link " + torqued::quoted(child) +
                                 " removed: the root link is welded to the world unless the "
                                 "reader's options float it");
      }
      return;
    }
    const JointType type = to_joint_type(joint, name);
    const auto child_link = link_by_name_.find(child);
    if (child_link == link_by_name_.end()) {
      throw ModelError(what + ": libsdformat resolved its child to " + torqued::quoted(child) +
                       ", which is not a link");
    }
    JointSpec out;
    out.name = name;
    out.type = type;
    out.parent_link = scoped.scope + parent_local;
    out.child_link = child;
    out.origin = joint.PoseRelativeTo() == parent_local
                     ? to_transform(joint.RawPose())
                     : resolve(joint.SemanticPose(), parent_local, what);
    out.child_link_placement =
        child_link_placement(joint, *child_link->second, scoped.scope, child_local, what);
    if (moves_along_axis(type)) {
      const sdf::JointAxis* axis = joint.Axis(0);
      if (axis == nullptr) throw ModelError(what + ": no <axis>");
      out.axis = axis_in_joint_frame(joint, *axis, what);
      out.limits = to_limits(*axis, type);
      add_dynamics_warning(name, *axis, spec_.warnings);
      if (type == JointType::kHelical) out.pitch = helical_pitch(joint, what);
    }
    if (!tree_children_.insert(child).second) {
      spec_.loop_closures.push_back(loop_closure(out));
      return;
    }
    spec_.joints.push_back(std::move(out));
  }

  static Transform child_link_placement(const sdf::Joint& joint, const ScopedLink& child,
                                        const std::string& joint_scope,
                                        const std::string& child_local, const std::string& what) {
    if (child.scope == joint_scope && child.link->PoseRelativeTo() == joint.Name()) {
      return to_transform(child.link->RawPose());
    }
    const std::string& joint_relative_to =
        joint.PoseRelativeTo().empty() ? joint.ChildLinkName() : joint.PoseRelativeTo();
    if (joint_relative_to == child_local) return inverse(to_transform(joint.RawPose()));
    return inverse(resolve(joint.SemanticPose(), child_local, what));
  }

  static Vec3 axis_in_joint_frame(const sdf::Joint& joint, const sdf::JointAxis& axis,
                                  const std::string& what) {
    ignition::math::Vector3d xyz = axis.Xyz();
    if (!axis.XyzExpressedIn().empty() && axis.XyzExpressedIn() != joint.Name()) {
      check_errors(what + ": cannot resolve its axis, expressed in " +
                       torqued::quoted(axis.XyzExpressedIn()),
                   axis.ResolveXyz(xyz));
    }
    return {xyz.X(), xyz.Y(), xyz.Z()};
  }

  // libsdformat's thread_pitch is Gazebo's: radians per metre, positive for a left-handed thread.
  static double helical_pitch(const sdf::Joint& joint, const std::string& what) {
    if (joint.ThreadPitch() == 0.0) {
      throw ModelError(what + ": screw joint with a zero <thread_pitch> (no rotation per metre)");
    }
    return -1.0 / joint.ThreadPitch();
  }

  // The joint as a constraint between its links: both frames are the joint frame at q = 0, one
  // on each link, with z along the axis of a revolute or prismatic joint.
  LoopClosureSpec loop_closure(const JointSpec& joint) const {
    LoopClosureSpec loop;
    loop.name = joint.name;
    switch (joint.type) {
      case JointType::kRevolute:
      case JointType::kContinuous:
        loop.type = ConstraintType::kRevolute;
        break;
      case JointType::kPrismatic:
        loop.type = ConstraintType::kPrismatic;
        break;
      case JointType::kSpherical:
        loop.type = ConstraintType::kPoint;
        break;
      case JointType::kFixed:
        loop.type = ConstraintType::kWeld;
        break;
      default:
        throw ModelError("joint " + torqued::quoted(joint.name) + " closes a loop (link " +
                         torqued::quoted(joint.child_link) +
                         " has an earlier parent joint), and a screw joint has no constraint "
                         "type in torqued");
    }
    const Transform joint_frame = joint.type == JointType::kRevolute ||
                                          joint.type == JointType::kContinuous ||
                                          joint.type == JointType::kPrismatic
                                      ? z_onto(joint.axis)
                                      : Transform::Identity();
    loop.link1 = joint.parent_link;
    loop.origin1 = compose(joint.origin, joint_frame);
    loop.link2 = joint.child_link;
    loop.origin2 = compose(inverse(joint.child_link_placement), joint_frame);
    return loop;
  }

  const SdfOptions& options_;
  std::vector<ScopedLink> links_;
  std::vector<ScopedJoint> joints_;
  std::map<std::string, const ScopedLink*> link_by_name_;
  std::set<std::string> tree_children_;  // links whose tree joint has been read
  ModelSpec spec_;
};

// Links are counted by DocumentCheck: they are not children of the root element.
constexpr XmlLimits kSdfXmlLimits{.max_depth = kMaxSdfDepth,
                                  .counted_element = {},
                                  .max_counted = 0,
                                  .max_element_attributes = kMaxSdfElementAttributes,
                                  .max_attributes = kMaxSdfAttributes,
                                  .max_nodes = kMaxSdfNodes,
                                  .format = "SDF"};

// The scan of read_sdf_string(), before libsdformat parses: what it refuses throws.
void check_sdf_document(std::string_view xml, DocumentCheck& document) {
  check_xml_structure(xml, kSdfXmlLimits,
                      [&document](const XmlElement& element) { document.check(element); });
  document.finish();
}

}  // namespace

std::size_t sdf_read_bytes(std::string_view xml) {
  DocumentCheck document(xml, 0);
  try {
    check_sdf_document(xml, document);
  } catch (const ModelError&) {
    return 0;
  }
  return kSdfBytesPerDocument + kSdfBytesPerWork * document.work();
}

ModelSpec read_sdf_string(std::string_view xml, const SdfOptions& options) {
  DocumentCheck document(xml, options.max_links);
  check_sdf_document(xml, document);

  const std::lock_guard<std::mutex> lock(libsdformat_mutex());
  sdf::Root root;
  sdf::Errors errors;
  std::vector<std::string> console_errors;
  {
    ConsoleCapture console;
    const CerrCapture cerr;
    // libsdformat tries a document it failed to read as SDF as a URDF, through urdfdom: what
    // urdfdom says of that is beside the point, and dropped.
    std::vector<std::string> urdfdom_messages;
    const CaptureUrdfdomMessages urdfdom(urdfdom_messages);
    // A configuration of its own: the global one is libsdformat's, which anything in the process
    // may change (URI paths, policies).
    const sdf::ParserConfig config;
    try {
      errors = load_sdf_string(std::string(xml), config, root);
    } catch (const std::logic_error& e) {
      // libsdformat lets the exceptions of std::stoi and the like out of some values it reads
      // (the scan refuses those it knows of): a document it cannot read.
      fail_with("libsdformat", {std::string("it failed reading the document (") + e.what() + ")"});
    }
    console_errors = console.errors();
  }
  const std::vector<std::string> messages = quoted_errors(console_errors, errors);
  if (!messages.empty()) fail_with("libsdformat", messages);
  const sdf::Model* model = root.Model();
  if (model == nullptr) {
    throw ModelError("invalid SDF: no <model> directly under <sdf> (a <world> is not read)");
  }
  return ModelReader(options).read(*model);
}

ModelSpec read_sdf_file(const std::string& path, const SdfOptions& options) {
  return read_sdf_string(read_document_file(path, "SDF"), options);
}

}  // namespace torqued
