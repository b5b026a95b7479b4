// Test support: a throwaway public-key infrastructure, made with the openssl command in a
// directory: a CA, a server certificate for localhost and 127.0.0.1 and a client certificate
// that it signed, and a second CA with a client certificate of its own, which a server trusting
// only the first must refuse. Elliptic-curve keys (P-256): a few milliseconds each to make.
#pragma once

#include <filesystem>
#include <string>

#include "torqued/client.hpp"

namespace torqued::testing {

class Pki {
 public:
  // Makes every file in `directory`; throws std::runtime_error (with openssl's output) when the
  // openssl command fails.
  explicit Pki(const std::filesystem::path& directory);

  // A PEM file's text.
  static std::string read(const std::filesystem::path& path);

  // The server flags of TLS, or of mutual TLS with the first CA as the clients' CA.
  std::vector<std::string> tls_flags() const;
  std::vector<std::string> mutual_tls_flags() const;

  // A client's TLS: the first CA as root, and the client certificate of the first CA (`client`),
  // of the second (`other`) or none.
  enum class ClientCertificate { kNone, kClient, kOther };
  client::TlsOptions client_tls(ClientCertificate certificate) const;

  std::filesystem::path ca, server_cert, server_key, client_cert, client_key;
  std::filesystem::path other_ca, other_client_cert, other_client_key;

 private:
  void openssl(const std::string& arguments) const;
  // name.pem and name.key: a self-signed CA certificate.
  void make_ca(const std::string& name) const;
  // name.pem and name.key: a certificate that CA `ca` signed, with `extensions` (openssl's
  // extension file syntax).
  void make_certificate(const std::string& name, const std::string& ca,
                        const std::string& extensions, int serial) const;

  std::filesystem::path directory_;
};

}  // namespace torqued::testing
