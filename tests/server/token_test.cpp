// Tests bearer tokens (--admin-token-file, --token-file) against the real torqued binary: each
// guarded call answers UNAUTHENTICATED without a token and PERMISSION_DENIED with a wrong one and
// runs with the right one, on unary methods and on the Session and reflection streams; health
// stays open; refusals are counted in grpc_server_handled_total; tokens never reach the log; bad
// token files stop the start.
#include <gtest/gtest.h>
#include <sys/wait.h>

#include <fstream>
#include <sstream>

#include "grpc/reflection/v1alpha/reflection.grpc.pb.h"
#include "server/models/bundled_models.hpp"
#include "tests/server/pki.hpp"
#include "tests/server/server_process.hpp"

namespace torqued::testing {
namespace {

constexpr const char* kAdminToken = "admin-Zq8v7PL2e9xR4tW1";
constexpr const char* kCallerToken = "caller-M3n6B0cX5dF8gH2j";

// Metadata "authorization" values.
const std::string kAdmin = std::string("Bearer ") + kAdminToken;
const std::string kCaller = std::string("Bearer ") + kCallerToken;
const std::string kWrong = "Bearer not-a-token-of-this-server";
const std::string kNone;

void authorize(grpc::ClientContext* context, const std::string& authorization) {
  context->set_deadline(deadline_in(30));
  if (!authorization.empty()) context->AddMetadata("authorization", authorization);
}

class TokenTest : public ::testing::Test {
 protected:
  TokenTest() {
    // The admin token file ends with a newline, as `echo TOKEN > FILE` writes it.
    std::ofstream(admin_file_) << kAdminToken << "\n";
    std::ofstream(caller_file_) << kCallerToken;
  }

  ServerProcess::Options options(std::vector<std::string> flags, bool metrics = false) {
    ServerProcess::Options o;
    o.data_dir = temp_.path() / ("data" + std::to_string(++servers_));
    o.metrics = metrics;
    o.extra_args = std::move(flags);
    return o;
  }

  static grpc::Status list_models(const ServerProcess& server, const std::string& authorization) {
    grpc::ClientContext context;
    authorize(&context, authorization);
    v1::ListModelsResponse response;
    return server.models()->ListModels(&context, {}, &response);
  }

  static grpc::Status register_model(const ServerProcess& server, const std::string& authorization,
                                     std::string* id = nullptr) {
    v1::RegisterModelRequest request;
    std::string error;
    EXPECT_TRUE(
        server::read_model_file(repository_dir() + "/double_pendulum.urdf", request, error));
    request.set_name("registered_pendulum");
    grpc::ClientContext context;
    authorize(&context, authorization);
    v1::RegisterModelResponse response;
    const grpc::Status status = server.models()->RegisterModel(&context, request, &response);
    if (id != nullptr) *id = response.model().id();
    return status;
  }

  static grpc::Status delete_model(const ServerProcess& server, const std::string& id,
                                   const std::string& authorization) {
    v1::DeleteModelRequest request;
    request.set_model_id(id);
    grpc::ClientContext context;
    authorize(&context, authorization);
    v1::DeleteModelResponse response;
    return server.models()->DeleteModel(&context, request, &response);
  }

  // InverseDynamics of one state of the bundled double pendulum.
  static grpc::Status inverse_dynamics(const ServerProcess& server,
                                       const std::string& authorization) {
    v1::InverseDynamicsRequest request = pendulum_state(server);
    grpc::ClientContext context;
    authorize(&context, authorization);
    v1::InverseDynamicsResponse response;
    return server.dynamics()->InverseDynamics(&context, request, &response);
  }

  static grpc::Status echo(const ServerProcess& server, const std::string& authorization) {
    v1::EchoRequest request;
    request.set_payload("ping");
    grpc::ClientContext context;
    authorize(&context, authorization);
    v1::EchoResponse response;
    return server.dynamics()->Echo(&context, request, &response);
  }

  // A Session carrying one InverseDynamics message: its end status, and in `answered` whether the
  // message was answered with OK.
  static grpc::Status session(const ServerProcess& server, const std::string& authorization,
                              bool& answered) {
    grpc::ClientContext context;
    authorize(&context, authorization);
    auto stream = server.dynamics()->Session(&context);
    v1::SessionRequest message;
    *message.mutable_inverse_dynamics() = pendulum_state(server);
    stream->Write(message);
    stream->WritesDone();
    v1::SessionResponse response;
    answered = false;
    while (stream->Read(&response)) answered = response.status().code() == 0;
    return stream->Finish();
  }

