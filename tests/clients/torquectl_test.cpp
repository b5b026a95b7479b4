// Tests the torquectl binary end to end against a real torqued on loopback: registration of a
// URDF and a DH table, inverse dynamics from JSON and from CSV (with and without a header)
// printed byte for byte as --local prints it and with the engine's values, the exit codes of
// usage, input and RPC errors, a typed command for every unary method of the DynamicsService and
// the ControlService, `solve` on the example problem file, its model named by id or by name, and
// `call`: every method of the services, found by name in their descriptors, on protobuf JSON.
#include <google/protobuf/util/json_util.h>
#include <gtest/gtest.h>
#include <sys/wait.h>

#include <cctype>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <set>
#include <sstream>

#include "engine/algorithms/rnea.hpp"
#include "server/models/bundled_models.hpp"
#include "server/models/model_from_request.hpp"
#include "tests/server/server_process.hpp"
#include "torqued/client.hpp"

namespace torqued::testing {
namespace {

struct Outcome {
  int exit_code;
  std::string out;
  std::string err;
};

std::string read_text(const std::filesystem::path& path) {
  std::ifstream in(path);
  std::ostringstream s;
  s << in.rdbuf();
  return s.str();
}

class TorquectlTest : public ::testing::Test {
 protected:
  void SetUp() override {
    ServerProcess::Options options;
    options.data_dir = temp_.path() / "data";
    options.repository = (temp_.path() / "empty-repository").string();
    std::filesystem::create_directories(options.repository);
    server_ = std::make_unique<ServerProcess>(options);
  }

  // Runs torquectl with `args` (shell words), standard input from `input` if given.
  Outcome torquectl(const std::string& args, const std::string& input = "") {
    const std::filesystem::path in = temp_.path() / "stdin", out = temp_.path() / "stdout",
                                err = temp_.path() / "stderr";
    std::ofstream(in) << input;
    const std::string command = std::string("TORQUED_SERVER=") + server_->address() + " " +
                                TORQUECTL_BINARY + " " + args + " < " + in.string() + " > " +
                                out.string() + " 2> " + err.string();
    const int status = std::system(command.c_str());
    return {WIFEXITED(status) ? WEXITSTATUS(status) : -1, read_text(out), read_text(err)};
  }

  std::string write(const std::string& name, const std::string& text) {
    const std::filesystem::path path = temp_.path() / name;
    std::ofstream(path) << text;
    return path.string();
  }

