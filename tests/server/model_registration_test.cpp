// Tests server/services/model_service.cpp, catalog.cpp and store.cpp over loopback: registration
// from URDF, MJCF, SDF, DH and spec is idempotent (same id on any server), every acknowledged model
// survives a graceful restart and kill -9, deletion is durable, ListModels pages through the models
// within the message limit, and a stored model whose name is over --max-name-bytes is skipped at
// start with a warning.
#include <gtest/gtest.h>
#include <signal.h>
#include <sys/wait.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <map>
#include <sstream>
#include <string>
#include <thread>
#include <utility>
#include <vector>

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

grpc::Status list_page(const ServerProcess& server, const v1::ListModelsRequest& request,
                       v1::ListModelsResponse& response) {
  grpc::ClientContext context;
  context.set_deadline(deadline_in(60));
  return server.models()->ListModels(&context, request, &response);
}

// Every model, page by page; `pages` gets each page's size in bytes.
std::vector<v1::ModelSummary> list_all(const ServerProcess& server, int page_size,
                                       std::vector<std::size_t>* pages = nullptr) {
  std::vector<v1::ModelSummary> models;
  v1::ListModelsRequest request;
  request.set_page_size(page_size);
  do {
    v1::ListModelsResponse response;
    const grpc::Status status = list_page(server, request, response);
    EXPECT_TRUE(status.ok()) << status.error_message();
    if (!status.ok()) break;
    models.insert(models.end(), response.models().begin(), response.models().end());
    if (pages != nullptr) pages->push_back(response.ByteSizeLong());
    request.set_page_token(response.next_page_token());
  } while (!request.page_token().empty());
  return models;
}

std::vector<std::string> listed_ids(const ServerProcess& server) {
  std::vector<std::string> ids;
  for (const auto& m : list_all(server, 0)) ids.push_back(m.id());
  return ids;
}

bool has(const std::vector<std::string>& ids, const std::string& id) {
  return std::find(ids.begin(), ids.end(), id) != ids.end();
}

// A pendulum of `links` links in MJCF, a hinge each (MuJoCo's default angles in degrees), hanging
// from a base body that has a free joint when `floating`.
std::string mjcf_pendulum(int links, bool floating) {
  std::string bodies = "<body name='base'>";
  if (floating) bodies += "<freejoint/><inertial pos='0 0 0' mass='2' diaginertia='0.1 0.1 0.1'/>";
  std::string ends = "</body>";
  for (int i = 0; i < links; ++i) {
    bodies += "<body name='b" + std::to_string(i) + "' pos='0 0 -0.5' euler='0 0 90'>";
    bodies += "<joint name='j" + std::to_string(i) + "' axis='0 1 0'/>";
    bodies += "<inertial pos='0 0 -0.25' mass='1' diaginertia='0.02 0.02 0.001'/>";
    ends += "</body>";
  }
  return "<mujoco model='mjcf_pendulum'><worldbody>" + bodies + ends + "</worldbody></mujoco>";
}

// The same as SDF 1.9: a chain of `links` links under a base link that a joint attaches to the
// world (which welds it; without the joint the model would float).
std::string sdf_pendulum(int links) {
  std::ostringstream sdf;
  sdf << "<sdf version='1.9'><model name='sdf_pendulum'><link name='base'/><joint name='weld' "
      << "type='fixed'><parent>world</parent><child>base</child></joint>";
  for (int i = 0; i < links; ++i) {
    std::ostringstream parent_name;
    parent_name << (i == 0 ? "base" : "l");
    if (i > 0) parent_name << i - 1;
    const std::string parent = parent_name.str();
    sdf << "<link name='l" << i << "'><pose relative_to='j" << i << "'/><inertial><pose>0 0 -0.25 "
        << "0 0 0</pose><mass>1</mass><inertia><ixx>0.02</ixx><iyy>0.02</iyy><izz>0.001</izz>"
        << "</inertia></inertial></link><joint name='j" << i << "' type='revolute'><pose "
        << "relative_to='" << parent << "'>0 0 -0.5 0 0 0</pose><parent>" << parent
        << "</parent><child>l" << i << "</child><axis><xyz>0 1 0</xyz></axis></joint>";
  }
  sdf << "</model></sdf>";
  return sdf.str();
}

