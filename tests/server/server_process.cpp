// Child-process management and small helpers for the server tests (see server_process.hpp).
#include "tests/server/server_process.hpp"

#include <arpa/inet.h>
#include <fcntl.h>
#include <gtest/gtest.h>
#include <netinet/in.h>
#include <signal.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cmath>
#include <fstream>
#include <random>
#include <regex>
#include <sstream>
#include <thread>

#include "clients/cpp/load/workload.hpp"

namespace torqued::testing {

TempDir::TempDir() {
  std::string pattern = (std::filesystem::temp_directory_path() / "torqued-test-XXXXXX").string();
  if (::mkdtemp(pattern.data()) == nullptr) throw std::runtime_error("mkdtemp failed");
  path_ = pattern;
}

TempDir::~TempDir() {
  std::error_code ignored;
  std::filesystem::remove_all(path_, ignored);
}

int free_port() {
  const int fd = ::socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  addr.sin_port = 0;
  socklen_t length = sizeof(addr);
  if (::bind(fd, reinterpret_cast<sockaddr*>(&addr), sizeof(addr)) != 0 ||
      ::getsockname(fd, reinterpret_cast<sockaddr*>(&addr), &length) != 0) {
    ::close(fd);
    throw std::runtime_error("cannot find a free port");
  }
  ::close(fd);
  return ntohs(addr.sin_port);
}

std::string http_get(int port, const std::string& target) {
  const int fd = ::socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  addr.sin_port = htons(static_cast<std::uint16_t>(port));
  timeval timeout{10, 0};
  ::setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &timeout, sizeof(timeout));
  if (::connect(fd, reinterpret_cast<sockaddr*>(&addr), sizeof(addr)) != 0) {
    ::close(fd);
    return "";
  }
  const std::string request = "GET " + target + " HTTP/1.0\r\nHost: 127.0.0.1\r\n\r\n";
  if (::send(fd, request.data(), request.size(), 0) != static_cast<ssize_t>(request.size())) {
    ::close(fd);
    return "";
  }
  std::string response;
  char buffer[4096];
  ssize_t n;
  while ((n = ::recv(fd, buffer, sizeof(buffer), 0)) > 0) response.append(buffer, n);
  ::close(fd);
  const std::size_t body = response.find("\r\n\r\n");
  return body == std::string::npos ? "" : response.substr(body + 4);
}

std::string repository_dir() { return TORQUED_TEST_REPOSITORY; }
std::string torqued_binary() { return TORQUED_TEST_BINARY; }

std::chrono::system_clock::time_point deadline_in(double seconds) {
  return std::chrono::system_clock::now() +
         std::chrono::duration_cast<std::chrono::system_clock::duration>(
             std::chrono::duration<double>(seconds));
}

ServerProcess::ServerProcess(Options options) : ServerProcess(std::move(options), true) {}

ServerProcess::ServerProcess(Options options, bool wait) : options_(std::move(options)) {
  log_path_ = options_.data_dir.parent_path() /
              (options_.data_dir.filename().string() + "-torqued-" + std::to_string(::getpid()) +
               "-" + std::to_string(free_port()) + ".log");
  for (int attempt = 0; attempt < 3; ++attempt) {
    if (!spawn()) break;
    if (!wait) return;
    if (wait_serving(60.0)) return;
    // A port taken between the probe and the bind makes the server exit: try new ports.
    if (pid_ > 0) {
      ::kill(pid_, SIGKILL);
      wait_exit(10.0);
    }
  }
  ADD_FAILURE() << "torqued did not become SERVING; its log:\n" << log();
}

std::unique_ptr<ServerProcess> ServerProcess::launch(Options options) {
  return std::unique_ptr<ServerProcess>(new ServerProcess(std::move(options), false));
}

ServerProcess::~ServerProcess() {
  if (pid_ > 0) {
    ::kill(pid_, SIGKILL);
    wait_exit(30.0);
  }
  std::error_code ignored;
  std::filesystem::remove(log_path_, ignored);
}

bool ServerProcess::spawn() {
  port_ = options_.port > 0 ? options_.port : free_port();
  metrics_port_ = options_.metrics ? free_port() : 0;
  std::vector<std::string> args = {torqued_binary(),
                                   "--address=" + options_.address,
                                   "--port=" + std::to_string(port_),
                                   "--metrics-address=127.0.0.1",
                                   "--metrics-port=" + std::to_string(metrics_port_),
                                   "--data-dir=" + options_.data_dir.string(),
                                   "--model-repository=" + options_.repository};
  args.insert(args.end(), options_.extra_args.begin(), options_.extra_args.end());
  const pid_t pid = ::fork();
  if (pid < 0) return false;
  if (pid == 0) {
    const int fd = ::open(log_path_.c_str(), O_WRONLY | O_CREAT | O_APPEND, 0644);
    ::dup2(fd, 1);
    ::dup2(fd, 2);
    sigset_t none;
    sigemptyset(&none);
    ::sigprocmask(SIG_SETMASK, &none, nullptr);
    std::vector<char*> argv;
    for (std::string& a : args) argv.push_back(a.data());
    argv.push_back(nullptr);
    ::execv(argv[0], argv.data());
    ::_exit(127);
  }
  pid_ = pid;
  return true;
}