  TempDir temp_;
  std::unique_ptr<ServerProcess> server_;
};

const std::string kUrdf = repository_dir() + "/quadruped.urdf";

// Two states of the quadruped (floating base, nq 19, nv 18) as JSON, one row per state.
std::string quadruped_states_json(const v1::Model& layout) {
  const std::vector<double> q = random_configurations(layout, 2, 7);
  const std::vector<double> v = random_values(36, 8), a = random_values(36, 9);
  auto rows = [](const std::vector<double>& flat, std::size_t width) {
    nlohmann::json out = nlohmann::json::array();
    for (std::size_t s = 0; s < flat.size() / width; ++s) {
      out.push_back(std::vector<double>(flat.begin() + s * width, flat.begin() + (s + 1) * width));
    }
    return out;
  };
  return nlohmann::json{{"q", rows(q, 19)}, {"v", rows(v, 18)}, {"a", rows(a, 18)}}.dump();
}

TEST_F(TorquectlTest, InverseDynamicsMatchesLocalAndTheEngine) {
  const Outcome registered = torquectl("register " + kUrdf);
  ASSERT_EQ(registered.exit_code, 0) << registered.err;
  const std::string id = registered.out.substr(0, registered.out.find('\n'));
  ASSERT_EQ(id.size(), 32u) << registered.out;

  const Outcome layout_json = torquectl("get " + id);
  ASSERT_EQ(layout_json.exit_code, 0) << layout_json.err;
  v1::RegisterModelRequest request;
  std::string error;
  ASSERT_TRUE(server::read_model_file(kUrdf, request, error)) << error;
  server::BuiltModel built;
  ASSERT_TRUE(
      server::build_from_request(request, server::model_limits(server::Config{}), built).ok());
  ASSERT_EQ(built.id, id);
  v1::Model layout;
  ASSERT_TRUE(google::protobuf::util::JsonStringToMessage(layout_json.out, &layout).ok());
  ASSERT_EQ(layout.nq(), 19);
  ASSERT_EQ(layout.nv(), 18);
  const std::string json_input = write("states.json", quadruped_states_json(layout));

  // JSON in, JSON and CSV out: the server's output and --local's are the same bytes.
  for (const std::string format : {"json", "csv"}) {
    const Outcome remote =
        torquectl("inverse-dynamics " + id + " --input " + json_input + " --format " + format);
    const Outcome local = torquectl("inverse-dynamics " + kUrdf + " --local --input " + json_input +
                                    " --format " + format);
    ASSERT_EQ(remote.exit_code, 0) << remote.err;
    ASSERT_EQ(local.exit_code, 0) << local.err;
    EXPECT_EQ(remote.out, local.out) << format;
  }

  // The printed numbers are the engine's, exactly (%.17g round-trips a double).
  const Outcome remote = torquectl("inverse-dynamics " + id + " --input " + json_input);
  const nlohmann::json result = nlohmann::json::parse(remote.out);
  const nlohmann::json input = nlohmann::json::parse(read_text(json_input));
  ASSERT_EQ(result["batch_size"], 2);
  Data data(*built.model);
  for (int s = 0; s < 2; ++s) {
    const auto vec = [&](const char* field) {
      const std::vector<double> x = input[field][s].get<std::vector<double>>();
      return Eigen::VectorXd(Eigen::Map<const Eigen::VectorXd>(x.data(), x.size()));
    };
    const Eigen::VectorXd want = rnea(*built.model, data, vec("q"), vec("v"), vec("a"));
    const std::vector<double> got = result["tau"][s].get<std::vector<double>>();
    ASSERT_EQ(got.size(), 18u);
    for (int k = 0; k < 18; ++k) EXPECT_EQ(got[k], want[k]) << "state " << s << " dof " << k;
  }

  // CSV in: the same states by joint name (columns shuffled: q last) and by position.
  const Outcome csv_out =
      torquectl("inverse-dynamics " + id + " --input " + json_input + " --format csv");
  std::vector<std::string> q_names, v_names;
  for (const v1::Joint& j : layout.joints()) {
    const int nq = j.nq(), nv = j.nv();
    for (int k = 0; k < nq; ++k)
      q_names.push_back(nq == 1 ? j.name() : j.name() + ":" + std::to_string(k));
    for (int k = 0; k < nv; ++k)
      v_names.push_back(nv == 1 ? j.name() : j.name() + ":" + std::to_string(k));
  }
  std::ostringstream by_name, by_position;
  for (const std::string& n : v_names) by_name << "v:" << n << ",";
  for (const std::string& n : v_names) by_name << "a:" << n << ",";
  for (std::size_t k = 0; k < q_names.size(); ++k) by_name << (k ? "," : "") << "q:" << q_names[k];
  by_name << "\n";
  for (int s = 0; s < 2; ++s) {
    std::ostringstream row_named, row_positional;
    row_named.precision(17);
    row_positional.precision(17);
    for (const char* f : {"v", "a"}) {
      for (const double x : input[f][s]) row_named << x << ",";
    }
    bool first = true;
    for (const double x : input["q"][s]) {
      row_named << (first ? "" : ",") << x;
      first = false;
    }
    first = true;
    for (const char* f : {"q", "v", "a"}) {
      for (const double x : input[f][s]) {
        row_positional << (first ? "" : ",") << x;
        first = false;
      }
    }
    by_name << row_named.str() << "\n";
    by_position << row_positional.str() << "\n";
  }
  for (const std::string& csv : {by_name.str(), by_position.str()}) {
    const Outcome remote_csv = torquectl("inverse-dynamics " + id + " --format csv", csv);
    const Outcome local_csv = torquectl("inverse-dynamics " + kUrdf + " --local --format csv", csv);
    ASSERT_EQ(remote_csv.exit_code, 0) << remote_csv.err;
    EXPECT_EQ(remote_csv.out, csv_out.out);
    EXPECT_EQ(local_csv.out, csv_out.out);
  }
}

TEST_F(TorquectlTest, ConstrainedDynamicsOfTheFourBarMatchesLocal) {
  const std::string four_bar = repository_dir() + "/four_bar.txtpb";
  const Outcome registered = torquectl("register " + four_bar);
  ASSERT_EQ(registered.exit_code, 0) << registered.err;
  const std::string id = registered.out.substr(0, registered.out.find('\n'));
  const std::string input =
      write("four_bar.json", R"({"q": [[0.3, 0.2, 0.1], [1.0, -0.5, 0.4]], "v": [[0, 0, 0],
        [0.5, -0.2, 0.1]], "tau": [[1, 0, 0], [0, 0, 0]], "a": [[2, 0, 0], [-1, 0, 0]]})");
  // The crank's pivot held where it stands, or anchored where it is (the origin), and the crank
  // turning about z in a frame turned about z: constraints the four-bar can meet.
  for (const std::string options :
       {" --constraints point:crank_joint --gains 4,2",
        " --constraints point:crank_joint@0/0/0 --gains 4,2",
        " --mode inverse --inputs aff --constraints revolute:crank_joint:world@0/0/0/0/0/0.1"}) {
    const Outcome remote = torquectl("constrained-dynamics " + id + " --input " + input + options);
    const Outcome local =
        torquectl("constrained-dynamics " + four_bar + " --local --input " + input + options);
    ASSERT_EQ(remote.exit_code, 0) << remote.err;
    ASSERT_EQ(local.exit_code, 0) << local.err;
    EXPECT_EQ(remote.out, local.out) << options;
    const nlohmann::json result = nlohmann::json::parse(remote.out);
    // The loop's 5 rows, then the call's 3 (point) or 5 (revolute).
    const std::size_t rows = options.find("point") != std::string::npos ? 8 : 10;
    EXPECT_EQ(result["multipliers"][1].size(), rows) << options;
    EXPECT_EQ(result.contains("tau"), options.find("inverse") != std::string::npos) << options;
  }
  // The pivot anchored 0.22 m from where it is: no motion meets it, and both refuse alike.
  const std::string unmet = " --constraints point:crank_joint@0.1/-0.2/0 --gains 4,2";
  const Outcome remote = torquectl("constrained-dynamics " + id + " --input " + input + unmet);
  const Outcome local =
      torquectl("constrained-dynamics " + four_bar + " --local --input " + input + unmet);
  EXPECT_EQ(remote.exit_code, 1);
  EXPECT_NE(remote.err.find("FAILED_PRECONDITION"), std::string::npos) << remote.err;
  EXPECT_NE(remote.err.find("--max-constraint-residual"), std::string::npos) << remote.err;
  EXPECT_EQ(local.exit_code, remote.exit_code);
  EXPECT_EQ(local.err, remote.err);
  const Outcome bad =
      torquectl("constrained-dynamics " + id + " --input " + input + " --constraints point:tibia");
  EXPECT_EQ(bad.exit_code, 1);
  EXPECT_NE(bad.err.find("tibia"), std::string::npos) << bad.err;
  for (const std::string constraints :
       {"hinge:crank", "point:crank_joint@1/2", "point:crank@x/0/0"}) {
    const Outcome usage = torquectl("constrained-dynamics " + id + " --input " + input +
                                    " --constraints " + constraints);
    EXPECT_EQ(usage.exit_code, 2) << constraints << ": " << usage.err;
  }
}

