// Child-process management and small helpers for the server tests (see server_process.hpp).
#include "tests/server/server_process.hpp"

#include <arpa/inet.h>
#include <fcntl.h>
#include <gtest/gtest.h>
#include <netinet/in.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cmath>
#include <condition_variable>
#include <deque>
#include <fstream>
#include <functional>
#include <future>
#include <mutex>
#include <random>
#include <regex>
#include <sstream>
#include <string_view>
#include <thread>

#include "clients/cpp/load/workload.hpp"

namespace torqued::testing {
namespace {

// Temporary directories (and server logs beside them) are named torqued-test-PID-..., PID the
// test process that made them.
constexpr std::string_view kTempPrefix = "torqued-test-";

// Removes what test processes that are gone left in the temporary directory: a test that
// crashed or was killed had no chance to.
void remove_dead_runs_files() {
  std::error_code error;
  for (const auto& entry :
       std::filesystem::directory_iterator(std::filesystem::temp_directory_path(), error)) {
    const std::string name = entry.path().filename().string();
    if (name.rfind(kTempPrefix, 0) != 0) continue;
    const std::size_t digits = name.find_first_not_of("0123456789", kTempPrefix.size());
    if (digits == kTempPrefix.size() || digits == std::string::npos || name[digits] != '-')
      continue;
    const pid_t owner = std::stoi(name.substr(kTempPrefix.size(), digits - kTempPrefix.size()));
    if (::kill(owner, 0) == 0 || errno != ESRCH) continue;
    std::filesystem::remove_all(entry.path(), error);
  }
}

// PR_SET_PDEATHSIG signals a child when the thread that forked it ends, not its process, and a
// test may make a ServerProcess on a short-lived thread (client_test's restarter): every server
// is forked on this one thread instead, which lasts as long as the test process.
class ForkThread {
 public:
  // Runs `fork` (which forks and returns the child's pid) on the thread.
  static pid_t run(std::function<pid_t()> fork) {
    // Never destroyed: its thread runs until the process ends.
    static ForkThread* const instance = new ForkThread();
    std::packaged_task<pid_t()> task(std::move(fork));
    std::future<pid_t> child = task.get_future();
    {
      std::lock_guard lock(instance->mutex_);
      instance->tasks_.push_back(std::move(task));
    }
    instance->wake_.notify_one();
    return child.get();
  }

 private:
  ForkThread() {
    std::thread([this] {
      for (;;) {
        std::unique_lock lock(mutex_);
        wake_.wait(lock, [this] { return !tasks_.empty(); });
        std::packaged_task<pid_t()> task = std::move(tasks_.front());
        tasks_.pop_front();
        lock.unlock();
        task();
      }
    }).detach();
  }

  std::mutex mutex_;
  std::condition_variable wake_;
  std::deque<std::packaged_task<pid_t()>> tasks_;
};

}  // namespace

TempDir::TempDir() {
  remove_dead_runs_files();
  std::string pattern = (std::filesystem::temp_directory_path() /
                         (std::string(kTempPrefix) + std::to_string(::getpid()) + "-XXXXXX"))
                            .string();
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
  std::vector<char*> argv;
  for (std::string& a : args) argv.push_back(a.data());
  argv.push_back(nullptr);
  const pid_t parent = ::getpid();
  const pid_t pid = ForkThread::run([&] {
    const pid_t child = ::fork();
    if (child != 0) return child;
    // The server dies with the test, however the test ends (a crash, an abort, CTest's timeout):
    // the kernel kills it when the forking thread ends. Had the test died before this line, the
    // server would have been re-parented already: then it exits at once.
    if (::prctl(PR_SET_PDEATHSIG, SIGKILL) != 0 || ::getppid() != parent) ::_exit(127);
    const int fd = ::open(log_path_.c_str(), O_WRONLY | O_CREAT | O_APPEND, 0644);
    ::dup2(fd, 1);
    ::dup2(fd, 2);
    sigset_t none;
    sigemptyset(&none);
    ::sigprocmask(SIG_SETMASK, &none, nullptr);
    ::execv(argv[0], argv.data());
    ::_exit(127);
  });
  if (pid < 0) return false;
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
      client::ClientOptions channel_options;
      channel_options.target = address();
      channel_options.load_balancing_policy = "pick_first";
      channel_options.tls = options_.client_tls;
      channel_options.token = options_.client_token;
      channel_ = client::make_channel(channel_options);
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

// VmRSS is in kB.
std::int64_t rss_bytes(pid_t pid) {
  std::ifstream status("/proc/" + std::to_string(pid) + "/status");
  std::string line;
  while (std::getline(status, line)) {
    if (line.rfind("VmRSS:", 0) == 0) return std::stoll(line.substr(6)) * 1024;
  }
  return -1;
}

}  // namespace torqued::testing
