// TLS credentials of the gRPC port (see tls.hpp).
#include "server/tls.hpp"

#include <openssl/err.h>
#include <openssl/evp.h>
#include <openssl/pem.h>
#include <openssl/x509.h>

#include <stdexcept>
#include <string>

namespace torqued::server {
namespace {

struct BioFree {
  void operator()(BIO* bio) const { BIO_free(bio); }
};
struct X509Free {
  void operator()(X509* certificate) const { X509_free(certificate); }
};
struct KeyFree {
  void operator()(EVP_PKEY* key) const { EVP_PKEY_free(key); }
};
using Bio = std::unique_ptr<BIO, BioFree>;
using Certificate = std::unique_ptr<X509, X509Free>;
using Key = std::unique_ptr<EVP_PKEY, KeyFree>;

Bio read_only_bio(const std::string& pem) {
  return Bio(BIO_new_mem_buf(pem.data(), static_cast<int>(pem.size())));
}

// Declines to prompt for a passphrase: OpenSSL's default callback would read one from the
// terminal, and gRPC cannot use an encrypted key anyway.
int no_passphrase(char*, int, int, void*) { return 0; }

[[noreturn]] void fail(const std::string& flag, const std::string& path, const std::string& why) {
  ERR_clear_error();  // what OpenSSL queued is said in `why`
  throw std::runtime_error("--" + flag + " " + path + ": " + why);
}

// The first certificate of `pem`: a chain's leaf, or one of several CA certificates.
Certificate first_certificate(const std::string& flag, const std::string& path,
                              const std::string& pem) {
  Certificate first{PEM_read_bio_X509(read_only_bio(pem).get(), nullptr, no_passphrase, nullptr)};
  if (!first) fail(flag, path, "holds no PEM certificate (\"-----BEGIN CERTIFICATE-----\")");
  return first;
}

}  // namespace

std::shared_ptr<grpc::ServerCredentials> make_server_credentials(const Config& config) {
  if (config.tls_cert.empty()) return grpc::InsecureServerCredentials();
  const std::string chain = read_flag_file("tls-cert", config.tls_cert);
  const std::string key_pem = read_flag_file("tls-key", config.tls_key);
  const Certificate leaf = first_certificate("tls-cert", config.tls_cert, chain);
  const Key key{
      PEM_read_bio_PrivateKey(read_only_bio(key_pem).get(), nullptr, no_passphrase, nullptr)};
  if (!key) fail("tls-key", config.tls_key, "holds no unencrypted PEM private key");
  if (X509_check_private_key(leaf.get(), key.get()) != 1) {
    fail("tls-key", config.tls_key,
         "is not the key of the certificate in --tls-cert " + config.tls_cert);
  }
  grpc::SslServerCredentialsOptions options(GRPC_SSL_DONT_REQUEST_CLIENT_CERTIFICATE);
  options.pem_key_cert_pairs.push_back({key_pem, chain});
  if (!config.tls_client_ca.empty()) {
    options.pem_root_certs = read_flag_file("tls-client-ca", config.tls_client_ca);
    first_certificate("tls-client-ca", config.tls_client_ca, options.pem_root_certs);
    options.client_certificate_request = GRPC_SSL_REQUEST_AND_REQUIRE_CLIENT_CERTIFICATE_AND_VERIFY;
  }
  return grpc::SslServerCredentials(options);
}

}  // namespace torqued::server
