// torqued's C++ client: the ModelService, DynamicsService and ControlService RPCs with Eigen
// batches in and out, per-call deadlines, retries on UNAVAILABLE and transparent re-registration of
// models that a server does not hold (a replica that never saw them, or one that lost them).
// Depends on gRPC, protobuf and Eigen only, never on the engine.
//
// Batches: one state per row, so q is (batch, nq) and v, a, tau are (batch, nv); any Eigen
// matrix converts (a single state is a 1 × n row, e.g. `q.transpose()`). Results come back the
// same way, and per-state matrices (mass matrix, derivatives, Jacobians) as one matrix per state.
//
// Errors: every failed call throws torqued::client::Error carrying the gRPC status code and the
// server's message (exceptions rather than an expected-like result, so that a chain of calls in
// a planner reads straight and nothing is dropped unchecked).
//
// Thread safety: a Client may be shared by threads; every method is safe to call concurrently.
// A Session stream (Client::session) is one caller's (see Session).
#pragma once

#include <google/protobuf/descriptor.h>
#include <grpcpp/grpcpp.h>

#include <Eigen/Core>
#include <chrono>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <stdexcept>
#include <string>
#include <vector>

#include "grpc/health/v1/health.grpc.pb.h"
#include "torqued/v1/control.grpc.pb.h"
#include "torqued/v1/dynamics.grpc.pb.h"
#include "torqued/v1/model.grpc.pb.h"

// Eigen matrices cross this library's boundary both ways (results are allocated here and freed
// by the caller), so the caller's code must allocate Eigen's heap memory as the library does.
// Eigen uses malloc when it does not vectorize (EIGEN_DONT_VECTORIZE, this project's default) or
// aligns to 16 bytes (SSE, glibc), and its own aligned allocator otherwise (AVX: -mavx or
// -march=native on an AVX machine; also any vectorized build under AddressSanitizer). Mixing the
// two frees memory the wrong way. Each file including this header refers to the tag of its own
// allocator and the library defines only the tag it was built with, so a mismatch fails to link
// (undefined torqued::client::abi::eigen_heap_...) instead of corrupting the heap at run time.
// The fix: build the library with the same flags as the code using it (CMake passes this
// project's Eigen definitions on to whatever links torqued_client), or define
// EIGEN_DONT_VECTORIZE in that code. Fixed-size Eigen members of the types below (Vector3d,
// Matrix3d) have no alignment requirement in any configuration.
#if EIGEN_DEFAULT_ALIGN_BYTES == 0 || EIGEN_MALLOC_ALREADY_ALIGNED
#define TORQUED_CLIENT_EIGEN_HEAP eigen_heap_malloc
#else
#define TORQUED_CLIENT_EIGEN_HEAP eigen_heap_aligned
#endif

namespace torqued::client {

namespace abi {
extern const int TORQUED_CLIENT_EIGEN_HEAP;
[[maybe_unused]] inline const int eigen_heap_check = TORQUED_CLIENT_EIGEN_HEAP;
}  // namespace abi

namespace v1 = torqued::v1;

// A batch: one state (or one result) per row, row-major like the wire.
using Matrix = Eigen::Matrix<double, Eigen::Dynamic, Eigen::Dynamic, Eigen::RowMajor>;
using MatrixRef = Eigen::Ref<const Matrix>;
// One matrix per state (mass matrices, derivatives, Jacobians...).
using Matrices = std::vector<Matrix>;

// A failed call: the gRPC status code and message, what() is "CODE_NAME: message".
class Error : public std::runtime_error {
 public:
  Error(grpc::StatusCode code, const std::string& message);
  grpc::StatusCode code() const { return code_; }
  const std::string& message() const { return message_; }

