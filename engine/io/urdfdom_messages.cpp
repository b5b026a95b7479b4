// The console_bridge output handler behind CaptureUrdfdomMessages (urdfdom_messages.hpp).
#include "engine/io/urdfdom_messages.hpp"

#include <console_bridge/console.h>

namespace torqued {
namespace {

// The capture of this thread, if any.
thread_local std::vector<std::string>* sink = nullptr;

class CapturingOutputHandler : public console_bridge::OutputHandler {
 public:
  CapturingOutputHandler() { console_bridge::useOutputHandler(this); }

  void log(const std::string& text, console_bridge::LogLevel level, const char* /*filename*/,
           int /*line*/) override {
    if (sink != nullptr && level >= console_bridge::CONSOLE_BRIDGE_LOG_ERROR) {
      sink->push_back(text);
    }
  }
};

}  // namespace

CaptureUrdfdomMessages::CaptureUrdfdomMessages(std::vector<std::string>& messages) {
  // A function-local static: installed once, by whichever thread gets here first.
  static CapturingOutputHandler handler;
  sink = &messages;
}

CaptureUrdfdomMessages::~CaptureUrdfdomMessages() { sink = nullptr; }

}  // namespace torqued
