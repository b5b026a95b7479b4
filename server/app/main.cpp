// torqued: the rigid-body dynamics gRPC server. Parses the configuration, starts the server,
// loads the models, then waits for SIGTERM or SIGINT and drains gracefully (exit 0).
#include <malloc.h>
#include <signal.h>
#include <spdlog/spdlog.h>

#include <chrono>
#include <cstdlib>
#include <exception>
#include <iostream>
#include <thread>

#include "server/app/server.hpp"
#include "server/base/config.hpp"
#include "server/base/logging.hpp"

namespace {

constexpr double kDrainGraceSeconds = 10.0;

}  // namespace

int main(int argc, char** argv) {
  using namespace torqued::server;
  const ParseResult parsed = parse_config(std::vector<std::string>(argv + 1, argv + argc));
  if (!parsed.config) {
    (parsed.exit_code == 0 ? std::cout : std::cerr) << parsed.message << "\n";
    return parsed.exit_code;
  }
  const Config& config = *parsed.config;
  setup_logging(config.log_format, config.log_level);
  for (const std::string& contradiction : contradictions(config)) spdlog::warn("{}", contradiction);

  // Batched requests and responses are hundreds of kilobytes: with glibc's defaults each one is
  // an mmap or a heap top that free() hands back with madvise, and the page faults and TLB
  // shootdowns that follow cost more than the dynamics (perf, 1,000-state InverseDynamics: 16% of
  // the server's time in madvise). Keep freed memory for the next request instead.
  mallopt(M_MMAP_THRESHOLD, 32 << 20);
  mallopt(M_TRIM_THRESHOLD, 256 << 20);

  // Block the stop signals in every thread (threads inherit the mask) and take them with
  // sigwait below, so shutdown runs on the main thread rather than in a signal handler.
  sigset_t stop_signals;
  sigemptyset(&stop_signals);
  sigaddset(&stop_signals, SIGTERM);
  sigaddset(&stop_signals, SIGINT);
  pthread_sigmask(SIG_BLOCK, &stop_signals, nullptr);
  signal(SIGPIPE, SIG_IGN);

  try {
    spdlog::info("torqued starting (data directory {}, model repository {})", config.data_dir,
                 config.model_repository);
    Server server(config);
    server.start();
    server.load_models();
    int signal_number = 0;
    sigwait(&stop_signals, &signal_number);
    spdlog::info("received {}", signal_number == SIGTERM ? "SIGTERM" : "SIGINT");
    // Every call stops at the drain deadline (calls are cancelled then, and the engine's long
    // loops poll cancellation); should one not, the process still ends, a little after it.
    std::thread([seconds = config.drain_seconds + kDrainGraceSeconds] {
      std::this_thread::sleep_for(std::chrono::duration<double>(seconds));
      spdlog::critical("the drain did not end {} s after its deadline; exiting",
                       kDrainGraceSeconds);
      spdlog::default_logger()->flush();
      std::_Exit(1);
    }).detach();
    server.shut_down();
  } catch (const std::exception& e) {
    spdlog::critical("torqued cannot run: {}", e.what());
    return 1;
  }
  return 0;
}