 private:
  grpc::StatusCode code_;
  std::string message_;
};

// "UNAVAILABLE", "NOT_FOUND", ... for a status code.
std::string status_code_name(grpc::StatusCode code);

// TLS for the channel: PEM text, not file names (credentials.hpp reads files).
struct TlsOptions {
  // The CA certificates that sign the servers' certificates; empty: the system's roots.
  std::string root_certificates;
  // A client certificate chain and its private key, for servers that require mutual TLS
  // (--tls-client-ca); both or neither.
  std::string certificate_chain;
  std::string private_key;
  // The name the server's certificate is checked against instead of the target's host: for a
  // server reached by an address its certificate does not name (tests, port forwarding).
  std::string server_name_override;
};

struct ClientOptions {
  // A gRPC target: "host:port", "dns:///host:port" (every address the name resolves to) or
  // "ipv4:10.0.0.1:50051,10.0.0.2:50051"; calls are spread over the addresses by the
  // load-balancing policy.
  std::string target = "localhost:50051";
  std::string load_balancing_policy = "round_robin";
  // Time a call may take, retries and re-registration included, unless the call says otherwise.
  std::chrono::nanoseconds deadline = std::chrono::seconds(30);
  // Retries on UNAVAILABLE (a server starting, draining or unreachable), and on CANCELLED,
  // which this client never asks for: a server shutting down cancels the calls it has received
  // but not started (every RPC is idempotent, so they are safe to send again). At most max_attempts
  // attempts in all, waiting initial_backoff, then multiplier times longer each time up to
  // max_backoff (each wait jittered to 50-100% so that clients spread out), never past the
  // call's deadline. Each retry resets the channel's own reconnection backoff, so that a server
  // that comes back is seen at the next attempt.
  int max_attempts = 8;
  std::chrono::nanoseconds initial_backoff = std::chrono::milliseconds(50);
  std::chrono::nanoseconds max_backoff = std::chrono::seconds(2);
  double backoff_multiplier = 2.0;
  // When a server answers NOT_FOUND for a model this client registered, register it again and
  // retry: in rounds (at most max_attempts, within the deadline) that register once more each
  // time, so that under round_robin the registrations reach the replica the retry lands on.
  bool reregister = true;
  // Largest message sent or received; -1: no limit (the server has its own).
  int max_message_bytes = -1;
  // TLS; unset: plaintext.
  std::optional<TlsOptions> tls;
  // A bearer token sent with every call as metadata "authorization: Bearer <token>" (servers
  // started with --token-file or --admin-token-file ask for one); empty: none.
  std::string token;
  // Large batches over several replicas: a DynamicsService batch is cut into at most
  // split_parts parts of contiguous states, each of at least split_min_states states, sent at
  // once (round_robin hands each to the next replica) and joined back in order, bitwise what
  // one call returns. 1: never split.
  int split_parts = 1;
  int split_min_states = 1000;
};

// The channel Client(options) makes: to options.target, TLS when options.tls is set, the token
// on every call, with the options' load-balancing and message-size settings.
std::shared_ptr<grpc::Channel> make_channel(const ClientOptions& options);

// Per-call settings; unset fields take the client's.
struct CallOptions {
  std::optional<std::chrono::nanoseconds> deadline;
};

// Optional wrenches on the moving bodies: (batch, 6 · (bodies − 1)), for each body in
// Model.bodies[1..] order [force; torque] in its frame at its origin. Empty: none.
struct InverseDynamicsOptions {
  Matrix external_forces;
  v1::InverseDynamicsAlgorithm algorithm = v1::INVERSE_DYNAMICS_ALGORITHM_RNEA;
};

struct ForwardDynamicsOptions {
  Matrix external_forces;
  v1::ForwardDynamicsAlgorithm algorithm = v1::FORWARD_DYNAMICS_ALGORITHM_ABA;
};

struct ForwardDynamicsResult {
  Matrix a;                                // (batch, nv)
  v1::ForwardDynamicsAlgorithm algorithm;  // the one that ran (AUTO resolved)
};

struct MassMatrixOptions {
  bool inverse = false;
  v1::MassMatrixAlgorithm algorithm = v1::MASS_MATRIX_ALGORITHM_CRBA;
};

struct MassMatrixResult {
  Matrices mass_matrix;  // nv × nv per state
  Matrices inverse;      // nv × nv per state; empty unless requested
};

struct KinematicsOptions {
  // Frame references (Model.frames: a name, or KIND:NAME for a name a link and a joint share;
  // docs/api.md, "Frames"); empty: every frame.
  std::vector<std::string> frames;
  v1::ReferenceFrame reference = v1::REFERENCE_FRAME_LOCAL;
  bool jacobians = false;
};

struct KinematicsResult {
  std::vector<std::string> frames;                      // F names, in result order
  Matrices positions;                                   // F × 3 per state, world frame
  std::vector<std::vector<Eigen::Matrix3d>> rotations;  // [state][frame], columns = frame axes
  Matrices velocities;                                  // F × 6 per state; empty without v
  std::vector<Matrices> jacobians;  // [state][frame] 6 × nv; empty unless asked
};

// Accelerations and forces of every DOF (HybridDynamics, FloatingBaseInverseDynamics).
struct AccelerationsAndForces {
  Matrix a;    // (batch, nv)
  Matrix tau;  // (batch, nv)
};

struct DerivativesResult {
  Matrices d_dq;  // ∂τ/∂q or ∂a/∂q, nv × nv per state (tangent space)
  Matrices d_dv;  // ∂τ/∂v or ∂a/∂v
  Matrices d_du;  // ∂τ/∂a = M or ∂a/∂τ (M⁻¹ without constraints)
  // DERIVATIVES_OF_CONSTRAINED_DYNAMICS only (empty otherwise): λ (batch, rows) laid out as
  // `rows` says, and ∂λ/∂q, ∂λ/∂v, ∂λ/∂τ, rows × nv per state.
  Matrix multipliers;
  Matrices dmultipliers_dq, dmultipliers_dv, dmultipliers_dtau;
  std::vector<v1::ConstraintRows> rows;  // the model's loop closures, then the constraints
};

struct CentroidalResult {
  Matrix com;                // (batch, 3)
  Matrix com_velocity;       // (batch, 3)
  Matrices com_jacobian;     // 3 × nv per state
  Matrix momentum;           // (batch, 6): [linear; angular about the centre of mass]
  Matrices momentum_matrix;  // 6 × nv per state
};

// The model's loop closures always apply; `constraints` follow them.
struct ConstrainedDynamicsOptions {
  v1::ConstrainedDynamicsMode mode = v1::CONSTRAINED_DYNAMICS_MODE_FORWARD;
  // CONSTRAINED_DYNAMICS_MODE_INVERSE only: nv entries, DOF_INPUT_ACCELERATION for an actuated
  // DOF, DOF_INPUT_FORCE for a passive one.
  std::vector<v1::DofInput> inputs;
  std::vector<v1::Constraint> constraints;
  v1::BaumgarteGains gains;
};

struct ConstrainedDynamicsResult {
  Matrix a;            // (batch, nv)
  Matrix multipliers;  // (batch, rows): λ, laid out as `rows` says
  Matrix tau;          // (batch, nv) with CONSTRAINED_DYNAMICS_MODE_INVERSE; (batch, 0) otherwise
  std::vector<v1::ConstraintRows> rows;  // the model's loop closures, then the constraints
};

struct EchoResult {
  std::string payload;
  Eigen::VectorXd values;
};

// Contacts (ContactDynamics, Impact, Simulate): a frame or link of the model names the body.
struct PointContact {
  std::string frame;
  Eigen::Vector3d point = Eigen::Vector3d::Zero();    // in the frame, metres
  Eigen::Vector3d normal = Eigen::Vector3d::UnitZ();  // unit, world frame, into the body
  double friction = 0.0;                              // Coulomb μ; 0 is frictionless
};

// Unset fields take the server's defaults (see ContactSolverOptions in dynamics.proto).
struct ContactSolverOptions {
  std::optional<double> tolerance;
  std::optional<std::uint32_t> max_iterations;
  std::optional<double> slip_velocity;
};

struct ContactResult {
  Matrix velocities;  // (batch, nv): a (contact_dynamics) or v after the impact (impact)
  Matrices forces;    // C × 3 per state: forces (N) or impulses (N·s), world frame
  std::vector<std::vector<v1::ContactMode>> modes;  // [state][contact]
  std::vector<v1::ContactSolverStatus> status;      // per state
  std::vector<std::uint32_t> iterations;            // per state
  Eigen::VectorXd residual;                         // per state
};

struct ContactCandidate {
  std::string frame;
  Eigen::Vector3d point = Eigen::Vector3d::Zero();  // in the frame, metres
};

struct SimulateOptions {
  std::uint32_t steps = 1;
  std::optional<double> time_step;  // seconds; default 1e-3
  v1::Integrator integrator = v1::INTEGRATOR_SEMI_IMPLICIT_EULER;
  // Empty (no torque), (batch, nv) held, or (batch, steps · nv) one per step.
  Matrix tau;
  double ground_height = 0.0;
  double ground_friction = 0.0;
  double ground_restitution = 0.0;
  std::vector<ContactCandidate> candidates;  // none: contact-free
  std::optional<double> contact_margin;
  std::optional<double> stabilization;
  std::optional<double> restitution_velocity;
  ContactSolverOptions solver;
};

struct SimulateResult {
  Matrices q;  // (steps, nq) per initial state: the state after each step
  Matrices v;  // (steps, nv) per initial state
  std::vector<v1::ContactSolverStatus> status;  // worst over the steps, per initial state
  std::vector<std::uint32_t> max_iterations;
  Eigen::VectorXd max_residual;
  std::vector<std::uint32_t> max_contacts;
};

// Linearize: the step, its actuation and what to return beside Fx and Fu.
struct LinearizeOptions {
  double dt = 0.0;  // seconds, > 0; required
  v1::Integrator integrator = v1::INTEGRATOR_SEMI_IMPLICIT_EULER;
  v1::ActuationKind actuation = v1::ACTUATION_KIND_ALL;
  std::vector<std::string> actuated_joints;  // ACTUATION_KIND_JOINTS: the joints u drives
  bool continuous_derivatives = false;       // also ∂a/∂q, ∂a/∂v, ∂a/∂τ at each knot
  // Rigid contacts (bilateral constraints) holding the robot at every knot, as
  // ConstrainedDynamicsOptions takes them; the model's loop closures hold it in any case.
  std::vector<v1::Constraint> constraints;
  v1::BaumgarteGains gains;  // their stabilization; none by default
  // A contact schedule instead of constraints: each knot held by its phase's contacts, a phase
  // that adds a contact beginning with its touchdown (dynamics.proto, ContactPhase).
  std::vector<v1::ContactPhase> phases;
  // Set: each knot's friction-cone residuals and their derivatives (KnotValues).
  std::optional<v1::FrictionCone> friction_cone;
};

// What a call with phases or a friction cone gives per knot, whose sizes change with the phase:
// one entry per knot (per step of a rollout).
struct KnotValues {
  std::vector<Eigen::VectorXd> multipliers;  // λ, the knot's phase's rows (when returned)
  Matrices dmultipliers_dq, dmultipliers_dv, dmultipliers_dtau;  // rows × nv (Linearize)
  std::map<int, Eigen::VectorXd> impulses;                       // at the touchdown knots
  // Each contact's cone residuals (contacts × (1 + faces)), and their derivatives along x and u
  // (contacts (1 + faces) × 2nv and × nu; Rollout's with jacobians).
  Matrices friction_cones, dfriction_cones_dx, dfriction_cones_du;
  std::vector<std::vector<v1::ConstraintRows>> phase_rows;  // each phase's λ layout
};

// One entry per knot; x = (q, v) has 2 nv tangent coordinates, δq then δv.
struct LinearizeResult {
  Matrix q_next;                   // (knots, nq), on the manifold
  Matrix v_next;                   // (knots, nv)
  Matrices fx;                     // ∂x⁺/∂x, 2nv × 2nv per knot
  Matrices fu;                     // ∂x⁺/∂u, 2nv × nu per knot
  Matrices da_dq, da_dv, da_dtau;  // nv × nv per knot, with continuous_derivatives; else empty
  // With continuous_derivatives and constraint rows (else empty): λ at each knot (knots, rows)
  // laid out as `rows` says, and ∂λ/∂q, ∂λ/∂v, ∂λ/∂τ, rows × nv per knot.
  Matrix multipliers;
  Matrices dmultipliers_dq, dmultipliers_dv, dmultipliers_dtau;
  std::vector<v1::ConstraintRows> rows;  // the model's loop closures, then the constraints
  // With phases or a friction cone; with phases λ is here only (multipliers above empty).
  std::optional<KnotValues> knots;
};

// Rollout: the step as Linearize takes it, the feedback, and what to return beside the states.
struct RolloutOptions {
  double dt = 0.0;  // seconds, > 0; required
  v1::Integrator integrator = v1::INTEGRATOR_SEMI_IMPLICIT_EULER;
  v1::ActuationKind actuation = v1::ACTUATION_KIND_ALL;
  std::vector<std::string> actuated_joints;  // ACTUATION_KIND_JOINTS: the joints u drives
  std::vector<v1::Constraint> constraints;   // rigid contacts, as LinearizeOptions takes them
  v1::BaumgarteGains gains;
  std::vector<v1::ContactPhase> phases;           // or a contact schedule, as LinearizeOptions
  std::optional<v1::FrictionCone> friction_cone;  // and the cones, as LinearizeOptions
  // Feedback u_k = ū_k + K_k (x_k ⊖ x̄_k), shared by the rollouts: x̄ as (knots, nq) and
  // (knots, nv), and K_k (nu × 2 nv) per knot. All empty: open loop.
  Matrix q_nominal, v_nominal;
  Matrices feedback;
  bool jacobians = false;           // also Fx and Fu of every step
  std::vector<std::string> frames;  // placements of these frames at every state
  bool frame_jacobians = false;     // and their Jacobians, expressed as `reference` says
  v1::ReferenceFrame reference = v1::REFERENCE_FRAME_LOCAL;
};

// One rollout of K steps: its K + 1 states and K controls. A rollout that diverged took fewer
// steps, its values past them are zeros, and `error` says why.
struct RolloutTrajectory {
  int steps = 0;       // K, or the steps taken before it diverged
  std::string error;   // empty when it completed
  Matrix q;            // (knots + 1, nq), x₀ first, on the manifold
  Matrix v;            // (knots + 1, nv)
  Matrix u;            // (knots, nu), the controls applied, feedback included
  Matrices fx, fu;     // 2nv × 2nv and 2nv × nu per step, with options.jacobians; else empty
  Matrix multipliers;  // (knots, rows): λ at each step's state; empty without constraint rows
  std::optional<KnotValues> knots;  // with phases (λ then here only) or a friction cone
  Matrices frame_positions;         // F × 3 per state
  std::vector<std::vector<Eigen::Matrix3d>> frame_rotations;  // [state][frame]
  std::vector<Matrices> frame_jacobians;  // [state][frame] 6 × nv; empty unless asked
};

struct RolloutResult {
  std::vector<RolloutTrajectory> rollouts;  // one per row of q0
  std::vector<std::string> frames;          // the frames reported, in order
  std::vector<v1::ConstraintRows> rows;     // the model's loop closures, then the constraints
};

// The solution of an optimal-control problem (Client::solve) over T running knots.
struct SolveResult {
  Matrix q;  // (T + 1, nq): x_0 ... x_T
  Matrix v;  // (T + 1, nv)
  Matrix u;  // (T, nu)
  // With the request's `feedback`: the gains K_t, nu × 2 nv per knot, of the local policy
  // u_t(x) = u_t + K_t (x ⊖ x_t) in Linearize's tangent coordinates, as RolloutOptions::feedback
  // takes them; else empty.
  Matrices feedback;
  v1::StopReason stop_reason = v1::STOP_REASON_UNSPECIFIED;
  std::vector<v1::SolverIteration> iterations;  // in order
  double cost = 0.0;
  // Each term's part, running terms then terminal ones in the request's order (a running term
  // and a terminal one may share a name).
  std::vector<v1::CostValue> cost_terms;
  double max_gap = 0.0;  // the largest remaining gap; 0 when feasible
  bool feasible = false;
  double solve_seconds = 0.0;  // the server's compute time
};

// Sets a repeated double field of a request to `values`, row by row: a SolveRequest's q0 and v0,
// a residual's reference, an activation's weights or bounds.
void copy_values(const MatrixRef& values, google::protobuf::RepeatedField<double>* field);

// Makes `solution` the request's initial guess (a warm start): its states and controls, marked
// feasible when it was and it starts at the request's x̂₀ (from another start its gaps are for
// FDDP to close).
void warm_start(const SolveResult& solution, v1::SolveRequest& request);

// torqued.v1.ModelService, DynamicsService and ControlService: the API this client covers, method
// by method.
const std::vector<const google::protobuf::ServiceDescriptor*>& services();

// The method of services() named `name` ("InverseDynamics", "ListModels"...); null when there is
// none.
const google::protobuf::MethodDescriptor* find_method(const std::string& name);

// A DynamicsService.Session stream (Client::session, see dynamics.proto): write() sends
// SessionRequests, read() returns their SessionResponses in the order they were sent (a request
// that fails is answered with its status and the stream goes on), writes_done() half-closes and
// finish() waits for the end of the stream. The call's deadline bounds the whole stream (give a
// control loop a long one), and the client's token and TLS go with it. A stream is not retried
// and does not re-register models: a message on a model the server lacks is answered NOT_FOUND
// in its status. One thread may write while another reads (to keep several messages in flight);
// otherwise a Session is used by one thread at a time. It lives no longer than its Client.
class Session {
 public:
  Session(Session&&) noexcept = default;
  Session& operator=(Session&&) noexcept = default;
  // Cancels the stream unless finish() ended it.
  ~Session();

