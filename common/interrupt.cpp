#include "common/interrupt.h"

#include <atomic>
#include <csignal>
#include <cstring>

#include <unistd.h>

namespace pt2onnx::interrupt {
namespace {

// Fixed slots, so the signal handler reads them without locks or allocation (async-signal-safe).
constexpr size_t kMaxPath = 4096;
struct Slot {
  std::atomic<int> state{0};  // 0 free, 1 being filled, 2 pending
  char path[kMaxPath];
};
Slot slots[kMaxPendingFiles];

std::atomic<bool> fileWritten{false};
std::atomic<bool> statusLineOpen{false};

void say(const char* text) { [[maybe_unused]] ssize_t n = ::write(STDERR_FILENO, text, std::strlen(text)); }

void onSignal(int sig) {
  for (Slot& s : slots)
    if (s.state.load(std::memory_order_acquire) == 2) ::unlink(s.path);
  if (statusLineOpen.load(std::memory_order_acquire)) say("\n");
  say(sig == SIGINT ? "pt2onnx: interrupted (SIGINT)" : sig == SIGTERM ? "pt2onnx: interrupted (SIGTERM)"
                                                                        : "pt2onnx: interrupted (SIGHUP)");
  say(fileWritten.load(std::memory_order_acquire) ? "; the files written before it are complete\n"
                                                  : ", nothing written\n");
  std::signal(sig, SIG_DFL);
  ::raise(sig);
}

}  // namespace

PendingFile::PendingFile(const std::string& path) {
  if (path.size() >= kMaxPath) return;
  for (int k = 0; k < kMaxPendingFiles; ++k) {
    int expected = 0;
    if (!slots[k].state.compare_exchange_strong(expected, 1, std::memory_order_acq_rel)) continue;
    std::memcpy(slots[k].path, path.c_str(), path.size() + 1);
    slots[k].state.store(2, std::memory_order_release);
    slot_ = k;
    return;
  }
}

PendingFile::~PendingFile() { release(); }

void PendingFile::release() {
  if (slot_ < 0) return;
  slots[slot_].state.store(0, std::memory_order_release);
  slot_ = -1;
}

void noteFileWritten() { fileWritten.store(true, std::memory_order_release); }

void setStatusLineOpen(bool open) { statusLineOpen.store(open, std::memory_order_release); }

void removePendingFilesOnSignals() {
  for (int sig : {SIGINT, SIGTERM, SIGHUP}) {
    struct sigaction action {};
    action.sa_handler = onSignal;
    sigemptyset(&action.sa_mask);
    ::sigaction(sig, &action, nullptr);
  }
}

}  // namespace pt2onnx::interrupt
