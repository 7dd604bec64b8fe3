// A std::streambuf over a Python binary file object (io.BytesIO, an open file, a socket's makefile):
// the exporter streams the model into it, so each byte is written once. Small writes are gathered
// into chunks; large ones (initializer bytes) are handed to `write` directly, as a memoryview of the
// tensor's memory, released right after the call so a writer that keeps it cannot read freed memory.
// The GIL is taken per write: the export itself runs without it.
#pragma once

#include <cstdint>
#include <streambuf>
#include <string>
#include <vector>

#include <pybind11/pybind11.h>

namespace pt2onnx::python {

class FileObjectStreambuf : public std::streambuf {
 public:
  explicit FileObjectStreambuf(pybind11::object file, size_t chunkBytes = size_t{1} << 20)
      : file_(std::move(file)), buffer_(chunkBytes) {
    setp(buffer_.data(), buffer_.data() + buffer_.size());
  }
  FileObjectStreambuf(const FileObjectStreambuf&) = delete;
  FileObjectStreambuf& operator=(const FileObjectStreambuf&) = delete;
  ~FileObjectStreambuf() override {
    pybind11::gil_scoped_acquire gil;
    file_ = pybind11::object();
  }

  // Why the last write failed (the Python exception's text); empty when none did.
  const std::string& error() const { return error_; }
  uint64_t bytesWritten() const { return written_; }

 protected:
  int_type overflow(int_type ch) override {
    if (!flushBuffer()) return traits_type::eof();
    if (!traits_type::eq_int_type(ch, traits_type::eof())) {
      *pptr() = traits_type::to_char_type(ch);
      pbump(1);
    }
    return traits_type::not_eof(ch);
  }

  std::streamsize xsputn(const char* s, std::streamsize n) override {
    if (static_cast<size_t>(n) <= static_cast<size_t>(epptr() - pptr())) {
      traits_type::copy(pptr(), s, static_cast<size_t>(n));
      pbump(static_cast<int>(n));
      return n;
    }
    if (!flushBuffer()) return 0;
    if (static_cast<size_t>(n) < buffer_.size()) {
      traits_type::copy(pptr(), s, static_cast<size_t>(n));
      pbump(static_cast<int>(n));
      return n;
    }
    return writeToFile(s, static_cast<size_t>(n)) ? n : 0;
  }

  int sync() override { return flushBuffer() ? 0 : -1; }

  // tellp(): bytes accepted so far (the position relative to where the export started).
  pos_type seekoff(off_type off, std::ios_base::seekdir dir, std::ios_base::openmode which) override {
    if (off != 0 || dir != std::ios_base::cur || !(which & std::ios_base::out)) return pos_type(off_type(-1));
    return pos_type(static_cast<off_type>(written_ + static_cast<uint64_t>(pptr() - pbase())));
  }

 private:
  bool flushBuffer() {
    size_t n = static_cast<size_t>(pptr() - pbase());
    if (n == 0) return error_.empty();
    bool ok = writeToFile(pbase(), n);
    setp(buffer_.data(), buffer_.data() + buffer_.size());
    return ok;
  }

  bool writeToFile(const char* data, size_t n) {
    if (!error_.empty()) return false;
    pybind11::gil_scoped_acquire gil;
    try {
      auto view = pybind11::reinterpret_steal<pybind11::object>(
          PyMemoryView_FromMemory(const_cast<char*>(data), static_cast<Py_ssize_t>(n), PyBUF_READ));
      if (!view) throw pybind11::error_already_set();
      pybind11::object result = file_.attr("write")(view);
      view.attr("release")();
      // A raw (unbuffered) file may write less than asked; io.BufferedWriter and BytesIO never do.
      if (!result.is_none() && result.cast<size_t>() != n)
        throw std::runtime_error("write() took " + std::to_string(result.cast<size_t>()) + " of " +
                                 std::to_string(n) + " bytes");
      written_ += n;
      return true;
    } catch (pybind11::error_already_set& e) {
      error_ = e.what();
    } catch (const std::exception& e) {
      error_ = e.what();
    }
    return false;
  }

  pybind11::object file_;
  std::vector<char> buffer_;
  std::string error_;
  uint64_t written_ = 0;
};

}  // namespace pt2onnx::python