  // Sends one message; false when the stream has ended (finish() says why).
  bool write(const v1::SessionRequest& request);
  // The answer to the earliest message not yet answered; false when the stream has ended.
  bool read(v1::SessionResponse* response);
  // No more messages: the server ends the stream once it has answered those sent.
  void writes_done();
  // Half-closes (unless writes_done() did), discards the answers not read, and waits for the end
  // of the stream; throws Error unless it ended OK.
  void finish();

 private:
  friend class Client;
  Session(v1::DynamicsService::Stub& stub, std::chrono::system_clock::time_point deadline);

  std::unique_ptr<grpc::ClientContext> context_;
  std::unique_ptr<grpc::ClientReaderWriter<v1::SessionRequest, v1::SessionResponse>> stream_;
  bool writes_done_ = false;
};

// A ControlService.Mpc stream (Client::mpc, see control.proto): the problem stated once and
// re-solved at each tick's measured state, warm-started from the last solution shifted by the
// knots elapsed. Client::mpc sends the problem and waits for its answer (first()); tick() sends a
// message and waits for its answer, throwing Error with the message's status when it failed (the
// stream goes on with the problem it had) or the stream's when it ended. The deadline bounds the
// whole stream; a stream is not retried and does not re-register its model. One thread uses it
// at a time; it lives no longer than its Client.
class Mpc {
 public:
  Mpc(Mpc&&) noexcept = default;
  Mpc& operator=(Mpc&&) noexcept = default;
  // Cancels the stream unless finish() ended it.
  ~Mpc();

