// Server reflection (the gRPC Server Reflection Protocol, proto/grpc/reflection/): what grpcurl,
// grpcui, evans, Postman and grpc_reflection clients ask to learn the API without its .proto
// files. Served under both of the protocol's package names, grpc.reflection.v1 and v1alpha.
//
// torqued's own rather than gRPC's (the grpc++_reflection library), whose service is synchronous:
// a synchronous call cannot be asked whether it was cancelled from the interceptor that counts
// HTTP/2 resets (listener.hpp), and waits for one of gRPC's synchronous threads, so a client
// resetting reflection streams piled up calls past 1.2 GB; and it has no place for a token check.
// Here, on the callback API, reset streams are counted like every other call's, and with
// --token-file a stream needs a token, checked once when it opens (access_tokens.hpp).
//
// What is served: the files that declare the registered services and every file they import,
// from protobuf's generated pool, each found by its name or by any symbol it declares (service,
// method, message, enum, enum value, field, nested type); anything else is NOT_FOUND. A file's
// answer carries it and everything it imports, so that a client can build a descriptor pool from
// one answer. torqued's files declare no extensions: all_extension_numbers_of_type answers an
// empty list for a served message type, and file_containing_extension NOT_FOUND.
#pragma once

#include <google/protobuf/descriptor.h>
#include <grpcpp/grpcpp.h>

#include <cstddef>
#include <map>
#include <mutex>
#include <set>
#include <string>
#include <vector>

#include "grpc/reflection/v1/reflection.grpc.pb.h"
#include "grpc/reflection/v1alpha/reflection.grpc.pb.h"
#include "server/base/memory_budget.hpp"
#include "server/base/metrics.hpp"
#include "server/transport/access_tokens.hpp"

namespace torqued::server {

// The largest request a reflection stream reads. A request is a host name (at most 255 bytes)
// and one protobuf name (torqued's longest is under 100 bytes); a larger one ends its stream with
// RESOURCE_EXHAUSTED.
inline constexpr std::size_t kMaxReflectionRequestBytes = 4096;

class ReflectionStream;

class ReflectionService {
 public:
  // Serves `services` (fully-qualified names, each declared in protobuf's generated pool) and the
  // two reflection services; throws std::logic_error for a name the pool does not know.
  ReflectionService(const std::vector<std::string>& services, Metrics& metrics,
                    MemoryBudget& budget, const AccessControl& access);
  // gRPC's shutdown waited for every stream's OnDone, in its own uninstrumented code; taking the
  // lock orders the last stream's removal before the set's destruction where ThreadSanitizer
  // sees it.
  ~ReflectionService() { std::lock_guard lock(streams_mutex_); }

  // The services to register with the server's builder.
  grpc::Service& v1() { return v1_; }
  grpc::Service& v1alpha() { return v1alpha_; }

  // Ends every open stream with UNAVAILABLE (after the answer it is writing, if any) and every
  // stream opened from now on: the server is shutting down, and an idle stream would otherwise
  // hold the drain until its deadline.
  void drain();

 private:
  friend class ReflectionStream;

  // The ServerReflectionInfo method of one of the protocol's packages, raw (byte_buffers.hpp).
  template <typename Grpc>
  class Endpoint final
      : public Grpc::template WithRawCallbackMethod_ServerReflectionInfo<typename Grpc::Service> {
   public:
    explicit Endpoint(ReflectionService& reflection)
        : reflection_(reflection),
          method_(method_id(Grpc::service_full_name(), "ServerReflectionInfo")) {}
    grpc::ServerBidiReactor<grpc::ByteBuffer, grpc::ByteBuffer>* ServerReflectionInfo(
        grpc::CallbackServerContext* context) override {
      return reflection_.open(context, method_);
    }

   private:
    ReflectionService& reflection_;
    const MethodId method_;
  };

  struct ServedFile {
    std::string serialized;  // its google.protobuf.FileDescriptorProto
    // Its own serialized form first, then those of every file it imports, directly or not.
    std::vector<const std::string*> with_imports;
    std::size_t with_imports_bytes = 0;
  };

  grpc::ServerBidiReactor<grpc::ByteBuffer, grpc::ByteBuffer>* open(
      grpc::CallbackServerContext* context, MethodId method);

  // Encodes into `response` the answer to the request `request` holds (of `method`'s package);
  // the answer's memory is reserved in `memory`, or the answer is a RESOURCE_EXHAUSTED error
  // response. A request that is too large or does not decode is not answered: the stream ends
  // with the status returned.
  grpc::Status answer(MethodId method, const grpc::ByteBuffer& request, grpc::ByteBuffer* response,
                      Reservation& memory) const;
  template <typename Request, typename Response>
  grpc::Status answer(const grpc::ByteBuffer& request_bytes, grpc::ByteBuffer* response_bytes,
                      Reservation& memory) const;
  // Fills `files` (a FileDescriptorResponse) with `file` and its imports.
  template <typename FileDescriptorResponse>
  grpc::Status describe(const ServedFile& file, FileDescriptorResponse& files,
                        Reservation& memory) const;

  // Adds `file` and the files it imports to files_; returns its entry.
  const ServedFile& serve(const google::protobuf::FileDescriptor& file);
  // The served file of this name, or that declares `symbol`, or this message type; null when
  // there is none.
  const ServedFile* file_named(const std::string& name) const;
  const ServedFile* file_declaring(const std::string& symbol) const;
  const google::protobuf::Descriptor* message_type(const std::string& name) const;

  Metrics& metrics_;
  MemoryBudget& budget_;
  const AccessControl& access_;
  const google::protobuf::DescriptorPool& pool_;
  std::vector<std::string> services_;
  // By file name; set up by the constructor, read-only after.
  std::map<std::string, ServedFile> files_;
  Endpoint<grpc::reflection::v1::ServerReflection> v1_{*this};
  Endpoint<grpc::reflection::v1alpha::ServerReflection> v1alpha_{*this};

  std::mutex streams_mutex_;
  std::set<ReflectionStream*> streams_;
  bool draining_ = false;
};

}  // namespace torqued::server
