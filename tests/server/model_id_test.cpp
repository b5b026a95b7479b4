// Model ids (server/models/model_id.cpp) in process: the same robot must get the same id on every
// replica, whatever the build (portable or -march=native, with or without FMA) and whatever the
// CPU. The ids below were computed by a portable build; CI runs this test in the portable and in
// the native configuration (tests/run.sh), so a build whose model construction rounds
// differently fails here. The real robots (../shared/models) exercise the URDF reader, fixed-joint
// merging and free-flyers; the bundled repository adds DH tables and explicit specs with loops.
#include "server/models/model_id.hpp"

#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <map>
#include <sstream>
#include <string>

#include "server/models/bundled_models.hpp"
#include "server/models/model_from_request.hpp"

namespace torqued::server {
namespace {

std::string model_id_of(const v1::RegisterModelRequest& request) {
  BuiltModel built;
  const grpc::Status status = build_from_request(request, model_limits(Config{}), built);
  EXPECT_TRUE(status.ok()) << status.error_message();
  return built.id;
}

TEST(ModelIdTest, RealRobotsHaveTheIdsOfAPortableBuild) {
  const std::filesystem::path models = std::filesystem::path(TORQUED_SHARED_DIR) / "models";
  if (!std::filesystem::exists(models)) GTEST_SKIP() << "no " << models << " here";
  // file, floating base, id
  const std::vector<std::tuple<std::string, bool, std::string>> robots = {
      {"double_pendulum.urdf", false, "7fb99d72bbf52a21edb615be2accf7f4"},
      {"ur5.urdf", false, "26477ace4ad52c007c6a14714b326752"},
      {"panda.urdf", false, "baf00a4fd023b500f99f4e046e75932f"},
      {"solo12.urdf", false, "622eccf3af5f6d8dd3de9a35d7844e58"},
      {"solo12.urdf", true, "ca68f2c9e51964fb6e39515ab6199223"},
      {"hyq.urdf", true, "347f59ce9d721513efe56a110bc70568"},
      {"talos_reduced.urdf", false, "1b812fd998ee127992c41b2434ecf720"},
      {"talos_reduced.urdf", true, "5325466e864dd325ef1ee7c3c03cb886"}};
  for (const auto& [file, floating, id] : robots) {
    std::ifstream in(models / file);
    std::ostringstream urdf;
    urdf << in.rdbuf();
    v1::RegisterModelRequest request;
    request.set_urdf(urdf.str());
    request.set_base(floating ? v1::BASE_TYPE_FLOATING : v1::BASE_TYPE_FIXED);
    EXPECT_EQ(model_id_of(request), id) << file << (floating ? " floating" : " fixed");
  }
}

TEST(ModelIdTest, BundledModelsHaveTheIdsOfAPortableBuild) {
  const std::map<std::string, std::string> ids = {
      {"double_pendulum.urdf", "3b3b57d3eea9ce76805dfae9c476b431"},
      {"four_bar.txtpb", "46666f1c13fd15340baa65dd21793670"},
      {"puma560.dh.txtpb", "a0ef5da835ea910be5bf8a2ea0e14d7a"},
      {"quadruped.urdf", "eca783f531dfa819975ae7cc9250b9cc"},
      {"slider_crank.txtpb", "b3810ce7e9780729b7cd54558977634d"},
      {"stanford_arm.dh.txtpb", "29af925d5d532d925b0073c57eafccd8"}};
  std::vector<std::string> errors;
  const std::vector<BundledModel> entries = read_bundled_models(TORQUED_TEST_REPOSITORY, errors);
  EXPECT_TRUE(errors.empty()) << errors.front();
  ASSERT_EQ(entries.size(), ids.size());
  for (const BundledModel& entry : entries) {
    const std::string file = std::filesystem::path(entry.path).filename();
    EXPECT_EQ(model_id_of(entry.request), ids.at(file)) << file;
  }
}

}  // namespace
}  // namespace torqued::server
