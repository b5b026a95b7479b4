// Registrations are fair: one client that sends SDF documents at libsdformat's work bound back to
// back (about 2 s and a few hundred MB of reading each) neither starves another client's SDF
// registrations (they wait their turn instead of RESOURCE_EXHAUSTED: 15 of 15 were refused
// before) nor holds up its URDF registrations behind the readings (one took up to 2 s instead of
// 30 ms, held behind SDF readings on the executor's workers), and the server stays within its
// memory budget. The latencies are printed, not bounded (CPUs may be shared): this test is also
// the benchmark of docs/benchmarks.md.
#include <gtest/gtest.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdint>
#include <iostream>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "engine/io/sdf.hpp"
#include "tests/server/server_process.hpp"

namespace torqued::testing {
namespace {

// A chain of `links` links, each the child of a revolute joint on the one before.
std::string sdf_chain(const std::string& name, int links) {
  std::ostringstream sdf;
  sdf << "<sdf version='1.9'><model name='" << name << "'>";
  for (int i = 0; i < links; ++i) {
    sdf << "<link name='l" << i
        << "'><inertial><mass>1</mass><inertia><ixx>0.02</ixx><iyy>0.02</iyy><izz>0.001</izz>"
           "</inertia></inertial></link>";
    if (i == 0) continue;
    sdf << "<joint name='j" << i << "' type='revolute'><pose>0 0 -0.5 0 0 0</pose><parent>l"
        << i - 1 << "</parent><child>l" << i << "</child><axis><xyz>0 1 0</xyz></axis></joint>";
  }
  sdf << "</model></sdf>";
  return sdf.str();
}

// The longest chain within libsdformat's work bound (sdf.hpp): the scan refuses one more link.
std::string sdf_at_the_work_bound() {
  int links = 1;
  while (sdf_read_bytes(sdf_chain("near_limit", links + 1)) > 0) ++links;
  return sdf_chain("near_limit", links);
}

std::string urdf_chain(int links) {
  std::ostringstream urdf;
  urdf << "<robot name='urdf_chain'>";
  for (int i = 0; i < links; ++i) {
    urdf << "<link name='l" << i
         << "'><inertial><mass value='1'/><inertia ixx='0.02' iyy='0.02' izz='0.001' ixy='0' "
            "ixz='0' iyz='0'/></inertial></link>";
    if (i == 0) continue;
    urdf << "<joint name='j" << i << "' type='revolute'><parent link='l" << i - 1
         << "'/><child link='l" << i
         << "'/><origin xyz='0 0 -0.5'/><axis xyz='0 1 0'/><limit lower='-3' upper='3' "
            "effort='10' velocity='5'/></joint>";
  }
  urdf << "</robot>";
  return urdf.str();
}

// A channel on a connection of its own (gRPC shares one between channels of the same target and
// arguments otherwise): each client of the test is one connection.
std::unique_ptr<v1::ModelService::Stub> own_connection(const ServerProcess& server) {
  grpc::ChannelArguments args;
  args.SetInt(GRPC_ARG_USE_LOCAL_SUBCHANNEL_POOL, 1);
  return v1::ModelService::NewStub(
      grpc::CreateCustomChannel(server.address(), grpc::InsecureChannelCredentials(), args));
}

grpc::Status register_model(v1::ModelService::Stub& stub, const v1::RegisterModelRequest& request,
                            double deadline_seconds) {
  grpc::ClientContext context;
  context.set_deadline(deadline_in(deadline_seconds));
  v1::RegisterModelResponse response;
  return stub.RegisterModel(&context, request, &response);
}

// Seconds of each of `count` registrations of `request`, one after the other; counts failures.
std::vector<double> timed_registrations(v1::ModelService::Stub& stub,
                                        const v1::RegisterModelRequest& request, int count,
                                        int& failures) {
  std::vector<double> seconds;
  for (int i = 0; i < count; ++i) {
    const auto start = std::chrono::steady_clock::now();
    const grpc::Status status = register_model(stub, request, 30);
    seconds.push_back(
        std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count());
    if (!status.ok()) {
      ++failures;
      ADD_FAILURE() << "URDF registration: " << status.error_message();
    }
  }
  return seconds;
}

double percentile(std::vector<double> values, double fraction) {
  std::sort(values.begin(), values.end());
  return values[static_cast<std::size_t>(fraction * static_cast<double>(values.size() - 1))];
}

TEST(RegistrationFairnessTest, NearLimitSdfDocumentsBackToBackStarveNoOtherClient) {
  TempDir dir;
  ServerProcess server({dir.path() / "data", ""});
  constexpr std::int64_t kMemoryBudgetBytes = 1LL << 30;  // the default --memory-budget-bytes
  v1::RegisterModelRequest near_limit, hundred_links, urdf;
  near_limit.set_sdf(sdf_at_the_work_bound());
  hundred_links.set_sdf(sdf_chain("hundred_links", 100));
  urdf.set_urdf(urdf_chain(3));

  int urdf_failures = 0;
  const auto urdf_client = own_connection(server);
  const std::vector<double> unloaded = timed_registrations(*urdf_client, urdf, 40, urdf_failures);

  std::atomic<bool> stop{false};
  std::atomic<int> near_limit_ok{0};
  std::atomic<int> near_limit_failed{0};
  std::thread looping_client([&] {
    const auto stub = own_connection(server);
    while (!stop.load()) {
      const grpc::Status status = register_model(*stub, near_limit, 60);
      (status.ok() ? near_limit_ok : near_limit_failed)++;
    }
  });
  std::atomic<std::int64_t> peak_rss{0};
  std::thread sampler([&] {
    while (!stop.load()) {
      peak_rss = std::max(peak_rss.load(), rss_bytes(server.pid()));
      std::this_thread::sleep_for(std::chrono::milliseconds(20));
    }
  });
  std::vector<double> loaded;
  std::thread urdf_loop([&] {
    while (!stop.load()) {
      const std::vector<double> some = timed_registrations(*urdf_client, urdf, 1, urdf_failures);
      loaded.insert(loaded.end(), some.begin(), some.end());
      std::this_thread::sleep_for(std::chrono::milliseconds(20));
    }
  });

  // Once the looping client's first document is being read: the 15 registrations come from
  // five connections at once, three each (one connection's take the looping client's and the
  // other connections' turns in between: 15 after one another would take a minute).
  std::this_thread::sleep_for(std::chrono::milliseconds(300));
  std::atomic<int> hundred_links_ok{0};
  std::vector<std::thread> sdf_clients;
  for (int c = 0; c < 5; ++c) {
    sdf_clients.emplace_back([&] {
      const auto stub = own_connection(server);
      for (int i = 0; i < 3; ++i) {
        const grpc::Status status = register_model(*stub, hundred_links, 60);
        EXPECT_TRUE(status.ok()) << status.error_message();
        hundred_links_ok += status.ok() ? 1 : 0;
      }
    });
  }
  for (std::thread& client : sdf_clients) client.join();
  stop = true;
  looping_client.join();
  sampler.join();
  urdf_loop.join();

  EXPECT_EQ(hundred_links_ok.load(), 15);
  EXPECT_EQ(urdf_failures, 0);
  EXPECT_GE(near_limit_ok.load(), 1);
  EXPECT_EQ(near_limit_failed.load(), 0);
  if (kRssIsTheServers) {
    EXPECT_LT(peak_rss.load(), kMemoryBudgetBytes);
  }
  std::cout << "near-limit SDF: " << near_limit.sdf().size() << " bytes, "
            << sdf_read_bytes(near_limit.sdf()) << " bytes reserved, " << near_limit_ok
            << " read\n100-link SDF: " << hundred_links_ok.load() << " of 15 registered\n"
            << "3-link URDF, seconds: unloaded p50 " << percentile(unloaded, 0.5) << " p99 "
            << percentile(unloaded, 0.99) << "; beside the SDF loop p50 " << percentile(loaded, 0.5)
            << " p99 " << percentile(loaded, 0.99) << " (" << loaded.size() << " calls)\npeak RSS "
            << peak_rss.load() / (1 << 20) << " MiB\n";
}

}  // namespace
}  // namespace torqued::testing
