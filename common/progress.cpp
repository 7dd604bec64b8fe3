#include "common/progress.h"

#include "common/interrupt.h"

#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <memory>

namespace pt2onnx::progress {
namespace {

using Clock = std::chrono::steady_clock;

class Reporter {
 public:
  Reporter() : start_(Clock::now()) {
    if (const char* after = std::getenv("PT2ONNX_PROGRESS_AFTER_SECONDS")) quietFor_ = std::atof(after);
  }
  ~Reporter() {
    if (shown_) std::fputs("\n", stderr);
    interrupt::setStatusLineOpen(false);
  }

  void phase(const std::string& name, uint64_t total, const std::string& unit) {
    name_ = name;
    total_ = total;
    unit_ = unit;
    done_ = 0;
    show(true);
  }
  void advance(uint64_t done) {
    done_ = done;
    show(false);
  }

 private:
  void show(bool phaseChanged) {
    Clock::time_point now = Clock::now();
    double elapsed = std::chrono::duration<double>(now - start_).count();
    if (elapsed < quietFor_) return;
    if (!phaseChanged && std::chrono::duration<double>(now - lastShown_).count() < 0.2) return;
    lastShown_ = now;
    std::string line = "[pt2onnx " + std::to_string(static_cast<int>(elapsed)) + " s] " + name_;
    if (total_ > 0) {
      bool bytes = unit_ == "bytes";
      auto amount = [bytes](uint64_t n) { return bytes ? std::to_string(n >> 20) + " MiB" : std::to_string(n); };
      line += ": " + amount(done_) + " of " + amount(total_) + (bytes ? "" : " " + unit_);
    }
    std::fprintf(stderr, "\r%-72s", line.c_str());
    std::fflush(stderr);
    shown_ = true;
    interrupt::setStatusLineOpen(true);
  }

  Clock::time_point start_, lastShown_;
  double quietFor_ = 3.0;
  std::string name_, unit_;
  uint64_t total_ = 0, done_ = 0;
  bool shown_ = false;
};

thread_local std::unique_ptr<Reporter> current;

}  // namespace

Scope::Scope(bool wanted) {
  if (wanted && !current && isatty(STDERR_FILENO)) {
    current = std::make_unique<Reporter>();
    owner_ = true;
  }
}

Scope::~Scope() {
  if (owner_) current.reset();
}

void phase(const std::string& name, uint64_t total, const std::string& unit) {
  if (current) current->phase(name, total, unit);
}

void advance(uint64_t done) {
  if (current) current->advance(done);
}

}  // namespace pt2onnx::progress