TEST_F(TorquectlTest, DhTableRegistersAndComputesLikeLocal) {
  const std::string dh = repository_dir() + "/puma560.dh.txtpb";
  const Outcome registered = torquectl("register --dh " + dh);
  ASSERT_EQ(registered.exit_code, 0) << registered.err;
  const std::string id = registered.out.substr(0, registered.out.find('\n'));
  const std::string states = "0.1,0.2,0.3,0.4,0.5,0.6\n-0.3,1.2,0.5,0,0.1,2\n";
  const Outcome remote = torquectl("gravity " + id + " --format csv", states);
  const Outcome local = torquectl("gravity " + dh + " --local --dh --format csv", states);
  ASSERT_EQ(remote.exit_code, 0) << remote.err;
  ASSERT_EQ(local.exit_code, 0) << local.err;
  EXPECT_EQ(remote.out, local.out);
  EXPECT_EQ(remote.out.substr(0, remote.out.find(',')), "tau:joint1");
  const Outcome listed = torquectl("models --format csv");
  EXPECT_NE(listed.out.find(id + ",puma560,BASE_TYPE_FIXED,6,6,6,MODEL_ORIGIN_REGISTERED"),
            std::string::npos)
      << listed.out;
  EXPECT_EQ(torquectl("delete " + id).exit_code, 0);
  EXPECT_EQ(torquectl("health").out, "SERVING\n");
}

// linearize on CSV: q, v and the controls of the named joints per line; the same numbers from
// the server and in process, fu's columns those joints' DOFs.
TEST_F(TorquectlTest, LinearizeReadsCsvAndMatchesLocal) {
  const std::string dh = repository_dir() + "/puma560.dh.txtpb";
  const Outcome registered = torquectl("register --dh " + dh);
  ASSERT_EQ(registered.exit_code, 0) << registered.err;
  const std::string id = registered.out.substr(0, registered.out.find('\n'));
  const std::string knots =
      "0.1,0.2,0.3,0.4,0.5,0.6,0,0.1,0,0.2,0,0.3,5,-2\n"
      "-0.3,1.2,0.5,0,0.1,2,0.5,0,0,0,0,0,1,1\n";
  const std::string options = " --dt 0.01 --integrator rk4 --actuation joint3,joint1";
  const Outcome remote = torquectl("linearize " + id + options, knots);
  const Outcome local = torquectl("linearize " + dh + " --local --dh" + options, knots);
  ASSERT_EQ(remote.exit_code, 0) << remote.err;
  ASSERT_EQ(local.exit_code, 0) << local.err;
  EXPECT_EQ(remote.out, local.out);
  const nlohmann::json result = nlohmann::json::parse(remote.out);
  ASSERT_EQ(result["fu"].size(), 2u);
  const Outcome csv = torquectl("linearize " + id + options + " --format csv", knots);
  ASSERT_EQ(csv.exit_code, 0) << csv.err;
  EXPECT_NE(csv.out.find("fu:v:joint6:joint1"), std::string::npos) << csv.out.substr(0, 400);
  const Outcome unknown = torquectl("linearize " + id + " --dt 0.01 --actuation joint9", knots);
  EXPECT_EQ(unknown.exit_code, 2);
  EXPECT_NE(unknown.err.find("no joint \"joint9\""), std::string::npos) << unknown.err;
  EXPECT_EQ(torquectl("linearize " + id, knots).exit_code, 2) << "--dt is required";
}

