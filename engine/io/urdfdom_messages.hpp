// urdfdom's error messages, which it reports through console_bridge (printing to standard error)
// rather than to its caller. The URDF reader turns them into its ModelError; the SDF reader drops
// those of libsdformat's attempt to read, as a URDF, a document it failed to read as SDF.
#pragma once

#include <string>
#include <vector>

namespace torqued {

// Routes urdfdom's error messages on this thread into `messages` while the object lives. The
// first such object installs a console_bridge output handler for the process, which hands
// messages to the capture of the thread they are logged on and drops them outside any capture
// (the engine does no logging of its own).
class CaptureUrdfdomMessages {
 public:
  explicit CaptureUrdfdomMessages(std::vector<std::string>& messages);
  ~CaptureUrdfdomMessages();
  CaptureUrdfdomMessages(const CaptureUrdfdomMessages&) = delete;
  CaptureUrdfdomMessages& operator=(const CaptureUrdfdomMessages&) = delete;
};

}  // namespace torqued
