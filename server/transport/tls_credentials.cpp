// TLS credentials of the gRPC port (see tls_credentials.hpp).
#include "server/transport/tls_credentials.hpp"

#include <openssl/err.h>
#include <openssl/evp.h>
#include <openssl/pem.h>
#include <openssl/x509.h>
#include <spdlog/spdlog.h>

#include <ctime>
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

// A certificate's validity date, e.g. "2031-03-01 12:00:00 UTC".
std::string utc_date(const ASN1_TIME* time) {
  std::tm tm{};
  if (ASN1_TIME_to_tm(time, &tm) != 1) return "an unreadable date";
  char text[32];
  std::strftime(text, sizeof(text), "%Y-%m-%d %H:%M:%S UTC", &tm);
  return text;
}

// Warns, naming --tls-cert, the file and the date, about each certificate of the chain that
// clients refuse today (expired, or not yet valid) or will refuse within kExpiryWarningDays: gRPC
// serves any certificate, and handshakes that every client fails say nothing on the server's side.
void warn_about_validity(const std::string& path, const std::string& chain) {
  constexpr int kExpiryWarningDays = 30;
  const Bio bio = read_only_bio(chain);
  for (int position = 1;; ++position) {
    const Certificate certificate{PEM_read_bio_X509(bio.get(), nullptr, no_passphrase, nullptr)};
    if (!certificate) break;
    const std::string which =
        "--tls-cert " + path + ": " +
        (position == 1 ? std::string("the certificate")
                       : "certificate " + std::to_string(position) + " of the chain");
    const ASN1_TIME* not_before = X509_get0_notBefore(certificate.get());
    const ASN1_TIME* not_after = X509_get0_notAfter(certificate.get());
    int days = 0;
    int seconds = 0;
    if (X509_cmp_current_time(not_before) > 0) {
      spdlog::warn("{} is not valid before {}: TLS clients refuse it until then", which,
                   utc_date(not_before));
    } else if (X509_cmp_current_time(not_after) < 0) {
      spdlog::warn("{} expired on {}: TLS clients refuse it", which, utc_date(not_after));
    } else if (ASN1_TIME_diff(&days, &seconds, nullptr, not_after) == 1 &&
               days < kExpiryWarningDays) {
      spdlog::warn("{} expires on {} (in {} days): TLS clients will refuse it then", which,
                   utc_date(not_after), days);
    }
  }
  ERR_clear_error();  // reading past the last certificate queued an error
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
  warn_about_validity(config.tls_cert, chain);
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