bool ServerProcess::wait_listening(double timeout_seconds) {
  const auto end = deadline_in(timeout_seconds);
  while (std::chrono::system_clock::now() < end) {
    int status = 0;
    if (::waitpid(pid_, &status, WNOHANG) == pid_) {
      pid_ = -1;
      return false;
    }
    const int fd = ::socket(AF_INET, SOCK_STREAM, 0);
    sockaddr_in addr{};
    addr.sin_family = AF_INET;
    ::inet_pton(AF_INET, options_.address.c_str(), &addr.sin_addr);
    addr.sin_port = htons(static_cast<std::uint16_t>(port_));
    const bool connected = ::connect(fd, reinterpret_cast<sockaddr*>(&addr), sizeof(addr)) == 0;
    ::close(fd);
    if (connected) {
      // Only now the channel: one made earlier would sit in reconnect backoff for seconds.
      grpc::ChannelArguments channel_args;
      channel_args.SetMaxReceiveMessageSize(-1);
      channel_args.SetMaxSendMessageSize(-1);
      channel_ =
          grpc::CreateCustomChannel(address(), grpc::InsecureChannelCredentials(), channel_args);
      return true;
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  return false;
}

bool ServerProcess::wait_serving(double timeout_seconds) {
  const auto end = deadline_in(timeout_seconds);
  if (!wait_listening(timeout_seconds)) return false;
  auto stub = health();
  while (std::chrono::system_clock::now() < end) {
    int status = 0;
    if (::waitpid(pid_, &status, WNOHANG) == pid_) {
      pid_ = -1;
      return false;
    }
    grpc::ClientContext context;
    context.set_deadline(deadline_in(1.0));
    grpc::health::v1::HealthCheckResponse response;
    if (stub->Check(&context, {}, &response).ok() &&
        response.status() == grpc::health::v1::HealthCheckResponse::SERVING) {
      return true;
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  return false;
}

std::string ServerProcess::log() const {
  std::ifstream in(log_path_);
  std::ostringstream s;
  s << in.rdbuf();
  return s.str();
}

std::shared_ptr<grpc::Channel> ServerProcess::channel() const { return channel_; }
std::unique_ptr<v1::ModelService::Stub> ServerProcess::models() const {
  return v1::ModelService::NewStub(channel_);
}
std::unique_ptr<v1::DynamicsService::Stub> ServerProcess::dynamics() const {
  return v1::DynamicsService::NewStub(channel_);
}
std::unique_ptr<grpc::health::v1::Health::Stub> ServerProcess::health() const {
  return grpc::health::v1::Health::NewStub(channel_);
}

v1::Model ServerProcess::model_layout(const std::string& id) const {
  grpc::ClientContext context;
  context.set_deadline(deadline_in(60));
  v1::GetModelRequest request;
  request.set_model_id(id);
  v1::Model layout;
  const grpc::Status status = models()->GetModel(&context, request, &layout);
  if (!status.ok()) {
    ADD_FAILURE() << "GetModel " << id << ": " << status.error_message();
    return {};
  }
  return layout;
}

void ServerProcess::signal(int signal_number) {
  if (pid_ > 0) ::kill(pid_, signal_number);
}

int ServerProcess::wait_exit(double timeout_seconds) {
  const auto end = deadline_in(timeout_seconds);
  while (pid_ > 0) {
    int status = 0;
    const pid_t r = ::waitpid(pid_, &status, WNOHANG);
    if (r == pid_) {
      pid_ = -1;
      return status;
    }
    if (std::chrono::system_clock::now() >= end) return -1;
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  return -1;
}

int handled_ok(const ServerProcess& server, const std::string& method) {
  const std::string text = http_get(server.metrics_port(), "/metrics");
  const std::regex line("grpc_server_handled_total\\{([^}]*)\\} ([0-9.e+]+)");
  double total = 0;
  for (auto it = std::sregex_iterator(text.begin(), text.end(), line); it != std::sregex_iterator();
       ++it) {
    const std::string labels = (*it)[1];
    if (labels.find("grpc_method=\"" + method + "\"") != std::string::npos &&
        labels.find("grpc_code=\"OK\"") != std::string::npos) {
      total += std::stod((*it)[2]);
    }
  }
  return static_cast<int>(total);
}

std::vector<double> random_configurations(const v1::Model& model, int states, unsigned seed) {
  std::mt19937 rng(seed);
  google::protobuf::RepeatedField<double> q;
  load::add_random_configurations(model, states, rng, &q);
  return {q.begin(), q.end()};
}

std::vector<double> random_values(std::size_t count, unsigned seed) {
  std::mt19937 rng(seed);
  std::uniform_real_distribution<double> u(-1.0, 1.0);
  std::vector<double> v(count);
  for (double& x : v) x = u(rng);
  return v;
}

}  // namespace torqued::testing