  static grpc::health::v1::HealthCheckResponse::ServingStatus health(const ServerProcess& server) {
    grpc::ClientContext context;
    authorize(&context, kNone);
    grpc::health::v1::HealthCheckResponse response;
    EXPECT_TRUE(server.health()->Check(&context, {}, &response).ok());
    return response.status();
  }

  // grpc.reflection.v1alpha.ServerReflection/ServerReflectionInfo asked to list the services:
  // one request on its bidirectional stream, then the stream's end.
  static grpc::Status reflection(const ServerProcess& server, const std::string& authorization) {
    grpc::ClientContext context;
    authorize(&context, authorization);
    const auto stub = grpc::reflection::v1alpha::ServerReflection::NewStub(server.channel());
    const auto stream = stub->ServerReflectionInfo(&context);
    grpc::reflection::v1alpha::ServerReflectionRequest request;
    request.set_list_services("*");
    stream->Write(request);
    stream->WritesDone();
    for (grpc::reflection::v1alpha::ServerReflectionResponse response; stream->Read(&response);) {
    }
    return stream->Finish();
  }

  // The count of grpc_server_handled_total for `method` and `code`, from the metrics page.
  static double handled(const ServerProcess& server, const std::string& method,
                        const std::string& code) {
    std::istringstream page(http_get(server.metrics_port(), "/metrics"));
    for (std::string line; std::getline(page, line);) {
      if (line.rfind("grpc_server_handled_total{", 0) == 0 &&
          line.find("grpc_method=\"" + method + "\"") != std::string::npos &&
          line.find("grpc_code=\"" + code + "\"") != std::string::npos) {
        return std::stod(line.substr(line.rfind(' ') + 1));
      }
    }
    return -1;
  }

  static void expect_no_token_in(const std::string& log) {
    EXPECT_EQ(log.find(kAdminToken), std::string::npos) << log;
    EXPECT_EQ(log.find(kCallerToken), std::string::npos) << log;
  }

  TempDir temp_;
  const std::string admin_file_ = (temp_.path() / "admin.token").string();
  const std::string caller_file_ = (temp_.path() / "caller.token").string();
  int servers_ = 0;

