// Server reflection (see reflection_service.hpp).
#include "server/services/reflection_service.hpp"

#include <google/protobuf/descriptor.pb.h>
#include <spdlog/spdlog.h>

#include <stdexcept>

#include "server/services/request_checks.hpp"
#include "server/transport/byte_buffers.hpp"
#include "server/transport/reactor_order.hpp"
#include "server/transport/unary_call.hpp"

namespace torqued::server {

// One open ServerReflectionInfo stream: reads a request, writes its answer, then reads the next,
// so at most one answer is pending and a client that does not read holds one.
//
// Lifetime, as for a Session (session_stream.hpp): a read or write is never started after Finish,
// and Finish is the last thing a thread does with the stream. Only one operation is ever
// outstanding, so the reactions themselves never race; drain() comes from another thread, and
// finishes the stream itself only while a read is outstanding and started (a read started after
// Finish could reach a stream gRPC has destroyed). In every other state the thread that holds the
// stream sees draining_ and finishes it: the one starting a read once it has, or OnWriteDone.
class ReflectionStream final : public grpc::ServerBidiReactor<grpc::ByteBuffer, grpc::ByteBuffer> {
 public:
  // Starts reading, or ends the stream at once with `admission` when it is not OK.
  ReflectionStream(ReflectionService& service, grpc::CallbackServerContext* context,
                   MethodId method, const grpc::Status& admission)
      : service_(service), context_(context), method_(method), start_(service.metrics_.start()) {
    service.metrics_.rpc_started(method);
    if (!admission.ok()) {
      spdlog::warn("{} from {}: {} ({})", name(), context->peer(),
                   status_code_name(admission.error_code()), admission.error_message());
      finished_ = true;
      finish(admission);
      return;
    }
    read_outstanding_ = true;
    order_.before_operation();
    StartRead(&request_);
  }

  void OnReadDone(bool ok) override {
    order_.in_reaction();
    {
      std::lock_guard lock(mutex_);
      read_outstanding_ = false;
      if (finished_) return;  // drained while the read was outstanding
      // The client half-closed (its last request is answered), or the stream broke.
      finished_ = !ok;
    }
    if (!ok) return finish(context_->IsCancelled() ? cancelled() : grpc::Status::OK);
    const grpc::Status status = service_.answer(method_, request_, &response_, answer_memory_);
    request_.Clear();
    if (!status.ok()) {
      spdlog::warn("{} from {}: {} ({})", name(), context_->peer(),
                   status_code_name(status.error_code()), status.error_message());
      {
        std::lock_guard lock(mutex_);
        finished_ = true;
      }
      return finish(status);
    }
    order_.before_operation();
    StartWrite(&response_);
  }

  void OnWriteDone(bool ok) override {
    order_.in_reaction();
    response_.Clear();
    answer_memory_.reset();
    bool read_next = false;
    bool draining = false;
    {
      std::lock_guard lock(mutex_);
      draining = draining_;
      read_next = ok && !draining;
      finished_ = !read_next;
      read_outstanding_ = starting_read_ = read_next;
    }
    if (!ok) return finish(cancelled());
    if (draining) return finish(unavailable());
    order_.before_operation();
    StartRead(&request_);
    bool finish_now = false;
    {
      std::lock_guard lock(mutex_);
      starting_read_ = false;
      finish_now = draining_ && read_outstanding_ && !finished_;
      finished_ = finished_ || finish_now;
    }
    if (finish_now) finish(unavailable());
  }

  void OnDone() override {
    order_.in_reaction();
    {
      std::lock_guard lock(service_.streams_mutex_);
      service_.streams_.erase(this);
    }
    delete this;
  }

  void drain() {
    bool finish_now = false;
    {
      std::lock_guard lock(mutex_);
      draining_ = true;
      finish_now = !finished_ && read_outstanding_ && !starting_read_;
      finished_ = finished_ || finish_now;
    }
    if (finish_now) finish(unavailable());
  }

 private:
  static grpc::Status cancelled() {
    return {grpc::StatusCode::CANCELLED, "the stream was cancelled"};
  }
  static grpc::Status unavailable() {
    return {grpc::StatusCode::UNAVAILABLE,
            "the server is shutting down; open a new stream (to another replica)"};
  }

  std::string name() const { return rpc_method(method_).service + "/" + rpc_method(method_).name; }

