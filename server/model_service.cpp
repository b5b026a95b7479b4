// ModelService handlers (see model_service.hpp).
#include "server/model_service.hpp"

#include <spdlog/spdlog.h>

#include "server/layout.hpp"
#include "server/validation.hpp"

namespace torqued::server {
namespace {

const grpc::Status kStarting(grpc::StatusCode::UNAVAILABLE,
                             "the server is still loading its models; retry shortly");

grpc::Status model_not_found(const std::string& id) {
  return {grpc::StatusCode::NOT_FOUND,
          "model_id: no model " + quote_input(id) + " on this server (register it first)"};
}

}  // namespace

ModelService::ModelService(Catalog& catalog, BatchRunner& runner, Metrics& metrics,
                           const AccessControl& access, const std::atomic<bool>& ready,
                           std::int64_t max_model_bytes)
    : catalog_(catalog),
      runner_(runner),
      metrics_(metrics),
      access_(access),
      ready_(ready),
      max_model_bytes_(max_model_bytes) {}

grpc::Status ModelService::admit(const Call& call) const {
  if (grpc::Status s = access_.check(*call.context(), call.method()); !s.ok()) return s;
  if (!ready_.load(std::memory_order_acquire)) return kStarting;
  return grpc::Status::OK;
}

grpc::ServerUnaryReactor* ModelService::RegisterModel(grpc::CallbackServerContext* context,
                                                      const grpc::ByteBuffer* request_bytes,
                                                      grpc::ByteBuffer* response_bytes) {
  const Call call(context, Method::kRegisterModel, metrics_);
  if (grpc::Status s = admit(call); !s.ok()) return call.finish(s);
  const auto size = static_cast<std::int64_t>(request_bytes->Length());
  if (size > max_model_bytes_) {
    return call.finish({grpc::StatusCode::RESOURCE_EXHAUSTED,
                        "request: a registration of " + std::to_string(size) +
                            " bytes exceeds the server's limit of " +
                            std::to_string(max_model_bytes_) + " (--max-model-bytes)"});
  }
  if (grpc::Status s = check_encoded_request(*request_bytes, catalog_.limits()); !s.ok()) {
    return call.finish(s);
  }
  auto request = std::make_shared<v1::RegisterModelRequest>();
  if (grpc::Status s = decode(*request_bytes, "request", *request); !s.ok()) {
    return call.finish(s);
  }
  runner_.run(call, [this, request, response_bytes] {
    RegisteredModelPtr model;
    bool created = false;
    grpc::Status status = catalog_.register_model(*request, model, created);
    if (!status.ok()) return status;
    if (created) {
      spdlog::info("registered model {} \"{}\" (nq {}, nv {})", model->id, model->layout.name(),
                   model->layout.nq(), model->layout.nv());
    }
    v1::RegisterModelResponse response;
    *response.mutable_model() = model->layout;
    response.set_created(created);
    return encode(response, response_bytes);
  });
  return call.reactor();
}

grpc::ServerUnaryReactor* ModelService::GetModel(grpc::CallbackServerContext* context,
                                                 const grpc::ByteBuffer* request_bytes,
                                                 grpc::ByteBuffer* response_bytes) {
  const Call call(context, Method::kGetModel, metrics_);
  if (grpc::Status s = admit(call); !s.ok()) return call.finish(s);
  v1::GetModelRequest request;
  if (grpc::Status s = decode(*request_bytes, "request", request); !s.ok()) return call.finish(s);
  const RegisteredModelPtr model = catalog_.find(request.model_id());
  if (!model) return call.finish(model_not_found(request.model_id()));
  return call.finish(encode(model->layout, response_bytes));
}

grpc::ServerUnaryReactor* ModelService::ListModels(grpc::CallbackServerContext* context,
                                                   const grpc::ByteBuffer* request_bytes,
                                                   grpc::ByteBuffer* response_bytes) {
  const Call call(context, Method::kListModels, metrics_);
  if (grpc::Status s = admit(call); !s.ok()) return call.finish(s);
  v1::ListModelsRequest request;
  if (grpc::Status s = decode(*request_bytes, "request", request); !s.ok()) return call.finish(s);
  v1::ListModelsResponse response;
  for (const RegisteredModelPtr& model : catalog_.list()) {
    *response.add_models() = make_summary(model->layout);
  }
  return call.finish(encode(response, response_bytes));
}

grpc::ServerUnaryReactor* ModelService::DeleteModel(grpc::CallbackServerContext* context,
                                                    const grpc::ByteBuffer* request_bytes,
                                                    grpc::ByteBuffer* response_bytes) {
  const Call call(context, Method::kDeleteModel, metrics_);
  if (grpc::Status s = admit(call); !s.ok()) return call.finish(s);
  auto request = std::make_shared<v1::DeleteModelRequest>();
  if (grpc::Status s = decode(*request_bytes, "request", *request); !s.ok()) {
    return call.finish(s);
  }
  runner_.run(call, [this, request, response_bytes] {
    grpc::Status status = catalog_.delete_model(request->model_id());
    if (!status.ok()) return status;
    spdlog::info("deleted model {}", request->model_id());
    return encode(v1::DeleteModelResponse(), response_bytes);
  });
  return call.reactor();
}

}  // namespace torqued::server
