// Holds the RPCs' one declaration to everything that follows from it: every method of
// torqued.v1.DynamicsService is a row of server/services/dynamics_rpcs.hpp (or Echo, or Session),
// with its request and response types; every request and response has its field in the Session
// stream's messages; every method the server serves is counted in its metrics. The bad-input
// table (bad_input_test.cpp) and the clients (client_test.cpp, the Python package's
// test_methods.py) check their own coverage against the same descriptors.
#include <gtest/gtest.h>

#include <iterator>
#include <set>
#include <string>
#include <vector>

#include "server/base/rpc_methods.hpp"
#include "server/services/dynamics_rpcs.hpp"
#include "tests/server/server_process.hpp"

namespace torqued::testing {
namespace {

using google::protobuf::MethodDescriptor;

std::set<std::string> rows() {
  std::set<std::string> names;
  server::for_each_batch_rpc([&](auto row) {
    using Row = decltype(row);
    const MethodDescriptor& method = server::method_taking(*Row::Request::descriptor());
    EXPECT_EQ(method.output_type(), Row::Response::descriptor()) << method.full_name();
    EXPECT_TRUE(names.insert(method.name()).second) << method.name() << " has two rows";
  });
  return names;
}

TEST(RpcTableTest, EveryMethodOfTheDynamicsServiceHasARowOrIsEchoOrSession) {
  const std::set<std::string> table = rows();
  const google::protobuf::ServiceDescriptor& service = server::dynamics_service_descriptor();
  for (int m = 0; m < service.method_count(); ++m) {
    const std::string name = service.method(m)->name();
    if (name == "Echo" || name == "Session") continue;
    EXPECT_EQ(table.count(name), 1u) << name << " has no row in server/services/dynamics_rpcs.hpp";
  }
  EXPECT_EQ(table.size() + 2, static_cast<std::size_t>(service.method_count()));
}

TEST(RpcTableTest, EveryUnaryMethodHasItsFieldsInTheSessionMessages) {
  const google::protobuf::ServiceDescriptor& service = server::dynamics_service_descriptor();
  for (int m = 0; m < service.method_count(); ++m) {
    const MethodDescriptor& method = *service.method(m);
    if (method.client_streaming()) continue;  // Session itself
    EXPECT_NO_THROW(server::field_of_type(*v1::SessionRequest::descriptor(), *method.input_type()))
        << method.name() << " cannot be sent on a Session stream";
    EXPECT_NO_THROW(
        server::field_of_type(*v1::SessionResponse::descriptor(), *method.output_type()))
        << method.name() << "'s answer cannot be sent on a Session stream";
  }
}

// Every method of every service the server registers (reflection's too) has its series, made at
// start with a count of zero: a method missing from rpc_methods() would have none.
TEST(RpcTableTest, EveryServedMethodIsCountedInTheMetrics) {
  TempDir dir;
  ServerProcess server({dir.path() / "data", repository_dir(), /*metrics=*/true});
  ASSERT_TRUE(server.running());
  const std::string page = http_get(server.metrics_port(), "/metrics");
  ASSERT_FALSE(page.empty());
  std::set<std::string> services;
  for (const server::RpcMethod& method : server::rpc_methods()) {
    services.insert(method.service);
    const std::string series = "grpc_server_started_total{grpc_method=\"" + method.name +
                               "\",grpc_service=\"" + method.service + "\"";
    EXPECT_NE(page.find(series), std::string::npos) << series;
  }
  EXPECT_EQ(services, (std::set<std::string>{
                          "torqued.v1.ModelService", "torqued.v1.DynamicsService",
                          "torqued.v1.ControlService", "grpc.reflection.v1.ServerReflection",
                          "grpc.reflection.v1alpha.ServerReflection"}));
}

// Each algorithm a row declares is one row's, under a label of its own, and has its compute series
// from the start.
TEST(RpcTableTest, EveryAlgorithmOfTheRowsHasOneRowAndItsComputeSeries) {
  std::set<std::string> labels;
  server::for_each_batch_rpc([&](auto row) {
    using Row = decltype(row);
    EXPECT_GT(std::size(Row::algorithms), 0u) << Row::Request::descriptor()->name();
    for (const server::Algorithm& algorithm : Row::algorithms) {
      EXPECT_TRUE(labels.insert(std::string(algorithm.name)).second)
          << algorithm.name << " is declared twice";
    }
  });
  const std::vector<std::string> names = server::algorithm_names();
  EXPECT_EQ(std::set<std::string>(names.begin(), names.end()), labels);

  TempDir dir;
  ServerProcess server({dir.path() / "data", repository_dir(), /*metrics=*/true});
  ASSERT_TRUE(server.running());
  const std::string page = http_get(server.metrics_port(), "/metrics");
  for (const std::string& label : labels) {
    const std::string series = "torqued_engine_compute_seconds_count{algorithm=\"" + label + "\"}";
    EXPECT_NE(page.find(series), std::string::npos) << series;
  }
}

}  // namespace
}  // namespace torqued::testing