 private:
  static v1::InverseDynamicsRequest pendulum_state(const ServerProcess& server) {
    grpc::ClientContext context;
    authorize(&context, kCaller);
    v1::ListModelsResponse models;
    EXPECT_TRUE(server.models()->ListModels(&context, {}, &models).ok());
    v1::InverseDynamicsRequest request;
    for (const v1::ModelSummary& m : models.models()) {
      if (m.name() == "double_pendulum") request.set_model_id(m.id());
    }
    request.set_batch_size(1);
    for (int i = 0; i < 2; ++i) {
      request.add_q(0.1 * i);
      request.add_v(0.0);
      request.add_a(1.0);
    }
    return request;
  }
};

TEST_F(TokenTest, AdminTokenGuardsRegistrationAndDeletionOnly) {
  ServerProcess server(options({"--admin-token-file=" + admin_file_}, true));
  ASSERT_TRUE(server.running());

  const grpc::Status missing = register_model(server, kNone);
  EXPECT_EQ(missing.error_code(), grpc::StatusCode::UNAUTHENTICATED);
  EXPECT_NE(missing.error_message().find("--admin-token-file"), std::string::npos)
      << missing.error_message();
  EXPECT_EQ(register_model(server, kWrong).error_code(), grpc::StatusCode::PERMISSION_DENIED);
  EXPECT_EQ(register_model(server, std::string("Basic ") + kAdminToken).error_code(),
            grpc::StatusCode::UNAUTHENTICATED);
  // The file's trailing newline is not part of the token; the scheme's case does not matter.
  std::string id;
  ASSERT_TRUE(register_model(server, kAdmin, &id).ok());
  EXPECT_TRUE(register_model(server, std::string("bearer ") + kAdminToken).ok());

  // Reads and computations need no token.
  EXPECT_TRUE(list_models(server, kNone).ok());
  EXPECT_TRUE(inverse_dynamics(server, kNone).ok());
  EXPECT_TRUE(echo(server, kNone).ok());
  bool answered = false;
  EXPECT_TRUE(session(server, kNone, answered).ok());
  EXPECT_TRUE(answered);
  EXPECT_TRUE(reflection(server, kNone).ok());

  EXPECT_EQ(delete_model(server, id, kNone).error_code(), grpc::StatusCode::UNAUTHENTICATED);
  EXPECT_EQ(delete_model(server, id, kWrong).error_code(), grpc::StatusCode::PERMISSION_DENIED);
  EXPECT_TRUE(delete_model(server, id, kAdmin).ok());

  EXPECT_EQ(handled(server, "RegisterModel", "UNAUTHENTICATED"), 2);
  EXPECT_EQ(handled(server, "RegisterModel", "PERMISSION_DENIED"), 1);
  EXPECT_EQ(handled(server, "RegisterModel", "OK"), 2);
  EXPECT_EQ(handled(server, "DeleteModel", "UNAUTHENTICATED"), 1);
  EXPECT_EQ(handled(server, "DeleteModel", "PERMISSION_DENIED"), 1);

  const std::string log = server.log();
  expect_no_token_in(log);
  EXPECT_NE(log.find("bearer tokens travel in plaintext"), std::string::npos) << log;
}

TEST_F(TokenTest, TokenGuardsEveryCallButHealth) {
  ServerProcess server(
      options({"--admin-token-file=" + admin_file_, "--token-file=" + caller_file_}, true));
  ASSERT_TRUE(server.running());
  EXPECT_EQ(health(server), grpc::health::v1::HealthCheckResponse::SERVING);

  for (const auto& call : {list_models, inverse_dynamics, echo}) {
    EXPECT_EQ(call(server, kNone).error_code(), grpc::StatusCode::UNAUTHENTICATED);
    EXPECT_EQ(call(server, kWrong).error_code(), grpc::StatusCode::PERMISSION_DENIED);
    EXPECT_TRUE(call(server, kCaller).ok());
    EXPECT_TRUE(call(server, kAdmin).ok());
  }

  // The stream is checked once, when it opens: refused, it ends before any message is answered.
  bool answered = true;
  EXPECT_EQ(session(server, kNone, answered).error_code(), grpc::StatusCode::UNAUTHENTICATED);
  EXPECT_FALSE(answered);
  EXPECT_EQ(session(server, kWrong, answered).error_code(), grpc::StatusCode::PERMISSION_DENIED);
  EXPECT_FALSE(answered);
  EXPECT_TRUE(session(server, kCaller, answered).ok());
  EXPECT_TRUE(answered);
  EXPECT_EQ(handled(server, "Session", "UNAUTHENTICATED"), 1);
  EXPECT_EQ(handled(server, "Session", "PERMISSION_DENIED"), 1);

  // Registration needs the admin token: the caller's is refused.
  const grpc::Status caller_registers = register_model(server, kCaller);
  EXPECT_EQ(caller_registers.error_code(), grpc::StatusCode::PERMISSION_DENIED);
  EXPECT_EQ(caller_registers.error_message().find(kCallerToken), std::string::npos);
  EXPECT_TRUE(register_model(server, kAdmin).ok());

  // Reflection describes the whole API: it needs the token too, checked when the stream opens.
  EXPECT_EQ(reflection(server, kNone).error_code(), grpc::StatusCode::UNAUTHENTICATED);
  EXPECT_EQ(reflection(server, kWrong).error_code(), grpc::StatusCode::PERMISSION_DENIED);
  EXPECT_TRUE(reflection(server, kCaller).ok());
  EXPECT_TRUE(reflection(server, kAdmin).ok());
  expect_no_token_in(server.log());
}

TEST_F(TokenTest, WithoutAnAdminTokenTheTokenGuardsRegistrationToo) {
  ServerProcess server(options({"--token-file=" + caller_file_}));
  ASSERT_TRUE(server.running());
  EXPECT_EQ(register_model(server, kNone).error_code(), grpc::StatusCode::UNAUTHENTICATED);
  std::string id;
  EXPECT_TRUE(register_model(server, kCaller, &id).ok());
  EXPECT_EQ(delete_model(server, id, kWrong).error_code(), grpc::StatusCode::PERMISSION_DENIED);
  EXPECT_TRUE(delete_model(server, id, kCaller).ok());
}

TEST_F(TokenTest, TokensOverMutualTlsRaiseNoPlaintextWarning) {
  const Pki pki(temp_.path() / "pki");
  ServerProcess::Options o = options(pki.mutual_tls_flags());
  o.extra_args.push_back("--token-file=" + caller_file_);
  o.client_tls = pki.client_tls(Pki::ClientCertificate::kClient);
  ServerProcess server(o);
  ASSERT_TRUE(server.running());
  EXPECT_EQ(list_models(server, kNone).error_code(), grpc::StatusCode::UNAUTHENTICATED);
  EXPECT_TRUE(list_models(server, kCaller).ok());
  const std::string log = server.log();
  EXPECT_EQ(log.find("plaintext"), std::string::npos) << log;
  expect_no_token_in(log);
}

TEST_F(TokenTest, BadTokenFilesStopTheStartWithoutShowingTheirContent) {
  const std::string secret = "se cret-with-a-space";
  const auto file = [&](const std::string& name, const std::string& content) {
    const std::string path = (temp_.path() / name).string();
    std::ofstream(path) << content;
    return path;
  };
  const std::string spaced = file("spaced.token", secret + "\n");
  const std::string twin = file("twin.token", std::string(kAdminToken) + "\r\n");
  const struct {
    std::vector<std::string> flags;
    std::string message;
  } cases[] = {
      {{"--token-file=" + (temp_.path() / "absent.token").string()},
       "absent.token: cannot be read (No such file or directory)"},
      {{"--admin-token-file=" + file("empty.token", "\n")},
       "empty.token: is empty; it must hold the token"},
      {{"--token-file=" + spaced}, "the token must be printable ASCII without spaces"},
      {{"--admin-token-file=" + admin_file_, "--token-file=" + twin},
       "--admin-token-file and --token-file hold the same token"},
  };
  for (const auto& c : cases) {
    std::unique_ptr<ServerProcess> server = ServerProcess::launch(options(c.flags));
    const int status = server->wait_exit(60);
    ASSERT_TRUE(WIFEXITED(status)) << status;
    EXPECT_EQ(WEXITSTATUS(status), 1);
    const std::string log = server->log();
    EXPECT_NE(log.find(c.message), std::string::npos) << log;
    EXPECT_EQ(log.find(secret), std::string::npos) << log;
    expect_no_token_in(log);
  }
}

// A call carries its token in "authorization: Bearer <token>", and gRPC receives at most 8 KiB of
// a call's metadata by default: a token of 4096 bytes serves; one longer stops the start with a
// message naming the flag and the limit, never the token.
TEST_F(TokenTest, TokensLongerThan4096BytesStopTheStart) {
  const auto token_of = [](std::size_t bytes) {
    std::string token;
    for (std::size_t i = 0; i < bytes; ++i)
      token.push_back("0123456789abcdefghijklmnopqrstuv"[i % 32]);
    return token;
  };
  const std::string longest = token_of(4096);
  const std::string longest_file = (temp_.path() / "longest.token").string();
  std::ofstream(longest_file) << longest << "\n";
  {
    ServerProcess server(options({"--token-file=" + longest_file}));
    ASSERT_TRUE(server.running());
    EXPECT_TRUE(list_models(server, "Bearer " + longest).ok());
    EXPECT_EQ(list_models(server, kWrong).error_code(), grpc::StatusCode::PERMISSION_DENIED);
  }
  const std::string too_long = token_of(4097);
  const std::string too_long_file = (temp_.path() / "too_long.token").string();
  std::ofstream(too_long_file) << too_long;
  for (const std::string flag : {"token-file", "admin-token-file"}) {
    std::unique_ptr<ServerProcess> server =
        ServerProcess::launch(options({"--" + flag + "=" + too_long_file}));
    const int status = server->wait_exit(30);
    ASSERT_TRUE(WIFEXITED(status)) << flag << ": status " << status;
    EXPECT_EQ(WEXITSTATUS(status), 1);
    const std::string log = server->log();
    EXPECT_NE(log.find("--" + flag + " " + too_long_file +
                       ": the token is 4097 bytes, more than the limit of 4096"),
              std::string::npos)
        << log;
    EXPECT_EQ(log.find(too_long.substr(0, 64)), std::string::npos) << log;
  }
}

}  // namespace
}  // namespace torqued::testing
