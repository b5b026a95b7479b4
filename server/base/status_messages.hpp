// The statuses a client reads, written one way everywhere: a bad input, a limit passed (naming the
// limit's flag), a client's own text quoted in a bounded way.
#pragma once

#include <grpcpp/support/status.h>

#include <cstdint>
#include <string>
#include <string_view>

namespace torqued::server {

// INVALID_ARGUMENT with `message`.
grpc::Status invalid(const std::string& message);

// RESOURCE_EXHAUSTED for a request past a server limit, naming the limit's flag:
// "contacts: 300 exceeds the server's limit of 256 (--max-contacts)".
grpc::Status over_limit(const std::string& what, std::int64_t value, std::int64_t limit,
                        const char* flag);

// A name or id that a client chose, for a status message: quoted, with at most 64 of its bytes
// (a longer one ends with "..." and gives its length), so that a 1 MB id cannot make a status
// too large to send.
std::string quote_input(std::string_view text);

}  // namespace torqued::server
