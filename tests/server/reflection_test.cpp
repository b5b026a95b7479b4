// Tests server reflection (server/reflection_service.*) against the real torqued binary, as a
// client that has no .proto file uses it: under both package names (grpc.reflection.v1 and
// v1alpha) it lists the services, fetches the files of torqued's services with their imports,
// builds a descriptor pool from them alone and calls ListModels and Echo with dynamic messages of
// that pool. Unknown names are NOT_FOUND error responses and the stream goes on; a request that
// does not decode or is too large ends the stream; with --token-file a stream needs a token; a
// drain ends open streams at once; streams are counted in grpc_server_handled_total.
#include <google/protobuf/descriptor.pb.h>
#include <google/protobuf/descriptor_database.h>
#include <google/protobuf/dynamic_message.h>
#include <google/protobuf/util/message_differencer.h>
#include <grpcpp/generic/generic_stub.h>
#include <gtest/gtest.h>
#include <signal.h>
#include <sys/wait.h>

#include <fstream>
#include <set>
#include <sstream>

#include "clients/cpp/load/workload.hpp"
#include "grpc/reflection/v1/reflection.grpc.pb.h"
#include "grpc/reflection/v1alpha/reflection.grpc.pb.h"
#include "tests/server/server_process.hpp"

namespace torqued::testing {
namespace {

using google::protobuf::DescriptorPool;
using google::protobuf::FieldDescriptor;
using google::protobuf::Message;

// The protocol under each of its package names.
struct V1 {
  using Grpc = grpc::reflection::v1::ServerReflection;
  using Request = grpc::reflection::v1::ServerReflectionRequest;
  using Response = grpc::reflection::v1::ServerReflectionResponse;
  static constexpr const char* kService = "grpc.reflection.v1.ServerReflection";
};
struct V1alpha {
  using Grpc = grpc::reflection::v1alpha::ServerReflection;
  using Request = grpc::reflection::v1alpha::ServerReflectionRequest;
  using Response = grpc::reflection::v1alpha::ServerReflectionResponse;
  static constexpr const char* kService = "grpc.reflection.v1alpha.ServerReflection";
};

struct VersionNames {
  template <typename Version>
  static std::string GetName(int) {
    return std::is_same_v<Version, V1> ? "V1" : "V1alpha";
  }
};

// One ServerReflectionInfo stream.
template <typename Version>
class ReflectionClient {
 public:
  using Request = typename Version::Request;
  using Response = typename Version::Response;

  explicit ReflectionClient(const std::shared_ptr<grpc::Channel>& channel,
                            const std::string& authorization = "")
      : stub_(Version::Grpc::NewStub(channel)) {
    context_.set_deadline(deadline_in(60));
    if (!authorization.empty()) context_.AddMetadata("authorization", authorization);
    stream_ = stub_->ServerReflectionInfo(&context_);
  }

  // Writes `request` and reads its answer; false when the stream ended instead.
  bool ask(const Request& request, Response& response) {
    return stream_->Write(request) && stream_->Read(&response);
  }
  Response ask(const Request& request) {
    Response response;
    EXPECT_TRUE(ask(request, response)) << request.ShortDebugString();
    return response;
  }

  // Half-closes, then waits for the end.
  grpc::Status finish() {
    stream_->WritesDone();
    return end();
  }
  // Reads until the server ends the stream; its status.
  grpc::Status end() {
    for (Response ignored; stream_->Read(&ignored);) {
    }
    return stream_->Finish();
  }

 private:
  std::unique_ptr<typename Version::Grpc::Stub> stub_;
  grpc::ClientContext context_;
  std::unique_ptr<grpc::ClientReaderWriter<Request, Response>> stream_;
};

// The files of a FileDescriptorResponse, and a pool built from them alone.
class ReflectedPool {
 public:
  template <typename FileDescriptorResponse>
  explicit ReflectedPool(const FileDescriptorResponse& files) {
    for (const std::string& serialized : files.file_descriptor_proto()) {
      google::protobuf::FileDescriptorProto file;
      EXPECT_TRUE(file.ParseFromString(serialized));
      names_.push_back(file.name());
      // False for a file already added: the server sends each at most once per answer.
      EXPECT_TRUE(database_.Add(file)) << file.name();
    }
  }