// MJCF and SDF over the API and from the repository (NAME.xml, NAME.sdf): the base an MJCF file
// gives its root (a free joint) unless the request says otherwise, and the same ids either way.
TEST(ModelRegistrationTest, MjcfAndSdfRegisterOverTheApiAndFromTheRepository) {
  TempDir dir;
  const std::filesystem::path repository = dir.path() / "repository";
  std::filesystem::create_directories(repository);
  std::ofstream(repository / "arm.xml") << mjcf_pendulum(2, true);
  std::ofstream(repository / "chain.sdf") << sdf_pendulum(3);
  ServerProcess server({dir.path() / "data", repository.string()});

  std::map<std::string, v1::ModelSummary> listed;
  for (const v1::ModelSummary& m : list_all(server, 0)) listed[m.name()] = m;
  ASSERT_TRUE(listed.contains("mjcf_pendulum") && listed.contains("sdf_pendulum"));
  EXPECT_EQ(listed["mjcf_pendulum"].nv(), 8);  // the free joint, then two hinges
  EXPECT_EQ(listed["sdf_pendulum"].nv(), 3);

  v1::RegisterModelRequest mjcf;
  mjcf.set_mjcf(mjcf_pendulum(2, true));
  v1::RegisterModelResponse from_file, welded, sdf;
  ASSERT_TRUE(register_model(server, mjcf, from_file).ok());
  EXPECT_FALSE(from_file.created());
  EXPECT_EQ(from_file.model().id(), listed["mjcf_pendulum"].id());
  EXPECT_EQ(from_file.model().base(), v1::BASE_TYPE_FLOATING);
  mjcf.set_base(v1::BASE_TYPE_FIXED);
  ASSERT_TRUE(register_model(server, mjcf, welded).ok());
  EXPECT_EQ(welded.model().nv(), 2);
  v1::RegisterModelRequest sdf_request;
  sdf_request.set_sdf(sdf_pendulum(3));
  ASSERT_TRUE(register_model(server, sdf_request, sdf).ok());
  EXPECT_EQ(sdf.model().id(), listed["sdf_pendulum"].id());
}

// libsdformat takes about 5.4 KB per unit of the work sdf.hpp counts, besides 3 MB for any
// document: an SDF registration reserves 6 KiB a unit and 4 MiB from the memory budget, and one
// that could never fit what calls may hold (half of --memory-budget-bytes, 32 MiB here) is
// RESOURCE_EXHAUSTED naming the flag, at once, before libsdformat reads anything.
TEST(ModelRegistrationTest, SdfRegistrationsReserveWhatLibsdformatTakes) {
  TempDir dir;
  ServerProcess server({dir.path() / "data", "", false, {"--memory-budget-bytes=67108864"}});
  v1::RegisterModelRequest small, large;
  small.set_sdf(sdf_pendulum(2));   // 11 MB
  large.set_sdf(sdf_pendulum(30));  // 58 MB
  v1::RegisterModelResponse response;
  const grpc::Status fits = register_model(server, small, response);
  EXPECT_TRUE(fits.ok()) << fits.error_message();
  const grpc::Status refused = register_model(server, large, response);
  EXPECT_EQ(refused.error_code(), grpc::StatusCode::RESOURCE_EXHAUSTED);
  EXPECT_NE(refused.error_message().find("sdf: reading the document"), std::string::npos)
      << refused.error_message();
  EXPECT_NE(refused.error_message().find("--memory-budget-bytes"), std::string::npos);
}

// SDF registrations whose readings fit the budget one at a time, not two, all succeed when sent
// at once: each waits its turn (2 of 3 were RESOURCE_EXHAUSTED at once, the budget being taken by
// the first).
TEST(ModelRegistrationTest, SdfRegistrationsWaitTheirTurnForTheBudget) {
  TempDir dir;
  // 80 MiB for calls: one reading of 58 MB fits, two do not.
  ServerProcess server({dir.path() / "data", "", false, {"--memory-budget-bytes=167772160"}});
  v1::RegisterModelRequest request;
  request.set_sdf(sdf_pendulum(30));
  std::vector<grpc::Status> statuses(3);
  std::vector<std::thread> clients;
  for (grpc::Status& status : statuses) {
    clients.emplace_back([&server, &request, &status] {
      v1::RegisterModelResponse response;
      status = register_model(server, request, response);
    });
  }
  for (std::thread& client : clients) client.join();
  for (const grpc::Status& status : statuses) EXPECT_TRUE(status.ok()) << status.error_message();
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
  // A temporary file of ModelStore::save (<id>.<pid>.<counter>.tmp) that a crash left behind.
  const auto left_over = dir.path() / "data" / "0123456789abcdef0123456789abcdef.4242.0.tmp";
  std::ofstream(left_over) << "partial";
  ServerProcess server({dir.path() / "data", ""});
  EXPECT_TRUE(server.running());
  EXPECT_TRUE(listed_ids(server).empty());
  EXPECT_FALSE(std::filesystem::exists(left_over));
}

// A DH arm named `name`, its registration at most a few hundred bytes besides the name.
v1::RegisterModelRequest named_arm(const std::string& name) {
  v1::RegisterModelRequest request = dh_arm();
  request.set_name(name);
  return request;
}