// rollout on JSON: each row a start and its K × nu controls; the same numbers from the server
// and in process, its first step linearize's, the frame's placement at every state.
TEST_F(TorquectlTest, RolloutReadsJsonAndTakesLinearizesSteps) {
  const std::string dh = repository_dir() + "/puma560.dh.txtpb";
  const Outcome registered = torquectl("register --dh " + dh);
  ASSERT_EQ(registered.exit_code, 0) << registered.err;
  const std::string id = registered.out.substr(0, registered.out.find('\n'));
  const std::string rollouts =
      R"({"q": [[0.1, 0.2, 0.3, 0.4, 0.5, 0.6], [-0.3, 1.2, 0.5, 0, 0.1, 2]],
          "v": [[0, 0.1, 0, 0.2, 0, 0.3], [0.5, 0, 0, 0, 0, 0]],
          "u": [[5, -2, 1, 1, 0, 3], [1, 1, 0, 0, -1, -1]]})";
  const std::string options =
      " --knots 3 --dt 0.01 --actuation joint3,joint1 --fx-fu --frames joint6 --jacobians";
  const Outcome remote = torquectl("rollout " + id + options, rollouts);
  const Outcome local = torquectl("rollout " + dh + " --local --dh" + options, rollouts);
  ASSERT_EQ(remote.exit_code, 0) << remote.err;
  ASSERT_EQ(local.exit_code, 0) << local.err;
  EXPECT_EQ(remote.out, local.out);
  const nlohmann::json result = nlohmann::json::parse(remote.out);
  ASSERT_EQ(result["q"].size(), 2u);
  ASSERT_EQ(result["q"][1].size(), 4u);
  EXPECT_EQ(result["u"][1][2], (std::vector<double>{-1, -1}));
  EXPECT_EQ(result["fx"][0].size(), 3u);
  EXPECT_EQ(result["frame_jacobians"][0].size(), 4u);

  const Outcome step = torquectl(
      "linearize " + id + " --dt 0.01 --actuation joint3,joint1",
      R"({"q": [[-0.3, 1.2, 0.5, 0, 0.1, 2]], "v": [[0.5, 0, 0, 0, 0, 0]], "u": [[1, 1]]})");
  ASSERT_EQ(step.exit_code, 0) << step.err;
  const nlohmann::json linearized = nlohmann::json::parse(step.out);
  EXPECT_EQ(result["q"][1][1], linearized["q_next"][0]);
  EXPECT_EQ(result["fu"][1][0], linearized["fu"][0]);

  const Outcome unknown = torquectl("rollout " + id + options, R"({"q": [[0]], "w": [[1]]})");
  EXPECT_EQ(unknown.exit_code, 3);
  EXPECT_NE(unknown.err.find("unknown field \"w\" (fields are q, v, u)"), std::string::npos)
      << unknown.err;
  EXPECT_EQ(torquectl("rollout " + id + " --dt 0.01", rollouts).exit_code, 2)
      << "--knots is required";
  // One file of states serves several commands: what another command reads is left unread.
  const Outcome shared = torquectl("gravity " + id, rollouts);
  EXPECT_EQ(shared.exit_code, 0) << shared.err;
}

// A contact schedule from the command line: the quadruped on four feet, on its FL-HR diagonal from
// knot 1, on four again from knot 2 (a touchdown of FR and HL, restitution 0.2), in process and
// on the server alike. λ, the impulses and the cones have a column per foot: 0 (null for the
// cones) where a knot's phase does not hold the foot.
TEST_F(TorquectlTest, LinearizeAndRolloutTakeAContactSchedule) {
  const Outcome registered = torquectl("register " + kUrdf + " --floating-base");
  ASSERT_EQ(registered.exit_code, 0) << registered.err;
  const std::string id = registered.out.substr(0, registered.out.find('\n'));
  // Three knots standing at rest, no torque.
  const std::string stand = "[0,0,0.33,0,0,0,1,0,0.6,-1.2,0,0.6,-1.2,0,0.6,-1.2,0,0.6,-1.2]";
  const auto zeros = [](int n) {
    std::string row = "[0";
    for (int i = 1; i < n; ++i) row += ",0";
    return row + "]";
  };
  const auto three = [](const std::string& row) { return "[" + row + "," + row + "," + row + "]"; };
  const std::string knots = "{\"q\": " + three(stand) + ", \"v\": " + three(zeros(18)) +
                            ", \"u\": " + three(zeros(12)) + "}";
  const std::string four = "point:FL_foot,point:FR_foot,point:HL_foot,point:HR_foot";
  const std::string options =
      " --dt 0.01 --actuation unactuated-root --gains 100,20 --phases \"0=" + four +
      ";1=point:FL_foot,point:HR_foot;2/0.2=" + four +
      "\" --friction-cone 0.7 --continuous-derivatives";
  const Outcome remote = torquectl("linearize " + id + options, knots);
  const Outcome local =
      torquectl("linearize " + kUrdf + " --local --floating-base" + options, knots);
  ASSERT_EQ(remote.exit_code, 0) << remote.err;
  ASSERT_EQ(local.exit_code, 0) << local.err;
  EXPECT_EQ(remote.out, local.out);
  const nlohmann::json result = nlohmann::json::parse(remote.out);
  ASSERT_EQ(result["multipliers"].size(), 3u);
  ASSERT_EQ(result["multipliers"][1].size(), 12u);
  EXPECT_EQ(result["multipliers"][1][3], 0.0) << "FR_foot is not held at knot 1";
  EXPECT_NE(result["multipliers"][1][0], 0.0) << "FL_foot is";
  ASSERT_EQ(result["friction_cones"][1].size(), 20u);
  EXPECT_TRUE(result["friction_cones"][1][5].is_null()) << "FR_foot's cone at knot 1";
  EXPECT_TRUE(result["friction_cones"][1][0].is_number());
  EXPECT_EQ(result["impulses"][0][0], 0.0);

  const Outcome bad =
      torquectl("linearize " + id + " --dt 0.01 --phases \"x=point:FL_foot\"", knots);
  EXPECT_EQ(bad.exit_code, 2);
  EXPECT_NE(bad.err.find("FIRST_KNOT[/RESTITUTION]"), std::string::npos) << bad.err;
  const Outcome refused = torquectl(
      "linearize " + id + " --dt 0.01 --actuation unactuated-root --phases \"1=" + four + "\"",
      knots);
  EXPECT_NE(refused.exit_code, 0);
  EXPECT_NE(refused.err.find("phases[0].first_knot"), std::string::npos) << refused.err;
}

