// Tests clients/cpp/load/workload.cpp against a real torqued on loopback: models are found by
// name, the numbers of a real answer are counted, and --echo's requests carry the real call's
// payload and ask for an answer of the real call's size.
#include "clients/cpp/load/workload.hpp"

#include <grpcpp/support/proto_buffer_reader.h>
#include <gtest/gtest.h>

#include "tests/server/server_process.hpp"

namespace torqued::testing {
namespace {

class WorkloadTest : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    dir_ = new TempDir();
    server_ = new ServerProcess({dir_->path() / "data", repository_dir(), false, {}});
  }
  static void TearDownTestSuite() {
    delete server_;
    delete dir_;
  }
  static v1::Model puma() {
    return load::resolve_model(server_->channel(), {"puma560", "", false});
  }

  static inline TempDir* dir_ = nullptr;
  static inline ServerProcess* server_ = nullptr;
};

TEST_F(WorkloadTest, ModelsAreFoundByName) {
  const v1::Model model = puma();
  EXPECT_EQ(model.name(), "puma560");
  EXPECT_EQ(model.nv(), 6);
  EXPECT_THROW(load::resolve_model(server_->channel(), {"no_such_model", "", false}),
               std::runtime_error);
}

TEST_F(WorkloadTest, RealAnswersAreCounted) {
  const v1::Model model = puma();
  load::WorkloadSpec spec;
  spec.rpc = "InverseDynamics";
  spec.batch = 3;
  EXPECT_EQ(load::real_response_values(server_->channel(), model, spec), 3u * 6);  // τ
  spec.rpc = "MassMatrix";
  spec.batch = 2;
  EXPECT_EQ(load::real_response_values(server_->channel(), model, spec), 2u * 36);  // M
}

TEST_F(WorkloadTest, EchoCarriesTheRealPayloadAndAsksForTheRealAnswerSize) {
  const v1::Model model = puma();
  load::WorkloadSpec spec;
  spec.rpc = "InverseDynamics";
  spec.batch = 3;
  spec.pool = 2;
  spec.echo = true;
  spec.echo_response_values = load::real_response_values(server_->channel(), model, spec);
  const load::Workload workload = load::make_workload(model, spec);
  EXPECT_EQ(workload.method, "/torqued.v1.DynamicsService/Echo");
  ASSERT_EQ(workload.unary_requests.size(), 2u);

  grpc::ByteBuffer buffer = workload.unary_requests.front();
  v1::EchoRequest request;
  ASSERT_TRUE(
      (grpc::GenericDeserialize<grpc::ProtoBufferReader, v1::EchoRequest>(&buffer, &request)).ok());
  EXPECT_EQ(request.payload(), model.id());
  EXPECT_EQ(request.values_size(), 3 * (6 + 6 + 6));  // q, v and a of 3 states
  EXPECT_EQ(request.response_values(), 18u);

  grpc::ClientContext context;
  context.set_deadline(deadline_in(30));
  v1::EchoResponse response;
  ASSERT_TRUE(server_->dynamics()->Echo(&context, request, &response).ok());
  EXPECT_EQ(response.values_size(), 18);
  EXPECT_EQ(workload.session_requests.front().echo().response_values(), 18u);
}

}  // namespace
}  // namespace torqued::testing
