// TLS material and tokens from files and the environment, as torquectl and torqued-load take
// them. The client's variables differ from the server's own TORQUED_TLS_CERT and TORQUED_TLS_KEY
// (its identity), so that a client run in the server's environment does not present the server's
// certificate as its own.
#pragma once

#include <string>

#include "torqued/client.hpp"

namespace torqued::client {

// File names from a command line; an empty one takes its environment variable instead.
struct CredentialFiles {
  std::string tls_ca;    // $TORQUED_TLS_CA: the CA certificates that sign servers'
  std::string tls_cert;  // $TORQUED_TLS_CLIENT_CERT: a client certificate (mutual TLS)
  std::string tls_key;   // $TORQUED_TLS_CLIENT_KEY: its private key
  std::string
      tls_server_name;     // $TORQUED_TLS_SERVER_NAME: a name, not a file (server_name_override)
  std::string token_file;  // $TORQUED_TOKEN_FILE; else the token itself in $TORQUED_TOKEN
};

// Sets options.tls when a CA or a client certificate is given (TLS is off otherwise), and
// options.token. Throws std::invalid_argument for a certificate without its key (or a key
// without its certificate), std::runtime_error naming a file that cannot be read or is empty.
void apply_credential_files(const CredentialFiles& files, ClientOptions& options);

// A token file's token: the file less its trailing line end. Throws std::runtime_error naming the
// file when it cannot be read or holds no token.
std::string read_token_file(const std::string& path);

}  // namespace torqued::client
