// Model resolution and request pools for torqued-load (see workload.hpp).
#include "clients/cpp/load/workload.hpp"

#include <google/protobuf/reflection.h>
#include <grpcpp/generic/generic_stub.h>
#include <grpcpp/support/proto_buffer_reader.h>
#include <grpcpp/support/proto_buffer_writer.h>

#include <cmath>
#include <fstream>
#include <random>
#include <sstream>
#include <stdexcept>

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

// Fills the Session message's request of kind `rpc` with `batch` random states; returns the
// inner request, or null for an unknown rpc.
google::protobuf::Message* fill(const std::string& rpc, const v1::Model& model, int batch,
                                StateSource& states, v1::SessionRequest& message) {
  const int nv = model.nv();
  auto common = [&](auto* r) {
    r->set_model_id(model.id());
    r->set_batch_size(batch);
    states.configurations(batch, r->mutable_q());
    return r;
  };
  if (rpc == "InverseDynamics") {
    auto* r = common(message.mutable_inverse_dynamics());
    states.values(batch * nv, r->mutable_v());
    states.values(batch * nv, r->mutable_a());
    return r;
  }
  if (rpc == "ForwardDynamics") {
    auto* r = common(message.mutable_forward_dynamics());
    states.values(batch * nv, r->mutable_v());
    states.values(batch * nv, r->mutable_tau());
    return r;
  }
  if (rpc == "MassMatrix") return common(message.mutable_mass_matrix());
  if (rpc == "NonlinearEffects") {
    auto* r = common(message.mutable_nonlinear_effects());
    states.values(batch * nv, r->mutable_v());
    return r;
  }
  if (rpc == "Gravity") return common(message.mutable_gravity());
  if (rpc == "Kinematics") {
    auto* r = common(message.mutable_kinematics());
    states.values(batch * nv, r->mutable_v());
    return r;
  }
  if (rpc == "HybridDynamics") {
    auto* r = common(message.mutable_hybrid_dynamics());
    states.values(batch * nv, r->mutable_v());
    for (int i = 0; i < nv; ++i) {
      r->add_inputs(i % 2 == 0 ? v1::DOF_INPUT_FORCE : v1::DOF_INPUT_ACCELERATION);
    }
    states.values(batch * nv, r->mutable_a());
    states.values(batch * nv, r->mutable_tau());
    return r;
  }
  if (rpc == "FloatingBaseInverseDynamics") {
    auto* r = common(message.mutable_floating_base_inverse_dynamics());
    states.values(batch * nv, r->mutable_v());
    states.values(batch * nv, r->mutable_a());
    return r;
  }
  if (rpc == "Derivatives") {
    auto* r = common(message.mutable_derivatives());
    states.values(batch * nv, r->mutable_v());
    states.values(batch * nv, r->mutable_a());
    return r;
  }
  if (rpc == "CoriolisMatrix") {
    auto* r = common(message.mutable_coriolis_matrix());
    states.values(batch * nv, r->mutable_v());
    return r;
  }
  if (rpc == "Centroidal") {
    auto* r = common(message.mutable_centroidal());
    states.values(batch * nv, r->mutable_v());
    return r;
  }
  return nullptr;
}

// The Echo request with the same payload as `request`: its model id as bytes and all its
// numbers.
v1::EchoRequest echo_of(const google::protobuf::Message& request) {
  v1::EchoRequest echo;
  const google::protobuf::Descriptor* d = request.GetDescriptor();
  const google::protobuf::Reflection* r = request.GetReflection();
  for (int i = 0; i < d->field_count(); ++i) {
    const google::protobuf::FieldDescriptor* f = d->field(i);
    if (f->name() == "model_id") echo.set_payload(r->GetString(request, f));
    if (f->is_repeated() && f->cpp_type() == google::protobuf::FieldDescriptor::CPPTYPE_DOUBLE) {
      for (double x : r->GetRepeatedFieldRef<double>(request, f)) echo.add_values(x);
    }
  }
  return echo;
}

const google::protobuf::Message* response_prototype(const std::string& rpc) {
  const google::protobuf::Descriptor* service =
      v1::SessionResponse::descriptor();  // its oneof has one field per response type
  for (int i = 0; i < service->field_count(); ++i) {
    const google::protobuf::FieldDescriptor* f = service->field(i);
    if (f->message_type() != nullptr && f->message_type()->name() == rpc + "Response") {
      return google::protobuf::MessageFactory::generated_factory()->GetPrototype(f->message_type());
    }
  }
  return nullptr;
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
  static const std::vector<std::string> names = {
      "InverseDynamics", "ForwardDynamics", "MassMatrix",     "NonlinearEffects",
      "Gravity",         "Kinematics",      "HybridDynamics", "FloatingBaseInverseDynamics",
      "Derivatives",     "CoriolisMatrix",  "Centroidal"};
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
  Workload w;
  w.states_per_call = spec.batch;
  w.method = "/torqued.v1.DynamicsService/" + (spec.echo ? std::string("Echo") : spec.rpc);
  w.response_prototype = response_prototype(spec.echo ? "Echo" : spec.rpc);
  StateSource states(model, spec.seed);
  for (int k = 0; k < spec.pool; ++k) {
    v1::SessionRequest message;
    google::protobuf::Message* request = fill(spec.rpc, model, spec.batch, states, message);
    if (request == nullptr) throw std::runtime_error("unknown --rpc " + spec.rpc);
    if (spec.echo) {
      *message.mutable_echo() = echo_of(*request);
      message.mutable_echo()->set_response_values(spec.echo_response_values);
      w.unary_requests.push_back(serialize(message.echo()));
      message.mutable_echo()->clear_payload();
    } else {
      w.unary_requests.push_back(serialize(*request));
      request->GetReflection()->ClearField(request,
                                           request->GetDescriptor()->FindFieldByName("model_id"));
    }
    w.session_requests.push_back(std::move(message));
  }
  w.request_bytes = w.unary_requests.front().Length();
  return w;
}

grpc::Status call_raw(const std::shared_ptr<grpc::Channel>& channel, const std::string& method,
                      const grpc::ByteBuffer& request, grpc::ByteBuffer* answer,
                      std::chrono::system_clock::time_point deadline) {
  grpc::GenericStub stub(channel);
  grpc::CompletionQueue queue;
  grpc::ClientContext context;
  context.set_deadline(deadline);
  grpc::Status status;
  auto call = stub.PrepareUnaryCall(&context, method, request, &queue);
  call->StartCall();
  call->Finish(answer, &status, nullptr);
  void* tag = nullptr;
  bool ok = false;
  queue.Next(&tag, &ok);
  queue.Shutdown();
  while (queue.Next(&tag, &ok)) {
  }
  return status;
}

std::uint32_t real_response_values(const std::shared_ptr<grpc::Channel>& channel,
                                   const v1::Model& model, WorkloadSpec spec) {
  spec.echo = false;
  spec.pool = 1;
  Workload real = make_workload(model, spec);
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
