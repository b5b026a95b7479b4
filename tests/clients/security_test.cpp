// Tests every C++ client over TLS, mutual TLS and bearer tokens against the real torqued binary,
// with certificates made by the openssl command at run time: the torqued_client library
// (ClientOptions::tls and ::token, unary calls and Session streams), torquectl (flags and
// environment variables, typed commands and call) and torqued-load.
// One server serves mutual TLS with an admin token and a caller token, another plain TLS.
#include <gtest/gtest.h>
#include <sys/wait.h>

#include <fstream>
#include <sstream>

#include "server/models/bundled_models.hpp"
#include "tests/server/pki.hpp"
#include "tests/server/server_process.hpp"
#include "torqued/client.hpp"

namespace torqued::testing {
namespace {

using Certificate = Pki::ClientCertificate;
using client::Client;
using client::ClientOptions;

constexpr const char* kAdminToken = "admin-3JkQ9wVb7TzL0pXe";
constexpr const char* kCallerToken = "caller-Hc5Ny2Rg8Ua4Ds6F";

struct Outcome {
  int exit_code;
  std::string out;
  std::string err;
};

class SecurityTest : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    temp_ = new TempDir();
    pki_ = new Pki(temp_->path() / "pki");
    std::ofstream(admin_file()) << kAdminToken << "\n";
    std::ofstream(caller_file()) << kCallerToken << "\n";
    ServerProcess::Options guarded;
    guarded.data_dir = temp_->path() / "guarded";
    guarded.extra_args = pki_->mutual_tls_flags();
    guarded.extra_args.push_back("--admin-token-file=" + admin_file());
    guarded.extra_args.push_back("--token-file=" + caller_file());
    guarded.client_tls = pki_->client_tls(Certificate::kClient);
    guarded.client_token = kCallerToken;
    guarded_ = new ServerProcess(guarded);
    ServerProcess::Options tls;
    tls.data_dir = temp_->path() / "tls";
    tls.extra_args = pki_->tls_flags();
    tls.client_tls = pki_->client_tls(Certificate::kNone);
    tls_ = new ServerProcess(tls);
  }
  static void TearDownTestSuite() {
    delete tls_;
    delete guarded_;
    delete pki_;
    delete temp_;
  }

  static std::string admin_file() { return (temp_->path() / "admin.token").string(); }
  static std::string caller_file() { return (temp_->path() / "caller.token").string(); }

  // Client options for `server`, failing at once rather than retrying refused connections.
  static ClientOptions options_for(const ServerProcess& server, Certificate certificate,
                                   const std::string& token) {
    ClientOptions options;
    options.target = server.address();
    options.tls = pki_->client_tls(certificate);
    options.token = token;
    options.max_attempts = 1;
    options.deadline = std::chrono::seconds(20);
    return options;
  }

  static v1::RegisterModelRequest pendulum_request() {
    v1::RegisterModelRequest request;
    std::string error;
    EXPECT_TRUE(server::read_model_file(repository_dir() + "/double_pendulum.urdf", request, error))
        << error;
    request.set_name("secured_pendulum");
    return request;
  }

  // The status code a client's call fails with (OK when it succeeds).
  template <typename Call>
  static grpc::StatusCode code_of(Call call) {
    try {
      call();
      return grpc::StatusCode::OK;
    } catch (const client::Error& e) {
      return e.code();
    }
  }

  // Runs `command` (a shell command line) with standard output and error captured.
  static Outcome run(const std::string& command) {
    const std::filesystem::path out = temp_->path() / "stdout", err = temp_->path() / "stderr";
    const int status =
        std::system((command + " > " + out.string() + " 2> " + err.string()).c_str());
    return {WIFEXITED(status) ? WEXITSTATUS(status) : -1, Pki::read(out), Pki::read(err)};
  }

  // torquectl against the guarded server with the client certificate, and `more` arguments.
  static Outcome torquectl(const std::string& more) {
    return run(std::string(TORQUECTL_BINARY) + " " + more + " --server " + guarded_->address() +
               " --tls-ca " + pki_->ca.string() + " --tls-cert " + pki_->client_cert.string() +
               " --tls-key " + pki_->client_key.string());
  }