  // The answer to the problem's statement.
  const v1::MpcResponse& first() const { return first_; }
  // Sends `request` (numbered by the stream: its sequence is set) and returns its answer.
  v1::MpcResponse tick(v1::MpcRequest request);
  // Half-closes and waits for the end of the stream; throws Error unless it ended OK.
  void finish();

 private:
  friend class Client;
  Mpc(v1::ControlService::Stub& stub, std::chrono::system_clock::time_point deadline,
      const v1::MpcRequest& start);

  std::unique_ptr<grpc::ClientContext> context_;
  std::unique_ptr<grpc::ClientReaderWriter<v1::MpcRequest, v1::MpcResponse>> stream_;
  std::uint64_t sequence_ = 0;
  v1::MpcResponse first_;
};

class Client {
 public:
  // Over make_channel(options).
  explicit Client(ClientOptions options = {});
  // Over an existing channel (options.target, the channel settings, tls and token are then
  // unused: the channel carries its own).
  Client(std::shared_ptr<grpc::Channel> channel, ClientOptions options);

  const ClientOptions& options() const { return options_; }
  const std::shared_ptr<grpc::Channel>& channel() const { return channel_; }

  // ModelService. register_model remembers the request behind the returned id, for
  // re-registration; delete_model forgets it (a model this client deleted stays deleted).
  v1::Model register_model(const v1::RegisterModelRequest& request, const CallOptions& call = {});
  v1::Model get_model(const std::string& model_id, const CallOptions& call = {});
  // Every model, sorted by name then id: ListModels pages are fetched until the last, all within
  // the call's deadline.
  std::vector<v1::ModelSummary> list_models(const CallOptions& call = {});
  void delete_model(const std::string& model_id, const CallOptions& call = {});

