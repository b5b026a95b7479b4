// Test certificates made with the openssl command (see pki.hpp).
#include "tests/server/pki.hpp"

#include <cstdlib>
#include <fstream>
#include <sstream>
#include <stdexcept>

namespace torqued::testing {
namespace {

const char* const kNewKey = "-newkey ec -pkeyopt ec_paramgen_curve:prime256v1 -nodes";

}  // namespace

Pki::Pki(const std::filesystem::path& directory) : directory_(directory) {
  std::filesystem::create_directories(directory_);
  make_ca("ca");
  make_certificate("server", "ca",
                   "basicConstraints=CA:FALSE\nextendedKeyUsage=serverAuth\n"
                   "subjectAltName=DNS:localhost,IP:127.0.0.1\n",
                   1);
  make_certificate("client", "ca", "basicConstraints=CA:FALSE\nextendedKeyUsage=clientAuth\n", 2);
  make_ca("other_ca");
  make_certificate("other_client", "other_ca",
                   "basicConstraints=CA:FALSE\nextendedKeyUsage=clientAuth\n", 1);
  ca = directory_ / "ca.pem";
  server_cert = directory_ / "server.pem";
  server_key = directory_ / "server.key";
  client_cert = directory_ / "client.pem";
  client_key = directory_ / "client.key";
  other_ca = directory_ / "other_ca.pem";
  other_client_cert = directory_ / "other_client.pem";
  other_client_key = directory_ / "other_client.key";
}

std::string Pki::read(const std::filesystem::path& path) {
  std::ifstream in(path);
  std::ostringstream text;
  text << in.rdbuf();
  return text.str();
}

std::vector<std::string> Pki::tls_flags() const {
  return {"--tls-cert=" + server_cert.string(), "--tls-key=" + server_key.string()};
}

std::vector<std::string> Pki::mutual_tls_flags() const {
  std::vector<std::string> flags = tls_flags();
  flags.push_back("--tls-client-ca=" + ca.string());
  return flags;
}

client::TlsOptions Pki::client_tls(ClientCertificate certificate) const {
  client::TlsOptions tls;
  tls.root_certificates = read(ca);
  if (certificate == ClientCertificate::kClient) {
    tls.certificate_chain = read(client_cert);
    tls.private_key = read(client_key);
  } else if (certificate == ClientCertificate::kOther) {
    tls.certificate_chain = read(other_client_cert);
    tls.private_key = read(other_client_key);
  }
  return tls;
}

void Pki::openssl(const std::string& arguments) const {
  const std::filesystem::path log = directory_ / "openssl.log";
  const std::string command =
      "cd '" + directory_.string() + "' && openssl " + arguments + " >> openssl.log 2>&1";
  if (std::system(command.c_str()) != 0) {
    throw std::runtime_error("openssl " + arguments + " failed:\n" + read(log));
  }
}

void Pki::make_ca(const std::string& name) const {
  openssl("req -x509 " + std::string(kNewKey) + " -days 2 -subj /CN=torqued-test-" + name +
          " -addext basicConstraints=critical,CA:TRUE"
          " -addext keyUsage=critical,keyCertSign,cRLSign -keyout " +
          name + ".key -out " + name + ".pem");
}

void Pki::make_certificate(const std::string& name, const std::string& ca,
                           const std::string& extensions, int serial) const {
  std::ofstream(directory_ / (name + ".ext")) << extensions;
  openssl("req -new " + std::string(kNewKey) + " -subj /CN=" + name + " -keyout " + name +
          ".key -out " + name + ".csr");
  openssl("x509 -req -days 2 -in " + name + ".csr -CA " + ca + ".pem -CAkey " + ca +
          ".key -set_serial " + std::to_string(serial) + " -extfile " + name + ".ext -out " + name +
          ".pem");
}

}  // namespace torqued::testing
