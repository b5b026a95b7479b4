// What torqued-load sends: the model (registered from a URDF, or found by id or name), and a
// pool of requests with random states built once, before the timed run, both as serialized unary
// requests and as Session messages. Requests are built from the descriptors: any batched method
// of DynamicsService runs with no code of its own here when its request's double fields are
// states named q, v, a or tau. ControlService's Solve runs a built-in problem from random starts,
// or one problem read from a file; its Mpc streams state such a problem, then tick.
#pragma once

#include <google/protobuf/message.h>
#include <grpcpp/grpcpp.h>

#include <chrono>
#include <cstdint>
#include <memory>
#include <optional>
#include <random>
#include <string>
#include <vector>

#include "torqued/v1/control.pb.h"
#include "torqued/v1/dynamics.pb.h"
#include "torqued/v1/model.pb.h"

namespace torqued::load {

struct ModelChoice {
  std::string model;  // id or name
  std::string urdf;   // path; registered when set
  bool floating_base = false;
};

// The model's layout; throws std::runtime_error with a readable message.
v1::Model resolve_model(const std::shared_ptr<grpc::Channel>& channel, const ModelChoice& choice);

struct WorkloadSpec {
  std::string rpc;  // a batched method of DynamicsService, Solve or Mpc (known_rpcs())
  int batch = 1;    // Solve and Mpc: 1, one problem per call or stream
  // Solve and Mpc: the problem every call (stream) sends, its model_id replaced by the model's
  // id; unset: the built-in problem (make_workload) from a random start per request of the pool.
  std::optional<v1::SolveRequest> solve_request;
  // Mpc: FDDP's iterations per tick (MpcRequest.iterations; 0: unset, the server's one) and the
  // knots of dt each tick's time moves on.
  std::uint32_t mpc_iterations = 0;
  int mpc_shift = 1;
  int pool = 64;
  // Send Echo requests carrying the real requests' payload (model id and every number) instead.
  bool echo = false;
  // With echo: how many numbers each Echo answers with (EchoRequest.response_values), the count
  // of the real call's answer, so that Echo moves the real call's bytes both ways; 0: the
  // request's own numbers come back.
  std::uint32_t echo_response_values = 0;
  unsigned seed = 1;
};

struct Workload {
  // "/torqued.v1.DynamicsService/<rpc>" ("/torqued.v1.ControlService/Solve") for unary calls
  // (Echo with echo).
  std::string method;
  std::vector<grpc::ByteBuffer> unary_requests;
  // The same requests as Session messages, without model ids (the stream carries it once); empty
  // for a method no Session message carries (Solve, Mpc).
  std::vector<v1::SessionRequest> session_requests;
  // Mpc: per stream, in turn, its first message (a problem of the pool) and its ticks: the
  // problem's start (q0, v0) as the measured state, `tick_seconds` later at every tick (the driver
  // sets `time`). The problem's solve is not measured; each tick is a call. With echo, empty: the
  // Echo requests carry a tick's payload.
  std::vector<v1::MpcRequest> mpc_problems, mpc_ticks;
  double tick_seconds = 0.0;
  // An empty response of the right type, to parse unary responses into.
  const google::protobuf::Message* response_prototype = nullptr;
  int states_per_call = 1;
  std::size_t request_bytes = 0;  // serialized size of the first unary request (Mpc: tick)
};

// Each request sets model_id and batch_size and fills its repeated double fields by name: q with
// random valid configurations (add_random_configurations), v, a and tau with nv numbers in
// [-1, 1] per state; its other fields stay empty. Methods that need more say so in workload.cpp
// (HybridDynamics's inputs; Derivatives of inverse dynamics, ConstrainedDynamics in forward mode
// and Simulate's one step). ContactDynamics and Impact run without contacts. Solve's built-in
// problem takes the model from a random start (q0 a random configuration, v0 nv numbers in
// [-1, 1]) towards rest at its neutral configuration, every DOF actuated: the state (weight 1) and
// the controls (1e-3) regularized at every knot and the state (100) at the end, over the knots
// and the step of SolveRequest's `example` options. Mpc states the same problems. Throws
// std::runtime_error for an rpc that is not in known_rpcs(), and for Solve or Mpc with a batch
// other than 1.
Workload make_workload(const v1::Model& model, const WorkloadSpec& spec);

// A SolveRequest in protobuf JSON from the file at `path`; throws std::runtime_error naming the
// file when it cannot be read or parsed.
v1::SolveRequest read_solve_request(const std::string& path);

// The numbers in the answer to one real `spec.rpc` call of `spec.batch` states (every repeated
// double field; Mpc: a tick's, after its problem's): what an Echo standing in for that call should
// answer with. Throws std::runtime_error when the call fails.
std::uint32_t real_response_values(const std::shared_ptr<grpc::Channel>& channel,
                                   const v1::Model& model, WorkloadSpec spec);

// One unary call of `method` ("/package.Service/Method") with serialized `request`, by gRPC's
// generic stub; a call of a streaming method sends that one message and reads one answer.
grpc::Status call_raw(const std::shared_ptr<grpc::Channel>& channel, const std::string& method,
                      const grpc::ByteBuffer& request, grpc::ByteBuffer* answer,
                      std::chrono::system_clock::time_point deadline);

// Appends `states` random configurations of `model` to `out`: every coordinate in [-1, 1], then
// each spherical and free-flyer quaternion replaced by a random unit one.
void add_random_configurations(const v1::Model& model, int states, std::mt19937& rng,
                               google::protobuf::RepeatedField<double>* out);

// The methods make_workload() builds requests for, from the descriptors: every unary method of
// DynamicsService whose request has a model_id and a batch_size and a field in SessionRequest,
// then ControlService's Solve and Mpc.
const std::vector<std::string>& known_rpcs();

}  // namespace torqued::load