  // grpc.health.v1.Health.Check of `service` ("" is the server as a whole).
  grpc::health::v1::HealthCheckResponse::ServingStatus health(const std::string& service = "",
                                                              const CallOptions& call = {});

  // DynamicsService: one method per RPC (see dynamics.proto for each one's meaning).
  Matrix inverse_dynamics(const std::string& model_id, const MatrixRef& q, const MatrixRef& v,
                          const MatrixRef& a, const InverseDynamicsOptions& options = {},
                          const CallOptions& call = {});
  ForwardDynamicsResult forward_dynamics(const std::string& model_id, const MatrixRef& q,
                                         const MatrixRef& v, const MatrixRef& tau,
                                         const ForwardDynamicsOptions& options = {},
                                         const CallOptions& call = {});
  MassMatrixResult mass_matrix(const std::string& model_id, const MatrixRef& q,
                               const MassMatrixOptions& options = {}, const CallOptions& call = {});
  Matrix nonlinear_effects(const std::string& model_id, const MatrixRef& q, const MatrixRef& v,
                           const CallOptions& call = {});
  Matrix gravity(const std::string& model_id, const MatrixRef& q, const CallOptions& call = {});
  // `v` may be empty (0 columns): no velocities then.
  KinematicsResult kinematics(const std::string& model_id, const MatrixRef& q, const MatrixRef& v,
                              const KinematicsOptions& options = {}, const CallOptions& call = {});
  // `inputs`: nv entries, what each DOF gives; `a` and `tau` are read where it says so.
  AccelerationsAndForces hybrid_dynamics(const std::string& model_id, const MatrixRef& q,
                                         const MatrixRef& v,
                                         const std::vector<v1::DofInput>& inputs,
                                         const MatrixRef& a, const MatrixRef& tau,
                                         const Matrix& external_forces = {},
                                         const CallOptions& call = {});
  AccelerationsAndForces floating_base_inverse_dynamics(const std::string& model_id,
                                                        const MatrixRef& q, const MatrixRef& v,
                                                        const MatrixRef& a,
                                                        const Matrix& external_forces = {},
                                                        const CallOptions& call = {});
  // `u` is a for DERIVATIVES_OF_INVERSE_DYNAMICS and tau otherwise; `constraints` and `gains`
  // with DERIVATIVES_OF_CONSTRAINED_DYNAMICS only, as ConstrainedDynamicsOptions has them.
  DerivativesResult derivatives(const std::string& model_id, v1::DerivativesOf of,
                                const MatrixRef& q, const MatrixRef& v, const MatrixRef& u,
                                const Matrix& external_forces = {},
                                const std::vector<v1::Constraint>& constraints = {},
                                const v1::BaumgarteGains& gains = {}, const CallOptions& call = {});
  Matrices coriolis_matrix(const std::string& model_id, const MatrixRef& q, const MatrixRef& v,
                           const CallOptions& call = {});
  CentroidalResult centroidal(const std::string& model_id, const MatrixRef& q, const MatrixRef& v,
                              const CallOptions& call = {});
  // `a` is read with CONSTRAINED_DYNAMICS_MODE_INVERSE only (empty, 0 columns, otherwise).
  ConstrainedDynamicsResult constrained_dynamics(const std::string& model_id, const MatrixRef& q,
                                                 const MatrixRef& v, const MatrixRef& a,
                                                 const MatrixRef& tau,
                                                 const ConstrainedDynamicsOptions& options = {},
                                                 const CallOptions& call = {});
  EchoResult echo(const std::string& payload, const Eigen::VectorXd& values,
                  const CallOptions& call = {});
  // Contacts: the same contacts for every state of the batch.
  ContactResult contact_dynamics(const std::string& model_id, const MatrixRef& q,
                                 const MatrixRef& v, const MatrixRef& tau,
                                 const std::vector<PointContact>& contacts,
                                 const ContactSolverOptions& solver = {},
                                 const CallOptions& call = {});
  // `v`: the velocities just before the impact; `restitution` in [0, 1].
  ContactResult impact(const std::string& model_id, const MatrixRef& q, const MatrixRef& v,
                       const std::vector<PointContact>& contacts, double restitution,
                       const ContactSolverOptions& solver = {}, const CallOptions& call = {});
  // One trajectory per row of q0, v0.
  SimulateResult simulate(const std::string& model_id, const MatrixRef& q0, const MatrixRef& v0,
                          const SimulateOptions& options, const CallOptions& call = {});

