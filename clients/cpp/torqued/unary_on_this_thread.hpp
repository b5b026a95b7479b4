// A unary call of a generic stub completed on the calling thread.
#pragma once

#include <grpcpp/grpcpp.h>

#include <string>

namespace torqued::client {

// Calls `method` on a completion queue of its own, drained by this thread: the response is
// parsed here and nothing of the call is left to gRPC's threads (which a callback's captures
// would be, in an order ThreadSanitizer cannot see). `Stub` is a grpc::TemplatedGenericStub.
template <typename Stub, typename Request, typename Response>
grpc::Status unary_on_this_thread(Stub& stub, grpc::ClientContext* context,
                                  const std::string& method, const Request& request,
                                  Response* response) {
  grpc::CompletionQueue queue;
  const auto call = stub.PrepareUnaryCall(context, method, request, &queue);
  call->StartCall();
  grpc::Status status;
  call->Finish(response, &status, nullptr);
  void* tag = nullptr;
  bool ok = false;
  queue.Next(&tag, &ok);
  queue.Shutdown();
  while (queue.Next(&tag, &ok)) {
  }
  return status;
}

}  // namespace torqued::client
