// Bearer-token checks (see access_tokens.hpp).
#include "server/transport/access_tokens.hpp"

#include <openssl/crypto.h>
#include <openssl/sha.h>

#include <algorithm>
#include <cctype>
#include <iterator>
#include <stdexcept>
#include <string>
#include <string_view>

namespace torqued::server {
namespace {

using Digest = std::array<unsigned char, 32>;

bool hash(std::string_view bytes, Digest& digest) {
  return SHA256(reinterpret_cast<const unsigned char*>(bytes.data()), bytes.size(),
                digest.data()) != nullptr;
}

bool same(const Digest& a, const Digest& b) {
  return CRYPTO_memcmp(a.data(), b.data(), a.size()) == 0;
}

// The token of a file: its content less trailing line ends.
Digest read_token(const std::string& flag, const std::string& path) {
  std::string token = read_flag_file(flag, path);
  while (!token.empty() && (token.back() == '\n' || token.back() == '\r')) token.pop_back();
  const auto invalid = [&](const std::string& why) {
    return std::runtime_error("--" + flag + " " + path + ": " + why);
  };
  if (token.empty()) throw invalid("is empty; it must hold the token");
  if (token.size() > kMaxTokenBytes) {
    throw invalid("the token is " + std::to_string(token.size()) +
                  " bytes, more than the limit of " + std::to_string(kMaxTokenBytes) +
                  " (a call's metadata must hold it)");
  }
  if (!std::all_of(token.begin(), token.end(), [](char c) { return c > ' ' && c < 0x7f; })) {
    throw invalid(
        "the token must be printable ASCII without spaces (it travels in an HTTP/2 header)");
  }
  Digest digest{};
  if (!hash(token, digest)) throw invalid("the token cannot be hashed (SHA-256)");
  return digest;
}

// The token of the call's one "authorization: Bearer <token>" entry (the scheme's case does not
// matter, RFC 7235 §2.1); nothing when there is none, or more than one.
std::optional<std::string_view> bearer_token(
    const std::multimap<grpc::string_ref, grpc::string_ref>& metadata) {
  const auto [first, last] = metadata.equal_range(grpc::string_ref("authorization"));
  if (first == last || std::next(first) != last) return std::nullopt;
  std::string_view value(first->second.data(), first->second.size());
  constexpr std::string_view kScheme = "bearer ";
  if (value.size() <= kScheme.size() ||
      !std::equal(kScheme.begin(), kScheme.end(), value.begin(), [](char scheme, char given) {
        return scheme == std::tolower(static_cast<unsigned char>(given));
      })) {
    return std::nullopt;
  }
  value.remove_prefix(kScheme.size());
  value.remove_prefix(std::min(value.find_first_not_of(' '), value.size()));
  if (value.empty()) return std::nullopt;
  return value;
}

}  // namespace

AccessControl::AccessControl(const Config& config) {
  if (!config.admin_token_file.empty()) {
    admin_ = read_token("admin-token-file", config.admin_token_file);
  }
  if (!config.token_file.empty()) caller_ = read_token("token-file", config.token_file);
  if (admin_ && caller_ && same(*admin_, *caller_)) {
    throw std::runtime_error(
        "--admin-token-file and --token-file hold the same token: every caller could register "
        "and delete models");
  }
}

grpc::Status AccessControl::check(const grpc::ServerContextBase& context, MethodId method) const {
  // The methods that change what every client sees.
  static const MethodId kRegister = method_id("torqued.v1.ModelService", "RegisterModel");
  static const MethodId kDelete = method_id("torqued.v1.ModelService", "DeleteModel");
  const bool needs_admin = admin_ && (method == kRegister || method == kDelete);
  if (!needs_admin && !caller_) return grpc::Status::OK;
  const std::string needs =
      rpc_method(method).name + (needs_admin ? " needs the admin token (--admin-token-file)"
                                             : " needs a token (--token-file)");
  const std::optional<std::string_view> token = bearer_token(context.client_metadata());
  if (!token) {
    return {grpc::StatusCode::UNAUTHENTICATED,
            needs + " in one metadata entry \"authorization: Bearer <token>\""};
  }
  Digest presented{};
  const bool hashed = hash(*token, presented);
  // Both comparisons run whichever token is needed.
  const bool admin = admin_ && same(presented, *admin_);
  const bool caller = caller_ && same(presented, *caller_);
  if (hashed && (admin || (caller && !needs_admin))) return grpc::Status::OK;
  return {grpc::StatusCode::PERMISSION_DENIED, needs + "; the call's bearer token is not it"};
}

}  // namespace torqued::server
