// Tests tests/server/server_process.cpp: a server started by a test dies with the test however
// the test ends, and what an aborted test left in the temporary directory goes with the next
// TempDir. The test process that aborts is this binary again, run with
// --start-a-server-and-abort (see main).
#include "tests/server/server_process.hpp"

#include <gtest/gtest.h>
#include <signal.h>
#include <spawn.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdlib>
#include <fstream>
#include <thread>

extern char** environ;

namespace torqued::testing {
namespace {

constexpr const char* kAbortFlag = "--start-a-server-and-abort";

// The aborting test: starts a server, writes its pid and its temporary directory into `dir`,
// then aborts, as a failed assertion or a crash would end a test.
[[noreturn]] void start_a_server_and_abort(const std::filesystem::path& dir) {
  const rlimit no_core{0, 0};
  ::setrlimit(RLIMIT_CORE, &no_core);
  TempDir temp;
  ServerProcess server({temp.path() / "data"});
  std::ofstream(dir / "server.pid") << server.pid();
  std::ofstream(dir / "temp.path") << temp.path().string();
  std::abort();
}

TEST(ServerProcessTest, AnAbortedTestLeavesNoServerAndNoTemporaryDirectory) {
  // Orphans are re-parented to this process, which can then reap them and see how they ended.
  ASSERT_EQ(::prctl(PR_SET_CHILD_SUBREAPER, 1), 0);
  TempDir dir;
  std::string self = "/proc/self/exe", flag = kAbortFlag, where = dir.path().string();
  char* const argv[] = {self.data(), flag.data(), where.data(), nullptr};
  pid_t aborting = 0;
  ASSERT_EQ(::posix_spawn(&aborting, self.c_str(), nullptr, nullptr, argv, environ), 0);
  int status = 0;
  ASSERT_EQ(::waitpid(aborting, &status, 0), aborting);
  ASSERT_TRUE(WIFSIGNALED(status) && WTERMSIG(status) == SIGABRT) << "wait status " << status;

  pid_t server = 0;
  std::ifstream(dir.path() / "server.pid") >> server;
  ASSERT_GT(server, 0);
  // Killed by the kernel at the abort: gone (and re-parented here, reaped) within a second.
  int server_status = 0;
  bool gone = false;
  for (int i = 0; i < 100 && !gone; ++i) {
    gone = ::waitpid(server, &server_status, WNOHANG) == server;
    if (!gone) std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  EXPECT_TRUE(gone) << "torqued " << server << " outlived the test that started it";
  if (gone) {
    EXPECT_TRUE(WIFSIGNALED(server_status) && WTERMSIG(server_status) == SIGKILL);
  } else {
    ::kill(server, SIGKILL);
    ::waitpid(server, &server_status, 0);
  }

  std::string temp;
  std::ifstream(dir.path() / "temp.path") >> temp;
  ASSERT_FALSE(temp.empty());
  // The aborted test's directory existed when it wrote its path. It may be gone already: in a
  // parallel ctest, another test's TempDir sweeps it as this one's next will.
  TempDir next;
  EXPECT_FALSE(std::filesystem::exists(temp)) << temp << " outlived the test that made it";
}

}  // namespace
}  // namespace torqued::testing

int main(int argc, char** argv) {
  if (argc == 3 && std::string(argv[1]) == torqued::testing::kAbortFlag) {
    torqued::testing::start_a_server_and_abort(argv[2]);
  }
  ::testing::InitGoogleTest(&argc, argv);
  return RUN_ALL_TESTS();
}
