// ModelService handlers (see model_service.hpp).
#include "server/services/model_service.hpp"

#include <google/protobuf/io/coded_stream.h>
#include <spdlog/spdlog.h>

#include <algorithm>
#include <cstring>
#include <iterator>
#include <tuple>

#include "engine/io/sdf.hpp"
#include "server/models/model_layout.hpp"
#include "server/services/request_checks.hpp"

namespace torqued::server {
namespace {

const grpc::Status kStarting(grpc::StatusCode::UNAVAILABLE,
                             "the server is still loading its models; retry shortly");

grpc::Status model_not_found(const std::string& id) {
  return {grpc::StatusCode::NOT_FOUND,
          "model_id: no model " + quote_input(id) + " on this server (register it first)"};
}

// ListModels pages (model.proto): their default and largest number of models, and the bytes
// they stay under, the smallest --max-message-bytes (config.cpp).
constexpr int kDefaultPageSize = 100;
constexpr int kMaxPageSize = 1000;
constexpr std::size_t kMaxPageBytes = 64 << 10;

constexpr char kHexDigits[] = "0123456789abcdef";

// A page token names the last model of its page: its id (32 hex digits), then its name in hex, so
// that the listing can go on after it even once it is deleted, and the token is ASCII.
std::string page_token(const RegisteredModel& last) {
  std::string token = last.id;
  for (const char c : last.layout.name()) {
    const auto byte = static_cast<unsigned char>(c);
    token += kHexDigits[byte >> 4];
    token += kHexDigits[byte & 0xf];
  }
  return token;
}

// The id and name a page token holds; false when `token` is none.
bool read_page_token(const std::string& token, std::string& id, std::string& name) {
  constexpr std::size_t kIdDigits = 32;
  const auto digit = [](char c) -> int {
    const char* at = std::strchr(kHexDigits, c);
    return c != '\0' && at != nullptr ? static_cast<int>(at - kHexDigits) : -1;
  };
  if (token.size() < kIdDigits || (token.size() - kIdDigits) % 2 != 0) return false;
  if (!std::all_of(token.begin(), token.end(), [&](char c) { return digit(c) >= 0; })) {
    return false;
  }
  id = token.substr(0, kIdDigits);
  name.clear();
  for (std::size_t i = kIdDigits; i < token.size(); i += 2) {
    name += static_cast<char>(digit(token[i]) << 4 | digit(token[i + 1]));
  }
  return true;
}

// The bytes a length-delimited field of `length` bytes takes in a ListModelsResponse (field
// numbers below 16 take one byte of tag).
std::size_t field_bytes(std::size_t length) {
  return 1 + google::protobuf::io::CodedOutputStream::VarintSize64(length) + length;
}

}  // namespace

ModelService::ModelService(ModelCatalog& catalog, BatchRunner& runner, Executor& sdf_reads,
                           Metrics& metrics, MemoryBudget& budget, const AccessControl& access,
                           const std::atomic<bool>& ready, std::int64_t max_model_bytes)
    : catalog_(catalog),
      runner_(runner),
      sdf_reads_(sdf_reads),
      metrics_(metrics),
      budget_(budget),
      access_(access),
      ready_(ready),
      max_model_bytes_(max_model_bytes) {}

grpc::Status ModelService::admit(const UnaryCall& call) const {
  if (grpc::Status s = access_.check(*call.context(), call.method()); !s.ok()) return s;
  if (!ready_.load(std::memory_order_acquire)) return kStarting;
  return grpc::Status::OK;
}

grpc::ServerUnaryReactor* ModelService::RegisterModel(grpc::CallbackServerContext* context,
                                                      const grpc::ByteBuffer* request_bytes,
                                                      grpc::ByteBuffer* response_bytes) {
  static const MethodId kMethod = method_id("torqued.v1.ModelService", "RegisterModel");
  const UnaryCall call(context, kMethod, metrics_, &budget_);
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
  auto registration = [this, request, response_bytes] {
    RegisteredModelPtr model;
    bool created = false;
    std::vector<std::string> warnings;
    grpc::Status status = catalog_.register_model(*request, model, created, warnings);
    if (!status.ok()) return status;
    if (created) {
      spdlog::info("registered model {} \"{}\" (nq {}, nv {})", model->id, model->layout.name(),
                   model->layout.nq(), model->layout.nv());
    }
    v1::RegisterModelResponse response;
    *response.mutable_model() = model->layout;
    response.mutable_model()->mutable_warnings()->Assign(warnings.begin(), warnings.end());
    response.set_created(created);
    return encode(response, response_bytes);
  };
  if (!request->has_sdf()) {
    runner_.run(call, std::move(registration));
    return call.reactor();
  }
  // libsdformat's reading takes up to a few hundred MB, which no other limit counts: reserved
  // while it reads, once the document's turn has come.
  const std::size_t read_bytes = sdf_read_bytes(request->sdf());
  if (read_bytes > budget_.capacity()) {
    return call.finish({grpc::StatusCode::RESOURCE_EXHAUSTED,
                        budget_.refusal("sdf: reading the document", read_bytes)});
  }
  run_call_task(
      sdf_reads_, canonical_peer(context->peer()), call,
      [call, read_bytes, registration = std::move(registration)] {
        Reservation reading;
        if (grpc::Status s = call.reserve_in_turn(reading, read_bytes, "sdf: reading the document");
            !s.ok()) {
          return s;
        }
        return registration();
      });
  return call.reactor();
}

grpc::ServerUnaryReactor* ModelService::GetModel(grpc::CallbackServerContext* context,
                                                 const grpc::ByteBuffer* request_bytes,
                                                 grpc::ByteBuffer* response_bytes) {
  static const MethodId kMethod = method_id("torqued.v1.ModelService", "GetModel");
  const UnaryCall call(context, kMethod, metrics_);
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
  static const MethodId kMethod = method_id("torqued.v1.ModelService", "ListModels");
  const UnaryCall call(context, kMethod, metrics_);
  if (grpc::Status s = admit(call); !s.ok()) return call.finish(s);
  v1::ListModelsRequest request;
  if (grpc::Status s = decode(*request_bytes, "request", request); !s.ok()) return call.finish(s);
  if (request.page_size() < 0) {
    return call.finish({grpc::StatusCode::INVALID_ARGUMENT,
                        "page_size: " + std::to_string(request.page_size()) + " is negative"});
  }
  const int page_size =
      request.page_size() == 0 ? kDefaultPageSize : std::min(request.page_size(), kMaxPageSize);
  const std::vector<RegisteredModelPtr> models = catalog_.list();  // by name, then id
  auto next = models.begin();
  if (!request.page_token().empty()) {
    std::string id;
    std::string name;
    if (!read_page_token(request.page_token(), id, name)) {
      return call.finish(
          {grpc::StatusCode::INVALID_ARGUMENT, "page_token: not a next_page_token of ListModels"});
    }
    next = std::upper_bound(models.begin(), models.end(), std::tie(name, id),
                            [](const auto& last, const RegisteredModelPtr& model) {
                              return last < std::tie(model->layout.name(), model->id);
                            });
  }
  v1::ListModelsResponse response;
  std::size_t page_bytes = 0;
  for (; next != models.end() && response.models_size() < page_size; ++next) {
    v1::ModelSummary summary = make_summary((*next)->layout);
    const std::size_t bytes = field_bytes(summary.ByteSizeLong());
    // Room for this summary and the token that would name it; a page holds one at least.
    if (response.models_size() > 0 &&
        page_bytes + bytes + field_bytes(page_token(**next).size()) > kMaxPageBytes) {
      break;
    }
    page_bytes += bytes;
    *response.add_models() = std::move(summary);
  }
  if (next != models.end()) response.set_next_page_token(page_token(**std::prev(next)));
  return call.finish(encode(response, response_bytes));
}

grpc::ServerUnaryReactor* ModelService::DeleteModel(grpc::CallbackServerContext* context,
                                                    const grpc::ByteBuffer* request_bytes,
                                                    grpc::ByteBuffer* response_bytes) {
  static const MethodId kMethod = method_id("torqued.v1.ModelService", "DeleteModel");
  const UnaryCall call(context, kMethod, metrics_);
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
