#include "cli/commands/junit.h"

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <ctime>
#include <filesystem>
#include <fstream>
#include <sstream>

#include "common/errors.h"
#include "common/interrupt.h"

namespace pt2onnx::cli {
namespace {

// Text as XML attribute or element content; characters XML 1.0 cannot hold become '?'. In an
// attribute, line breaks and tabs are character references: a parser would turn them into spaces.
std::string escaped(const std::string& text, bool attribute = true) {
  std::string out;
  out.reserve(text.size());
  for (unsigned char c : text) {
    switch (c) {
      case '&': out += "&amp;"; break;
      case '<': out += "&lt;"; break;
      case '>': out += "&gt;"; break;
      case '"': out += "&quot;"; break;
      case '\'': out += "&apos;"; break;
      case '\n': out += attribute ? "&#10;" : "\n"; break;
      case '\r': out += attribute ? "&#13;" : "\r"; break;
      case '\t': out += attribute ? "&#9;" : "\t"; break;
      default:
        if (c < 0x20) out += '?';
        else out += static_cast<char>(c);
    }
  }
  return out;
}

std::string seconds(double s) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.3f", s);
  return buf;
}

std::string timestamp() {
  std::time_t now = std::time(nullptr);
  char buf[32];
  std::strftime(buf, sizeof buf, "%Y-%m-%dT%H:%M:%S", std::gmtime(&now));
  return buf;
}

}  // namespace

void writeJUnit(const std::string& path, const std::string& suite, const std::vector<JUnitCase>& cases) {
  size_t failures = 0, errors = 0, skipped = 0;
  double total = 0;
  for (const JUnitCase& c : cases) {
    failures += !c.failure.empty();
    errors += c.failure.empty() && !c.error.empty();
    skipped += c.failure.empty() && c.error.empty() && !c.skipped.empty();
    total += c.seconds;
  }
  std::ostringstream xml;
  std::string counts = " tests=\"" + std::to_string(cases.size()) + "\" failures=\"" + std::to_string(failures) +
                       "\" errors=\"" + std::to_string(errors) + "\" skipped=\"" + std::to_string(skipped) +
                       "\" time=\"" + seconds(total) + "\"";
  xml << "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n";
  xml << "<testsuites name=\"pt2onnx\"" << counts << ">\n";
  xml << "  <testsuite name=\"" << escaped(suite) << "\"" << counts << " timestamp=\"" << timestamp() << "\">\n";
  for (const JUnitCase& c : cases) {
    xml << "    <testcase classname=\"" << escaped(c.classname) << "\" name=\"" << escaped(c.name) << "\" time=\""
        << seconds(c.seconds) << "\"";
    const std::string& body = c.details.empty() ? (c.failure.empty() ? c.error : c.failure) : c.details;
    if (!c.failure.empty()) {
      xml << ">\n      <failure message=\"" << escaped(c.failure) << "\" type=\"mismatch\">" << escaped(body, false)
          << "</failure>\n    </testcase>\n";
    } else if (!c.error.empty()) {
      xml << ">\n      <error message=\"" << escaped(c.error) << "\" type=\"error\">" << escaped(body, false)
          << "</error>\n    </testcase>\n";
    } else if (!c.skipped.empty()) {
      xml << ">\n      <skipped message=\"" << escaped(c.skipped) << "\"/>\n    </testcase>\n";
    } else {
      xml << "/>\n";
    }
  }
  xml << "  </testsuite>\n</testsuites>\n";
  std::error_code ec;  // `--junit reports/convert.xml` in a fresh checkout: pytest's --junitxml makes the directory too
  if (auto parent = std::filesystem::path(path).parent_path(); !parent.empty())
    std::filesystem::create_directories(parent, ec);
  std::string tmp = path + ".tmp";
  interrupt::PendingFile pending(tmp);
  {
    std::ofstream out(tmp, std::ios::binary | std::ios::trunc);
    if (!out || !(out << xml.str()) || !out.flush())
      throw ExportError("cannot write the JUnit report '" + path + "': " + (ec ? ec.message() : std::strerror(errno)));
  }
  if (std::rename(tmp.c_str(), path.c_str()) != 0) {
    std::string why = std::strerror(errno);
    std::remove(tmp.c_str());
    throw ExportError("cannot write the JUnit report '" + path + "': " + why);
  }
  interrupt::noteFileWritten();
}

}  // namespace pt2onnx::cli
