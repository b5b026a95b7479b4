// TLS on the gRPC port from PEM files (--tls-cert, --tls-key, --tls-client-ca). The files are
// read and checked with OpenSSL before gRPC sees them, so that a bad one stops the server at
// start with a message naming it, rather than leaving a port open whose every handshake fails.
#pragma once

#include <grpcpp/security/server_credentials.h>

#include <memory>

#include "server/base/config.hpp"

namespace torqued::server {

// Plaintext without --tls-cert; TLS with the certificate chain and its key; and with
// --tls-client-ca, mutual TLS: a client must present a certificate that one of those CA
// certificates signed, or its handshake fails. Throws std::runtime_error naming the flag and the
// file that cannot be read (or is not a regular file), holds no PEM certificate or key, or whose
// key is not the certificate's. Logs a warning (spdlog) naming the file and the date when a
// certificate of the --tls-cert chain has expired, is not valid yet, or expires within 30 days.
std::shared_ptr<grpc::ServerCredentials> make_server_credentials(const Config& config);

}  // namespace torqued::server
