// How the engine's errors and warnings quote a name that a model's author chose (in a URDF, a DH
// table or a request): bounded, so that a message still says what is wrong after a name of a
// megabyte; cut where a UTF-8 character ends, so that it stays text; and with control characters
// written as \xNN, since a NUL would end the message (what() is a C string) and a newline or an
// escape sequence would forge the lines of whoever prints it.
#pragma once

#include <cstddef>
#include <string>
#include <string_view>

namespace torqued {

// The longest prefix of `text` of at most `max_bytes` bytes that does not end inside a UTF-8
// character.
std::string_view utf8_prefix(std::string_view text, std::size_t max_bytes);

// `text` with its control characters (bytes below 0x20, and 0x7f) written as \xNN.
std::string printable(std::string_view text);

// `name` in single quotes, control characters as \xNN; of a name over 64 bytes, its first 64,
// "..." and its length: 'nnnn...' (1048576 bytes).
std::string quoted(std::string_view name);

}  // namespace torqued