  const std::vector<std::string>& file_names() const { return names_; }
  const DescriptorPool& pool() const { return pool_; }
  // A new message of type `type` of the pool.
  std::unique_ptr<Message> make(const google::protobuf::Descriptor* type) {
    return std::unique_ptr<Message>(factory_.GetPrototype(type)->New());
  }

 private:
  std::vector<std::string> names_;
  google::protobuf::SimpleDescriptorDatabase database_;
  // Builds each file from database_ when first asked for one of its names, its imports first.
  DescriptorPool pool_{&database_};
  google::protobuf::DynamicMessageFactory factory_{&pool_};
};

// Calls `method` (of the reflected pool) with `request`, a dynamic message; the answer, parsed
// as the method's output type.
std::unique_ptr<Message> call(const ServerProcess& server, ReflectedPool& reflected,
                              const google::protobuf::MethodDescriptor& method,
                              const Message& request, grpc::Status& status) {
  grpc::ByteBuffer request_bytes;
  bool own_buffer = false;
  const grpc::Status encoded = grpc::GenericSerialize<grpc::ProtoBufferWriter, Message>(
      request, &request_bytes, &own_buffer);
  EXPECT_TRUE(encoded.ok());
  grpc::ByteBuffer answer;
  status =
      load::call_raw(server.channel(), "/" + method.service()->full_name() + "/" + method.name(),
                     request_bytes, &answer, deadline_in(60));
  std::unique_ptr<Message> response = reflected.make(method.output_type());
  if (status.ok()) {
    const grpc::Status decoded =
        grpc::GenericDeserialize<grpc::ProtoBufferReader, Message>(&answer, response.get());
    EXPECT_TRUE(decoded.ok());
  }
  return response;
}

// grpc_server_handled_total of ServerReflectionInfo of `service` with `code`, -1 when absent.
double reflection_handled(const ServerProcess& server, const std::string& service,
                          const std::string& code) {
  std::istringstream page(http_get(server.metrics_port(), "/metrics"));
  for (std::string line; std::getline(page, line);) {
    if (line.rfind("grpc_server_handled_total{", 0) == 0 &&
        line.find("grpc_method=\"ServerReflectionInfo\"") != std::string::npos &&
        line.find("grpc_service=\"" + service + "\"") != std::string::npos &&
        line.find("grpc_type=\"bidi_stream\"") != std::string::npos &&
        line.find("grpc_code=\"" + code + "\"") != std::string::npos) {
      return std::stod(line.substr(line.rfind(' ') + 1));
    }
  }
  return -1;
}

template <typename Version>
class ReflectionTest : public ::testing::Test {
 protected:
  using Client = ReflectionClient<Version>;
  using Request = typename Version::Request;
  using Response = typename Version::Response;

  static void SetUpTestSuite() {
    temp_ = new TempDir;
    ServerProcess::Options options;
    options.data_dir = temp_->path() / "data";
    options.metrics = true;
    server_ = new ServerProcess(options);
  }
  static void TearDownTestSuite() {
    delete server_;
    delete temp_;
  }

  static Request symbol(const std::string& name) {
    Request request;
    request.set_host("localhost");
    request.set_file_containing_symbol(name);
    return request;
  }

  // The error code of an answer, or -1 when it is not an error.
  static int error_of(const Response& response) {
    return response.has_error_response() ? response.error_response().error_code() : -1;
  }