  // The discrete step and its Jacobians at each knot (row) of q, v and u (nu columns, as
  // options.actuation makes nu).
  LinearizeResult linearize(const std::string& model_id, const MatrixRef& q, const MatrixRef& v,
                            const MatrixRef& u, const LinearizeOptions& options,
                            const CallOptions& call = {});

  // Shooting forward passes, one per row of q0 and v0, each under its own controls u[r]
  // (knots × nu), with the feedback of options.
  RolloutResult rollout(const std::string& model_id, const MatrixRef& q0, const MatrixRef& v0,
                        const Matrices& u, const RolloutOptions& options,
                        const CallOptions& call = {});

  // ControlService.Solve: the optimal-control problem as control.proto states it, its model_id
  // re-registered as the dynamics methods' are. The call's deadline bounds the solve: near it the
  // server answers its best iterate so far (STOP_REASON_TIME_BUDGET), not an error, so a long
  // problem needs a long deadline.
  SolveResult solve(const v1::SolveRequest& request, const CallOptions& call = {});

  // A Session stream, its deadline the call's (see Session).
  Session session(const CallOptions& call = {});
  // An Mpc stream on `start` (its problem, and the first solve's time, iterations, budget and
  // plan), its deadline the call's (see Mpc). Throws Error when the first solve fails.
  Mpc mpc(const v1::MpcRequest& start, const CallOptions& call = {});

