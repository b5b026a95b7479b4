// server/models/model_from_request.cpp in process: a RegisterModelRequest's options reach the engine's build.
#include <gtest/gtest.h>

#include <fstream>
#include <sstream>
#include <string>

#include "server/models/model_from_request.hpp"

namespace torqued::server {
namespace {

// tests/engine/model/data/sensor_link.urdf: a sensor link whose tensor is negligibly indefinite.
v1::RegisterModelRequest sensor_link_request() {
  std::ifstream in(std::string(TORQUED_TEST_DATA_DIR) + "/sensor_link.urdf");
  std::ostringstream urdf;
  urdf << in.rdbuf();
  v1::RegisterModelRequest request;
  request.set_urdf(urdf.str());
  return request;
}

TEST(ModelSourceTest, StrictRequestsRefuseModelsWithWarnings) {
  v1::RegisterModelRequest request = sensor_link_request();
  BuiltModel lenient;
  ASSERT_TRUE(build_from_request(request, model_limits(Config{}), lenient).ok());
  ASSERT_EQ(lenient.model->warnings.size(), 1u);
  EXPECT_NE(lenient.model->warnings[0].find("link 'imu_link'"), std::string::npos);

  request.set_strict(true);
  BuiltModel strict;
  const grpc::Status status = build_from_request(request, model_limits(Config{}), strict);
  EXPECT_EQ(status.error_code(), grpc::StatusCode::INVALID_ARGUMENT);
  EXPECT_EQ(status.error_message().rfind("strict checking: link 'imu_link'", 0), 0u)
      << status.error_message();
}

}  // namespace
}  // namespace torqued::server
