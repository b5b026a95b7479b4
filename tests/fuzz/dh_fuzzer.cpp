// libFuzzer target: Denavit-Hartenberg tables in the model repository's text format (a
// RegisterModelRequest in protobuf text format, as deploy/models/*.dh.txtpb), through the
// server's conversion (server/models/model_from_request.cpp) to the engine's DhTable, dh_to_spec()
// (engine/io/dh.cpp) and build_model(). Text reaches every double a table can hold (nan, inf,
// -0, 1e-320) by editing digits. Input that does not parse, or holds no DH table, is skipped;
// a table must come out as a model or a non-OK status.
#include <google/protobuf/io/tokenizer.h>
#include <google/protobuf/text_format.h>

#include <cstddef>
#include <cstdint>
#include <string>

#include "server/models/model_from_request.hpp"
#include "server/app/server.hpp"

namespace {

// Parse errors are expected on most inputs: not printed.
class IgnoreErrors : public google::protobuf::io::ErrorCollector {
 public:
  void AddError(int, google::protobuf::io::ColumnNumber, const std::string&) override {}
};

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  IgnoreErrors ignore;
  google::protobuf::TextFormat::Parser parser;
  parser.RecordErrorsTo(&ignore);
  torqued::v1::RegisterModelRequest request;
  const std::string text(reinterpret_cast<const char*>(data), size);
  if (!parser.ParseFromString(text, &request) || !request.has_dh()) return 0;
  torqued::server::BuiltModel built;
  torqued::server::build_from_request(
      request, torqued::server::model_limits(torqued::server::Config{}), built);
  return 0;
}
