// Tests server/services/health_service.cpp and the start-up order of server.cpp: health says NOT_SERVING
// (and calls answer UNAVAILABLE) while the store loads, and SERVING only once every model is in.
#include <gtest/gtest.h>
#include <signal.h>

#include <fstream>

#include "server/models/model_from_request.hpp"
#include "server/models/model_id.hpp"
#include "tests/server/server_process.hpp"

namespace torqued::testing {
namespace {

using grpc::health::v1::HealthCheckResponse;

TEST(HealthTest, ServingOnlyAfterTheStoreIsLoaded) {
  TempDir dir;
  const auto data = dir.path() / "data";
  std::filesystem::create_directories(data);
  // A large store, written directly in the store's format, so loading takes a while.
  std::ifstream urdf(repository_dir() + "/double_pendulum.urdf");
  std::ostringstream text;
  text << urdf.rdbuf();
  constexpr int kModels = 2000;
  for (int i = 0; i < kModels; ++i) {
    v1::RegisterModelRequest request;
    request.set_name("pendulum_" + std::to_string(i));
    request.set_urdf(text.str());
    server::BuiltModel built;
    ASSERT_TRUE(server::build_from_request(request, server::model_limits(server::Config{}), built).ok());
    std::ofstream(data / (built.id + ".model"), std::ios::binary) << request.SerializeAsString();
  }
  auto server = ServerProcess::launch({data, ""});
  ASSERT_TRUE(server->wait_listening(60)) << server->log();
  auto health = server->health();
  std::vector<HealthCheckResponse::ServingStatus> seen;
  bool saw_unavailable_call = false;
  const auto end = deadline_in(120);
  while (std::chrono::system_clock::now() < end) {
    grpc::ClientContext context;
    context.set_deadline(deadline_in(10));
    HealthCheckResponse response;
    ASSERT_TRUE(health->Check(&context, {}, &response).ok());
    seen.push_back(response.status());
    if (response.status() == HealthCheckResponse::SERVING) break;
    grpc::ClientContext list_context;
    list_context.set_deadline(deadline_in(10));
    v1::ListModelsResponse list;
    const grpc::Status s = server->models()->ListModels(&list_context, {}, &list);
    // Loading may end between the two calls; before that, calls are UNAVAILABLE.
    if (!s.ok()) {
      EXPECT_EQ(s.error_code(), grpc::StatusCode::UNAVAILABLE);
      saw_unavailable_call = true;
    }
  }
  ASSERT_FALSE(seen.empty());
  ASSERT_EQ(seen.back(), HealthCheckResponse::SERVING) << server->log();
  for (std::size_t i = 0; i + 1 < seen.size(); ++i) {
    EXPECT_EQ(seen[i], HealthCheckResponse::NOT_SERVING);
  }
  EXPECT_GT(seen.size(), 1u) << "loading " << kModels << " models was never observed";
  EXPECT_TRUE(saw_unavailable_call);
  // SERVING means everything is loaded: every page of the listing counted.
  int listed = 0;
  v1::ListModelsRequest page;
  page.set_page_size(1000);
  do {
    grpc::ClientContext context;
    context.set_deadline(deadline_in(30));
    v1::ListModelsResponse list;
    ASSERT_TRUE(server->models()->ListModels(&context, page, &list).ok());
    listed += list.models_size();
    page.set_page_token(list.next_page_token());
  } while (!page.page_token().empty());
  EXPECT_EQ(listed, kModels);

  // Unknown services are NOT_FOUND; draining turns health to NOT_SERVING.
  grpc::ClientContext unknown;
  unknown.set_deadline(deadline_in(10));
  grpc::health::v1::HealthCheckRequest request;
  request.set_service("no.such.Service");
  HealthCheckResponse response;
  EXPECT_EQ(health->Check(&unknown, request, &response).error_code(), grpc::StatusCode::NOT_FOUND);
}

TEST(HealthTest, WatchStreamsStatusAndEndsOnShutdown) {
  TempDir dir;
  ServerProcess server({dir.path() / "data", ""});
  auto health = server.health();
  grpc::ClientContext context;
  context.set_deadline(deadline_in(120));
  auto reader = health->Watch(&context, {});
  HealthCheckResponse response;
  ASSERT_TRUE(reader->Read(&response));
  EXPECT_EQ(response.status(), HealthCheckResponse::SERVING);
  server.signal(SIGTERM);
  std::vector<HealthCheckResponse::ServingStatus> after;
  while (reader->Read(&response)) after.push_back(response.status());
  EXPECT_TRUE(reader->Finish().ok());
  ASSERT_FALSE(after.empty());
  EXPECT_EQ(after.back(), HealthCheckResponse::NOT_SERVING);
  EXPECT_NE(server.wait_exit(60), -1);
}

}  // namespace
}  // namespace torqued::testing