TEST_F(TorquectlTest, ExitCodesSayWhatWentWrong) {
  // Usage errors: 2.
  EXPECT_EQ(torquectl("").exit_code, 2);
  EXPECT_EQ(torquectl("no-such-command").exit_code, 2);
  EXPECT_EQ(torquectl("gravity").exit_code, 2);
  EXPECT_EQ(torquectl("gravity x --no-such-option").exit_code, 2);
  EXPECT_EQ(torquectl("models --format xml").exit_code, 2);
  EXPECT_EQ(torquectl("models --deadline soon").exit_code, 2);
  const Outcome help = torquectl("inverse-dynamics --help");
  EXPECT_EQ(help.exit_code, 0);
  EXPECT_NE(help.out.find("usage: torquectl inverse-dynamics"), std::string::npos);

  // Input file errors: 3.
  const Outcome missing = torquectl("register /nonexistent/robot.urdf");
  EXPECT_EQ(missing.exit_code, 3);
  EXPECT_NE(missing.err.find("/nonexistent/robot.urdf"), std::string::npos) << missing.err;
  const Outcome registered = torquectl("register " + kUrdf);
  ASSERT_EQ(registered.exit_code, 0) << registered.err;
  const std::string id = registered.out.substr(0, registered.out.find('\n'));
  EXPECT_EQ(torquectl("gravity " + id, "{\"q\": [[1, 2]]}").exit_code, 3);
  EXPECT_EQ(torquectl("gravity " + id, "{\"q\": ").exit_code, 3);
  EXPECT_EQ(torquectl("gravity " + id, "q:nope\n1\n").exit_code, 3);
  EXPECT_EQ(torquectl("gravity " + id + " --input /nonexistent.json").exit_code, 3);

  // Server errors: 1, with the status code's name.
  const Outcome unknown = torquectl("gravity 00000000000000000000000000000000", "[{\"q\": [0]}]");
  EXPECT_EQ(unknown.exit_code, 1);
  EXPECT_NE(unknown.err.find("NOT_FOUND"), std::string::npos) << unknown.err;
  std::string q = "[{\"q\": [0, 0, 0, 0, 0, 0, 2";  // a quaternion of norm 2: INVALID_ARGUMENT
  for (int k = 7; k < 19; ++k) q += ", 0";
  const Outcome invalid = torquectl("gravity " + id, q + "]}]");
  EXPECT_EQ(invalid.exit_code, 1);
  EXPECT_NE(invalid.err.find("INVALID_ARGUMENT"), std::string::npos) << invalid.err;
}

// Replaces every `placeholder` in `text` with `value`.
std::string with(std::string text, const std::string& placeholder, const std::string& value) {
  for (std::size_t at = text.find(placeholder); at != std::string::npos;
       at = text.find(placeholder, at + value.size())) {
    text.replace(at, placeholder.size(), value);
  }
  return text;
}

// A minimal valid request of each unary method of the services, in protobuf JSON, on the double
// pendulum on a free-flyer (nq 9, nv 8): MODEL is its id, DOOMED a model to delete, URDF its
// file's text. A method missing here fails CallTakesEveryUnaryMethodOfTheServices.
const std::map<std::string, std::string>& call_requests() {
  const std::string q = R"("q": [0, 0, 1, 0, 0, 0, 1, 0.1, 0.2])";
  const std::string v = R"("v": [0.1, 0, 0, 0, 0, 0, 0.2, -0.1])";
  const std::string a = R"("a": [0, 0.5, 0, 0, 0, 0, 1, -1])";
  const std::string tau = R"("tau": [0, 0, 0, 0, 0, 0, 0.3, 0.1])";
  const std::string model = R"("model_id": "MODEL", )";
  const std::string contact = R"("contacts": [{"frame": "link2"}])";
  static const std::map<std::string, std::string> requests = {
      {"RegisterModel", R"({"name": "called_pendulum", "urdf": URDF})"},
      {"GetModel", R"({"model_id": "MODEL"})"},
      {"ListModels", "{}"},
      {"DeleteModel", R"({"model_id": "DOOMED"})"},
      {"InverseDynamics", "{" + model + q + ", " + v + ", " + a + "}"},
      {"ForwardDynamics", "{" + model + q + ", " + v + ", " + tau + "}"},
      {"MassMatrix", "{" + model + q + ", \"inverse\": true}"},
      {"HybridDynamics", "{" + model + q + ", " + v + ", " + a + ", " + tau +
                             R"(, "inputs": ["DOF_INPUT_FORCE", "DOF_INPUT_FORCE",
          "DOF_INPUT_FORCE", "DOF_INPUT_FORCE", "DOF_INPUT_FORCE", "DOF_INPUT_FORCE",
          "DOF_INPUT_ACCELERATION", "DOF_INPUT_FORCE"]})"},
      {"FloatingBaseInverseDynamics", "{" + model + q + ", " + v + ", " + a + "}"},
      {"ConstrainedDynamics",
       "{" + model + q + ", " + v + ", " + tau +
           R"(, "constraints": [{"type": "CONSTRAINT_TYPE_POINT", "frame1": {"frame": "link2"}}]})"},
      {"Derivatives", "{" + model + q + ", " + v + ", " + a + "}"},
      {"CoriolisMatrix", "{" + model + q + ", " + v + "}"},
      {"Centroidal", "{" + model + q + ", " + v + "}"},
      {"NonlinearEffects", "{" + model + q + ", " + v + "}"},
      {"Gravity", "{" + model + q + "}"},
      {"Kinematics", "{" + model + q + R"(, "frames": ["link2"], "jacobians": true})"},
      {"Echo", R"({"values": [1, 2.5], "payload": "aGk="})"},
      {"ContactDynamics", "{" + model + q + ", " + v + ", " + tau + ", " + contact + "}"},
      {"Impact", "{" + model + q + ", " + v + ", " + contact + R"(, "restitution": 0.5})"},
      {"Simulate", "{" + model + q + ", " + v + R"(, "steps": 3})"},
      {"Linearize", "{" + model + q + ", " + v +
                        R"(, "u": [0.3, 0.1], "dt": 0.01, "integrator": "INTEGRATOR_RK4",
          "actuation": {"kind": "ACTUATION_KIND_UNACTUATED_ROOT"}})"},
      {"Rollout", "{" + model + q + ", " + v +
                      R"(, "knots": 2, "u": [0.3, 0.1, 0.2, 0], "dt": 0.01, "jacobians": true,
          "actuation": {"kind": "ACTUATION_KIND_UNACTUATED_ROOT"}, "frames": ["link2"]})"},
      {"Solve", "{" + model + R"("q0": [0, 0, 1, 0, 0, 0, 1, 0.1, 0.2], "v0": [0, 0, 0, 0, 0, 0,
          0, 0], "knots": 5, "dt": 0.01, "actuation": {"kind": "ACTUATION_KIND_UNACTUATED_ROOT"},
          "running_costs": [{"residual": {"type": "RESIDUAL_TYPE_CONTROL"}}],
          "terminal_costs": [{"residual": {"type": "RESIDUAL_TYPE_STATE"}}]})"},
  };
  return requests;
}

