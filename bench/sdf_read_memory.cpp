// What libsdformat really takes to read SDF documents of each kind and size, against what the
// server reserves for them (sdf_read_bytes(), engine/io/sdf.hpp): each document is read in a
// child process of its own, whose peak resident memory (VmHWM, reset through /proc/self/clear_refs
// before the read) less its resident memory before the read is the read's peak growth. Prints one
// row a document: bytes, the work the scan counts, the reservation, the growth and the seconds.
//
//   build/test/bench/sdf_read_memory
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <fstream>
#include <iostream>
#include <string>
#include <vector>

#include "engine/io/sdf.hpp"

namespace {

std::string numbered(std::string prefix, int i) { return prefix.append(std::to_string(i)); }

std::string link(const std::string& name, const std::string& inside = "") {
  return "<link name='" + name +
         "'><inertial><mass>1</mass><inertia><ixx>0.02</ixx><iyy>0.02</iyy><izz>0.001</izz>"
         "</inertia></inertial>" +
         inside + "</link>";
}

std::string revolute(int i) {
  return "<joint name='" + numbered("j", i) + "' type='revolute'><pose>0 0 -0.5 0 0 0</pose>" +
         "<parent>" + numbered("l", i - 1) + "</parent><child>" + numbered("l", i) +
         "</child><axis><xyz>0 1 0</xyz></axis></joint>";
}

std::string document(const std::string& body) {
  return "<sdf version='1.9'><model name='m'>" + body + "</model></sdf>";
}

// A chain of `links` links and their joints; with a visual and a collision on each link when
// `shapes`.
std::string chain(int links, bool shapes) {
  const std::string geometry = "<geometry><box><size>0.1 0.1 0.5</size></box></geometry>";
  std::string body;
  for (int i = 0; i < links; ++i) {
    body += link(numbered("l", i), shapes ? "<visual name='v'>" + geometry +
                                                "</visual><collision name='c'>" + geometry +
                                                "</collision>"
                                          : "");
    if (i > 0) body += revolute(i);
  }
  return document(body);
}

std::string nested_models(int models) {
  std::string body = link("base");
  for (int i = 0; i < models; ++i)
    body += "<model name='" + numbered("m", i) + "'>" + link("l") + "</model>";
  return document(body);
}

std::string frames(int count) {
  std::string body = link("base");
  for (int i = 0; i < count; ++i) body += "<frame name='" + numbered("f", i) + "'/>";
  return document(body);
}

std::string poses(int count) {
  std::string inside;
  for (int i = 0; i < count; ++i) inside += "<pose>0 0 0 0 0 0</pose>";
  return document(link("base", inside));
}

long status_kib(const char* field) {
  std::ifstream status("/proc/self/status");
  std::string line;
  const std::string prefix = std::string(field) + ":";
  while (std::getline(status, line)) {
    if (line.rfind(prefix, 0) == 0) return std::stol(line.substr(prefix.size()));
  }
  return -1;
}

// In a child: the read's peak growth of resident memory (KiB) and its seconds, through a pipe.
bool measure(const std::string& xml, long& growth_kib, double& seconds) {
  int pipe_ends[2];
  if (pipe(pipe_ends) != 0) return false;
  const pid_t child = fork();
  if (child == 0) {
    close(pipe_ends[0]);
    const long before = status_kib("VmRSS");
    std::ofstream("/proc/self/clear_refs") << "5";
    const auto start = std::chrono::steady_clock::now();
    torqued::read_sdf_string(xml);
    const double s =
        std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    const long result[2] = {status_kib("VmHWM") - before, static_cast<long>(s * 1e6)};
    const bool written = write(pipe_ends[1], result, sizeof result) == sizeof result;
    _exit(written ? 0 : 1);
  }
  close(pipe_ends[1]);
  long result[2] = {0, 0};
  const bool read_all = read(pipe_ends[0], result, sizeof result) == sizeof result;
  close(pipe_ends[0]);
  int status = 0;
  waitpid(child, &status, 0);
  growth_kib = result[0];
  seconds = static_cast<double>(result[1]) * 1e-6;
  return read_all && WIFEXITED(status) && WEXITSTATUS(status) == 0;
}

}  // namespace

int main() {
  struct Document {
    std::string what;
    std::string xml;
  };
  std::vector<Document> documents;
  for (const int links : {1, 10, 50, 100, 150, 200, 220}) {
    documents.push_back({std::to_string(links) + "-link chain", chain(links, false)});
  }
  for (const int links : {10, 50, 100}) {
    documents.push_back({std::to_string(links) + "-link chain, shapes", chain(links, true)});
  }
  documents.push_back({"100 nested models", nested_models(100)});
  documents.push_back({"1000 frames", frames(static_cast<int>(torqued::kMaxSdfFrames))});
  documents.push_back({"29,900 poses", poses(29'900)});
  // What libsdformat sets up once a process (its description of SDF) is not counted: the server
  // has read a document before, or does so with its first one.
  torqued::read_sdf_string(chain(1, false));
  std::printf("%-26s %9s %8s %12s %12s %8s %8s\n", "document", "bytes", "work", "reserved MB",
              "growth MB", "ratio", "seconds");
  for (const Document& d : documents) {
    long growth_kib = 0;
    double seconds = 0;
    if (!measure(d.xml, growth_kib, seconds)) {
      std::printf("%-26s failed\n", d.what.c_str());
      continue;
    }
    const std::size_t reserved = torqued::sdf_read_bytes(d.xml);
    const double growth = static_cast<double>(growth_kib) * 1024;
    std::printf("%-26s %9zu %8zu %12.1f %12.1f %8.2f %8.2f\n", d.what.c_str(), d.xml.size(),
                (reserved - torqued::kSdfBytesPerDocument) / torqued::kSdfBytesPerWork,
                static_cast<double>(reserved) / 1e6, growth / 1e6,
                static_cast<double>(reserved) / growth, seconds);
  }
  return 0;
}