  // Any unary method of services() (find_method) on messages of its input and output types,
  // generated or dynamic, so that a new RPC is callable before it has a method of its own here.
  // As the typed methods: retries, the deadline, and re-registration of a model this client
  // registered when the request names it in its model_id field. Throws std::invalid_argument for
  // a streaming method or messages of other types.
  void call_method(const google::protobuf::MethodDescriptor& method,
                   const google::protobuf::Message& request, google::protobuf::Message* response,
                   const CallOptions& call = {});

 private:
  // Runs `rpc(context)` with retries on UNAVAILABLE and CANCELLED until `deadline`; the last
  // status.
  template <typename Rpc>
  grpc::Status call_with_retries(std::chrono::system_clock::time_point deadline, Rpc rpc);
  // call_with_retries within the call's deadline; throws Error unless it succeeds.
  template <typename Rpc>
  void call(const CallOptions& call, Rpc rpc);
  // As call(), plus re-registration and retries (see ClientOptions::reregister) when the server
  // answers NOT_FOUND for `model_id` and this client registered it.
  template <typename Rpc>
  void call_model(const std::string& model_id, const CallOptions& call, Rpc rpc);
  // call_model for a DynamicsService batch, split across replicas as options_ say.
  template <typename Request, typename Response>
  void call_batch(const std::string& model_id, const CallOptions& call, Request& request,
                  Response* response,
                  grpc::Status (v1::DynamicsService::Stub::*method)(grpc::ClientContext*,
                                                                    const Request&, Response*));
  std::chrono::system_clock::time_point deadline_of(const CallOptions& call) const;

  ClientOptions options_;
  std::shared_ptr<grpc::Channel> channel_;
  std::unique_ptr<v1::ModelService::Stub> models_;
  std::unique_ptr<v1::DynamicsService::Stub> dynamics_;
  std::unique_ptr<v1::ControlService::Stub> control_;
  std::unique_ptr<grpc::health::v1::Health::Stub> health_;
  std::mutex registered_mutex_;
  std::map<std::string, v1::RegisterModelRequest> registered_;
};

}  // namespace torqued::client