  // Once per stream, after finished_ was set by this thread.
  void finish(const grpc::Status& full_status) {
    const grpc::Status status = bounded(full_status);
    service_.metrics_.rpc_handled(method_, status.error_code(), start_);
    if (spdlog::should_log(spdlog::level::debug)) {
      spdlog::debug("{} from {}: {}", name(), context_->peer(),
                    status_code_name(status.error_code()));
    }
    order_.before_operation();
    Finish(status);  // the stream may be deleted from here on
  }

  ReflectionService& service_;
  grpc::CallbackServerContext* const context_;
  const MethodId method_;
  const Clock::time_point start_;
  // Touched only by the thread whose operation completed (one is outstanding at a time).
  grpc::ByteBuffer request_;
  grpc::ByteBuffer response_;
  Reservation answer_memory_;

  std::mutex mutex_;
  bool read_outstanding_ = false;  // a read was decided and has not completed
  bool starting_read_ = false;     // ... and may not have been started yet
  bool draining_ = false;
  bool finished_ = false;
  ReactorOrder order_;
};

ReflectionService::ReflectionService(const std::vector<std::string>& services, Metrics& metrics,
                                     MemoryBudget& budget, const AccessControl& access)
    : metrics_(metrics),
      budget_(budget),
      access_(access),
      pool_(*google::protobuf::DescriptorPool::generated_pool()),
      services_(services) {
  services_.push_back(grpc::reflection::v1::ServerReflection::service_full_name());
  services_.push_back(grpc::reflection::v1alpha::ServerReflection::service_full_name());
  for (const std::string& name : services_) {
    const google::protobuf::ServiceDescriptor* service = pool_.FindServiceByName(name);
    if (service == nullptr) {
      throw std::logic_error("server reflection: service " + name +
                             " is not in protobuf's generated pool (its .pb.cc is not linked)");
    }
    serve(*service->file());
  }
}

const ReflectionService::ServedFile& ReflectionService::serve(
    const google::protobuf::FileDescriptor& file) {
  if (const auto known = files_.find(file.name()); known != files_.end()) return known->second;
  ServedFile served;
  google::protobuf::FileDescriptorProto proto;
  file.CopyTo(&proto);
  proto.SerializeToString(&served.serialized);
  ServedFile& entry = files_.emplace(file.name(), std::move(served)).first->second;
  std::set<const std::string*> included = {&entry.serialized};
  entry.with_imports.push_back(&entry.serialized);
  for (int i = 0; i < file.dependency_count(); ++i) {
    for (const std::string* imported : serve(*file.dependency(i)).with_imports) {
      if (included.insert(imported).second) entry.with_imports.push_back(imported);
    }
  }
  for (const std::string* serialized : entry.with_imports) {
    entry.with_imports_bytes += serialized->size();
  }
  return entry;
}

const ReflectionService::ServedFile* ReflectionService::file_named(const std::string& name) const {
  const auto found = files_.find(name);
  return found == files_.end() ? nullptr : &found->second;
}

const ReflectionService::ServedFile* ReflectionService::file_declaring(
    const std::string& symbol) const {
  const google::protobuf::FileDescriptor* file = pool_.FindFileContainingSymbol(symbol);
  return file == nullptr ? nullptr : file_named(file->name());
}

const google::protobuf::Descriptor* ReflectionService::message_type(const std::string& name) const {
  const google::protobuf::Descriptor* type = pool_.FindMessageTypeByName(name);
  return type != nullptr && file_named(type->file()->name()) != nullptr ? type : nullptr;
}

grpc::ServerBidiReactor<grpc::ByteBuffer, grpc::ByteBuffer>* ReflectionService::open(
    grpc::CallbackServerContext* context, MethodId method) {
  std::lock_guard lock(streams_mutex_);
  auto* stream = new ReflectionStream(*this, context, method, access_.check(*context, method));
  streams_.insert(stream);
  if (draining_) stream->drain();
  return stream;
}

void ReflectionService::drain() {
  std::lock_guard lock(streams_mutex_);
  draining_ = true;
  for (ReflectionStream* stream : streams_) stream->drain();
}

grpc::Status ReflectionService::answer(MethodId method, const grpc::ByteBuffer& request,
                                       grpc::ByteBuffer* response, Reservation& memory) const {
  if (const std::size_t bytes = request.Length(); bytes > kMaxReflectionRequestBytes) {
    return {grpc::StatusCode::RESOURCE_EXHAUSTED,
            "request: " + std::to_string(bytes) + " bytes exceeds the limit of " +
                std::to_string(kMaxReflectionRequestBytes) +
                " bytes of a reflection request (a host and one name)"};
  }
  if (rpc_method(method).service == grpc::reflection::v1::ServerReflection::service_full_name()) {
    return answer<grpc::reflection::v1::ServerReflectionRequest,
                  grpc::reflection::v1::ServerReflectionResponse>(request, response, memory);
  }
  return answer<grpc::reflection::v1alpha::ServerReflectionRequest,
                grpc::reflection::v1alpha::ServerReflectionResponse>(request, response, memory);
}

template <typename FileDescriptorResponse>
grpc::Status ReflectionService::describe(const ServedFile& file, FileDescriptorResponse& files,
                                         Reservation& memory) const {
  // The files are copied into the response message, then encoded: twice their size at once.
  if (const std::size_t bytes = 2 * file.with_imports_bytes; !memory.add(budget_, bytes)) {
    return {grpc::StatusCode::RESOURCE_EXHAUSTED, budget_.refusal("the reflection answer", bytes)};
  }
  for (const std::string* serialized : file.with_imports) {
    files.add_file_descriptor_proto(*serialized);
  }
  return grpc::Status::OK;
}

template <typename Request, typename Response>
grpc::Status ReflectionService::answer(const grpc::ByteBuffer& request_bytes,
                                       grpc::ByteBuffer* response_bytes,
                                       Reservation& memory) const {
  Request request;
  if (grpc::Status decoded = decode(request_bytes, "request", request); !decoded.ok()) {
    return decoded;
  }
  Response response;
  grpc::Status status;
  const auto not_found = [](const std::string& what) {
    return grpc::Status(grpc::StatusCode::NOT_FOUND, what);
  };
  // `file` and its imports, or NOT_FOUND saying `missing` when there is no such file.
  const auto describe_file = [&](const ServedFile* file, const std::string& missing) {
    return file != nullptr ? describe(*file, *response.mutable_file_descriptor_response(), memory)
                           : not_found(missing);
  };
  switch (request.message_request_case()) {
    case Request::kFileByFilename:
      status =
          describe_file(file_named(request.file_by_filename()),
                        "file_by_filename: no file " + quote_input(request.file_by_filename()));
      break;
    case Request::kFileContainingSymbol:
      status = describe_file(
          file_declaring(request.file_containing_symbol()),
          "file_containing_symbol: no symbol " + quote_input(request.file_containing_symbol()));
      break;
    case Request::kFileContainingExtension: {
      const auto& extension = request.file_containing_extension();
      const google::protobuf::Descriptor* type = message_type(extension.containing_type());
      if (type == nullptr) {
        status = not_found("file_containing_extension: no message type " +
                           quote_input(extension.containing_type()));
        break;
      }
      const google::protobuf::FieldDescriptor* field =
          pool_.FindExtensionByNumber(type, extension.extension_number());
      status =
          describe_file(field == nullptr ? nullptr : file_named(field->file()->name()),
                        "file_containing_extension: " + type->full_name() + " has no extension " +
                            std::to_string(extension.extension_number()));
      break;
    }
    case Request::kAllExtensionNumbersOfType: {
      const std::string& name = request.all_extension_numbers_of_type();
      const google::protobuf::Descriptor* type = message_type(name);
      if (type == nullptr) {
        status = not_found("all_extension_numbers_of_type: no message type " + quote_input(name));
        break;
      }
      auto& numbers = *response.mutable_all_extension_numbers_response();
      numbers.set_base_type_name(type->full_name());
      std::vector<const google::protobuf::FieldDescriptor*> extensions;
      pool_.FindAllExtensions(type, &extensions);
      for (const google::protobuf::FieldDescriptor* extension : extensions) {
        if (file_named(extension->file()->name()) != nullptr) {
          numbers.add_extension_number(extension->number());
        }
      }
      break;
    }
    case Request::kListServices:
      for (const std::string& name : services_) {
        response.mutable_list_services_response()->add_service()->set_name(name);
      }
      break;
    case Request::MESSAGE_REQUEST_NOT_SET:
      // Also a request kind of a later version of the protocol, whose field this one skips.
      status = {grpc::StatusCode::UNIMPLEMENTED,
                "message_request: none set that this server knows (file_by_filename, "
                "file_containing_symbol, file_containing_extension, "
                "all_extension_numbers_of_type, list_services)"};
      break;
  }
  if (!status.ok()) {
    memory.reset();
    const grpc::Status shown = bounded(status);
    auto& error = *response.mutable_error_response();
    error.set_error_code(shown.error_code());
    error.set_error_message(shown.error_message());
  }
  response.set_valid_host(request.host());
  *response.mutable_original_request() = std::move(request);
  return encode(response, response_bytes);
}

}  // namespace torqued::server
