// Tests TLS and mutual TLS of the gRPC port against the real torqued binary, with certificates
// the openssl command makes at run time (tests/server/pki.hpp): calls over TLS work; plaintext
// clients and clients that do not trust the server's CA are refused; with --tls-client-ca a
// client certificate that CA signed is accepted, and one from another CA, or none, refused; bad
// certificate and key files stop the server at start with a message naming them and exit 1.
#include <gtest/gtest.h>
#include <sys/wait.h>

#include "tests/server/pki.hpp"
#include "tests/server/server_process.hpp"

namespace torqued::testing {
namespace {

using Certificate = Pki::ClientCertificate;

class TlsTest : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    temp_ = new TempDir();
    pki_ = new Pki(temp_->path() / "pki");
  }
  static void TearDownTestSuite() {
    delete pki_;
    delete temp_;
  }

  static ServerProcess::Options options(const std::vector<std::string>& flags,
                                        std::optional<client::TlsOptions> tls) {
    ServerProcess::Options o;
    o.data_dir = temp_->path() / ("data" + std::to_string(++servers_));
    o.extra_args = flags;
    o.client_tls = std::move(tls);
    return o;
  }

  // ListModels from a new channel to `server` with `tls` (none: plaintext).
  static grpc::Status list_models(const ServerProcess& server,
                                  std::optional<client::TlsOptions> tls) {
    client::ClientOptions channel_options;
    channel_options.target = server.address();
    channel_options.tls = std::move(tls);
    auto stub = v1::ModelService::NewStub(client::make_channel(channel_options));
    grpc::ClientContext context;
    context.set_deadline(deadline_in(20));
    v1::ListModelsResponse response;
    const grpc::Status status = stub->ListModels(&context, {}, &response);
    if (status.ok()) {
      EXPECT_GT(response.models_size(), 0);
    }
    return status;
  }

  static inline TempDir* temp_ = nullptr;
  static inline Pki* pki_ = nullptr;
  static inline int servers_ = 0;
};

TEST_F(TlsTest, TlsServesTrustingClientsOnly) {
  ServerProcess server(options(pki_->tls_flags(), pki_->client_tls(Certificate::kNone)));
  ASSERT_TRUE(server.running());  // its health probes went over TLS
  EXPECT_TRUE(list_models(server, pki_->client_tls(Certificate::kNone)).ok());
  // Without a client CA the server asks for no certificate, and ignores one.
  EXPECT_TRUE(list_models(server, pki_->client_tls(Certificate::kOther)).ok());

  EXPECT_EQ(list_models(server, std::nullopt).error_code(), grpc::StatusCode::UNAVAILABLE);
  client::TlsOptions untrusting = pki_->client_tls(Certificate::kNone);
  untrusting.root_certificates = Pki::read(pki_->other_ca);
  EXPECT_EQ(list_models(server, untrusting).error_code(), grpc::StatusCode::UNAVAILABLE);

  // The certificate names localhost and 127.0.0.1: another expected name fails the check.
  client::TlsOptions renamed = pki_->client_tls(Certificate::kNone);
  renamed.server_name_override = "localhost";
  EXPECT_TRUE(list_models(server, renamed).ok());
  renamed.server_name_override = "torqued.example";
  EXPECT_EQ(list_models(server, renamed).error_code(), grpc::StatusCode::UNAVAILABLE);
  EXPECT_NE(server.log().find("TLS with certificate"), std::string::npos) << server.log();
}

TEST_F(TlsTest, MutualTlsAcceptsOnlyCertificatesOfTheClientCa) {
  ServerProcess server(options(pki_->mutual_tls_flags(), pki_->client_tls(Certificate::kClient)));
  ASSERT_TRUE(server.running());
  EXPECT_TRUE(list_models(server, pki_->client_tls(Certificate::kClient)).ok());
  EXPECT_EQ(list_models(server, pki_->client_tls(Certificate::kOther)).error_code(),
            grpc::StatusCode::UNAVAILABLE);
  EXPECT_EQ(list_models(server, pki_->client_tls(Certificate::kNone)).error_code(),
            grpc::StatusCode::UNAVAILABLE);
  EXPECT_EQ(list_models(server, std::nullopt).error_code(), grpc::StatusCode::UNAVAILABLE);
  EXPECT_NE(server.log().find("mutual TLS"), std::string::npos) << server.log();
}

TEST_F(TlsTest, BadFilesStopTheStartWithAMessage) {
  const std::string cert = pki_->server_cert.string(), key = pki_->server_key.string();
  const std::string absent = (temp_->path() / "absent.pem").string();
  const std::string directory = temp_->path().string();
  const struct {
    std::vector<std::string> flags;
    int exit_code;
    std::string message;
  } cases[] = {
      {{"--tls-cert=" + absent, "--tls-key=" + key},
       1,
       "--tls-cert " + absent + ": cannot be read (No such file or directory)"},
      {{"--tls-cert=" + cert, "--tls-key=" + directory},
       1,
       "--tls-key " + directory + ": cannot be read (Is a directory)"},
      {{"--tls-cert=" + key, "--tls-key=" + key}, 1, "holds no PEM certificate"},
      {{"--tls-cert=" + cert, "--tls-key=" + cert}, 1, "holds no unencrypted PEM private key"},
      {{"--tls-cert=" + cert, "--tls-key=" + pki_->client_key.string()},
       1,
       "is not the key of the certificate in --tls-cert " + cert},
      {{"--tls-cert=" + cert, "--tls-key=" + key, "--tls-client-ca=" + absent},
       1,
       "--tls-client-ca " + absent + ": cannot be read"},
      {{"--tls-cert=" + cert, "--tls-key=" + key, "--tls-client-ca=" + key},
       1,
       "--tls-client-ca " + key + ": holds no PEM certificate"},
      {{"--tls-cert=" + cert}, 2, "--tls-cert and --tls-key go together"},
      {{"--tls-client-ca=" + pki_->ca.string()}, 2, "--tls-client-ca needs --tls-cert"},
  };
  for (const auto& c : cases) {
    std::unique_ptr<ServerProcess> server = ServerProcess::launch(options(c.flags, std::nullopt));
    const int status = server->wait_exit(60);
    ASSERT_TRUE(WIFEXITED(status)) << "status " << status << ", log:\n" << server->log();
    EXPECT_EQ(WEXITSTATUS(status), c.exit_code) << server->log();
    EXPECT_NE(server->log().find(c.message), std::string::npos) << server->log();
  }
}

}  // namespace
}  // namespace torqued::testing
