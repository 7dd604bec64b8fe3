// Files being written, removed if the process is interrupted (SIGINT, SIGTERM, SIGHUP) before they
// are complete: an interrupted export leaves no partial output. The writers register their temp
// files; the CLI installs the handlers (a library must not take over a host's signals).
#pragma once

#include <string>

namespace pt2onnx::interrupt {

// Registers `path` for removal on interruption until it is released; a no-op once
// kMaxPendingFiles are registered (the file is then only removed on errors, as before).
class PendingFile {
 public:
  explicit PendingFile(const std::string& path);
  ~PendingFile();
  PendingFile(const PendingFile&) = delete;
  PendingFile& operator=(const PendingFile&) = delete;
  void release();  // complete: no longer removed on interruption

 private:
  int slot_ = -1;
};

inline constexpr int kMaxPendingFiles = 64;

// Installs handlers for SIGINT, SIGTERM and SIGHUP that remove the pending files, end an open
// progress line, say "pt2onnx: interrupted, nothing written" (or that earlier files were kept) on
// stderr, then end the process by the same signal (a shell sees exit status 128 + signal).
void removePendingFilesOnSignals();

// A pending file reached its final name: an interruption no longer means "nothing written".
void noteFileWritten();

// Whether a progress line without its newline is on stderr (the handler ends it first).
void setStatusLineOpen(bool open);

}  // namespace pt2onnx::interrupt