  static inline TempDir* temp_ = nullptr;
  static inline Pki* pki_ = nullptr;
  static inline ServerProcess* guarded_ = nullptr;
  static inline ServerProcess* tls_ = nullptr;
};

TEST_F(SecurityTest, LibraryOverTls) {
  Client client(options_for(*tls_, Certificate::kNone, ""));
  const v1::Model model = client.register_model(pendulum_request());
  const client::Matrix tau = client.gravity(model.id(), Eigen::RowVector2d(0.3, -0.2));
  ASSERT_EQ(tau.cols(), 2);
  EXPECT_NE(tau.norm(), 0.0);

  ClientOptions plaintext = options_for(*tls_, Certificate::kNone, "");
  plaintext.tls.reset();
  EXPECT_EQ(code_of([&] { Client(plaintext).list_models(); }), grpc::StatusCode::UNAVAILABLE);
}

TEST_F(SecurityTest, LibraryOverMutualTlsWithTokens) {
  Client caller(options_for(*guarded_, Certificate::kClient, kCallerToken));
  EXPECT_EQ(caller.health(), grpc::health::v1::HealthCheckResponse::SERVING);
  EXPECT_EQ(code_of([&] { caller.register_model(pendulum_request()); }),
            grpc::StatusCode::PERMISSION_DENIED);

  Client admin(options_for(*guarded_, Certificate::kClient, kAdminToken));
  const v1::Model model = admin.register_model(pendulum_request());
  const client::Matrix tau = caller.gravity(model.id(), Eigen::RowVector2d(0.3, -0.2));
  EXPECT_EQ(tau, admin.gravity(model.id(), Eigen::RowVector2d(0.3, -0.2)));
  ASSERT_EQ(tau.cols(), 2);
  EXPECT_NE(tau.norm(), 0.0);
  EXPECT_EQ(code_of([&] { caller.delete_model(model.id()); }), grpc::StatusCode::PERMISSION_DENIED);
  admin.delete_model(model.id());

  Client anonymous(options_for(*guarded_, Certificate::kClient, ""));
  EXPECT_EQ(anonymous.health(), grpc::health::v1::HealthCheckResponse::SERVING);
  EXPECT_EQ(code_of([&] { anonymous.list_models(); }), grpc::StatusCode::UNAUTHENTICATED);
  EXPECT_EQ(code_of([&] {
              Client(options_for(*guarded_, Certificate::kOther, kCallerToken)).list_models();
            }),
            grpc::StatusCode::UNAVAILABLE);
  EXPECT_EQ(code_of([&] {
              Client(options_for(*guarded_, Certificate::kNone, kCallerToken)).list_models();
            }),
            grpc::StatusCode::UNAVAILABLE);
}

TEST_F(SecurityTest, SessionStreamsCarryTlsAndTheToken) {
  v1::SessionRequest echo;
  echo.mutable_echo()->add_values(4.0);
  Client caller(options_for(*guarded_, Certificate::kClient, kCallerToken));
  client::Session session = caller.session();
  ASSERT_TRUE(session.write(echo));
  v1::SessionResponse answer;
  ASSERT_TRUE(session.read(&answer));
  ASSERT_EQ(answer.echo().values_size(), 1);
  EXPECT_EQ(answer.echo().values(0), 4.0);
  session.finish();

  Client anonymous(options_for(*guarded_, Certificate::kClient, ""));
  client::Session refused = anonymous.session();
  refused.write(echo);
  EXPECT_EQ(code_of([&] { refused.finish(); }), grpc::StatusCode::UNAUTHENTICATED);
}