const std::string kPendulum = repository_dir() + "/double_pendulum.urdf";

TEST_F(TorquectlTest, CallTakesEveryUnaryMethodOfTheServices) {
  const Outcome registered = torquectl("register " + kPendulum + " --floating-base");
  ASSERT_EQ(registered.exit_code, 0) << registered.err;
  const std::string id = registered.out.substr(0, registered.out.find('\n'));
  const Outcome doomed = torquectl("register " + kPendulum + " --name doomed");
  ASSERT_EQ(doomed.exit_code, 0) << doomed.err;
  const std::string doomed_id = doomed.out.substr(0, doomed.out.find('\n'));
  const std::string urdf = nlohmann::json(read_text(kPendulum)).dump();

  for (const google::protobuf::ServiceDescriptor* service : client::services()) {
    for (int m = 0; m < service->method_count(); ++m) {
      const google::protobuf::MethodDescriptor& method = *service->method(m);
      if (method.client_streaming() || method.server_streaming()) continue;
      const auto request = call_requests().find(method.name());
      if (request == call_requests().end()) {
        ADD_FAILURE() << method.full_name() << " has no request in call_requests(): add one";
        continue;
      }
      const std::string json =
          with(with(with(request->second, "MODEL", id), "DOOMED", doomed_id), "URDF", urdf);
      const Outcome called =
          torquectl("call " + method.name() + " --input " + write(method.name() + ".json", json));
      ASSERT_EQ(called.exit_code, 0) << method.name() << ": " << called.err;
      std::unique_ptr<google::protobuf::Message> response(
          google::protobuf::MessageFactory::generated_factory()
              ->GetPrototype(method.output_type())
              ->New());
      EXPECT_TRUE(google::protobuf::util::JsonStringToMessage(called.out, response.get()).ok())
          << method.name() << " printed " << called.out;
    }
  }
}

// "InverseDynamics" as a torquectl command: "inverse-dynamics".
std::string command_name(const std::string& method) {
  std::string name;
  for (const char c : method) {
    if (std::isupper(static_cast<unsigned char>(c)) && !name.empty()) name += '-';
    name += static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  }
  return name;
}

// torquectl's typed commands and their help are written by hand (clients/cpp/torquectl/main.cpp):
// there is one per unary method of the DynamicsService and the ControlService, named after it,
// with its help, and no other besides the model and health commands and call.
TEST_F(TorquectlTest, HasATypedCommandForEveryDynamicsAndControlMethod) {
  std::set<std::string> expected = {"register", "models", "get", "delete", "health", "call"};
  for (const google::protobuf::ServiceDescriptor* service :
       {v1::InverseDynamicsRequest::descriptor()->file()->FindServiceByName("DynamicsService"),
        v1::SolveRequest::descriptor()->file()->FindServiceByName("ControlService")}) {
    ASSERT_NE(service, nullptr);
    for (int m = 0; m < service->method_count(); ++m) {
      const google::protobuf::MethodDescriptor& method = *service->method(m);
      if (method.client_streaming() || method.server_streaming()) continue;
      const std::string name = command_name(method.name());
      expected.insert(name);
      const Outcome help = torquectl(name + " --help");
      EXPECT_EQ(help.exit_code, 0) << method.name() << ": " << help.err;
      EXPECT_EQ(help.out.rfind("usage: torquectl " + name + " ", 0), 0u)
          << method.name() << " has no command " << name << ": " << help.out;
    }
  }
  const Outcome help = torquectl("--help");
  ASSERT_EQ(help.exit_code, 0) << help.err;
  std::set<std::string> listed;
  std::istringstream lines(help.out.substr(help.out.find("commands:\n")));
  std::string line;
  std::getline(lines, line);
  while (std::getline(lines, line) && line.rfind("  ", 0) == 0) {
    listed.insert(line.substr(2, line.find(' ', 2) - 2));
  }
  EXPECT_EQ(listed, expected);
}

// The example problem of the docs: the bundled arm's reach (clients/cpp/examples), its model
// named by name. The repository's root is two levels above its model repository (deploy/models).
const std::string kReachProblem =
    (std::filesystem::path(repository_dir()).parent_path().parent_path() /
     "clients/cpp/examples/puma560_reach.json")
        .string();

