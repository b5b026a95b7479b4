// Bearer tokens: which calls need which token, checked from a call's metadata
// ("authorization: Bearer <token>") before any of its work.
//
// With --admin-token-file, ModelService.RegisterModel and DeleteModel (which change what every
// client sees) need that token. With --token-file every RPC needs that token or the admin token
// (and without an admin token, registration and deletion need this one), server reflection
// included: it describes the whole API. grpc.health.v1.Health is never checked: load balancers
// and Kubernetes' gRPC probes send no metadata.
//
// The check runs inside each service's handlers (UnaryCall, Session, the reflection streams) rather
// than in gRPC's AuthMetadataProcessor, which runs only on TLS ports, or an interceptor, which in
// gRPC 1.51 cannot fail a call: so plaintext and TLS ports behave alike, and a refusal is counted
// in grpc_server_handled_total with its status code like any other failure.
//
// Tokens are read once, at start, and kept only as SHA-256 digests; a presented token is hashed
// and compared with CRYPTO_memcmp, whose time does not depend on where the digests differ, and
// digests are of one length whatever the tokens' lengths, so timing reveals neither.
#pragma once

#include <grpcpp/grpcpp.h>

#include <array>
#include <cstddef>
#include <optional>

#include "server/base/config.hpp"
#include "server/base/rpc_methods.hpp"

namespace torqued::server {

// The longest token a token file may hold. A call carries its token in the header
// "authorization: Bearer <token>", which must fit the metadata limits of the server and of every
// client: gRPC's default for received metadata is 8 KiB for all of a call's headers together (the
// server accepts at least that much), so half of it is left for the token, and the rest for the
// other headers (path, authority, user agent, deadline, content type).
inline constexpr std::size_t kMaxTokenBytes = 4096;

class AccessControl {
 public:
  // Every call open.
  AccessControl() = default;
  // Reads the token files `config` names. Throws std::runtime_error naming the flag and the file
  // (never what it holds) when one cannot be read, is empty once its trailing newline is
  // stripped, holds a token longer than kMaxTokenBytes or other than printable ASCII (a token
  // travels in an HTTP/2 header), or when both files hold the same token.
  explicit AccessControl(const Config& config);

  // Whether any token is needed, and whether every call but health needs one.
  bool any_token() const { return admin_.has_value() || caller_.has_value(); }

  // OK when `method` may run for a call with `context`'s metadata; UNAUTHENTICATED when it needs
  // a token and carries none (or not as "Bearer <token>"); PERMISSION_DENIED when the token it
  // carries is not one that grants `method`. Messages name the flag, never a token.
  grpc::Status check(const grpc::ServerContextBase& context, MethodId method) const;

 private:
  using Digest = std::array<unsigned char, 32>;

  std::optional<Digest> admin_;   // --admin-token-file
  std::optional<Digest> caller_;  // --token-file
};

}  // namespace torqued::server
