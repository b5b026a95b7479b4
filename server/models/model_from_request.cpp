// Conversion of the proto model sources to the engine's ModelSpec / DhTable, then build_model()
// and the content hash. Engine errors (ModelError) become INVALID_ARGUMENT with their message.
#include "server/models/model_from_request.hpp"

#include <google/protobuf/descriptor.h>
#include <google/protobuf/io/coded_stream.h>
#include <google/protobuf/message.h>
#include <grpcpp/support/proto_buffer_reader.h>

#include <cmath>
#include <limits>
#include <map>
#include <optional>
#include <vector>

#include "engine/io/dh.hpp"
#include "engine/io/mjcf.hpp"
#include "engine/io/sdf.hpp"
#include "engine/io/urdf.hpp"
#include "engine/io/xml_guard.hpp"
#include "engine/model/build.hpp"
#include "server/base/status_messages.hpp"
#include "server/base/wire_counts.hpp"
#include "server/models/model_id.hpp"

namespace torqued::server {
namespace {

Vec3 to_vec3(const v1::Vector3& v) { return Vec3(v.x(), v.y(), v.z()); }

Mat3 to_inertia(const v1::InertiaTensor& t) {
  Mat3 m;
  m << t.ixx(), t.ixy(), t.ixz(), t.ixy(), t.iyy(), t.iyz(), t.ixz(), t.iyz(), t.izz();
  return m;
}

JointLimits to_limits(const v1::JointLimits& l) {
  JointLimits out;
  if (l.has_lower()) out.lower = l.lower();
  if (l.has_upper()) out.upper = l.upper();
  if (l.has_velocity()) out.velocity = l.velocity();
  if (l.has_effort()) out.effort = l.effort();
  return out;
}

bool to_joint_type(v1::JointType type, JointType& out) {
  switch (type) {
    case v1::JOINT_TYPE_REVOLUTE:
      out = JointType::kRevolute;
      return true;
    case v1::JOINT_TYPE_CONTINUOUS:
      out = JointType::kContinuous;
      return true;
    case v1::JOINT_TYPE_PRISMATIC:
      out = JointType::kPrismatic;
      return true;
    case v1::JOINT_TYPE_HELICAL:
      out = JointType::kHelical;
      return true;
    case v1::JOINT_TYPE_SPHERICAL:
      out = JointType::kSpherical;
      return true;
    case v1::JOINT_TYPE_PLANAR:
      out = JointType::kPlanar;
      return true;
    case v1::JOINT_TYPE_FREE_FLYER:
      out = JointType::kFreeFlyer;
      return true;
    case v1::JOINT_TYPE_FIXED:
      out = JointType::kFixed;
      return true;
    default:
      return false;
  }
}

// The first number in `message` that is NaN, or infinite outside JointLimits (where an infinity
// means unbounded, as an unset limit does), as INVALID_ARGUMENT naming its field from `path` and
// the innermost named element it is in: "spec.joints[3].axis.x is NaN (in "elbow")". The engine
// would refuse it too, but could name only the joint or link. Model sources hold no repeated
// numbers, so singular doubles and messages are all there is to visit; their nesting is the
// schema's, a few levels.
grpc::Status check_finite(const google::protobuf::Message& message, const std::string& path,
                          const std::string& in = "") {
  using google::protobuf::FieldDescriptor;
  const google::protobuf::Reflection& reflection = *message.GetReflection();
  const bool infinity_allowed = message.GetDescriptor() == v1::JointLimits::descriptor();
  const auto refuse = [&in](const std::string& what) {
    return invalid(in.empty() ? what : what + " (in " + quote_input(in) + ")");
  };
  std::vector<const FieldDescriptor*> fields;
  reflection.ListFields(message, &fields);
  for (const FieldDescriptor* field : fields) {
    const std::string at = path.empty() ? field->name() : path + "." + field->name();
    if (field->cpp_type() == FieldDescriptor::CPPTYPE_DOUBLE && !field->is_repeated()) {
      const double value = reflection.GetDouble(message, field);
      if (std::isnan(value)) return refuse(at + " is NaN");
      if (std::isinf(value) && !infinity_allowed) return refuse(at + " is infinite");
    } else if (field->cpp_type() == FieldDescriptor::CPPTYPE_MESSAGE && field->is_repeated()) {
      for (int i = 0; i < reflection.FieldSize(message, field); ++i) {
        const google::protobuf::Message& element = reflection.GetRepeatedMessage(message, field, i);
        const FieldDescriptor* name = element.GetDescriptor()->FindFieldByName("name");
        const bool named = name != nullptr && !name->is_repeated() &&
                           name->cpp_type() == FieldDescriptor::CPPTYPE_STRING;
        const std::string element_name =
            named ? element.GetReflection()->GetString(element, name) : "";
        const grpc::Status s = check_finite(element, at + "[" + std::to_string(i) + "]",
                                            element_name.empty() ? in : element_name);
        if (!s.ok()) return s;
      }
    } else if (field->cpp_type() == FieldDescriptor::CPPTYPE_MESSAGE) {
      if (grpc::Status s = check_finite(reflection.GetMessage(message, field), at, in); !s.ok()) {
        return s;
      }
    }
  }
  return grpc::Status::OK;
}

// Appends `loops` (the field `field`) to the spec's loop closures; build_model() checks them.
grpc::Status loops_from_proto(const google::protobuf::RepeatedPtrField<v1::LoopClosure>& loops,
                              const std::string& field, ModelSpec& spec) {
  for (int i = 0; i < loops.size(); ++i) {
    const v1::LoopClosure& l = loops[i];
    LoopClosureSpec loop;
    loop.name = l.name();
    if (!to_constraint_type(l.type(), loop.type)) {
      return invalid(field + "[" + std::to_string(i) + "] (" + quote_input(l.name()) +
                     "): type must be set to a CONSTRAINT_TYPE_* value");
    }
    loop.link1 = l.link1();
    loop.origin1 = to_transform(l.origin1());
    loop.link2 = l.link2();
    loop.origin2 = to_transform(l.origin2());
    spec.loop_closures.push_back(std::move(loop));
  }
  return grpc::Status::OK;
}

grpc::Status spec_from_proto(const v1::ModelSpec& in, ModelSpec& spec) {
  for (int i = 0; i < in.links_size(); ++i) {
    const v1::LinkSpec& l = in.links(i);
    LinkSpec link;
    link.name = l.name();
    link.inertial.mass = l.inertial().mass();
    link.inertial.origin = to_transform(l.inertial().origin());
    link.inertial.inertia = to_inertia(l.inertial().inertia());
    spec.links.push_back(std::move(link));
  }
  for (int i = 0; i < in.joints_size(); ++i) {
    const v1::JointSpec& j = in.joints(i);
    JointSpec joint;
    joint.name = j.name();
    if (!to_joint_type(j.type(), joint.type)) {
      return invalid("spec.joints[" + std::to_string(i) + "] (" + quote_input(j.name()) +
                     "): type must be set to a JOINT_TYPE_* value");
    }
    joint.parent_link = j.parent_link();
    joint.child_link = j.child_link();
    joint.origin = to_transform(j.origin());
    if (j.has_axis()) joint.axis = to_vec3(j.axis());
    joint.pitch = j.pitch();
    joint.limits = to_limits(j.limits());
    spec.joints.push_back(std::move(joint));
  }
  return loops_from_proto(in.loop_closures(), "spec.loop_closures", spec);
}

grpc::Status dh_from_proto(const v1::DhTable& in, DhTable& table) {
  switch (in.convention()) {
    case v1::DH_CONVENTION_STANDARD:
      table.convention = DhConvention::kStandard;
      break;
    case v1::DH_CONVENTION_MODIFIED:
      table.convention = DhConvention::kModified;
      break;
    default:
      return invalid("dh.convention must be DH_CONVENTION_STANDARD or DH_CONVENTION_MODIFIED");
  }
  if (!in.base_link().empty()) table.base_link = in.base_link();
  for (int i = 0; i < in.links_size(); ++i) {
    const v1::DhLink& l = in.links(i);
    DhLink link;
    link.name = l.name();
    link.joint_name = l.joint_name();
    if (l.type() != v1::JOINT_TYPE_REVOLUTE && l.type() != v1::JOINT_TYPE_PRISMATIC) {
      return invalid("dh.links[" + std::to_string(i) +
                     "].type must be JOINT_TYPE_REVOLUTE or JOINT_TYPE_PRISMATIC");
    }
    to_joint_type(l.type(), link.type);
    link.a = l.a();
    link.alpha = l.alpha();
    link.d = l.d();
    link.theta = l.theta();
    link.mass = l.mass();
    link.com = to_vec3(l.com());
    link.inertia = to_inertia(l.inertia());
    link.limits = to_limits(l.limits());
    table.links.push_back(std::move(link));
  }
  return grpc::Status::OK;
}

// The field of the request's source oneof that is set ("urdf", "mjcf", ...), for messages.
std::string source_name(const v1::RegisterModelRequest& request) {
  const google::protobuf::FieldDescriptor* field = request.GetReflection()->GetOneofFieldDescriptor(
      request, v1::RegisterModelRequest::descriptor()->FindOneofByName("source"));
  return field == nullptr ? "source" : field->name();
}

}  // namespace

ModelLimits model_limits(const Config& config) {
  return {config.max_urdf_bytes,  config.max_bodies,          config.max_name_bytes,
          config.max_dof,         config.max_constraint_rows, config.max_models,
          config.max_store_bytes, config.max_workspace_bytes};
}

grpc::Status check_encoded_request(const grpc::ByteBuffer& bytes, const ModelLimits& limits) {
  const WireCounts counts = count_wire_fields(bytes, v1::RegisterModelRequest::descriptor());
  const auto elements = [&counts](const google::protobuf::Descriptor* type, const char* name) {
    const auto it = counts.elements.find(type->FindFieldByName(name));
    return it == counts.elements.end() ? std::int64_t{0} : it->second;
  };
  const std::pair<const char*, std::int64_t> bodies[] = {
      {"dh.links", elements(v1::DhTable::descriptor(), "links")},
      {"spec.links", elements(v1::ModelSpec::descriptor(), "links")},
      {"spec.joints", elements(v1::ModelSpec::descriptor(), "joints")}};
  for (const auto& [what, count] : bodies) {
    if (count > limits.max_bodies)
      return over_limit(what, count, limits.max_bodies, "--max-bodies");
  }
  // The fewest rows a loop closure adds: a point constraint's 3.
  constexpr std::int64_t kMinRowsPerLoop = 3;
  const std::int64_t loops = elements(v1::ModelSpec::descriptor(), "loop_closures") +
                             elements(v1::RegisterModelRequest::descriptor(), "loop_closures");
  if (loops * kMinRowsPerLoop > limits.max_constraint_rows) {
    return over_limit("loop_closures: the constraint rows of " + std::to_string(loops) +
                          " loop closures (3 each at least)",
                      loops * kMinRowsPerLoop, limits.max_constraint_rows, "--max-constraint-rows");
  }
  // A newer client may send fields this server does not know; a few per row at most.
  constexpr std::int64_t kUnknownFieldsPerBody = 8;
  if (counts.unknown_fields > kUnknownFieldsPerBody * limits.max_bodies) {
    return over_limit("request: fields unknown to this server (at most 8 per body)",
                      counts.unknown_fields, kUnknownFieldsPerBody * limits.max_bodies,
                      "--max-bodies");
  }
  return grpc::Status::OK;
}

// Flattened, in a file compiled without contraction into FMA (server/CMakeLists.txt): the
// placements of specs and loop closures go into model ids, which must not depend on the build
// (engine/model/build.cpp).
[[gnu::flatten]] Transform to_transform(const v1::Placement& p) {
  const Vec3 rpy = to_vec3(p.rpy());
  Transform t;
  t.rotation =
      (Eigen::AngleAxisd(rpy.z(), Vec3::UnitZ()) * Eigen::AngleAxisd(rpy.y(), Vec3::UnitY()) *
       Eigen::AngleAxisd(rpy.x(), Vec3::UnitX()))
          .toRotationMatrix();
  t.translation = to_vec3(p.xyz());
  return t;
}

bool to_constraint_type(v1::ConstraintType type, ConstraintType& out) {
  switch (type) {
    case v1::CONSTRAINT_TYPE_WELD:
      out = ConstraintType::kWeld;
      return true;
    case v1::CONSTRAINT_TYPE_POINT:
      out = ConstraintType::kPoint;
      return true;
    case v1::CONSTRAINT_TYPE_REVOLUTE:
      out = ConstraintType::kRevolute;
      return true;
    case v1::CONSTRAINT_TYPE_PRISMATIC:
      out = ConstraintType::kPrismatic;
      return true;
    default:
      return false;
  }
}

grpc::Status build_from_request(const v1::RegisterModelRequest& request, const ModelLimits& limits,
                                BuiltModel& out) {
  const bool floating = request.base() == v1::BASE_TYPE_FLOATING;
  if (request.base() != v1::BASE_TYPE_UNSPECIFIED && request.base() != v1::BASE_TYPE_FIXED &&
      !floating) {
    return invalid("base: unknown BaseType " + std::to_string(request.base()));
  }
  if (grpc::Status s = check_finite(request, ""); !s.ok()) return s;
  const Vec3 gravity = request.has_gravity() ? to_vec3(request.gravity()) : Vec3(0, 0, -9.81);

  ModelSpec spec;
  try {
    switch (request.source_case()) {
      case v1::RegisterModelRequest::kUrdf: {
        const std::int64_t size = static_cast<std::int64_t>(request.urdf().size());
        if (size > limits.max_urdf_bytes) {
          return over_limit("urdf bytes", size, limits.max_urdf_bytes, "--max-urdf-bytes");
        }
        spec = read_urdf_string(
            request.urdf(),
            UrdfOptions{floating, gravity, static_cast<std::size_t>(limits.max_bodies)});
        break;
      }
      case v1::RegisterModelRequest::kMjcf: {
        const std::int64_t size = static_cast<std::int64_t>(request.mjcf().size());
        if (size > limits.max_urdf_bytes) {
          return over_limit("mjcf bytes", size, limits.max_urdf_bytes, "--max-urdf-bytes");
        }
        // Unset, the base and gravity are the file's: a root body with a free joint floats, and
        // <option gravity> applies, as MuJoCo reads the file.
        MjcfOptions options{.max_bodies = static_cast<std::size_t>(limits.max_bodies)};
        if (request.base() != v1::BASE_TYPE_UNSPECIFIED) options.floating_base = floating;
        if (request.has_gravity()) options.gravity = gravity;
        spec = read_mjcf_string(request.mjcf(), options);
        break;
      }
      case v1::RegisterModelRequest::kSdf: {
        const std::int64_t size = static_cast<std::int64_t>(request.sdf().size());
        if (size > limits.max_urdf_bytes) {
          return over_limit("sdf bytes", size, limits.max_urdf_bytes, "--max-urdf-bytes");
        }
        // Unset, the base is the document's: a model floats unless it is <static> or a joint
        // attaches it to the world, as a simulator reads the file.
        SdfOptions options{.gravity = gravity,
                           .max_links = static_cast<std::size_t>(limits.max_bodies)};
        options.floating_base = request.base() == v1::BASE_TYPE_UNSPECIFIED
                                    ? std::nullopt
                                    : std::optional<bool>(floating);
        spec = read_sdf_string(request.sdf(), options);
        break;
      }
      case v1::RegisterModelRequest::kDh: {
        if (request.dh().links_size() > limits.max_bodies) {
          return over_limit("dh.links", request.dh().links_size(), limits.max_bodies,
                            "--max-bodies");
        }
        DhTable table;
        table.name = request.name().empty() ? "dh_model" : request.name();
        table.floating_base = floating;
        table.gravity = gravity;
        if (grpc::Status s = dh_from_proto(request.dh(), table); !s.ok()) return s;
        spec = dh_to_spec(table);
        break;
      }
      case v1::RegisterModelRequest::kSpec: {
        if (request.spec().links_size() > limits.max_bodies) {
          return over_limit("spec.links", request.spec().links_size(), limits.max_bodies,
                            "--max-bodies");
        }
        if (grpc::Status s = spec_from_proto(request.spec(), spec); !s.ok()) return s;
        spec.name = "spec_model";
        spec.floating_base = floating;
        spec.gravity = gravity;
        break;
      }
      default:
        return invalid("source: one of urdf, mjcf, sdf, dh or spec must be set");
    }
    if (grpc::Status s = loops_from_proto(request.loop_closures(), "loop_closures", spec);
        !s.ok()) {
      return s;
    }
    if (!request.name().empty()) spec.name = request.name();
    std::int64_t loop_rows = 0;
    for (const LoopClosureSpec& loop : spec.loop_closures) {
      loop_rows += constraint_dimension(loop.type);
    }
    if (loop_rows > limits.max_constraint_rows) {
      return over_limit("loop_closures: constraint rows", loop_rows, limits.max_constraint_rows,
                        "--max-constraint-rows");
    }
    if (static_cast<std::int64_t>(spec.links.size()) > limits.max_bodies) {
      return over_limit("links", static_cast<std::int64_t>(spec.links.size()), limits.max_bodies,
                        "--max-bodies");
    }
    ModelPtr model = build_model(
        spec, BuildOptions{.warnings_are_errors = request.strict(),
                           .max_name_bytes = static_cast<std::size_t>(limits.max_name_bytes)});
    // Nothing can be computed on a model that cannot move (a DH table without rows, a tree of
    // fixed joints): refused rather than stored and listed.
    if (model->nv == 0) {
      return invalid(
          "the model has no degree of freedom (nv = 0): " +
          std::string(spec.joints.empty() ? "it has no joints" : "all its joints are fixed"));
    }
    if (model->nv > limits.max_dof) {
      return over_limit("degrees of freedom (nv)", model->nv, limits.max_dof, "--max-dof");
    }
    out.id = model_id(*model);
    out.model = std::move(model);
  } catch (const NameTooLongError& e) {
    return {grpc::StatusCode::RESOURCE_EXHAUSTED, std::string(e.what()) + " (--max-name-bytes)"};
  } catch (const TooManyElementsError& e) {
    return {grpc::StatusCode::RESOURCE_EXHAUSTED,
            source_name(request) + ": " + std::string(e.what()) + " (--max-bodies)"};
  } catch (const ModelError& e) {
    return invalid(e.what());
  }
  return grpc::Status::OK;
}

}  // namespace torqued::server