// The value of the summary's line that starts with `label`; "" when there is none.
std::string summary_value(const std::string& summary, const std::string& label) {
  std::istringstream lines(summary);
  for (std::string line; std::getline(lines, line);) {
    if (line.rfind(label + "  ", 0) == 0) {
      return line.substr(line.find_first_not_of(' ', label.size()));
    }
  }
  return "";
}

// solve reads the example problem from its file or from standard input, its model named by name
// or by id alike, and prints a summary that agrees with the response --json prints; a name no
// model has is NOT_FOUND, one that several models have an input error.
TEST_F(TorquectlTest, SolveSummarizesTheExampleProblem) {
  const Outcome registered = torquectl("register --dh " + repository_dir() + "/puma560.dh.txtpb");
  ASSERT_EQ(registered.exit_code, 0) << registered.err;
  const std::string id = registered.out.substr(0, registered.out.find('\n'));

  const Outcome summary = torquectl("solve " + kReachProblem);
  ASSERT_EQ(summary.exit_code, 0) << summary.err;
  EXPECT_EQ(summary_value(summary.out, "model"), "puma560 (" + id + ")") << summary.out;
  EXPECT_EQ(summary_value(summary.out, "knots"), "40 x 0.02 s") << summary.out;
  EXPECT_EQ(summary_value(summary.out, "stop reason"), "converged") << summary.out;
  EXPECT_EQ(summary_value(summary.out, "feasible"), "yes") << summary.out;
  EXPECT_EQ(summary_value(summary.out, "tip").rfind("[0, 40)  ", 0), 0u) << summary.out;
  EXPECT_EQ(summary_value(summary.out, "rest").rfind("terminal  ", 0), 0u) << summary.out;

  const Outcome json = torquectl("solve " + kReachProblem + " --json");
  ASSERT_EQ(json.exit_code, 0) << json.err;
  v1::SolveResponse response;
  ASSERT_TRUE(google::protobuf::util::JsonStringToMessage(json.out, &response).ok()) << json.out;
  EXPECT_EQ(response.stop_reason(), v1::STOP_REASON_CONVERGED);
  EXPECT_EQ(response.q_size(), 41 * 6);
  EXPECT_EQ(response.u_size(), 40 * 6);
  ASSERT_EQ(response.cost_terms_size(), 5);
  EXPECT_EQ(response.cost_terms(3).name(), "tip_final");
  double sum = 0.0;
  for (const v1::CostValue& term : response.cost_terms()) sum += term.value();
  EXPECT_NEAR(sum, response.cost(), 1e-12 * response.cost());
  EXPECT_EQ(summary_value(summary.out, "iterations"), std::to_string(response.iterations_size()));
  char cost[32];
  std::snprintf(cost, sizeof(cost), "%.6g", response.cost());
  EXPECT_EQ(summary_value(summary.out, "cost"), cost);

  // From standard input, the model named by its id: the same solve (but for its time).
  nlohmann::json problem = nlohmann::json::parse(read_text(kReachProblem));
  problem["model_id"] = id;
  for (const std::string file : {"", " -"}) {
    const Outcome by_id = torquectl("solve" + file + " --format json", problem.dump());
    ASSERT_EQ(by_id.exit_code, 0) << by_id.err;
    nlohmann::json first = nlohmann::json::parse(json.out),
                   second = nlohmann::json::parse(by_id.out);
    first.erase("solve_seconds");
    second.erase("solve_seconds");
    EXPECT_EQ(first, second) << file;
  }

  problem["model_id"] = "puma600";
  const Outcome unknown = torquectl("solve", problem.dump());
  EXPECT_EQ(unknown.exit_code, 1);
  EXPECT_NE(unknown.err.find("NOT_FOUND: no model with id or name \"puma600\""), std::string::npos)
      << unknown.err;
  EXPECT_EQ(torquectl("solve " + kReachProblem + " --format csv").exit_code, 2);
  EXPECT_EQ(torquectl("solve", R"({"model_id": )").exit_code, 3);
  EXPECT_EQ(torquectl("solve", R"({"knots": 4})").exit_code, 3) << "no model_id";
  const Outcome namesake = torquectl("register " + kPendulum + " --name puma560");
  ASSERT_EQ(namesake.exit_code, 0) << namesake.err;
  const Outcome ambiguous = torquectl("solve " + kReachProblem);
  EXPECT_EQ(ambiguous.exit_code, 3);
  EXPECT_NE(ambiguous.err.find("2 models have this name"), std::string::npos) << ambiguous.err;
}

