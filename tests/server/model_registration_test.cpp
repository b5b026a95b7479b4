// Tests server/model_service.cpp, catalog.cpp and store.cpp over loopback: registration from
// URDF, DH and spec is idempotent (same id on any server), every acknowledged model survives a
// graceful restart and kill -9, and deletion is durable.
#include <gtest/gtest.h>
#include <signal.h>
#include <sys/wait.h>

#include <fstream>
#include <sstream>

#include "tests/server/server_process.hpp"

namespace torqued::testing {
namespace {

std::string read_text(const std::string& path) {
  std::ifstream in(path);
  std::ostringstream s;
  s << in.rdbuf();
  return s.str();
}

v1::RegisterModelRequest pendulum_urdf(const std::string& name) {
  v1::RegisterModelRequest request;
  request.set_name(name);
  request.set_urdf(read_text(repository_dir() + "/double_pendulum.urdf"));
  return request;
}

// A two-link arm given as an explicit spec, with a spherical wrist.
v1::RegisterModelRequest spec_arm() {
  v1::RegisterModelRequest request;
  request.set_name("spec_arm");
  v1::ModelSpec* spec = request.mutable_spec();
  for (const char* name : {"base", "upper", "wrist"}) {
    v1::LinkSpec* link = spec->add_links();
    link->set_name(name);
    link->mutable_inertial()->set_mass(1.5);
    link->mutable_inertial()->mutable_origin()->mutable_xyz()->set_z(0.1);
    link->mutable_inertial()->mutable_inertia()->set_ixx(0.01);
    link->mutable_inertial()->mutable_inertia()->set_iyy(0.01);
    link->mutable_inertial()->mutable_inertia()->set_izz(0.005);
  }
  v1::JointSpec* shoulder = spec->add_joints();
  shoulder->set_name("shoulder");
  shoulder->set_type(v1::JOINT_TYPE_REVOLUTE);
  shoulder->set_parent_link("base");
  shoulder->set_child_link("upper");
  shoulder->mutable_axis()->set_y(1.0);
  shoulder->mutable_limits()->set_lower(-2.0);
  shoulder->mutable_limits()->set_upper(2.0);
  v1::JointSpec* wrist = spec->add_joints();
  wrist->set_name("wrist");
  wrist->set_type(v1::JOINT_TYPE_SPHERICAL);
  wrist->set_parent_link("upper");
  wrist->set_child_link("wrist");
  wrist->mutable_origin()->mutable_xyz()->set_z(0.3);
  return request;
}

v1::RegisterModelRequest dh_arm() {
  v1::RegisterModelRequest request;
  request.set_name("dh_arm");
  request.set_base(v1::BASE_TYPE_FIXED);
  request.mutable_gravity()->set_z(-9.80665);
  v1::DhTable* dh = request.mutable_dh();
  dh->set_convention(v1::DH_CONVENTION_MODIFIED);
  for (int i = 0; i < 3; ++i) {
    v1::DhLink* link = dh->add_links();
    link->set_type(i == 1 ? v1::JOINT_TYPE_PRISMATIC : v1::JOINT_TYPE_REVOLUTE);
    link->set_a(0.1 * i);
    link->set_alpha(i == 0 ? 0.0 : 1.5707963267948966);
    link->set_mass(1.0 + i);
    link->mutable_com()->set_x(0.05);
    link->mutable_inertia()->set_ixx(0.01);
    link->mutable_inertia()->set_iyy(0.02);
    link->mutable_inertia()->set_izz(0.02);
  }
  return request;
}

grpc::Status register_model(const ServerProcess& server, const v1::RegisterModelRequest& request,
                            v1::RegisterModelResponse& response) {
  grpc::ClientContext context;
  context.set_deadline(deadline_in(60));
  return server.models()->RegisterModel(&context, request, &response);
}

std::vector<std::string> listed_ids(const ServerProcess& server) {
  grpc::ClientContext context;
  context.set_deadline(deadline_in(60));
  v1::ListModelsResponse response;
  EXPECT_TRUE(server.models()->ListModels(&context, {}, &response).ok());
  std::vector<std::string> ids;
  for (const auto& m : response.models()) ids.push_back(m.id());
  return ids;
}

bool has(const std::vector<std::string>& ids, const std::string& id) {
  return std::find(ids.begin(), ids.end(), id) != ids.end();
}

TEST(ModelRegistrationTest, RegisteringTwiceGivesTheSameIdOnAnyServer) {
  TempDir dir_a, dir_b;
  ServerProcess a({dir_a.path() / "data"});
  ServerProcess b({dir_b.path() / "data", ""});
  for (const auto& request : {pendulum_urdf("p"), spec_arm(), dh_arm()}) {
    v1::RegisterModelResponse first, second, other;
    ASSERT_TRUE(register_model(a, request, first).ok());
    ASSERT_TRUE(register_model(a, request, second).ok());
    ASSERT_TRUE(register_model(b, request, other).ok());
    EXPECT_TRUE(first.created());
    EXPECT_FALSE(second.created());
    EXPECT_TRUE(other.created());
    EXPECT_EQ(first.model().id(), second.model().id());
    EXPECT_EQ(first.model().id(), other.model().id());
    EXPECT_EQ(first.model().SerializeAsString(), other.model().SerializeAsString());
  }
  // A different name is a different model.
  v1::RegisterModelResponse p, q;
  ASSERT_TRUE(register_model(a, pendulum_urdf("p"), p).ok());
  ASSERT_TRUE(register_model(a, pendulum_urdf("q"), q).ok());
  EXPECT_NE(p.model().id(), q.model().id());
}

TEST(ModelRegistrationTest, LayoutReportsJointsOffsetsBodiesFramesAndWarnings) {
  TempDir dir;
  ServerProcess server({dir.path() / "data", ""});
  v1::RegisterModelResponse response;
  v1::RegisterModelRequest request = spec_arm();
  request.set_base(v1::BASE_TYPE_FLOATING);
  ASSERT_TRUE(register_model(server, request, response).ok());
  const v1::Model& m = response.model();
  EXPECT_EQ(m.name(), "spec_arm");
  EXPECT_EQ(m.base(), v1::BASE_TYPE_FLOATING);
  EXPECT_EQ(m.nq(), 7 + 1 + 4);
  EXPECT_EQ(m.nv(), 6 + 1 + 3);
  ASSERT_EQ(m.joints_size(), 3);
  EXPECT_EQ(m.joints(0).name(), "root_joint");
  EXPECT_EQ(m.joints(0).type(), v1::JOINT_TYPE_FREE_FLYER);
  EXPECT_EQ(m.joints(1).name(), "shoulder");
  EXPECT_EQ(m.joints(1).idx_q(), 7);
  EXPECT_EQ(m.joints(1).idx_v(), 6);
  EXPECT_DOUBLE_EQ(m.joints(1).limits().upper(), 2.0);
  EXPECT_EQ(m.joints(2).type(), v1::JOINT_TYPE_SPHERICAL);
  EXPECT_EQ(m.joints(2).idx_q(), 8);
  EXPECT_EQ(m.joints(2).nq(), 4);
  EXPECT_FALSE(m.joints(2).limits().has_upper());
  ASSERT_EQ(m.bodies_size(), 4);
  EXPECT_EQ(m.bodies(0).parent(), -1);
  EXPECT_EQ(m.bodies(3).name(), "wrist");
  EXPECT_DOUBLE_EQ(m.bodies(3).mass(), 1.5);
  EXPECT_GE(m.frames_size(), 3);
  EXPECT_EQ(m.id().size(), 32u);
}

TEST(ModelRegistrationTest, GracefulRestartKeepsEveryModel) {
  TempDir dir;
  std::vector<std::string> ids;
  {
    ServerProcess server({dir.path() / "data"});
    for (const auto& request : {pendulum_urdf("p1"), spec_arm(), dh_arm()}) {
      v1::RegisterModelResponse response;
      ASSERT_TRUE(register_model(server, request, response).ok());
      ids.push_back(response.model().id());
    }
    server.signal(SIGTERM);
    const int status = server.wait_exit(60);
    ASSERT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0) << server.log();
  }
  ServerProcess restarted({dir.path() / "data"});
  const auto listed = listed_ids(restarted);
  for (const auto& id : ids) EXPECT_TRUE(has(listed, id)) << id;
  EXPECT_EQ(listed.size(), ids.size() + 6);  // plus the bundled models
}

TEST(ModelRegistrationTest, KillNineLosesNoAcknowledgedModel) {
  TempDir dir;
  std::vector<std::string> ids;
  {
    ServerProcess server({dir.path() / "data", ""});
    for (int i = 0; i < 20; ++i) {
      v1::RegisterModelResponse response;
      ASSERT_TRUE(register_model(server, pendulum_urdf('k' + std::to_string(i)), response).ok());
      ids.push_back(response.model().id());
    }
    server.signal(SIGKILL);
    ASSERT_NE(server.wait_exit(60), -1);
  }
  ServerProcess restarted({dir.path() / "data", ""});
  const auto listed = listed_ids(restarted);
  EXPECT_EQ(listed.size(), ids.size());
  for (const auto& id : ids) EXPECT_TRUE(has(listed, id)) << id;
}

TEST(ModelRegistrationTest, DeleteIsDurableAndRepositoryModelsStay) {
  TempDir dir;
  std::string id;
  {
    ServerProcess server({dir.path() / "data"});
    v1::RegisterModelResponse response;
    ASSERT_TRUE(register_model(server, dh_arm(), response).ok());
    id = response.model().id();
    grpc::ClientContext context;
    context.set_deadline(deadline_in(60));
    v1::DeleteModelRequest request;
    request.set_model_id(id);
    v1::DeleteModelResponse deleted;
    ASSERT_TRUE(server.models()->DeleteModel(&context, request, &deleted).ok());

    grpc::ClientContext again;
    again.set_deadline(deadline_in(60));
    EXPECT_EQ(server.models()->DeleteModel(&again, request, &deleted).error_code(),
              grpc::StatusCode::NOT_FOUND);

    grpc::ClientContext get;
    get.set_deadline(deadline_in(60));
    v1::GetModelRequest get_request;
    get_request.set_model_id(id);
    v1::Model model;
    EXPECT_EQ(server.models()->GetModel(&get, get_request, &model).error_code(),
              grpc::StatusCode::NOT_FOUND);

    // Bundled models cannot be deleted through the API.
    const auto listed = listed_ids(server);
    ASSERT_FALSE(listed.empty());
    grpc::ClientContext bundled;
    bundled.set_deadline(deadline_in(60));
    request.set_model_id(listed.front());
    EXPECT_EQ(server.models()->DeleteModel(&bundled, request, &deleted).error_code(),
              grpc::StatusCode::FAILED_PRECONDITION);
    server.signal(SIGKILL);
    server.wait_exit(60);
  }
  ServerProcess restarted({dir.path() / "data"});
  EXPECT_FALSE(has(listed_ids(restarted), id));
}

TEST(ModelRegistrationTest, CorruptStoreFilesAreSkippedNotFatal) {
  TempDir dir;
  std::filesystem::create_directories(dir.path() / "data");
  std::ofstream(dir.path() / "data" / "0123456789abcdef0123456789abcdef.model") << "garbage";
  // A temporary file of Store::save (<id>.<pid>.<counter>.tmp) that a crash left behind.
  const auto left_over = dir.path() / "data" / "0123456789abcdef0123456789abcdef.4242.0.tmp";
  std::ofstream(left_over) << "partial";
  ServerProcess server({dir.path() / "data", ""});
  EXPECT_TRUE(server.running());
  EXPECT_TRUE(listed_ids(server).empty());
  EXPECT_FALSE(std::filesystem::exists(left_over));
}

}  // namespace
}  // namespace torqued::testing
