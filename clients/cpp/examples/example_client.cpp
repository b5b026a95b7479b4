// A first call to torqued: lists the models the server holds, then asks for the gravity torques
// of the bundled Stanford arm at one configuration. Usage:
//   torqued_example_client [host:port]     (default localhost:50051)
#include <grpcpp/grpcpp.h>

#include <iomanip>
#include <iostream>

#include "torqued/v1/dynamics.grpc.pb.h"
#include "torqued/v1/model.grpc.pb.h"

namespace v1 = torqued::v1;

int main(int argc, char** argv) {
  const std::string target = argc > 1 ? argv[1] : "localhost:50051";
  auto channel = grpc::CreateChannel(target, grpc::InsecureChannelCredentials());
  auto models = v1::ModelService::NewStub(channel);
  auto dynamics = v1::DynamicsService::NewStub(channel);

  grpc::ClientContext list_context;
  list_context.set_deadline(std::chrono::system_clock::now() + std::chrono::seconds(10));
  v1::ListModelsResponse list;
  if (grpc::Status s = models->ListModels(&list_context, {}, &list); !s.ok()) {
    std::cerr << "ListModels: " << s.error_message() << "\n";
    return 1;
  }
  std::string arm_id;
  std::cout << "models on " << target << ":\n";
  for (const v1::ModelSummary& m : list.models()) {
    std::cout << "  " << m.id() << "  " << std::left << std::setw(16) << m.name() << " nq "
              << m.nq() << ", nv " << m.nv() << "\n";
    if (m.name() == "stanford_arm") arm_id = m.id();
  }
  if (arm_id.empty()) {
    std::cerr << "no stanford_arm model on the server\n";
    return 1;
  }

  // Gravity torques at q = (0.3, -0.6, 0.5, 0.8, -0.4, 0.2) (q3 is the prismatic extension, m).
  v1::GravityRequest request;
  request.set_model_id(arm_id);
  for (double q : {0.3, -0.6, 0.5, 0.8, -0.4, 0.2}) request.add_q(q);
  grpc::ClientContext context;
  context.set_deadline(std::chrono::system_clock::now() + std::chrono::seconds(10));
  v1::GravityResponse gravity;
  if (grpc::Status s = dynamics->Gravity(&context, request, &gravity); !s.ok()) {
    std::cerr << "Gravity: " << s.error_message() << "\n";
    return 1;
  }
  std::cout << "stanford_arm gravity torques g(q) [N·m, N]:\n ";
  std::cout << std::setprecision(10);
  for (double t : gravity.tau()) std::cout << " " << t;
  std::cout << "\n";
  return 0;
}