// What call prints is the typed commands' numbers, and --local's; Session takes a list.
TEST_F(TorquectlTest, CallPrintsWhatTheTypedCommandsPrint) {
  const Outcome registered = torquectl("register " + kPendulum + " --floating-base");
  ASSERT_EQ(registered.exit_code, 0) << registered.err;
  const std::string id = registered.out.substr(0, registered.out.find('\n'));
  const std::string states = R"("q": [[0, 0, 1, 0, 0, 0, 1, 0.1, 0.2], [1, 2, 3, 0, 0.6, 0, 0.8,
    -1, 2]], "v": [[0.1, 0, 0, 0, 0, 0, 0.2, -0.1], [1, 2, 3, 4, 5, 6, 7, 8]], "a": [[0, 0.5, 0,
    0, 0, 0, 1, -1], [-1, -2, -3, -4, -5, -6, -7, -8]])";
  const Outcome typed = torquectl("inverse-dynamics " + id, "{" + states + "}");
  ASSERT_EQ(typed.exit_code, 0) << typed.err;
  const nlohmann::json typed_tau = nlohmann::json::parse(typed.out)["tau"];
  ASSERT_EQ(typed_tau.size(), 2u);
  std::vector<double> expected;
  for (const auto& row : typed_tau) {
    for (const double x : row) expected.push_back(x);
  }

  // Flat arrays, as the proto has them; the id from the command line.
  const nlohmann::json rows = nlohmann::json::parse("{" + states + "}");
  nlohmann::json flat = {{"batch_size", 2}};
  for (const char* field : {"q", "v", "a"}) {
    for (const auto& row : rows[field]) {
      for (const double x : row) flat[field].push_back(x);
    }
  }
  const Outcome remote = torquectl("call InverseDynamics " + id, flat.dump());
  const Outcome local =
      torquectl("call InverseDynamics " + kPendulum + " --local --floating-base", flat.dump());
  ASSERT_EQ(remote.exit_code, 0) << remote.err;
  ASSERT_EQ(local.exit_code, 0) << local.err;
  EXPECT_EQ(remote.out, local.out);
  const nlohmann::json answer = nlohmann::json::parse(remote.out);
  EXPECT_EQ(answer["batch_size"], 2);
  EXPECT_EQ(answer["tau"].get<std::vector<double>>(), expected);

  const Outcome echo = torquectl("call Echo", R"({"values": [1, 2.5e-300, -0.1]})");
  ASSERT_EQ(echo.exit_code, 0) << echo.err;
  EXPECT_EQ(nlohmann::json::parse(echo.out)["values"].get<std::vector<double>>(),
            (std::vector<double>{1, 2.5e-300, -0.1}));

  const Outcome listed = torquectl("call ListModels", "");
  ASSERT_EQ(listed.exit_code, 0) << listed.err;
  const nlohmann::json models = nlohmann::json::parse(listed.out)["models"];
  ASSERT_EQ(models.size(), 1u) << listed.out;
  EXPECT_EQ(models[0]["id"], id);
  EXPECT_EQ(models[0]["nv"], 8);

  const std::string messages = R"([{"sequence": 7, "gravity": {"q": [0, 0, 1, 0, 0, 0, 1, 0.1,
    0.2]}}, {"sequence": 8, "echo": {"values": [3]}}])";
  const Outcome session = torquectl("call Session " + id, messages);
  const Outcome local_session =
      torquectl("call Session " + kPendulum + " --local --floating-base", messages);
  ASSERT_EQ(session.exit_code, 0) << session.err;
  EXPECT_EQ(local_session.out, session.out);
  const nlohmann::json answers = nlohmann::json::parse(session.out);
  ASSERT_EQ(answers.size(), 2u) << session.out;
  EXPECT_EQ(answers[0]["sequence"], "7");
  EXPECT_EQ(answers[0]["gravity"]["tau"].size(), 8u);
  EXPECT_EQ(answers[1]["echo"]["values"], nlohmann::json::array({3}));
  const Outcome failed = torquectl("call Session " + id, R"([{"gravity": {"q": [1]}}])");
  EXPECT_EQ(failed.exit_code, 1);
  EXPECT_NE(failed.err.find("INVALID_ARGUMENT"), std::string::npos) << failed.err;
  EXPECT_EQ(nlohmann::json::parse(failed.out)[0]["status"]["code"], 3);
}

TEST_F(TorquectlTest, CallSaysWhatWentWrong) {
  const Outcome help = torquectl("call --help");
  EXPECT_EQ(help.exit_code, 0);
  for (const google::protobuf::ServiceDescriptor* service : client::services()) {
    for (int m = 0; m < service->method_count(); ++m) {
      EXPECT_NE(help.out.find(" " + service->method(m)->name()), std::string::npos)
          << service->method(m)->name() << " is not in call --help";
    }
  }
  EXPECT_NE(torquectl("--help").out.find("call METHOD [ID|FILE]"), std::string::npos);

  const Outcome no_method = torquectl("call");
  EXPECT_EQ(no_method.exit_code, 2);
  const Outcome unknown = torquectl("call Levitate", "{}");
  EXPECT_EQ(unknown.exit_code, 2);
  EXPECT_NE(unknown.err.find("no method \"Levitate\""), std::string::npos) << unknown.err;
  const Outcome no_model = torquectl("call Echo 00000000000000000000000000000000", "{}");
  EXPECT_EQ(no_model.exit_code, 2);
  EXPECT_NE(no_model.err.find("torqued.v1.EchoRequest names no model"), std::string::npos)
      << no_model.err;
  EXPECT_EQ(torquectl("call Echo --format csv", "{}").exit_code, 2);

  const Outcome truncated = torquectl("call Gravity", R"({"q": [)");
  EXPECT_EQ(truncated.exit_code, 3);
  EXPECT_NE(truncated.err.find("not a torqued.v1.GravityRequest in protobuf JSON"),
            std::string::npos)
      << truncated.err;
  const Outcome misspelt = torquectl("call Gravity", R"({"qq": [1]})");
  EXPECT_EQ(misspelt.exit_code, 3);
  EXPECT_NE(misspelt.err.find("qq"), std::string::npos) << misspelt.err;
  EXPECT_EQ(torquectl("call Session", "[{").exit_code, 3);

  const Outcome not_found =
      torquectl("call Gravity 00000000000000000000000000000000", R"({"q": [0, 0]})");
  EXPECT_EQ(not_found.exit_code, 1);
  EXPECT_NE(not_found.err.find("NOT_FOUND"), std::string::npos) << not_found.err;
}

}  // namespace
}  // namespace torqued::testing
