// Progress of a long export on stderr. Nothing is shown for the first seconds (most exports end
// before: PT2ONNX_PROGRESS_AFTER_SECONDS, default 3), then one line rewritten in place, at most a
// few times a second, and only when stderr is a terminal: scripts and CI logs stay clean. The
// exporter reports through the free functions, which do nothing unless a Scope is active on the
// thread, so no signature carries a reporter.
#pragma once

#include <cstdint>
#include <string>

namespace pt2onnx::progress {

// Shows progress for the work done on this thread while it lives, when `wanted` and stderr is a
// terminal. Scopes nest: the outermost one reports.
class Scope {
 public:
  explicit Scope(bool wanted);
  ~Scope();
  Scope(const Scope&) = delete;
  Scope& operator=(const Scope&) = delete;

 private:
  bool owner_ = false;
};

// A new phase ("lowering", "converting", "writing"), with how many units it has when known.
void phase(const std::string& name, uint64_t total = 0, const std::string& unit = "");
// `done` of the phase's units are done.
void advance(uint64_t done);

}  // namespace pt2onnx::progress
