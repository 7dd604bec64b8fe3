// JUnit XML reports (--junit FILE of convert, report and verify) in the form CI systems read (Ant's
// and Jenkins' schema: testsuites > testsuite > testcase with failure | error | skipped). Written to
// a temporary file and renamed, so a CI job never reads half a report.
#pragma once

#include <string>
#include <utility>
#include <vector>

namespace pt2onnx::cli {

struct JUnitCase {
  JUnitCase(std::string classname_, std::string name_) : classname(std::move(classname_)), name(std::move(name_)) {}
  std::string classname;  // e.g. "pt2onnx.verify.r18.pt"
  std::string name;       // e.g. "example / ort / output_0"
  double seconds = 0;
  std::string failure;  // a check that failed (mismatch, unconvertible op): its message
  std::string error;    // the command could not do the check (export failed): its message
  std::string skipped;  // not run, and why
  std::string details;  // the failure's or error's full text (element content)
};

// Writes one <testsuite> named `suite` holding `cases`. Throws ExportError when the file cannot be written.
void writeJUnit(const std::string& path, const std::string& suite, const std::vector<JUnitCase>& cases);

}  // namespace pt2onnx::cli
