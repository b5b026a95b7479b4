// Tests TLS and mutual TLS of the gRPC port against the real torqued binary, with certificates
// the openssl command makes at run time (tests/server/pki.hpp): calls over TLS work; plaintext
// clients and clients that do not trust the server's CA are refused; with --tls-client-ca a
// client certificate that CA signed is accepted, and one from another CA, or none, refused; bad
// certificate and key files stop the server at start with a message naming them and exit 1; a
// certificate out of its dates, or expiring within 30 days, is named in a warning at start.
#include <gtest/gtest.h>
#include <sys/wait.h>

#include <chrono>
#include <ctime>
#include <fstream>
#include <thread>

#include "tests/server/pki.hpp"
#include "tests/server/server_process.hpp"

namespace torqued::testing {
namespace {

using Certificate = Pki::ClientCertificate;
using std::chrono::system_clock;

// A date as torqued's log writes a certificate's (UTC), and as openssl's -startdate and -enddate
// take it.
std::string format_utc(system_clock::time_point time, const char* format) {
  const std::time_t seconds = system_clock::to_time_t(time);
  std::tm tm{};
  ::gmtime_r(&seconds, &tm);
  char text[32];
  std::strftime(text, sizeof(text), format, &tm);
  return text;
}
std::string log_date(system_clock::time_point time) {
  return format_utc(time, "%Y-%m-%d %H:%M:%S UTC");
}

// A self-signed certificate for localhost valid from `not_before` to `not_after` and its key, in
// `directory`: the paths of cert.pem and key.pem. Made with `openssl ca`, whose -startdate and
// -enddate take any dates (`openssl x509 -days` takes only a positive count from now).
std::pair<std::string, std::string> self_signed(const std::filesystem::path& directory,
                                                system_clock::time_point not_before,
                                                system_clock::time_point not_after) {
  std::filesystem::create_directories(directory);
  std::ofstream(directory / "ca.cnf")
      << "[ca]\ndefault_ca = test\n[test]\ndatabase = index.txt\nnew_certs_dir = .\n"
         "serial = serial\ndefault_md = sha256\npolicy = any\n[any]\ncommonName = supplied\n";
  std::ofstream(directory / "index.txt").close();
  std::ofstream(directory / "serial") << "01\n";
  const std::string command =
      "cd '" + directory.string() +
      "' && openssl req -new -newkey ec -pkeyopt ec_paramgen_curve:prime256v1 -nodes "
      "-subj /CN=localhost -keyout key.pem -out request.csr && openssl ca -batch -config ca.cnf "
      "-selfsign -keyfile key.pem -in request.csr -startdate " +
      format_utc(not_before, "%Y%m%d%H%M%SZ") + " -enddate " +
      format_utc(not_after, "%Y%m%d%H%M%SZ") + " -out cert.pem > openssl.log 2>&1";
  EXPECT_EQ(std::system(command.c_str()), 0) << Pki::read(directory / "openssl.log");
  return {(directory / "cert.pem").string(), (directory / "key.pem").string()};
}

// Waits up to 60 s for the server's log to say SERVING (its health cannot be asked over TLS when
// clients refuse its certificate).
bool logs_serving(const ServerProcess& server) {
  const auto end = deadline_in(60);
  while (system_clock::now() < end) {
    if (server.log().find("SERVING") != std::string::npos) return true;
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
  }
  return false;
}

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

// gRPC serves a certificate whatever its dates, and the handshakes that every client then fails
// say nothing on the server's side: the start warns, naming the file and the date, when the
// certificate has expired, is not valid yet, or expires within 30 days.
TEST_F(TlsTest, CertificatesThatClientsRefuseOrSoonWillAreNamedAtStart) {
  const auto now = system_clock::now();
  const auto day = std::chrono::hours(24);
  const struct {
    std::string name;
    system_clock::time_point not_before, not_after;
    std::string warning;  // after "the certificate"; none for "valid"
  } cases[] = {
      {"expired", now - 10 * day, now - day, "expired on " + log_date(now - day)},
      {"not_yet_valid", now + day, now + 400 * day, "is not valid before " + log_date(now + day)},
      {"expiring", now - day, now + 10 * day, "expires on " + log_date(now + 10 * day)},
      {"valid", now - day, now + 400 * day, ""},
  };
  for (const auto& c : cases) {
    const auto [cert, key] = self_signed(temp_->path() / c.name, c.not_before, c.not_after);
    std::unique_ptr<ServerProcess> server =
        ServerProcess::launch(options({"--tls-cert=" + cert, "--tls-key=" + key}, std::nullopt));
    ASSERT_TRUE(logs_serving(*server)) << c.name << ":\n" << server->log();
    const std::string log = server->log();
    const std::string about = "--tls-cert " + cert + ": the certificate ";
    if (c.warning.empty()) {
      EXPECT_EQ(log.find(about), std::string::npos) << log;
    } else {
      EXPECT_NE(log.find("warning " + about + c.warning), std::string::npos) << log;
    }
  }
}

}  // namespace
}  // namespace torqued::testing