  static inline TempDir* temp_ = nullptr;
  static inline ServerProcess* server_ = nullptr;
};
using Versions = ::testing::Types<V1, V1alpha>;
TYPED_TEST_SUITE(ReflectionTest, Versions, VersionNames);

TYPED_TEST(ReflectionTest, ListsTheRegisteredServices) {
  ASSERT_TRUE(this->server_->running());
  typename TestFixture::Client client(this->server_->channel());
  typename TestFixture::Request request;
  request.set_host("torqued.example:443");
  request.set_list_services("*");
  const typename TestFixture::Response response = client.ask(request);
  EXPECT_EQ(response.valid_host(), "torqued.example:443");
  EXPECT_TRUE(
      google::protobuf::util::MessageDifferencer::Equals(response.original_request(), request));
  std::set<std::string> names;
  for (const auto& service : response.list_services_response().service()) {
    names.insert(service.name());
  }
  EXPECT_EQ(names, (std::set<std::string>{"grpc.health.v1.Health", "torqued.v1.ModelService",
                                          "torqued.v1.DynamicsService", "torqued.v1.ControlService",
                                          "grpc.reflection.v1.ServerReflection",
                                          "grpc.reflection.v1alpha.ServerReflection"}));
  EXPECT_TRUE(client.finish().ok());
}

// What grpcurl and its kin do: fetch the file of a service with its imports, build a pool from
// those files only, and call methods with dynamic messages of that pool.
TYPED_TEST(ReflectionTest, DescribesTheApiWellEnoughToCallIt) {
  ASSERT_TRUE(this->server_->running());
  typename TestFixture::Client client(this->server_->channel());
  const typename TestFixture::Response response =
      client.ask(TestFixture::symbol("torqued.v1.DynamicsService"));
  ASSERT_TRUE(response.has_file_descriptor_response()) << response.ShortDebugString();
  EXPECT_EQ(response.valid_host(), "localhost");
  ReflectedPool reflected(response.file_descriptor_response());
  // The service's file first, then what it imports: protobuf's descriptor.proto for the field
  // options dynamics.proto declares, and model.proto.
  EXPECT_EQ(reflected.file_names(), (std::vector<std::string>{"torqued/v1/dynamics.proto",
                                                              "google/protobuf/descriptor.proto",
                                                              "torqued/v1/model.proto"}));

  // Every method of both services, with its streaming and the full definition of its input and
  // output types, as the server's own (compiled-in) descriptors have them.
  for (const std::string service_name : {"torqued.v1.DynamicsService", "torqued.v1.ModelService"}) {
    const auto* service = reflected.pool().FindServiceByName(service_name);
    const auto* compiled = DescriptorPool::generated_pool()->FindServiceByName(service_name);
    ASSERT_NE(service, nullptr) << service_name;
    ASSERT_NE(compiled, nullptr) << service_name;
    EXPECT_GT(compiled->method_count(), 3);
    EXPECT_EQ(service->method_count(), compiled->method_count()) << service_name;
    for (int i = 0; i < compiled->method_count(); ++i) {
      const auto* expected = compiled->method(i);
      const auto* method = service->FindMethodByName(expected->name());
      ASSERT_NE(method, nullptr) << expected->full_name();
      EXPECT_EQ(method->client_streaming(), expected->client_streaming()) << method->full_name();
      EXPECT_EQ(method->server_streaming(), expected->server_streaming()) << method->full_name();
      EXPECT_EQ(method->input_type()->DebugString(), expected->input_type()->DebugString());
      EXPECT_EQ(method->output_type()->DebugString(), expected->output_type()->DebugString());
    }
  }
  const auto* session = reflected.pool().FindMethodByName("torqued.v1.DynamicsService.Session");
  ASSERT_NE(session, nullptr);
  EXPECT_TRUE(session->client_streaming() && session->server_streaming());
  EXPECT_EQ(session->input_type()->full_name(), "torqued.v1.SessionRequest");

  // ListModels, with an empty request: the bundled models are listed.
  const auto* list_models = reflected.pool().FindMethodByName("torqued.v1.ModelService.ListModels");
  ASSERT_NE(list_models, nullptr);
  EXPECT_EQ(list_models->input_type()->full_name(), "torqued.v1.ListModelsRequest");
  EXPECT_EQ(list_models->output_type()->full_name(), "torqued.v1.ListModelsResponse");
  grpc::Status status;
  const std::unique_ptr<Message> listed = call(*this->server_, reflected, *list_models,
                                               *reflected.make(list_models->input_type()), status);
  ASSERT_TRUE(status.ok()) << status.error_message();
  const FieldDescriptor* models = listed->GetDescriptor()->FindFieldByName("models");
  ASSERT_NE(models, nullptr);
  std::set<std::string> model_names;
  for (int i = 0; i < listed->GetReflection()->FieldSize(*listed, models); ++i) {
    const Message& summary = listed->GetReflection()->GetRepeatedMessage(*listed, models, i);
    const FieldDescriptor* name = summary.GetDescriptor()->FindFieldByName("name");
    ASSERT_NE(name, nullptr);
    model_names.insert(summary.GetReflection()->GetString(summary, name));
  }
  EXPECT_EQ(model_names.count("double_pendulum"), 1u) << listed->ShortDebugString();

  // Echo: bytes and numbers come back as sent.
  const auto* echo = reflected.pool().FindMethodByName("torqued.v1.DynamicsService.Echo");
  ASSERT_NE(echo, nullptr);
  std::unique_ptr<Message> ping = reflected.make(echo->input_type());
  const auto* request_type = echo->input_type();
  ping->GetReflection()->SetString(ping.get(), request_type->FindFieldByName("payload"),
                                   "described by reflection");
  for (const double value : {1.5, -2.25}) {
    ping->GetReflection()->AddDouble(ping.get(), request_type->FindFieldByName("values"), value);
  }
  const std::unique_ptr<Message> pong = call(*this->server_, reflected, *echo, *ping, status);
  ASSERT_TRUE(status.ok()) << status.error_message();
  const auto* response_type = echo->output_type();
  EXPECT_EQ(pong->GetReflection()->GetString(*pong, response_type->FindFieldByName("payload")),
            "described by reflection");
  const FieldDescriptor* values = response_type->FindFieldByName("values");
  ASSERT_EQ(pong->GetReflection()->FieldSize(*pong, values), 2);
  EXPECT_EQ(pong->GetReflection()->GetRepeatedDouble(*pong, values, 0), 1.5);
  EXPECT_EQ(pong->GetReflection()->GetRepeatedDouble(*pong, values, 1), -2.25);
  EXPECT_TRUE(client.finish().ok());
}

// A client that knows ControlService only from reflection solves a problem: the bundled double
// pendulum from a bent state to rest at its neutral configuration.
TYPED_TEST(ReflectionTest, SolvesAProblemKnownOnlyThroughReflection) {
  ASSERT_TRUE(this->server_->running());
  typename TestFixture::Client client(this->server_->channel());
  const typename TestFixture::Response response =
      client.ask(TestFixture::symbol("torqued.v1.ControlService"));
  ASSERT_TRUE(response.has_file_descriptor_response()) << response.ShortDebugString();
  ReflectedPool reflected(response.file_descriptor_response());
  EXPECT_EQ(reflected.file_names().front(), "torqued/v1/control.proto");

  // The pendulum's id, from ListModels (model.proto came with control.proto's imports).
  const auto* list_models = reflected.pool().FindMethodByName("torqued.v1.ModelService.ListModels");
  ASSERT_NE(list_models, nullptr);
  grpc::Status status;
  const std::unique_ptr<Message> listed = call(*this->server_, reflected, *list_models,
                                               *reflected.make(list_models->input_type()), status);
  ASSERT_TRUE(status.ok()) << status.error_message();
  const FieldDescriptor* models = listed->GetDescriptor()->FindFieldByName("models");
  std::string id;
  for (int i = 0; i < listed->GetReflection()->FieldSize(*listed, models); ++i) {
    const Message& summary = listed->GetReflection()->GetRepeatedMessage(*listed, models, i);
    const auto* type = summary.GetDescriptor();
    if (summary.GetReflection()->GetString(summary, type->FindFieldByName("name")) ==
        "double_pendulum") {
      id = summary.GetReflection()->GetString(summary, type->FindFieldByName("id"));
    }
  }
  ASSERT_FALSE(id.empty()) << listed->ShortDebugString();

  const auto* solve = reflected.pool().FindMethodByName("torqued.v1.ControlService.Solve");
  ASSERT_NE(solve, nullptr);
  std::unique_ptr<Message> request = reflected.make(solve->input_type());
  const auto* type = solve->input_type();
  const auto* r = request->GetReflection();
  r->SetString(request.get(), type->FindFieldByName("model_id"), id);
  for (const double q : {0.6, -0.4}) r->AddDouble(request.get(), type->FindFieldByName("q0"), q);
  for (int i = 0; i < 2; ++i) r->AddDouble(request.get(), type->FindFieldByName("v0"), 0.0);
  r->SetUInt32(request.get(), type->FindFieldByName("knots"), 50);
  r->SetDouble(request.get(), type->FindFieldByName("dt"), 0.02);
  const auto* residual_types = reflected.pool().FindEnumTypeByName("torqued.v1.ResidualType");
  ASSERT_NE(residual_types, nullptr);
  // Running: the state and the controls regularized; terminal: the state, weighed 100.
  const auto add_term = [&](const char* list, const char* residual, double weight) {
    Message* term = r->AddMessage(request.get(), type->FindFieldByName(list));
    const auto* term_type = term->GetDescriptor();
    Message* residual_message =
        term->GetReflection()->MutableMessage(term, term_type->FindFieldByName("residual"));
    residual_message->GetReflection()->SetEnum(
        residual_message, residual_message->GetDescriptor()->FindFieldByName("type"),
        residual_types->FindValueByName(residual));
    term->GetReflection()->SetDouble(term, term_type->FindFieldByName("weight"), weight);
  };
  add_term("running_costs", "RESIDUAL_TYPE_STATE", 1.0);
  add_term("running_costs", "RESIDUAL_TYPE_CONTROL", 1e-3);
  add_term("terminal_costs", "RESIDUAL_TYPE_STATE", 100.0);
  const std::unique_ptr<Message> solution =
      call(*this->server_, reflected, *solve, *request, status);
  ASSERT_TRUE(status.ok()) << status.error_message();
  const auto* answer = solution->GetDescriptor();
  const auto* s = solution->GetReflection();
  EXPECT_EQ(s->GetEnum(*solution, answer->FindFieldByName("stop_reason"))->name(),
            "STOP_REASON_CONVERGED");
  const FieldDescriptor* q = answer->FindFieldByName("q");
  ASSERT_EQ(s->FieldSize(*solution, q), 51 * 2);
  // Near rest at the neutral configuration at the end.
  EXPECT_LT(std::abs(s->GetRepeatedDouble(*solution, q, 100)), 0.1);
  EXPECT_LT(std::abs(s->GetRepeatedDouble(*solution, q, 101)), 0.1);
  EXPECT_TRUE(client.finish().ok());
}

// Every kind of symbol finds its file; files are found by name; the reflection service
// describes itself.
TYPED_TEST(ReflectionTest, FindsFilesBySymbolAndByName) {
  ASSERT_TRUE(this->server_->running());
  typename TestFixture::Client client(this->server_->channel());
  const std::pair<std::string, std::string> symbols[] = {
      {"torqued.v1.ModelService", "torqued/v1/model.proto"},
      {"torqued.v1.DynamicsService.Echo", "torqued/v1/dynamics.proto"},
      {"torqued.v1.EchoRequest", "torqued/v1/dynamics.proto"},
      {"torqued.v1.EchoRequest.payload", "torqued/v1/dynamics.proto"},
      {"grpc.health.v1.HealthCheckResponse.ServingStatus", "grpc/health/v1/health.proto"},
      {"grpc.health.v1.HealthCheckResponse.SERVING", "grpc/health/v1/health.proto"},
      {"grpc.health.v1.Health.Watch", "grpc/health/v1/health.proto"},
      {TypeParam::kService, "grpc/reflection/" +
                                std::string(std::is_same_v<TypeParam, V1> ? "v1" : "v1alpha") +
                                "/reflection.proto"},
  };
  for (const auto& [name, file] : symbols) {
    const auto response = client.ask(TestFixture::symbol(name));
    ASSERT_TRUE(response.has_file_descriptor_response()) << name;
    google::protobuf::FileDescriptorProto first;
    ASSERT_TRUE(
        first.ParseFromString(response.file_descriptor_response().file_descriptor_proto(0)));
    EXPECT_EQ(first.name(), file) << name;
    EXPECT_EQ(response.original_request().file_containing_symbol(), name);
  }
  typename TestFixture::Request by_name;
  by_name.set_file_by_filename("torqued/v1/model.proto");
  const auto response = client.ask(by_name);
  ReflectedPool reflected(response.file_descriptor_response());
  EXPECT_EQ(reflected.file_names(), std::vector<std::string>{"torqued/v1/model.proto"});
  EXPECT_NE(reflected.pool().FindMessageTypeByName("torqued.v1.ListModelsResponse"), nullptr);
  EXPECT_TRUE(client.finish().ok());
}

// Unknown names are NOT_FOUND error responses that echo the request, and the stream goes on;
// torqued's extensions are the field options of dynamics.proto.
TYPED_TEST(ReflectionTest, AnswersWhatItCannotFindWithErrorResponses) {
  ASSERT_TRUE(this->server_->running());
  typename TestFixture::Client client(this->server_->channel());
  const auto not_found = [&](const typename TestFixture::Request& request) {
    const auto response = client.ask(request);
    EXPECT_EQ(TestFixture::error_of(response), static_cast<int>(grpc::StatusCode::NOT_FOUND))
        << request.ShortDebugString() << " -> " << response.ShortDebugString();
    EXPECT_FALSE(response.error_response().error_message().empty());
    EXPECT_TRUE(
        google::protobuf::util::MessageDifferencer::Equals(response.original_request(), request));
  };
  not_found(TestFixture::symbol("torqued.v1.NoSuchService"));
  not_found(TestFixture::symbol("torqued.v1.DynamicsService.NoSuchMethod"));
  not_found(TestFixture::symbol(""));
  // In the process's pool (protobuf's own), but neither a file of the served services nor one
  // they import.
  not_found(TestFixture::symbol("google.protobuf.Duration"));
  typename TestFixture::Request request;
  request.set_file_by_filename("torqued/v1/no_such.proto");
  not_found(request);
  request.set_file_by_filename("google/protobuf/duration.proto");
  not_found(request);
  request.mutable_file_containing_extension()->set_containing_type("torqued.v1.EchoRequest");
  request.mutable_file_containing_extension()->set_extension_number(100);
  not_found(request);
  request.mutable_file_containing_extension()->set_containing_type("torqued.v1.NoSuchType");
  not_found(request);
  request.set_all_extension_numbers_of_type("torqued.v1.NoSuchType");
  not_found(request);

  request.set_all_extension_numbers_of_type("torqued.v1.EchoRequest");
  auto response = client.ask(request);
  ASSERT_TRUE(response.has_all_extension_numbers_response()) << response.ShortDebugString();
  EXPECT_EQ(response.all_extension_numbers_response().base_type_name(), "torqued.v1.EchoRequest");
  EXPECT_EQ(response.all_extension_numbers_response().extension_number_size(), 0);
  request.set_all_extension_numbers_of_type("google.protobuf.FieldOptions");
  response = client.ask(request);
  ASSERT_TRUE(response.has_all_extension_numbers_response()) << response.ShortDebugString();
  const auto& numbers = response.all_extension_numbers_response().extension_number();
  EXPECT_EQ(std::set<int>(numbers.begin(), numbers.end()), (std::set<int>{50001, 50002}));
  request.mutable_file_containing_extension()->set_containing_type("google.protobuf.FieldOptions");
  request.mutable_file_containing_extension()->set_extension_number(50001);
  response = client.ask(request);
  ASSERT_TRUE(response.has_file_descriptor_response()) << response.ShortDebugString();
  google::protobuf::FileDescriptorProto declaring;
  ASSERT_TRUE(
      declaring.ParseFromString(response.file_descriptor_response().file_descriptor_proto(0)));
  EXPECT_EQ(declaring.name(), "torqued/v1/dynamics.proto");

  // No request set (or one of a later version of the protocol, which decodes as none).
  request.Clear();
  response = client.ask(request);
  EXPECT_EQ(TestFixture::error_of(response), static_cast<int>(grpc::StatusCode::UNIMPLEMENTED));

  request.set_list_services("");
  response = client.ask(request);
  EXPECT_EQ(response.list_services_response().service_size(), 6);
  EXPECT_TRUE(client.finish().ok());
}

// A request that does not decode, or longer than a request can usefully be, ends the stream.
TYPED_TEST(ReflectionTest, EndsTheStreamOnARequestThatIsNotOne) {
  ASSERT_TRUE(this->server_->running());
  const std::string path = std::string("/") + TypeParam::kService + "/ServerReflectionInfo";
  const auto send = [&](const std::string& bytes) {
    grpc::Slice slice(bytes);
    const grpc::ByteBuffer request(&slice, 1);
    grpc::ByteBuffer answer;
    return load::call_raw(this->server_->channel(), path, request, &answer, deadline_in(60));
  };
  // Field 3 (file_by_filename) says 100 bytes follow; 2 do.
  const grpc::Status truncated = send(std::string("\x1a\x64tq", 4));
  EXPECT_EQ(truncated.error_code(), grpc::StatusCode::INVALID_ARGUMENT);
  EXPECT_NE(truncated.error_message().find("ServerReflectionRequest"), std::string::npos)
      << truncated.error_message();

  typename TestFixture::Request large;
  large.set_host(std::string(5000, 'h'));
  large.set_list_services("*");
  const grpc::Status refused = send(large.SerializeAsString());
  EXPECT_EQ(refused.error_code(), grpc::StatusCode::RESOURCE_EXHAUSTED);
  EXPECT_NE(refused.error_message().find("limit of 4096 bytes"), std::string::npos)
      << refused.error_message();

  typename TestFixture::Request small;
  small.set_host(std::string(1000, 'h'));
  small.set_list_services("*");
  EXPECT_TRUE(send(small.SerializeAsString()).ok());
}

TYPED_TEST(ReflectionTest, CountsStreamsInTheMetrics) {
  ASSERT_TRUE(this->server_->running());
  const double before = reflection_handled(*this->server_, TypeParam::kService, "OK");
  ASSERT_GE(before, 0);
  {
    typename TestFixture::Client client(this->server_->channel());
    typename TestFixture::Request request;
    request.set_list_services("*");
    client.ask(request);
    EXPECT_TRUE(client.finish().ok());
  }
  EXPECT_EQ(reflection_handled(*this->server_, TypeParam::kService, "OK"), before + 1);
}

TEST(ReflectionTokenTest, TheStreamNeedsTheTokenOfTokenFile) {
  TempDir temp;
  const std::string caller_file = (temp.path() / "caller.token").string();
  const std::string admin_file = (temp.path() / "admin.token").string();
  std::ofstream(caller_file) << "caller-7fQ2mW9xK4";
  std::ofstream(admin_file) << "admin-3Lp8vR1nZ6";
  ServerProcess::Options options;
  options.data_dir = temp.path() / "data";
  options.metrics = true;
  options.extra_args = {"--token-file=" + caller_file, "--admin-token-file=" + admin_file};
  ServerProcess server(options);
  ASSERT_TRUE(server.running());
  V1alpha::Request list;
  list.set_list_services("*");
  V1alpha::Response response;
  {
    // Checked once, when the stream opens: refused, it ends before any request is answered.
    ReflectionClient<V1alpha> client(server.channel());
    EXPECT_FALSE(client.ask(list, response));
    const grpc::Status status = client.finish();
    EXPECT_EQ(status.error_code(), grpc::StatusCode::UNAUTHENTICATED);
    EXPECT_NE(status.error_message().find("--token-file"), std::string::npos)
        << status.error_message();
  }
  {
    ReflectionClient<V1alpha> client(server.channel(), "Bearer not-the-token");
    EXPECT_FALSE(client.ask(list, response));
    EXPECT_EQ(client.finish().error_code(), grpc::StatusCode::PERMISSION_DENIED);
  }
  for (const std::string token : {"caller-7fQ2mW9xK4", "admin-3Lp8vR1nZ6"}) {
    ReflectionClient<V1alpha> client(server.channel(), "Bearer " + token);
    ASSERT_TRUE(client.ask(list, response));
    EXPECT_EQ(response.list_services_response().service_size(), 6);
    EXPECT_TRUE(client.finish().ok());
  }
  {
    ReflectionClient<V1> client(server.channel());
    V1::Request request;
    request.set_list_services("*");
    V1::Response ignored;
    EXPECT_FALSE(client.ask(request, ignored));
    EXPECT_EQ(client.finish().error_code(), grpc::StatusCode::UNAUTHENTICATED);
  }
  EXPECT_EQ(reflection_handled(server, V1alpha::kService, "UNAUTHENTICATED"), 1);
  EXPECT_EQ(reflection_handled(server, V1alpha::kService, "PERMISSION_DENIED"), 1);
  EXPECT_EQ(reflection_handled(server, V1alpha::kService, "OK"), 2);
  EXPECT_EQ(reflection_handled(server, V1::kService, "UNAUTHENTICATED"), 1);
  const std::string log = server.log();
  EXPECT_NE(log.find("server reflection on (grpc.reflection.v1 and v1alpha): it needs the token"),
            std::string::npos)
      << log;
  EXPECT_EQ(log.find("caller-7fQ2mW9xK4"), std::string::npos);
}

// A drain ends an open stream at once rather than at the drain deadline.
TEST(ReflectionDrainTest, AnOpenStreamDoesNotHoldTheShutdown) {
  TempDir temp;
  ServerProcess::Options options;
  options.data_dir = temp.path() / "data";
  options.extra_args = {"--drain-seconds=100"};
  ServerProcess server(options);
  ASSERT_TRUE(server.running());
  ReflectionClient<V1alpha> client(server.channel());
  V1alpha::Request list;
  list.set_list_services("*");
  V1alpha::Response response;
  ASSERT_TRUE(client.ask(list, response));

  const auto start = std::chrono::steady_clock::now();
  server.signal(SIGTERM);
  const grpc::Status status = client.end();
  EXPECT_EQ(status.error_code(), grpc::StatusCode::UNAVAILABLE) << status.error_message();
  const int exit_status = server.wait_exit(60);
  const double seconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  ASSERT_TRUE(WIFEXITED(exit_status)) << server.log();
  EXPECT_EQ(WEXITSTATUS(exit_status), 0);
  EXPECT_LT(seconds, 30.0) << server.log();
}

}  // namespace
}  // namespace torqued::testing
