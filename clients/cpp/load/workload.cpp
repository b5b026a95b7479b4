// Model resolution and request pools for torqued-load (see workload.hpp).
#include "clients/cpp/load/workload.hpp"

#include <google/protobuf/reflection.h>
#include <google/protobuf/util/json_util.h>
#include <grpcpp/generic/generic_stub.h>
#include <grpcpp/support/proto_buffer_reader.h>
#include <grpcpp/support/proto_buffer_writer.h>

#include <cmath>
#include <fstream>
#include <functional>
#include <map>
#include <random>
#include <set>
#include <sstream>
#include <stdexcept>

#include "torqued/client.hpp"
#include "torqued/unary_on_this_thread.hpp"
#include "torqued/v1/model.grpc.pb.h"

namespace torqued::load {
namespace {

std::chrono::system_clock::time_point in_seconds(double s) {
  return std::chrono::system_clock::now() +
         std::chrono::duration_cast<std::chrono::system_clock::duration>(
             std::chrono::duration<double>(s));
}

[[noreturn]] void fail(const std::string& what, const grpc::Status& status) {
  throw std::runtime_error(what + ": " + std::to_string(status.error_code()) + " " +
                           status.error_message());
}

v1::Model get_model(v1::ModelService::Stub& stub, const std::string& id, grpc::Status& status) {
  grpc::ClientContext context;
  context.set_deadline(in_seconds(30));
  v1::GetModelRequest request;
  request.set_model_id(id);
  v1::Model model;
  status = stub.GetModel(&context, request, &model);
  return model;
}

// Random states: angles and values in [-1, 1], unit quaternions for spherical and free-flyer
// joints.
class StateSource {
 public:
  StateSource(const v1::Model& model, unsigned seed) : model_(model), rng_(seed) {}

  void configurations(int states, google::protobuf::RepeatedField<double>* out) {
    add_random_configurations(model_, states, rng_, out);
  }

  void values(int count, google::protobuf::RepeatedField<double>* out) {
    for (int i = 0; i < count; ++i) out->Add(unit_(rng_));
  }

