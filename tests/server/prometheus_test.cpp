// Tests server/base/metrics.cpp against a real Prometheus (Debian's prometheus package): Prometheus
// scrapes torqued on loopback, and its HTTP query API must show grpc_server_handled_total
// counting exactly the calls this test made (skipped when /usr/bin/prometheus is absent). And
// scrapes are answered within a second while clients that send their request a byte at a time
// hold connections to the metrics port.
#include <arpa/inet.h>
#include <fcntl.h>
#include <gtest/gtest.h>
#include <netinet/in.h>
#include <signal.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <fstream>
#include <iostream>
#include <nlohmann/json.hpp>
#include <thread>

#include "tests/server/server_process.hpp"

namespace torqued::testing {
namespace {

constexpr const char* kPrometheus = "/usr/bin/prometheus";

std::string url_encode(const std::string& s) {
  std::string out;
  static constexpr char kHex[] = "0123456789ABCDEF";
  for (unsigned char c : s) {
    if (std::isalnum(c) || c == '_' || c == '.' || c == '-') {
      out.push_back(static_cast<char>(c));
    } else {
      out += {'%', kHex[c >> 4], kHex[c & 15]};
    }
  }
  return out;
}

// The value of a scalar-producing PromQL query, or -1 when there is none yet.
double query(int port, const std::string& promql) {
  const std::string body = http_get(port, "/api/v1/query?query=" + url_encode(promql));
  const auto json = nlohmann::json::parse(body, nullptr, false);
  if (json.is_discarded() || json.value("status", "") != "success") return -1;
  const auto& result = json["data"]["result"];
  if (!result.is_array() || result.empty()) return -1;
  return std::stod(result[0]["value"][1].get<std::string>());
}

TEST(PrometheusTest, ScrapedCountersMatchTheCallsMade) {
  if (::access(kPrometheus, X_OK) != 0) {
    GTEST_SKIP() << kPrometheus
                 << " is absent: install Debian's prometheus package "
                    "(apt-get install --no-install-recommends prometheus) to run this test";
  }
  TempDir dir;
  ServerProcess server({dir.path() / "data", repository_dir(), true});
  ASSERT_TRUE(server.running());

  const int prometheus_port = free_port();
  const auto config = dir.path() / "prometheus.yml";
  std::ofstream(config) << "global:\n  scrape_interval: 1s\n  evaluation_interval: 1s\n"
                           "scrape_configs:\n  - job_name: torqued\n    static_configs:\n"
                           "      - targets: ['127.0.0.1:"
                        << server.metrics_port() << "']\n";
  const std::string log = (dir.path() / "prometheus.log").string();
  const pid_t prometheus = ::fork();
  ASSERT_GE(prometheus, 0);
  if (prometheus == 0) {
    const int fd = ::open(log.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
    ::dup2(fd, 1);
    ::dup2(fd, 2);
    const std::string config_arg = "--config.file=" + config.string();
    const std::string storage_arg = "--storage.tsdb.path=" + (dir.path() / "tsdb").string();
    const std::string listen_arg =
        "--web.listen-address=127.0.0.1:" + std::to_string(prometheus_port);
    ::execl(kPrometheus, kPrometheus, config_arg.c_str(), storage_arg.c_str(), listen_arg.c_str(),
            static_cast<char*>(nullptr));
    ::_exit(127);
  }

  // The calls to count: 25 good InverseDynamics, 3 with a wrong q size, 2 Echo.
  grpc::ClientContext list_context;
  list_context.set_deadline(deadline_in(30));
  v1::ListModelsResponse list;
  ASSERT_TRUE(server.models()->ListModels(&list_context, {}, &list).ok());
  const v1::ModelSummary& puma = *std::find_if(list.models().begin(), list.models().end(),
                                               [](const auto& m) { return m.name() == "puma560"; });
  auto dynamics = server.dynamics();
  for (int i = 0; i < 28; ++i) {
    v1::InverseDynamicsRequest r;
    r.set_model_id(puma.id());
    for (int k = 0; k < 6; ++k) {
      if (i < 25 || k > 0) r.add_q(0.1 * k);
      r.add_v(0.0);
      r.add_a(0.0);
    }
    grpc::ClientContext context;
    context.set_deadline(deadline_in(30));
    v1::InverseDynamicsResponse response;
    EXPECT_EQ(dynamics->InverseDynamics(&context, r, &response).ok(), i < 25);
  }
  for (int i = 0; i < 2; ++i) {
    grpc::ClientContext context;
    context.set_deadline(deadline_in(30));
    v1::EchoResponse response;
    EXPECT_TRUE(dynamics->Echo(&context, {}, &response).ok());
  }

  const std::string ok_query =
      "grpc_server_handled_total{job=\"torqued\",grpc_service=\"torqued.v1.DynamicsService\","
      "grpc_method=\"InverseDynamics\",grpc_code=\"OK\"}";
  const std::string invalid_query =
      "grpc_server_handled_total{job=\"torqued\",grpc_method=\"InverseDynamics\","
      "grpc_code=\"INVALID_ARGUMENT\"}";
  const std::string echo_query =
      "grpc_server_handled_total{job=\"torqued\",grpc_method=\"Echo\",grpc_code=\"OK\"}";
  double ok = -1, invalid = -1, echo = -1, started = -1;
  const auto end = deadline_in(120);
  while (std::chrono::system_clock::now() < end) {
    ok = query(prometheus_port, ok_query);
    invalid = query(prometheus_port, invalid_query);
    echo = query(prometheus_port, echo_query);
    started = query(prometheus_port,
                    "grpc_server_started_total{job=\"torqued\",grpc_method=\"InverseDynamics\"}");
    if (ok == 25 && invalid == 3 && echo == 2 && started == 28) break;
    std::this_thread::sleep_for(std::chrono::milliseconds(500));
  }
  ::kill(prometheus, SIGTERM);
  int status = 0;
  ::waitpid(prometheus, &status, 0);
  std::ifstream prometheus_log(log);
  std::ostringstream prometheus_output;
  prometheus_output << prometheus_log.rdbuf();
  EXPECT_EQ(ok, 25) << prometheus_output.str();
  EXPECT_EQ(invalid, 3);
  EXPECT_EQ(echo, 2);
  EXPECT_EQ(started, 28);
}

// A loopback connection to `port`, or -1.
int connect_to(int port) {
  const int fd = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  sockaddr_in address{};
  address.sin_family = AF_INET;
  address.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  address.sin_port = htons(static_cast<std::uint16_t>(port));
  if (::connect(fd, reinterpret_cast<sockaddr*>(&address), sizeof(address)) != 0) {
    ::close(fd);
    return -1;
  }
  return fd;
}

// Whether the peer still holds the connection `fd` open: nothing to read, no end of stream.
bool held_open(int fd) {
  char byte = 0;
  return ::recv(fd, &byte, 1, MSG_PEEK | MSG_DONTWAIT) < 0 &&
         (errno == EAGAIN || errno == EWOULDBLOCK);
}

// Slowloris: 16 clients each send part of a request head and never finish it. CivetWeb, which
// served the port before, held a thread per such client until it cut the client, and scrapes
// waited for a thread (4 to 8.5 s). A scrape must be answered while every slow client still holds
// its connection: the server cuts each 5 s after accept, so a scrape that waited for one of them
// to go would come after that client's connection was closed. The check is that order of events,
// not a wall-clock bound on the scrape, so that it holds on a loaded machine. Times are printed.
TEST(MetricsPortTest, ScrapesAreAnsweredWhileClientsThatNeverFinishTheirRequestStayConnected) {
  constexpr int kSlowClients = 16;
  const std::string part_of_a_head = "GET /metrics HTTP/1.1\r\nHost: 127.0.0.1\r\nX-Slow: x";
  TempDir dir;
  ServerProcess server({dir.path() / "data", repository_dir(), true});
  ASSERT_TRUE(server.running());
  const auto scrape = [&] {
    const auto start = std::chrono::steady_clock::now();
    const std::string page = http_get(server.metrics_port(), "/metrics");
    EXPECT_NE(page.find("grpc_server_started_total"), std::string::npos);
    return std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  };
  std::cout << "scrape alone: " << scrape() << " s\n";
  for (int round = 0; round < 3; ++round) {
    std::vector<int> slow_clients;
    for (int i = 0; i < kSlowClients; ++i) {
      const int fd = connect_to(server.metrics_port());
      ASSERT_GE(fd, 0);
      ASSERT_EQ(::send(fd, part_of_a_head.data(), part_of_a_head.size(), MSG_NOSIGNAL),
                static_cast<ssize_t>(part_of_a_head.size()));
      slow_clients.push_back(fd);
    }
    std::cout << "scrape beside " << kSlowClients << " slow clients: " << scrape() << " s\n";
    for (int i = 0; i < kSlowClients; ++i) {
      EXPECT_TRUE(held_open(slow_clients[i])) << "slow client " << i << " of round " << round
                                              << " was cut before the scrape was answered";
      ::close(slow_clients[i]);
    }
  }
  std::cout << "scrape after the slow clients: " << scrape() << " s\n";
}

}  // namespace
}  // namespace torqued::testing