TEST_F(SecurityTest, TorquectlTakesFlagsAndEnvironment) {
  const Outcome models = torquectl("models --format csv --token-file " + caller_file());
  ASSERT_EQ(models.exit_code, 0) << models.err;
  EXPECT_NE(models.out.find("double_pendulum"), std::string::npos) << models.out;

  const std::string urdf = repository_dir() + "/double_pendulum.urdf";
  const Outcome refused = torquectl("register " + urdf + " --token-file " + caller_file());
  EXPECT_EQ(refused.exit_code, 1);
  EXPECT_NE(refused.err.find("PERMISSION_DENIED"), std::string::npos) << refused.err;
  const Outcome registered = torquectl("register " + urdf + " --token-file " + admin_file());
  EXPECT_EQ(registered.exit_code, 0) << registered.err;
  const Outcome anonymous = torquectl("models");
  EXPECT_EQ(anonymous.exit_code, 1);
  EXPECT_NE(anonymous.err.find("UNAUTHENTICATED"), std::string::npos) << anonymous.err;

  // The same from the environment, the token itself in TORQUED_TOKEN.
  const Outcome from_environment =
      run("TORQUED_SERVER=" + guarded_->address() + " TORQUED_TLS_CA=" + pki_->ca.string() +
          " TORQUED_TLS_CLIENT_CERT=" + pki_->client_cert.string() +
          " TORQUED_TLS_CLIENT_KEY=" + pki_->client_key.string() +
          " TORQUED_TOKEN=" + kCallerToken + " " + TORQUECTL_BINARY + " models --format csv");
  EXPECT_EQ(from_environment.exit_code, 0) << from_environment.err;
  EXPECT_EQ(from_environment.out, models.out);

  // TLS without a client certificate: refused by the mutual-TLS server, served by the other.
  const Outcome no_certificate =
      run(std::string(TORQUECTL_BINARY) + " models --deadline 1 --server " + guarded_->address() +
          " --tls-ca " + pki_->ca.string() + " --token-file " + caller_file());
  EXPECT_EQ(no_certificate.exit_code, 1);
  EXPECT_NE(no_certificate.err.find("UNAVAILABLE"), std::string::npos) << no_certificate.err;
  const Outcome tls = run(std::string(TORQUECTL_BINARY) + " health --server " + tls_->address() +
                          " --tls-ca " + pki_->ca.string());
  EXPECT_EQ(tls.exit_code, 0) << tls.err;
  EXPECT_EQ(tls.out, "SERVING\n");

  // call goes over the same channel.
  const std::string echo = (temp_->path() / "echo.json").string();
  std::ofstream(echo) << R"({"values": [4]})";
  const Outcome called = torquectl("call Echo --input " + echo + " --token-file " + caller_file());
  EXPECT_EQ(called.exit_code, 0) << called.err;
  EXPECT_NE(called.out.find("\"values\""), std::string::npos) << called.out;
  const Outcome uncalled = torquectl("call Echo --input " + echo);
  EXPECT_EQ(uncalled.exit_code, 1);
  EXPECT_NE(uncalled.err.find("UNAUTHENTICATED"), std::string::npos) << uncalled.err;

  const Outcome absent = torquectl("models --token-file " + (temp_->path() / "absent").string());
  EXPECT_EQ(absent.exit_code, 3);
  EXPECT_NE(absent.err.find("absent: cannot be read"), std::string::npos) << absent.err;
  const Outcome unpaired =
      run(std::string(TORQUECTL_BINARY) + " models --tls-cert " + pki_->client_cert.string());
  EXPECT_EQ(unpaired.exit_code, 2);
  EXPECT_NE(unpaired.err.find("a client certificate and its key go together"), std::string::npos)
      << unpaired.err;
}

TEST_F(SecurityTest, LoadGeneratorOverTlsAndMutualTlsWithAToken) {
  const std::string load = std::string(TORQUED_LOAD_BINARY) + " --target " + guarded_->address() +
                           " --tls-ca " + pki_->ca.string() + " --tls-cert " +
                           pki_->client_cert.string() + " --tls-key " + pki_->client_key.string() +
                           " --model double_pendulum --requests 20 --warmup 0";
  for (const std::string mode : {"", " --session"}) {
    const Outcome served = run(load + mode + " --token-file " + caller_file());
    EXPECT_EQ(served.exit_code, 0) << served.out << served.err;
    EXPECT_NE(served.out.find("errors: none"), std::string::npos) << served.out;
  }
  const Outcome tls =
      run(std::string(TORQUED_LOAD_BINARY) + " --target " + tls_->address() + " --tls-ca " +
          pki_->ca.string() + " --model double_pendulum --requests 20 --warmup 0");
  EXPECT_EQ(tls.exit_code, 0) << tls.out << tls.err;
  const Outcome anonymous = run(load);
  EXPECT_NE(anonymous.exit_code, 0);
  EXPECT_NE(anonymous.err.find("needs a token (--token-file)"), std::string::npos) << anonymous.err;
}

}  // namespace
}  // namespace torqued::testing