 private:
  const v1::Model& model_;
  std::mt19937 rng_;
  std::uniform_real_distribution<double> unit_{-1.0, 1.0};
};

const google::protobuf::ServiceDescriptor& dynamics_service() {
  return *v1::SessionRequest::descriptor()->file()->FindServiceByName("DynamicsService");
}

const google::protobuf::ServiceDescriptor& control_service() {
  return *v1::SolveRequest::descriptor()->file()->FindServiceByName("ControlService");
}

constexpr char kSolve[] = "Solve";
constexpr char kMpc[] = "Mpc";

// The field of SessionRequest that carries `method`'s request; null when there is none.
const google::protobuf::FieldDescriptor* session_field(
    const google::protobuf::MethodDescriptor& method) {
  const google::protobuf::Descriptor& message = *v1::SessionRequest::descriptor();
  for (int i = 0; i < message.field_count(); ++i) {
    if (message.field(i)->message_type() == method.input_type()) return message.field(i);
  }
  return nullptr;
}

// The method of DynamicsService named `rpc` when it is batched: a unary method whose request
// names a model and a batch size, and which a Session message can carry; null otherwise.
const google::protobuf::MethodDescriptor* batched_method(const std::string& rpc) {
  const google::protobuf::MethodDescriptor* method = dynamics_service().FindMethodByName(rpc);
  if (method == nullptr || method->client_streaming() || method->server_streaming() ||
      method->input_type()->FindFieldByName("model_id") == nullptr ||
      method->input_type()->FindFieldByName("batch_size") == nullptr ||
      session_field(*method) == nullptr) {
    return nullptr;
  }
  return method;
}

// What fill_by_names() cannot know about a method: the double fields it leaves empty, and what
// it sets after.
struct Specifics {
  std::set<std::string> left_empty;
  std::function<void(const v1::Model&, v1::SessionRequest&)> complete;
};

const Specifics* specifics(const std::string& rpc) {
  static const std::map<std::string, Specifics> by_method = {
      {"HybridDynamics",
       {{},
        [](const v1::Model& model, v1::SessionRequest& message) {
          for (int i = 0; i < model.nv(); ++i) {
            message.mutable_hybrid_dynamics()->add_inputs(i % 2 == 0 ? v1::DOF_INPUT_FORCE
                                                                     : v1::DOF_INPUT_ACCELERATION);
          }
        }}},
      // Derivatives of inverse dynamics: a given.
      {"Derivatives", {{"tau"}, nullptr}},
      // Forward mode: tau given.
      {"ConstrainedDynamics", {{"a"}, nullptr}},
  };
  const auto it = by_method.find(rpc);
  return it == by_method.end() ? nullptr : &it->second;
}

// The number of values per state that a field's `example_shape` option ("knots * nv") gives:
// nq, nv, numbers and the request's own integer fields, multiplied.
int shape_values(const v1::Model& model, const google::protobuf::Message& request,
                 const std::string& shape) {
  const google::protobuf::Descriptor& d = *request.GetDescriptor();
  std::istringstream factors(shape);
  std::string factor;
  int values = 1;
  while (factors >> factor) {
    if (factor == "*") continue;
    if (factor == "nq") {
      values *= model.nq();
    } else if (factor == "nv") {
      values *= model.nv();
    } else if (const google::protobuf::FieldDescriptor* f = d.FindFieldByName(factor)) {
      values *= static_cast<int>(request.GetReflection()->GetUInt32(request, f));
    } else {
      values *= std::stoi(factor);
    }
  }
  return values;
}

// Sets the request's scalars that carry an `example` option to their examples.
void set_examples(google::protobuf::Message& request) {
  using google::protobuf::FieldDescriptor;
  const google::protobuf::Descriptor& d = *request.GetDescriptor();
  const google::protobuf::Reflection& r = *request.GetReflection();
  for (int i = 0; i < d.field_count(); ++i) {
    const FieldDescriptor* f = d.field(i);
    if (f->is_repeated() || !f->options().HasExtension(v1::example)) continue;
    const double example = f->options().GetExtension(v1::example);
    if (f->cpp_type() == FieldDescriptor::CPPTYPE_DOUBLE) {
      r.SetDouble(&request, f, example);
    } else if (f->cpp_type() == FieldDescriptor::CPPTYPE_UINT32) {
      r.SetUInt32(&request, f, static_cast<std::uint32_t>(example));
    } else {
      throw std::logic_error(f->full_name() + ": an example of a type torqued-load cannot set");
    }
  }
}

// Sets the request's model and batch size and its scalars that carry an `example` option, then
// fills its repeated double fields, but those `left_empty`: q with random valid configurations,
// a field with an `example_shape` option with that many random numbers per state, and v, a, tau
// and u (the controls of every DOF) with nv per state. Its other fields stay empty.
void fill_by_names(const v1::Model& model, int batch, const std::set<std::string>& left_empty,
                   StateSource& states, google::protobuf::Message& request) {
  using google::protobuf::FieldDescriptor;
  const google::protobuf::Descriptor& d = *request.GetDescriptor();
  const google::protobuf::Reflection& r = *request.GetReflection();
  r.SetString(&request, d.FindFieldByName("model_id"), model.id());
  r.SetUInt32(&request, d.FindFieldByName("batch_size"), static_cast<std::uint32_t>(batch));
  set_examples(request);
  for (int i = 0; i < d.field_count(); ++i) {
    const FieldDescriptor* f = d.field(i);
    if (!f->is_repeated() || f->cpp_type() != FieldDescriptor::CPPTYPE_DOUBLE ||
        left_empty.count(f->name()) > 0) {
      continue;
    }
    google::protobuf::RepeatedField<double> values;
    if (f->name() == "q") {
      states.configurations(batch, &values);
    } else if (f->options().HasExtension(v1::example_shape)) {
      states.values(
          batch * shape_values(model, request, f->options().GetExtension(v1::example_shape)),
          &values);
    } else if (f->name() == "v" || f->name() == "a" || f->name() == "tau" || f->name() == "u") {
      states.values(batch * model.nv(), &values);
    } else {
      continue;
    }
    r.GetMutableRepeatedFieldRef<double>(&request, f).CopyFrom(values);
  }
}

// Appends the numbers of `message`'s repeated double fields, nested messages' included, to
// `echo`'s values.
void add_doubles(const google::protobuf::Message& message, v1::EchoRequest& echo) {
  const google::protobuf::Descriptor* d = message.GetDescriptor();
  const google::protobuf::Reflection* r = message.GetReflection();
  for (int i = 0; i < d->field_count(); ++i) {
    const google::protobuf::FieldDescriptor* f = d->field(i);
    if (f->is_repeated() && f->cpp_type() == google::protobuf::FieldDescriptor::CPPTYPE_DOUBLE) {
      for (double x : r->GetRepeatedFieldRef<double>(message, f)) echo.add_values(x);
    } else if (f->cpp_type() == google::protobuf::FieldDescriptor::CPPTYPE_MESSAGE) {
      if (f->is_repeated()) {
        for (int k = 0; k < r->FieldSize(message, f); ++k) {
          add_doubles(r->GetRepeatedMessage(message, f, k), echo);
        }
      } else if (r->HasField(message, f)) {
        add_doubles(r->GetMessage(message, f), echo);
      }
    }
  }
}

// The Echo request with the same payload as `request`: its model id as bytes and all its
// numbers (a Solve problem's cost terms' too).
v1::EchoRequest echo_of(const google::protobuf::Message& request) {
  v1::EchoRequest echo;
  const google::protobuf::FieldDescriptor* id =
      request.GetDescriptor()->FindFieldByName("model_id");
  if (id != nullptr) echo.set_payload(request.GetReflection()->GetString(request, id));
  add_doubles(request, echo);
  return echo;
}

// The doubles in `message`'s repeated double fields, nested messages included.
std::uint64_t count_doubles(const google::protobuf::Message& message) {
  const google::protobuf::Descriptor* d = message.GetDescriptor();
  const google::protobuf::Reflection* r = message.GetReflection();
  std::uint64_t count = 0;
  for (int i = 0; i < d->field_count(); ++i) {
    const google::protobuf::FieldDescriptor* f = d->field(i);
    if (f->cpp_type() == google::protobuf::FieldDescriptor::CPPTYPE_DOUBLE && f->is_repeated()) {
      count += static_cast<std::uint64_t>(r->FieldSize(message, f));
    } else if (f->cpp_type() == google::protobuf::FieldDescriptor::CPPTYPE_MESSAGE) {
      if (f->is_repeated()) {
        for (int k = 0; k < r->FieldSize(message, f); ++k) {
          count += count_doubles(r->GetRepeatedMessage(message, f, k));
        }
      } else if (r->HasField(message, f)) {
        count += count_doubles(r->GetMessage(message, f));
      }
    }
  }
  return count;
}

grpc::ByteBuffer serialize(const google::protobuf::Message& message) {
  grpc::ByteBuffer buffer;
  bool own = false;
  grpc::GenericSerialize<grpc::ProtoBufferWriter, google::protobuf::Message>(message, &buffer,
                                                                             &own);
  return buffer;
}

// Adds the Echo standing in for `request` (echo_of, answered with spec.echo_response_values
// numbers), as a unary request and as a Session message.
void add_echo(const google::protobuf::Message& request, const WorkloadSpec& spec, Workload& w) {
  v1::SessionRequest message;
  *message.mutable_echo() = echo_of(request);
  message.mutable_echo()->set_response_values(spec.echo_response_values);
  w.unary_requests.push_back(serialize(message.echo()));
  message.mutable_echo()->clear_payload();
  w.session_requests.push_back(std::move(message));
}

// Solve's built-in problem (make_workload) from a random start.
v1::SolveRequest built_in_problem(const v1::Model& model, StateSource& states) {
  v1::SolveRequest request;
  request.set_model_id(model.id());
  set_examples(request);
  states.configurations(1, request.mutable_q0());
  states.values(model.nv(), request.mutable_v0());
  const auto add_term = [](v1::CostTerm* term, const char* name, v1::ResidualType residual,
                           double weight) {
    term->set_name(name);
    term->mutable_residual()->set_type(residual);
    term->set_weight(weight);
  };
  add_term(request.add_running_costs(), "posture", v1::RESIDUAL_TYPE_STATE, 1.0);
  add_term(request.add_running_costs(), "effort", v1::RESIDUAL_TYPE_CONTROL, 1e-3);
  add_term(request.add_terminal_costs(), "rest", v1::RESIDUAL_TYPE_STATE, 100.0);
  return request;
}

// Solve's call, or an Mpc stream's first message: `spec`'s problem, or the built-in one from a
// random start per request of the pool (a problem from a file is the same at every call: one).
std::vector<v1::SolveRequest> control_problems(const v1::Model& model, const WorkloadSpec& spec) {
  StateSource states(model, spec.seed);
  std::vector<v1::SolveRequest> problems;
  const int count = spec.solve_request ? 1 : spec.pool;
  for (int k = 0; k < count; ++k) {
    problems.push_back(spec.solve_request ? *spec.solve_request : built_in_problem(model, states));
    problems.back().set_model_id(model.id());
  }
  return problems;
}

// An Mpc stream's tick after `problem`: the problem's start measured again, `spec`'s iterations.
v1::MpcRequest mpc_tick(const v1::Model& model, const v1::SolveRequest& problem,
                        const WorkloadSpec& spec) {
  v1::MpcRequest tick;
  *tick.mutable_q() = problem.q0();
  if (problem.v0().empty()) {
    tick.mutable_v()->Resize(model.nv(), 0.0);
  } else {
    *tick.mutable_v() = problem.v0();
  }
  if (spec.mpc_iterations > 0) tick.set_iterations(spec.mpc_iterations);
  tick.set_time(problem.dt() * spec.mpc_shift);
  return tick;
}

Workload make_control_workload(const v1::Model& model, const WorkloadSpec& spec) {
  if (spec.batch != 1) {
    throw std::runtime_error("--batch " + std::to_string(spec.batch) + ": " + spec.rpc +
                             " solves one problem per call (batch 1)");
  }
  if (spec.mpc_shift < 1) throw std::runtime_error("--mpc-shift must be at least 1");
  const bool mpc = spec.rpc == kMpc;
  const google::protobuf::MethodDescriptor& sent =
      spec.echo ? *dynamics_service().FindMethodByName("Echo")
                : *control_service().FindMethodByName(spec.rpc);
  Workload w;
  w.method = "/" + sent.service()->full_name() + "/" + sent.name();
  w.response_prototype =
      google::protobuf::MessageFactory::generated_factory()->GetPrototype(sent.output_type());
  for (v1::SolveRequest& problem : control_problems(model, spec)) {
    if (!mpc) {
      if (spec.echo) {
        add_echo(problem, spec, w);
      } else {
        w.unary_requests.push_back(serialize(problem));
      }
      continue;
    }
    w.tick_seconds = problem.dt() * spec.mpc_shift;
    v1::MpcRequest tick = mpc_tick(model, problem, spec);
    if (spec.echo) {
      add_echo(tick, spec, w);
      continue;
    }
    w.mpc_ticks.push_back(std::move(tick));
    *w.mpc_problems.emplace_back().mutable_problem() = std::move(problem);
  }
  w.request_bytes = w.unary_requests.empty() ? w.mpc_ticks.front().ByteSizeLong()
                                             : w.unary_requests.front().Length();
  return w;
}

// The numbers of a tick's answer on an Mpc stream of `real`'s first problem.
std::uint64_t mpc_tick_values(const std::shared_ptr<grpc::Channel>& channel, const Workload& real) {
  client::Client client(channel, {});
  try {
    client::Mpc stream =
        client.mpc(real.mpc_problems.front(), {std::chrono::nanoseconds(std::chrono::seconds(60))});
    const v1::MpcResponse answer = stream.tick(real.mpc_ticks.front());
    stream.finish();
    return count_doubles(answer);
  } catch (const client::Error& e) {
    throw std::runtime_error(std::string("Mpc (to size the Echo answers): ") + e.what());
  }
}

}  // namespace

void add_random_configurations(const v1::Model& model, int states, std::mt19937& rng,
                               google::protobuf::RepeatedField<double>* out) {
  std::uniform_real_distribution<double> unit(-1.0, 1.0);
  std::normal_distribution<double> normal;
  for (int s = 0; s < states; ++s) {
    const int first = out->size();
    for (int i = 0; i < model.nq(); ++i) out->Add(unit(rng));
    for (const v1::Joint& j : model.joints()) {
      int offset = -1;
      if (j.type() == v1::JOINT_TYPE_SPHERICAL) offset = j.idx_q();
      if (j.type() == v1::JOINT_TYPE_FREE_FLYER) offset = j.idx_q() + 3;
      if (offset < 0) continue;
      double x[4], norm = 0.0;
      for (double& c : x) {
        c = normal(rng);
        norm += c * c;
      }
      for (int k = 0; k < 4; ++k) out->Set(first + offset + k, x[k] / std::sqrt(norm));
    }
  }
}

const std::vector<std::string>& known_rpcs() {
  static const std::vector<std::string> names = [] {
    std::vector<std::string> batched;
    for (int m = 0; m < dynamics_service().method_count(); ++m) {
      const std::string& name = dynamics_service().method(m)->name();
      if (batched_method(name) != nullptr) batched.push_back(name);
    }
    batched.push_back(kSolve);
    batched.push_back(kMpc);
    return batched;
  }();
  return names;
}

v1::Model resolve_model(const std::shared_ptr<grpc::Channel>& channel, const ModelChoice& choice) {
  auto stub = v1::ModelService::NewStub(channel);
  grpc::Status status;
  if (!choice.urdf.empty()) {
    std::ifstream in(choice.urdf);
    if (!in) throw std::runtime_error("cannot read " + choice.urdf);
    std::ostringstream text;
    text << in.rdbuf();
    v1::RegisterModelRequest request;
    request.set_urdf(text.str());
    request.set_base(choice.floating_base ? v1::BASE_TYPE_FLOATING : v1::BASE_TYPE_FIXED);
    v1::RegisterModelResponse response;
    grpc::ClientContext context;
    context.set_deadline(in_seconds(60));
    status = stub->RegisterModel(&context, request, &response);
    if (!status.ok()) fail("RegisterModel " + choice.urdf, status);
    return response.model();
  }
  v1::Model model = get_model(*stub, choice.model, status);
  if (status.ok()) return model;
  if (status.error_code() != grpc::StatusCode::NOT_FOUND) fail("GetModel", status);
  // The name, looked up page by page (the largest pages, model.proto).
  v1::ListModelsRequest list_request;
  list_request.set_page_size(1000);
  do {
    grpc::ClientContext context;
    context.set_deadline(in_seconds(30));
    v1::ListModelsResponse list;
    status = stub->ListModels(&context, list_request, &list);
    if (!status.ok()) fail("ListModels", status);
    for (const v1::ModelSummary& summary : list.models()) {
      if (summary.name() == choice.model) {
        model = get_model(*stub, summary.id(), status);
        if (!status.ok()) fail("GetModel", status);
        return model;
      }
    }
    list_request.set_page_token(list.next_page_token());
  } while (!list_request.page_token().empty());
  throw std::runtime_error("no model with id or name \"" + choice.model + "\" on the server");
}

Workload make_workload(const v1::Model& model, const WorkloadSpec& spec) {
  if (spec.rpc == kSolve || spec.rpc == kMpc) return make_control_workload(model, spec);
  const google::protobuf::MethodDescriptor* method = batched_method(spec.rpc);
  if (method == nullptr) {
    std::string names;
    for (const std::string& name : known_rpcs()) names += (names.empty() ? "" : ", ") + name;
    throw std::runtime_error("--rpc " + spec.rpc + ": neither a batched method of " +
                             dynamics_service().full_name() + " nor Solve or Mpc (" + names + ")");
  }
  const google::protobuf::MethodDescriptor& sent =
      spec.echo ? *dynamics_service().FindMethodByName("Echo") : *method;
  Workload w;
  w.states_per_call = spec.batch;
  w.method = "/" + dynamics_service().full_name() + "/" + sent.name();
  w.response_prototype =
      google::protobuf::MessageFactory::generated_factory()->GetPrototype(sent.output_type());
  const google::protobuf::FieldDescriptor& field = *session_field(*method);
  const Specifics* specific = specifics(method->name());
  StateSource states(model, spec.seed);
  for (int k = 0; k < spec.pool; ++k) {
    v1::SessionRequest message;
    google::protobuf::Message* request = message.GetReflection()->MutableMessage(&message, &field);
    fill_by_names(model, spec.batch, specific ? specific->left_empty : std::set<std::string>{},
                  states, *request);
    if (specific && specific->complete) specific->complete(model, message);
    if (spec.echo) {
      add_echo(*request, spec, w);
    } else {
      w.unary_requests.push_back(serialize(*request));
      request->GetReflection()->ClearField(request,
                                           request->GetDescriptor()->FindFieldByName("model_id"));
      w.session_requests.push_back(std::move(message));
    }
  }
  w.request_bytes = w.unary_requests.front().Length();
  return w;
}

v1::SolveRequest read_solve_request(const std::string& path) {
  std::ifstream in(path);
  if (!in) throw std::runtime_error("cannot read " + path);
  std::ostringstream text;
  text << in.rdbuf();
  v1::SolveRequest request;
  const auto status = google::protobuf::util::JsonStringToMessage(text.str(), &request);
  if (!status.ok()) {
    throw std::runtime_error(
        path + ": not a torqued.v1.SolveRequest in protobuf JSON: " + status.ToString());
  }
  return request;
}

grpc::Status call_raw(const std::shared_ptr<grpc::Channel>& channel, const std::string& method,
                      const grpc::ByteBuffer& request, grpc::ByteBuffer* answer,
                      std::chrono::system_clock::time_point deadline) {
  grpc::GenericStub stub(channel);
  grpc::ClientContext context;
  context.set_deadline(deadline);
  return client::unary_on_this_thread(stub, &context, method, request, answer);
}

std::uint32_t real_response_values(const std::shared_ptr<grpc::Channel>& channel,
                                   const v1::Model& model, WorkloadSpec spec) {
  spec.echo = false;
  spec.pool = 1;
  Workload real = make_workload(model, spec);
  if (spec.rpc == kMpc) return static_cast<std::uint32_t>(mpc_tick_values(channel, real));
  grpc::ByteBuffer answer;
  const grpc::Status status =
      call_raw(channel, real.method, real.unary_requests.front(), &answer, in_seconds(60));
  if (!status.ok()) fail(spec.rpc + " (to size the Echo answers)", status);
  std::unique_ptr<google::protobuf::Message> response(real.response_prototype->New());
  if (!grpc::GenericDeserialize<grpc::ProtoBufferReader, google::protobuf::Message>(&answer,
                                                                                    response.get())
           .ok()) {
    throw std::runtime_error(spec.rpc + ": the answer does not parse");
  }
  return static_cast<std::uint32_t>(count_doubles(*response));
}

}  // namespace torqued::load
