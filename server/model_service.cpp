// ModelService handlers (see model_service.hpp).
#include "server/model_service.hpp"

#include <spdlog/spdlog.h>

#include "server/layout.hpp"

namespace torqued::server {
namespace {

const grpc::Status kStarting(grpc::StatusCode::UNAVAILABLE,
                             "the server is still loading its models; retry shortly");

grpc::Status model_not_found(const std::string& id) {
  return {grpc::StatusCode::NOT_FOUND,
          "model_id: no model \"" + id + "\" on this server (register it first)"};
}

}  // namespace

ModelService::ModelService(Catalog& catalog, BatchRunner& runner, Metrics& metrics,
                           const std::atomic<bool>& ready)
    : catalog_(catalog), runner_(runner), metrics_(metrics), ready_(ready) {}

grpc::ServerUnaryReactor* ModelService::RegisterModel(grpc::CallbackServerContext* context,
                                                      const v1::RegisterModelRequest* request,
                                                      v1::RegisterModelResponse* response) {
  const Call call(context, Method::kRegisterModel, metrics_);
  if (!ready_.load(std::memory_order_acquire)) return call.finish(kStarting);
  runner_.run(call, [this, request, response] {
    RegisteredModelPtr model;
    bool created = false;
    grpc::Status status = catalog_.register_model(*request, model, created);
    if (!status.ok()) return status;
    if (created) {
      spdlog::info("registered model {} \"{}\" (nq {}, nv {})", model->id, model->layout.name(),
                   model->layout.nq(), model->layout.nv());
    }
    *response->mutable_model() = model->layout;
    response->set_created(created);
    return grpc::Status::OK;
  });
  return call.reactor();
}

grpc::ServerUnaryReactor* ModelService::GetModel(grpc::CallbackServerContext* context,
                                                 const v1::GetModelRequest* request,
                                                 v1::Model* response) {
  const Call call(context, Method::kGetModel, metrics_);
  if (!ready_.load(std::memory_order_acquire)) return call.finish(kStarting);
  const RegisteredModelPtr model = catalog_.find(request->model_id());
  if (!model) return call.finish(model_not_found(request->model_id()));
  *response = model->layout;
  return call.finish(grpc::Status::OK);
}

grpc::ServerUnaryReactor* ModelService::ListModels(grpc::CallbackServerContext* context,
                                                   const v1::ListModelsRequest*,
                                                   v1::ListModelsResponse* response) {
  const Call call(context, Method::kListModels, metrics_);
  if (!ready_.load(std::memory_order_acquire)) return call.finish(kStarting);
  for (const RegisteredModelPtr& model : catalog_.list()) {
    *response->add_models() = make_summary(model->layout);
  }
  return call.finish(grpc::Status::OK);
}

grpc::ServerUnaryReactor* ModelService::DeleteModel(grpc::CallbackServerContext* context,
                                                    const v1::DeleteModelRequest* request,
                                                    v1::DeleteModelResponse*) {
  const Call call(context, Method::kDeleteModel, metrics_);
  if (!ready_.load(std::memory_order_acquire)) return call.finish(kStarting);
  runner_.run(call, [this, request] {
    grpc::Status status = catalog_.delete_model(request->model_id());
    if (status.ok()) spdlog::info("deleted model {}", request->model_id());
    return status;
  });
  return call.reactor();
}

}  // namespace torqued::server
