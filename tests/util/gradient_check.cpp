#include "tests/util/gradient_check.h"

#include <map>

#include <ATen/CPUGeneratorImpl.h>
#include <gtest/gtest.h>

#include "common/errors.h"
#include "exporter/jit_util.h"
#include "gradient/backward.h"
#include "runtime/session.h"
#include "tests/util/ort_runner.h"
#include "writer/model_writer.h"
#include "writer/node_type_inference.h"

namespace pt2onnx::testing {

struct GradientCase::Step {
  enum class Kind { Input, DataInput, ConstInts, ConstFloat, Node } kind;
  std::string name;  // inputs and constants; a node's op type
  std::vector<std::string> inputs, outputs;
  std::vector<ir::Attribute> attributes;
  std::vector<int64_t> ints;
  double scalar = 0;
};

struct GradientCase::Built {
  std::string forward, backward;  // serialized models
  std::vector<std::string> seeds, gradients;
};

namespace {

at::Generator& generator() {
  static at::Generator gen = at::make_generator<at::CPUGeneratorImpl>(20261124);
  return gen;
}

at::Tensor randomLike(const at::Tensor& t) { return at::randn(t.sizes(), generator(), at::kDouble); }

std::map<std::string, at::Tensor> castFeeds(const std::map<std::string, at::Tensor>& feeds, at::ScalarType to) {
  std::map<std::string, at::Tensor> out;
  for (const auto& [k, v] : feeds) out[k] = v.is_floating_point() ? v.to(to) : v;
  return out;
}

}  // namespace

GradientCase::GradientCase(std::string name, int opset) : name_(std::move(name)), opset_(opset) {}

GradientCase& GradientCase::input(const std::string& name, std::vector<int64_t> shape, bool wantGrad) {
  return inputValue(name, at::randn(shape, generator(), at::kDouble), wantGrad);
}

GradientCase& GradientCase::inputValue(const std::string& name, const at::Tensor& value, bool wantGrad) {
  auto s = std::make_shared<Step>();
  s->kind = Step::Kind::Input;
  s->name = name;
  steps_.push_back(s);
  feeds_.emplace_back(name, value.to(at::kDouble));
  if (wantGrad) wanted_.push_back(name);
  return *this;
}

GradientCase& GradientCase::dataInput(const std::string& name, const at::Tensor& value) {
  auto s = std::make_shared<Step>();
  s->kind = Step::Kind::DataInput;
  s->name = name;
  steps_.push_back(s);
  feeds_.emplace_back(name, value);
  return *this;
}

GradientCase& GradientCase::constInts(const std::string& name, const std::vector<int64_t>& values) {
  auto s = std::make_shared<Step>();
  s->kind = Step::Kind::ConstInts;
  s->name = name;
  s->ints = values;
  steps_.push_back(s);
  return *this;
}

GradientCase& GradientCase::constFloat(const std::string& name, double value) {
  auto s = std::make_shared<Step>();
  s->kind = Step::Kind::ConstFloat;
  s->name = name;
  s->scalar = value;
  steps_.push_back(s);
  return *this;
}

GradientCase& GradientCase::node(const std::string& op, const std::vector<std::string>& inputs,
                                 const std::vector<std::string>& outputs, std::vector<ir::Attribute> attributes) {
  auto s = std::make_shared<Step>();
  s->kind = Step::Kind::Node;
  s->name = op;
  s->inputs = inputs;
  s->outputs = outputs;
  s->attributes = std::move(attributes);
  steps_.push_back(s);
  return *this;
}

GradientCase& GradientCase::output(const std::string& name) {
  outputs_.push_back(name);
  return *this;
}

GradientCase& GradientCase::tolerance(double atol, double rtol) {
  atol_ = atol;
  rtol_ = rtol;
  return *this;
}

GradientCase& GradientCase::step(double h) {
  step_ = h;
  return *this;
}

GradientCase::Built GradientCase::build(at::ScalarType dtype) {
  std::map<std::string, at::Tensor> feeds(feeds_.begin(), feeds_.end());
  auto make = [&](bool withBackward, Built& built) {
    ir::Graph graph;
    int opset = opset_;
    graph.setNodeObserver([opset](ir::Node* n) {
      writer::inferNodeTypes(*n, opset, {});
      // ONNX gives GroupNormalization no type inference (a function op): y has x's type, as the
      // exporter types it from PyTorch's.
      if (n->opType == "GroupNormalization" && n->outputs[0]->type.dtype == ir::DType::Undefined)
        n->outputs[0]->type = n->inputs[0]->type;
    });
    std::map<std::string, ir::Value*> values;
    for (const auto& s : steps_) {
      switch (s->kind) {
        case Step::Kind::Input: values[s->name] = graph.addInput(s->name, jit::typeOfTensor(feeds.at(s->name).to(dtype))); break;
        case Step::Kind::DataInput: values[s->name] = graph.addInput(s->name, jit::typeOfTensor(feeds.at(s->name))); break;
        case Step::Kind::ConstInts:
          values[s->name] = graph.addNode("Constant", {}, 1, {ir::attr::t("value", ir::TensorData::fromInt64s(
                                                                                    s->ints, {static_cast<int64_t>(s->ints.size())}))})
                                ->outputs[0];
          break;
        case Step::Kind::ConstFloat:
          values[s->name] =
              graph.addNode("Constant", {}, 1, {ir::attr::t("value", ir::TensorData::fromDoubles({s->scalar}, jit::onnxDType(dtype), {}))})
                  ->outputs[0];
          break;
        case Step::Kind::Node: {
          std::vector<ir::Value*> ins;
          for (const std::string& i : s->inputs) ins.push_back(i.empty() ? nullptr : values.at(i));
          ir::Node* n = graph.addNode(s->name, ins, s->outputs.size(), s->attributes);
          for (size_t k = 0; k < s->outputs.size(); ++k) {
            graph.renameValue(n->outputs[k], s->outputs[k]);
            values[s->outputs[k]] = n->outputs[k];
          }
          break;
        }
      }
    }
    graph.setNodeObserver(nullptr);
    for (const std::string& o : outputs_) graph.addOutput(values.at(o));
    writer::WriteOptions options;
    options.opset = opset_;
    if (!withBackward) return writer::serializeModel(graph, options);
    gradient::GradientRequest request;
    request.wrt = gradient::GradientRequest::Wrt::Named;
    request.names = wanted_;
    gradient::BackwardSummary summary = gradient::buildBackward(graph, request, opset_, {});
    built.seeds = summary.seedInputs;
    built.gradients = summary.gradientOutputs;
    return writer::serializeModel(graph, options);
  };
  Built built;
  built.forward = make(false, built);
  built.backward = make(true, built);
  return built;
}

std::string GradientCase::backwardError() {
  try {
    build(at::kDouble);
  } catch (const ExportError& e) {
    return e.what();
  }
  return "";
}

void GradientCase::check() {
  SCOPED_TRACE(name_);
  Built built = build(at::kDouble);
  std::map<std::string, at::Tensor> feeds(feeds_.begin(), feeds_.end());
  auto forward = runtime::Session::fromBytes(built.forward);
  std::vector<at::Tensor> ys = forward->run(feeds, outputs_);
  ASSERT_EQ(built.seeds.size(), outputs_.size()) << "every output of a case should be differentiable";
  std::map<std::string, at::Tensor> seeds;
  for (size_t k = 0; k < ys.size(); ++k) seeds[outputs_[k] + "_grad"] = randomLike(ys[k]).to(ys[k].scalar_type());
  // f(inputs) = Σ_y <y, seed_y>: its gradient is what the backward computes.
  auto objective = [&](const std::map<std::string, at::Tensor>& f) {
    std::vector<at::Tensor> out = forward->run(f, outputs_);
    double total = 0;
    for (size_t k = 0; k < out.size(); ++k) total += (out[k] * seeds.at(outputs_[k] + "_grad")).sum().item<double>();
    return total;
  };
  auto backward = runtime::Session::fromBytes(built.backward);
  std::map<std::string, at::Tensor> all = feeds;
  all.insert(seeds.begin(), seeds.end());
  std::vector<at::Tensor> grads = backward->run(all, built.gradients);
  ASSERT_EQ(grads.size(), wanted_.size());
  const double h = step_;
  for (size_t w = 0; w < wanted_.size(); ++w) {
    SCOPED_TRACE("gradient of " + wanted_[w]);
    at::Tensor x = feeds.at(wanted_[w]);
    ASSERT_EQ(grads[w].sizes(), x.sizes());
    at::Tensor numeric = at::zeros_like(x);
    for (int64_t e = 0; e < x.numel(); ++e) {
      std::map<std::string, at::Tensor> f = feeds;
      at::Tensor plus = x.clone(), minus = x.clone();
      plus.view(-1)[e] += h;
      minus.view(-1)[e] -= h;
      f[wanted_[w]] = plus;
      double up = objective(f);
      f[wanted_[w]] = minus;
      numeric.view(-1)[e] = (up - objective(f)) / (2 * h);
    }
    double worst = ((grads[w] - numeric).abs() - rtol_ * numeric.abs()).max().item<double>();
    EXPECT_LE(worst, atol_) << "builder:\n" << grads[w] << "\nfinite differences:\n" << numeric;
  }
  // float32: pt2onnx's runtime and ONNX Runtime agree with each other and with float64.
  Built single = build(at::kFloat);
  std::map<std::string, at::Tensor> allSingle = castFeeds(all, at::kFloat);
  std::vector<at::Tensor> mine = runtime::Session::fromBytes(single.backward)->run(allSingle, single.gradients);
  OrtJob job;
  job.modelBytes = single.backward;
  for (const auto& [k, v] : allSingle) {
    job.inputNames.push_back(k);
    job.inputs.push_back(v);
  }
  OrtResult ort = runInOrt({job}).at(0);
  ASSERT_EQ(ort.error, "");
  for (size_t w = 0; w < wanted_.size(); ++w) {
    SCOPED_TRACE("float32 gradient of " + wanted_[w]);
    at::Tensor theirs;
    for (size_t k = 0; k < ort.outputNames.size(); ++k)
      if (ort.outputNames[k] == single.gradients[w]) theirs = ort.outputs[k];
    ASSERT_TRUE(theirs.defined()) << "ONNX Runtime did not return " << single.gradients[w];
    EXPECT_TRUE(at::allclose(mine[w].to(at::kDouble), grads[w], 1e-3, 1e-4)) << mine[w] << "\n" << grads[w];
    EXPECT_TRUE(at::allclose(theirs.to(at::kDouble), grads[w], 1e-3, 1e-4)) << theirs << "\n" << grads[w];
  }
}

}  // namespace pt2onnx::testing