TEST(ModelRegistrationTest, ListModelsPagesInNameOrderAndTokensSurviveDeletion) {
  TempDir dir;
  ServerProcess server({dir.path() / "data", ""});
  std::vector<std::pair<std::string, std::string>> expected;  // name, id
  for (int i = 0; i < 25; ++i) {
    v1::RegisterModelResponse response;
    const std::string name = "arm_" + std::to_string((i * 7) % 25);  // out of order
    ASSERT_TRUE(register_model(server, named_arm(name), response).ok());
    expected.emplace_back(name, response.model().id());
  }
  std::sort(expected.begin(), expected.end());
  for (const int page_size : {0, 1, 7, 25, 1000}) {
    std::vector<std::size_t> pages;
    const std::vector<v1::ModelSummary> listed = list_all(server, page_size, &pages);
    ASSERT_EQ(listed.size(), expected.size()) << "page_size " << page_size;
    for (std::size_t i = 0; i < listed.size(); ++i) {
      EXPECT_EQ(listed[i].name(), expected[i].first);
      EXPECT_EQ(listed[i].id(), expected[i].second);
    }
    const std::size_t per_page = page_size == 0 ? 100 : static_cast<std::size_t>(page_size);
    EXPECT_EQ(pages.size(), (expected.size() + per_page - 1) / per_page) << page_size;
  }

  // A token goes on after the model it names, even once that model is deleted.
  v1::ListModelsRequest request;
  request.set_page_size(3);
  v1::ListModelsResponse first;
  ASSERT_TRUE(list_page(server, request, first).ok());
  ASSERT_EQ(first.models_size(), 3);
  grpc::ClientContext context;
  context.set_deadline(deadline_in(60));
  v1::DeleteModelRequest remove;
  remove.set_model_id(first.models(2).id());
  v1::DeleteModelResponse removed;
  ASSERT_TRUE(server.models()->DeleteModel(&context, remove, &removed).ok());
  request.set_page_token(first.next_page_token());
  v1::ListModelsResponse second;
  ASSERT_TRUE(list_page(server, request, second).ok());
  ASSERT_EQ(second.models_size(), 3);
  EXPECT_EQ(second.models(0).id(), expected[3].second);

  // Tokens the server did not make, and negative sizes, are refused.
  for (const std::string& token :
       {std::string("garbage"), std::string(33, 'a'), first.next_page_token() + "g"}) {
    request.set_page_token(token);
    v1::ListModelsResponse response;
    const grpc::Status status = list_page(server, request, response);
    EXPECT_EQ(status.error_code(), grpc::StatusCode::INVALID_ARGUMENT) << token;
    EXPECT_NE(status.error_message().find("page_token"), std::string::npos);
  }
  request.clear_page_token();
  request.set_page_size(-1);
  v1::ListModelsResponse response;
  const grpc::Status negative = list_page(server, request, response);
  EXPECT_EQ(negative.error_code(), grpc::StatusCode::INVALID_ARGUMENT);
  EXPECT_NE(negative.error_message().find("page_size: -1"), std::string::npos);
}

// Regression: 70 models with 4 MB names made every ListModels fail ("Sent message larger than
// max"). Names are bounded now, and a page stays under 64 KiB, the smallest --max-message-bytes:
// here at the largest --max-name-bytes, 16 KiB, and that smallest message limit.
TEST(ModelRegistrationTest, ListModelsPagesFitTheSmallestMessageLimit) {
  TempDir dir;
  ServerProcess server(
      {dir.path() / "data", "", false, {"--max-name-bytes=16384", "--max-message-bytes=65536"}});
  constexpr int kModels = 12;
  for (int i = 0; i < kModels; ++i) {
    v1::RegisterModelResponse response;
    const grpc::Status status = register_model(
        server, named_arm(std::string(16384 - 2, 'n') + std::to_string(10 + i)), response);
    ASSERT_TRUE(status.ok()) << status.error_message();
  }
  std::vector<std::size_t> pages;
  EXPECT_EQ(list_all(server, 1000, &pages).size(), static_cast<std::size_t>(kModels));
  EXPECT_GT(pages.size(), 1u);
  for (const std::size_t bytes : pages) EXPECT_LE(bytes, 65536u);
}

// A model stored by a server with a larger --max-name-bytes no longer builds under a smaller one:
// the next server skips it with a warning (its file stays) and lists the others.
TEST(ModelRegistrationTest, StoredModelsWithNamesOverTheLimitAreSkippedWithAWarning) {
  TempDir dir;
  std::string kept;
  {
    ServerProcess server({dir.path() / "data", "", false, {"--max-name-bytes=4096"}});
    v1::RegisterModelResponse response;
    ASSERT_TRUE(register_model(server, named_arm(std::string(4000, 'n')), response).ok());
    ASSERT_TRUE(register_model(server, named_arm("short"), response).ok());
    kept = response.model().id();
    server.signal(SIGTERM);
    ASSERT_NE(server.wait_exit(60), -1);
  }
  ServerProcess restarted({dir.path() / "data", ""});
  EXPECT_EQ(listed_ids(restarted), std::vector<std::string>{kept});
  const std::string log = restarted.log();
  EXPECT_NE(log.find("no longer builds, skipped"), std::string::npos) << log;
  EXPECT_NE(log.find("--max-name-bytes"), std::string::npos) << log;
}

}  // namespace
}  // namespace torqued::testing
