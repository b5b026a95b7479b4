// Credentials from files and the environment (see credentials.hpp).
#include "torqued/credentials.hpp"

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <stdexcept>

namespace torqued::client {
namespace {

std::string or_environment(const std::string& value, const char* variable) {
  if (!value.empty()) return value;
  const char* set = std::getenv(variable);
  return set == nullptr ? "" : set;
}

// The whole of a file that must not be empty (an empty CA file would silently mean the system's
// roots).
std::string read_text_file(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in || std::filesystem::is_directory(path)) {
    throw std::runtime_error(path + ": cannot be read");
  }
  std::ostringstream text;
  text << in.rdbuf();
  if (text.str().empty()) throw std::runtime_error(path + ": is empty");
  return text.str();
}

}  // namespace

std::string read_token_file(const std::string& path) {
  std::string token = read_text_file(path);
  while (!token.empty() && (token.back() == '\n' || token.back() == '\r')) token.pop_back();
  if (token.empty()) throw std::runtime_error(path + ": holds no token");
  return token;
}

void apply_credential_files(const CredentialFiles& files, ClientOptions& options) {
  const std::string ca = or_environment(files.tls_ca, "TORQUED_TLS_CA");
  const std::string cert = or_environment(files.tls_cert, "TORQUED_TLS_CLIENT_CERT");
  const std::string key = or_environment(files.tls_key, "TORQUED_TLS_CLIENT_KEY");
  if (cert.empty() != key.empty()) {
    throw std::invalid_argument(
        "a client certificate and its key go together (--tls-cert and --tls-key)");
  }
  if (!ca.empty() || !cert.empty()) {
    TlsOptions tls;
    if (!ca.empty()) tls.root_certificates = read_text_file(ca);
    if (!cert.empty()) {
      tls.certificate_chain = read_text_file(cert);
      tls.private_key = read_text_file(key);
    }
    tls.server_name_override = or_environment(files.tls_server_name, "TORQUED_TLS_SERVER_NAME");
    options.tls = std::move(tls);
  }
  const std::string token_file = or_environment(files.token_file, "TORQUED_TOKEN_FILE");
  if (!token_file.empty()) {
    options.token = read_token_file(token_file);
  } else if (const char* token = std::getenv("TORQUED_TOKEN"); token != nullptr && *token) {
    options.token = token;
  }
}

}  // namespace torqued::client
