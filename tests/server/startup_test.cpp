// Tests the start of the real torqued binary against what may lie in its data directory and in
// the files its flags name: the store removes only the temporary files it wrote, and leaves
// directories, symbolic links and files of other names alone with a warning; it reads only
// regular model files in its directory, never through a symbolic link, and none larger than the
// largest registration (--max-model-bytes); every file a flag names (certificate, key, client CA,
// token files) must be a regular file, so that a FIFO stops the start instead of hanging it.
#include <gtest/gtest.h>
#include <sys/stat.h>
#include <sys/wait.h>

#include <chrono>
#include <fstream>
#include <iostream>

#include "server/models/bundled_models.hpp"
#include "tests/server/pki.hpp"
#include "tests/server/server_process.hpp"

namespace torqued::testing {
namespace {

namespace fs = std::filesystem;

constexpr std::int64_t kGiB = 1LL << 30;

// Registers the repository's model file `file` under `name`; returns its id ("" on failure).
std::string register_model(const ServerProcess& server, const std::string& file,
                           const std::string& name) {
  v1::RegisterModelRequest request;
  std::string error;
  EXPECT_TRUE(server::read_model_file(repository_dir() + "/" + file, request, error)) << error;
  request.set_name(name);
  grpc::ClientContext context;
  context.set_deadline(deadline_in(60));
  v1::RegisterModelResponse response;
  const grpc::Status status = server.models()->RegisterModel(&context, request, &response);
  EXPECT_TRUE(status.ok()) << status.error_message();
  return response.model().id();
}

// GetModel's status for model `id`.
grpc::StatusCode get_model(const ServerProcess& server, const std::string& id) {
  v1::GetModelRequest request;
  request.set_model_id(id);
  v1::Model model;
  return with_deadline(60,
                       [&](grpc::ClientContext* context) {
                         return server.models()->GetModel(context, request, &model);
                       })
      .error_code();
}

// The peak resident memory of a process, bytes (VmHWM of /proc/PID/status, in kB).
std::int64_t peak_rss_bytes(pid_t pid) {
  std::ifstream status("/proc/" + std::to_string(pid) + "/status");
  for (std::string line; std::getline(status, line);) {
    if (line.rfind("VmHWM:", 0) == 0) return std::stoll(line.substr(6)) * 1024;
  }
  return -1;
}

// A sparse file of `bytes` zero bytes: it takes no disk, but reading it gives every byte.
void make_sparse_file(const fs::path& path, std::int64_t bytes) {
  std::ofstream(path).close();
  fs::resize_file(path, static_cast<std::uintmax_t>(bytes));
}

void make_fifo(const fs::path& path) { ASSERT_EQ(::mkfifo(path.c_str(), 0600), 0) << path; }

TEST(StartupTest, TheStoreRemovesOnlyTheTemporaryFilesItWrote) {
  TempDir dir;
  const fs::path data = dir.path() / "data";
  fs::create_directories(data);
  // A temporary file of ModelStore::save (<id>.<pid>.<counter>.tmp) that a crash left behind.
  const fs::path own = data / "0123456789abcdef0123456789abcdef.4242.7.tmp";
  std::ofstream(own) << "partial";
  // What others put there: a directory with a file in it, a file of another name, a symbolic link
  // to a file outside the directory, and a directory named like the store's own temporary files.
  const fs::path directory = data / "cache.tmp";
  fs::create_directories(directory);
  std::ofstream(directory / "kept") << "kept";
  const fs::path named_like_own = data / "0123456789abcdef0123456789abcdef.1.2.tmp";
  fs::create_directories(named_like_own);
  const fs::path foreign = data / "notes.tmp";
  std::ofstream(foreign) << "notes";
  const fs::path outside = dir.path() / "outside.txt";
  std::ofstream(outside) << "outside";
  const fs::path link = data / "0123456789abcdef0123456789abcdef.4242.8.tmp";
  fs::create_symlink(outside, link);

  ServerProcess server({data, ""});
  ASSERT_TRUE(server.running()) << server.log();
  EXPECT_FALSE(fs::exists(own));
  EXPECT_TRUE(fs::exists(directory / "kept"));
  EXPECT_TRUE(fs::is_directory(named_like_own));
  EXPECT_TRUE(fs::exists(foreign));
  EXPECT_TRUE(fs::is_symlink(link));
  EXPECT_TRUE(fs::exists(outside));
  const std::string log = server.log();
  const struct {
    fs::path path;
    std::string kind;
  } left_alone[] = {{directory, "a directory"},
                    {named_like_own, "a directory"},
                    {foreign, "a regular file"},
                    {link, "a symbolic link"}};
  for (const auto& entry : left_alone) {
    EXPECT_NE(log.find("store: " + entry.path.string() + ": " + entry.kind +
                       " the store did not write; left alone"),
              std::string::npos)
        << entry.path << "\n"
        << log;
  }
  EXPECT_EQ(log.find(own.string()), std::string::npos) << log;
}

TEST(StartupTest, TheStoreReadsNoSymbolicLinkAndNoFileLargerThanTheLargestRegistration) {
  TempDir dir;
  const fs::path data = dir.path() / "data";
  std::string kept_id, linked_id;
  {
    ServerProcess server({data, ""});
    ASSERT_TRUE(server.running());
    kept_id = register_model(server, "double_pendulum.urdf", "kept");
    linked_id = register_model(server, "puma560.dh.txtpb", "linked");
    ASSERT_FALSE(kept_id.empty());
    ASSERT_FALSE(linked_id.empty());
  }
  // A valid model file moved out of the directory and linked to from where it was; a link to a
  // 1 GiB file; and a 1 GiB regular file, each named like a model file.
  const fs::path linked = data / (linked_id + ".model");
  const fs::path moved = dir.path() / "moved.model";
  fs::rename(linked, moved);
  fs::create_symlink(moved, linked);
  const fs::path huge = dir.path() / "huge.bin";
  make_sparse_file(huge, kGiB);
  const fs::path huge_link = data / "11111111111111111111111111111111.model";
  fs::create_symlink(huge, huge_link);
  const fs::path huge_file = data / "22222222222222222222222222222222.model";
  make_sparse_file(huge_file, kGiB);

  const auto start = std::chrono::steady_clock::now();
  ServerProcess server({data, ""});
  const double start_seconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  ASSERT_TRUE(server.running());
  const std::int64_t peak = peak_rss_bytes(server.pid());
  std::cout << "start with two 1 GiB model files: " << start_seconds << " s to SERVING, peak RSS "
            << peak / (1 << 20) << " MiB\n";
  EXPECT_EQ(get_model(server, kept_id), grpc::StatusCode::OK);
  for (const fs::path& skipped : {linked, huge_link, huge_file}) {
    EXPECT_EQ(get_model(server, skipped.stem().string()), grpc::StatusCode::NOT_FOUND) << skipped;
  }
  const std::string log = server.log();
  for (const fs::path& path : {linked, huge_link}) {
    EXPECT_NE(log.find("store: " + path.string() + ": a symbolic link; the store follows none"),
              std::string::npos)
        << path << "\n"
        << log;
  }
  EXPECT_NE(log.find("store: " + huge_file.string() +
                     ": 1073741824 bytes, more than the largest registration (8388608 bytes, "
                     "--max-model-bytes); skipped"),
            std::string::npos)
      << log;
  // Reading either 1 GiB file whole would take more than a gigabyte; a server starts in tens of
  // megabytes.
  if (kRssIsTheServers) {
    EXPECT_LT(peak, 256LL << 20);
  }
}

TEST(StartupTest, FilesThatFlagsNameMustBeRegularFiles) {
  TempDir dir;
  const Pki pki(dir.path() / "pki");
  const fs::path fifo = dir.path() / "fifo";
  make_fifo(fifo);
  const std::string cert = "--tls-cert=" + pki.server_cert.string();
  const std::string key = "--tls-key=" + pki.server_key.string();
  const struct {
    std::string flag;
    std::vector<std::string> others;
  } cases[] = {
      {"tls-cert", {key}}, {"tls-key", {cert}},      {"tls-client-ca", {cert, key}},
      {"token-file", {}},  {"admin-token-file", {}},
  };
  int servers = 0;
  for (const auto& c : cases) {
    ServerProcess::Options options{dir.path() / ("data" + std::to_string(++servers)), ""};
    options.extra_args = c.others;
    options.extra_args.push_back("--" + c.flag + "=" + fifo.string());
    std::unique_ptr<ServerProcess> server = ServerProcess::launch(options);
    const int status = server->wait_exit(30);
    ASSERT_TRUE(WIFEXITED(status)) << c.flag << ": status " << status << ", log:\n"
                                   << server->log();
    EXPECT_EQ(WEXITSTATUS(status), 1) << server->log();
    EXPECT_NE(server->log().find("--" + c.flag + " " + fifo.string() +
                                 ": cannot be read (a FIFO, not a regular file)"),
              std::string::npos)
        << server->log();
  }
}

}  // namespace
}  // namespace torqued::testing
