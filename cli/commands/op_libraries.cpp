#include "cli/commands/op_libraries.h"

#include <dlfcn.h>
#include <unistd.h>

#include <cctype>
#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <set>
#include <string_view>

#include <caffe2/serialize/inline_container.h>
#include <pybind11/embed.h>
#include <pybind11/stl.h>
#include <torch/csrc/jit/runtime/operator.h>

#include "cli/commands/python_source.h"
#include "common/errors.h"
#include "common/logging.h"
#include "exporter/torch_compat.h"

namespace py = pybind11;

namespace pt2onnx::cli {
namespace {

// A call in an archive's code of an op outside aten and prim: TorchScript prints them
// `ops.torchvision.nms(...)`.
struct OpCall {
  std::string op;     // "torchvision::nms"
  std::string where;  // "code/__torch__/torchvision/ops/boxes.py, line 24", as the loader's messages say
};

bool isIdentifierChar(char c) { return std::isalnum(static_cast<unsigned char>(c)) || c == '_'; }

// The identifier starting at `at`, or "".
std::string_view identifierAt(std::string_view code, size_t at) {
  size_t end = at;
  while (end < code.size() && isIdentifierChar(code[end])) ++end;
  if (end == at || std::isdigit(static_cast<unsigned char>(code[at]))) return {};
  return code.substr(at, end - at);
}

// Whether "ops." at `at` begins an op call's name: not part of a longer dotted name
// (`__torch__.torchvision.ops.misc.Conv2dNormActivation`), `torch.ops.` excepted.
bool startsOpName(std::string_view code, size_t at) {
  size_t start = at;
  if (start >= 6 && code.substr(start - 6, 6) == "torch.") start -= 6;
  return start == 0 || !(isIdentifierChar(code[start - 1]) || code[start - 1] == '.');
}

// The ops outside aten and prim the archive's code calls, each with its first call. Empty when the
// file is no readable archive: the loader says what it is.
std::vector<OpCall> libraryOpCalls(const std::string& archive) {
  std::vector<OpCall> calls;
  std::set<std::string> seen;
  try {
    caffe2::serialize::PyTorchStreamReader reader(archive);
    for (const std::string& name : reader.getAllRecords()) {
      if (name.rfind("code/", 0) != 0 || name.size() < 3 || name.compare(name.size() - 3, 3, ".py") != 0) continue;
      auto [data, size] = reader.getRecord(name);
      std::string_view code(static_cast<const char*>(data.get()), size);
      for (size_t at = code.find("ops."); at != std::string_view::npos; at = code.find("ops.", at + 4)) {
        if (!startsOpName(code, at)) continue;
        std::string_view ns = identifierAt(code, at + 4);
        size_t dot = at + 4 + ns.size();
        if (ns.empty() || ns == "aten" || ns == "prim" || dot >= code.size() || code[dot] != '.') continue;
        std::string_view op = identifierAt(code, dot + 1);
        size_t paren = dot + 1 + op.size();
        if (op.empty() || paren >= code.size() || code[paren] != '(') continue;
        std::string qualified = std::string(ns) + "::" + std::string(op);
        if (!seen.insert(qualified).second) continue;
        size_t line = 1 + std::count(code.begin(), code.begin() + static_cast<std::ptrdiff_t>(at), '\n');
        calls.push_back({qualified, name + ", line " + std::to_string(line)});
      }
    }
  } catch (const std::exception&) {
    return {};
  }
  return calls;
}

std::string namespaceOf(const std::string& op) { return op.substr(0, op.find("::")); }

bool isRegistered(const std::string& op) {
  return !torch::jit::getAllOperatorsFor(c10::Symbol::fromQualString(op)).empty();
}

// The namespaces of every op this process has registered.
std::set<std::string> registeredNamespaces() {
  std::set<std::string> out;
  for (const auto& op : torch::jit::getAllOperators()) out.insert(namespaceOf(op->schema().name()));
  return out;
}

std::string pythonExecutable() { return py::module_::import("sys").attr("executable").cast<std::string>(); }

void loadLibrary(const std::string& path) {
  std::error_code ec;
  if (!std::filesystem::is_regular_file(path, ec))
    throw ExportError("--load-library " + path + ": no such file");
  // An absolute path: dlopen looks a bare file name up on the library search path, not here.
  std::string absolute = std::filesystem::absolute(path, ec).string();
  dlerror();
  if (!dlopen(absolute.c_str(), RTLD_NOW | RTLD_GLOBAL)) {
    const char* why = dlerror();
    throw ExportError("--load-library " + path + ": cannot load it: " + (why ? why : "dlopen failed"));
  }
  logger("cli")->info("loaded the op library {}", absolute);
}

// The native executable's interpreter ends with each PythonScope, and pt2onnx converters registered
// in it would go to the pt2onnx extension's registry, not this executable's: a command with
// --import runs again as the console script of that Python (python -m pt2onnx_cli), whose process
// keeps the modules, their ops and converters for the whole command.
[[noreturn]] void runAsConsoleScript() {
  std::string python;
  bool installed = false;
  {
    PythonScope scope;
    python = pythonExecutable();
    installed = !py::module_::import("importlib.util").attr("find_spec")("pt2onnx_cli").is_none();
  }
  if (!installed)
    throw ExportError("--import needs the pt2onnx package in the Python this executable embeds (" + python +
                      "): pip install it there, or run that Python's `pt2onnx`");
  std::vector<std::string> args{python, "-m", "pt2onnx_cli"};
  std::ifstream cmdline("/proc/self/cmdline", std::ios::binary);
  std::string arg;
  for (bool first = true; std::getline(cmdline, arg, '\0'); first = false)
    if (!first) args.push_back(arg);
  std::vector<char*> argv;
  for (std::string& a : args) argv.push_back(a.data());
  argv.push_back(nullptr);
  std::cout.flush();
  std::cerr.flush();
  execv(python.c_str(), argv.data());
  throw ExportError("--import: cannot run " + python + " -m pt2onnx_cli: " + std::strerror(errno));
}

// The error of a module that did not import: what it raised, and where.
std::string importError(const std::string& module, py::error_already_set& e) {
  std::string type = py::str(e.type().attr("__name__"));
  if (type == "ModuleNotFoundError" && py::str(e.value().attr("name")).cast<std::string>() == module)
    return "--import " + module + ": no module named '" + module + "' in the current directory or on sys.path of " +
           pythonExecutable();
  std::string where;
  py::list frames = py::module_::import("traceback").attr("extract_tb")(e.trace());
  if (!frames.empty()) {
    py::handle last = frames[frames.size() - 1];
    where = " (at " + py::str(last.attr("filename")).cast<std::string>() + ":" +
            std::to_string(last.attr("lineno").cast<int>()) + ")";
  }
  return "--import " + module + ": importing it raised " + type + ": " + py::str(e.value()).cast<std::string>() + where;
}

void importModules(const std::vector<std::string>& modules) {
  if (!cliRunsInsidePython()) runAsConsoleScript();
  PythonScope python;
  py::list path = py::module_::import("sys").attr("path");
  std::string cwd = std::filesystem::current_path().string();
  if (!path.contains(cwd)) path.attr("insert")(0, cwd);  // like `python -m`: modules of the current directory
  for (const std::string& module : modules) {
    try {
      py::module_::import("importlib").attr("import_module")(module);
    } catch (py::error_already_set& e) {
      throw ExportError(importError(module, e));
    }
    logger("cli")->info("imported {}", module);
  }
}

struct Torchvision {
  std::string python;   // the Python it was looked for in
  std::string dir;      // its package directory; "" when not installed
  std::string version;
  std::string library;  // its ops library; "" when none was found
};

// torchvision's ops library, found without importing torchvision (which imports torch's Python
// side): _C_stable since torchvision 0.24, _C before.
Torchvision findTorchvision() {
  PythonScope scope;
  Torchvision tv;
  tv.python = pythonExecutable();
  py::object spec;
  try {
    spec = py::module_::import("importlib.util").attr("find_spec")("torchvision");
  } catch (py::error_already_set&) {  // a broken torchvision counts as none
    return tv;
  }
  if (spec.is_none() || spec.attr("submodule_search_locations").is_none()) return tv;
  for (const py::handle& d : spec.attr("submodule_search_locations")) {
    tv.dir = py::str(d);
    break;
  }
  try {
    tv.version = py::module_::import("importlib.metadata").attr("version")("torchvision").cast<std::string>();
  } catch (py::error_already_set&) {
  }
  auto suffixes = py::module_::import("importlib.machinery").attr("EXTENSION_SUFFIXES").cast<std::vector<std::string>>();
  for (const char* name : {"_C_stable", "_C"})
    for (const std::string& suffix : suffixes)
      if (std::filesystem::path candidate = std::filesystem::path(tv.dir) / (name + suffix);
          tv.library.empty() && std::filesystem::is_regular_file(candidate))
        tv.library = candidate.string();
  return tv;
}

void loadTorchvisionOps(const OpCall& call) {
  Torchvision tv = findTorchvision();
  std::string calls = "the TorchScript archive calls " + call.op + " (" + call.where + "), an op of torchvision";
  std::string torch = std::string("torch ") + torch_compat::torchVersion();
  if (tv.dir.empty())
    throw ExportError(calls + ", which is not installed in the Python pt2onnx runs with (" + tv.python +
                      "): install the torchvision release made for " + torch + " there, or give a library that "
                      "registers its ops with --load-library PATH");
  std::string release = "torchvision " + (tv.version.empty() ? std::string("(version unknown)") : tv.version) +
                        " in " + tv.dir;
  if (tv.library.empty())
    throw ExportError(calls + ": " + release + " has no ops library (_C_stable or _C): reinstall the torchvision "
                      "release made for " + torch);
  dlerror();
  if (!dlopen(tv.library.c_str(), RTLD_NOW | RTLD_GLOBAL)) {
    const char* why = dlerror();
    throw ExportError(calls + ": the ops library of " + release + " does not load beside " + torch + " (" +
                      (why ? why : "dlopen failed") + "): install the torchvision release made for " + torch);
  }
  logger("cli")->info("loaded torchvision's ops ({})", tv.library);
}

}  // namespace

void addOpLibraryOptions(CLI::App& cmd, OpLibraryOptions& opts) {
  cmd.add_option("--load-library", opts.libraries,
                 "A shared library that registers ops (TORCH_LIBRARY), loaded before the archive as "
                 "torch.ops.load_library loads it; repeatable. torchvision's ops are loaded without it when "
                 "the archive calls them and torchvision is installed")
      ->allow_extra_args(false)  // one value each: `--load-library ops.so model.pt` leaves the archive alone
      ->take_all();
  cmd.add_option("--import", opts.imports,
                 "A Python module imported before the archive is read, from the current directory or sys.path: "
                 "one that registers ops (torch.library) or pt2onnx converters for them "
                 "(pt2onnx.register_custom_op_symbolic); repeatable")
      ->allow_extra_args(false)
      ->take_all();
}

void loadOpLibraries(const OpLibraryOptions& opts, const std::string& archive) {
  for (const std::string& library : opts.libraries) loadLibrary(library);
  if (!opts.imports.empty()) importModules(opts.imports);
  if (archive.empty()) return;
  std::vector<OpCall> calls = libraryOpCalls(archive);
  for (const OpCall& call : calls)
    if (namespaceOf(call.op) == "torchvision" && !isRegistered(call.op)) {
      loadTorchvisionOps(call);
      break;
    }
  std::set<std::string> namespaces;
  for (const OpCall& call : calls) {
    if (isRegistered(call.op)) continue;
    if (namespaces.empty()) namespaces = registeredNamespaces();
    // An op missing from a namespace that has others (a library of another version) is the loader's to name.
    if (namespaces.count(namespaceOf(call.op))) continue;
    throw ExportError("the TorchScript archive calls " + call.op + " (" + call.where + "), an op of a library that "
                      "is not loaded (nothing registers " + namespaceOf(call.op) + ":: ops): give the shared library "
                      "that registers it with --load-library PATH, or a Python module that registers it "
                      "(torch.library) with --import MODULE");
  }
}

std::vector<std::string> opLibraryFlags(const OpLibraryOptions& opts) {
  std::vector<std::string> flags;
  std::error_code ec;
  for (const std::string& library : opts.libraries)
    flags.push_back("--load-library=" + std::filesystem::absolute(library, ec).string());
  for (const std::string& module : opts.imports) flags.push_back("--import=" + module);
  if (!opts.imports.empty()) {
    std::string cwd = std::filesystem::current_path().string();
    const char* old = std::getenv("PYTHONPATH");
    setenv("PYTHONPATH", (old && *old ? cwd + ":" + old : cwd).c_str(), 1);
  }
  return flags;
}

}  // namespace pt2onnx::cli
