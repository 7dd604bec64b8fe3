// Sampling and patch ops: grid_sampler (ONNX GridSample, opset 16; volumes from 20), affine_grid_generator
// (F.affine_grid: a MatMul with a constant base grid; ONNX AffineGrid from 20), im2col (F.unfold: Pad and
// two Gathers) and col2im (F.fold: a ScatterElements that adds, opset 16; ONNX Col2Im from 18).
#include <optional>
#include <string>
#include <vector>

#include "common/opsets.h"
#include "symbolic/context.h"
#include "symbolic/families.h"
#include "symbolic/registry.h"

namespace pt2onnx::symbolic {
namespace {

using ir::Value;
namespace attr = ir::attr;

// ---------------------------------------------------------------- grid_sampler

// grid_sampler(input, grid, interpolation_mode, padding_mode, align_corners) and
// grid_sampler_2d(...): GridSample was defined after PyTorch's grid_sample, enum for enum.
Outputs gridSampler(Context& ctx) {
  Value* input = ctx.tensor(0);
  Value* grid = ctx.tensor(1);
  int64_t rank = ctx.requireRank(input, "the grid_sampler input");
  if (rank == 5 && ctx.opset() < 20)
    ctx.fail("grid_sampler on a 5-D input: ONNX GridSample samples volumes (N, C, D, H, W) from opset 20 (this "
             "export targets opset " + std::to_string(ctx.opset()) + "): export with opset 20 or later");
  if (rank != 4 && rank != 5) ctx.fail("grid_sampler takes a 4-D or 5-D input, got rank " + std::to_string(rank));
  static const char* const kModes[] = {"bilinear", "nearest", "bicubic"};
  static const char* const kPaddings[] = {"zeros", "border", "reflection"};
  int64_t mode = ctx.int64(2), padding = ctx.int64(3);
  if (mode < 0 || mode > 2) ctx.fail("grid_sampler: unknown interpolation_mode " + std::to_string(mode));
  if (padding < 0 || padding > 2) ctx.fail("grid_sampler: unknown padding_mode " + std::to_string(padding));
  return {ctx.op("GridSample", {input, ctx.cast(grid, ctx.dtypeOf(input))},
                 {attr::s("mode", kModes[mode]), attr::s("padding_mode", kPaddings[padding]),
                  attr::i("align_corners", ctx.boolean(4) ? 1 : 0)})};
}

// ---------------------------------------------------------------- affine_grid_generator

// Sample positions along one axis of n pixels in [-1, 1], as ATen's linspace_from_neg_one: the
// corner pixels' centres at +-1 with align_corners, else their outer edges.
std::vector<double> normalizedPositions(int64_t n, bool alignCorners) {
  std::vector<double> out(n, 0.0);
  if (n <= 1) return out;
  for (int64_t i = 0; i < n; ++i)
    out[i] = alignCorners ? -1.0 + 2.0 * i / (n - 1) : (2.0 * i + 1.0) / n - 1.0;
  return out;
}

// affine_grid_generator(theta, size, align_corners) below opset 20: theta (N, k, k+1) times a base
// grid of (x, y[, z], 1) per output position, built as a constant from the spatial sizes (which
// must be known at export time; the batch may be dynamic).
Outputs affineGrid(Context& ctx) {
  Value* theta = ctx.tensor(0);
  const Arg& size = ctx.arg(1);
  if (size.kind != Arg::Kind::List || size.isDynamicList() || (size.elems.size() != 4 && size.elems.size() != 5))
    ctx.fail("affine_grid: size must be a list of 4 or 5 sizes (N, C, H, W) or (N, C, D, H, W)");
  std::vector<int64_t> spatial;  // D?, H, W
  for (size_t k = 2; k < size.elems.size(); ++k) {
    const Arg& e = size.elems[k];
    if (e.kind != Arg::Kind::Int || e.value)
      ctx.fail("affine_grid with spatial sizes computed at run time: ONNX AffineGrid takes them from opset 20 "
               "(this export targets opset " + std::to_string(ctx.opset()) + "): export with opset 20 or later");
    spatial.push_back(e.i);
  }
  bool alignCorners = ctx.boolean(2);
  int64_t k = static_cast<int64_t>(spatial.size());
  int64_t points = 1;
  for (int64_t s : spatial) points *= s;
  // base[p] = (x, y[, z], 1): x runs along the last spatial axis, as in ATen's make_base_grid.
  std::vector<std::vector<double>> axes;
  for (int64_t s : spatial) axes.push_back(normalizedPositions(s, alignCorners));
  std::vector<double> base;
  base.reserve(points * (k + 1));
  for (int64_t p = 0; p < points; ++p) {
    std::vector<double> coords(k);
    int64_t rest = p;
    for (int64_t a = k - 1; a >= 0; --a) {
      coords[k - 1 - a] = axes[a][rest % spatial[a]];
      rest /= spatial[a];
    }
    base.insert(base.end(), coords.begin(), coords.end());
    base.push_back(1.0);
  }
  ir::DType t = ctx.dtypeOf(theta);
  ir::DType storage = t == ir::DType::Double ? t : ir::DType::Float;
  Value* baseGrid = ctx.constant(ir::TensorData::fromDoubles(base, storage, {points, k + 1}));
  if (storage != t) baseGrid = ctx.cast(baseGrid, t);
  Value* grid = ctx.op("MatMul", {baseGrid, ctx.op("Transpose", {theta}, {attr::ints("perm", {0, 2, 1})})});
  std::vector<int64_t> shape{-1};
  shape.insert(shape.end(), spatial.begin(), spatial.end());
  shape.push_back(k);
  return {ctx.op("Reshape", {grid, ctx.constInt64s(shape)})};
}

// From opset 20 one AffineGrid node, sizes known or not. With align_corners, ONNX puts an axis of one
// pixel at -1 (linspace(-1, 1, 1)) where ATen puts it at 0: such grids keep the constant base grid,
// and sizes that could be 1 at run time are an error rather than a grid that differs.
Outputs affineGrid20(Context& ctx) {
  if (ctx.boolean(2)) {
    const Arg& size = ctx.arg(1);
    bool runTime = size.kind != Arg::Kind::List || size.isDynamicList(), onePixelAxis = false;
    for (size_t k = 2; !runTime && k < size.elems.size(); ++k) {
      runTime = size.elems[k].kind != Arg::Kind::Int || size.elems[k].value;
      onePixelAxis = onePixelAxis || (!runTime && size.elems[k].i == 1);
    }
    if (runTime)
      ctx.fail("affine_grid with align_corners=True and spatial sizes computed at run time: ONNX AffineGrid puts "
               "an axis of one pixel at -1 where PyTorch puts it at 0, so pt2onnx writes it for sizes known at "
               "export time only (export without dynamic spatial axes, or with align_corners=False)");
    if (onePixelAxis) return affineGrid(ctx);
  }
  return {ctx.op("AffineGrid", {ctx.tensor(0), ctx.intsAsTensor(1)}, {attr::i("align_corners", ctx.boolean(2) ? 1 : 0)})};
}

// ---------------------------------------------------------------- im2col / col2im

struct PatchParams {
  int64_t kernel, dilation, padding, stride;
};

// (kernel, dilation, padding, stride) along spatial dim `d` (0: rows, 1: columns) from the int[2]
// arguments at `first`..`first + 3`.
PatchParams patchParams(Context& ctx, size_t first, size_t d) {
  std::vector<int64_t> values;
  for (size_t k = 0; k < 4; ++k) {
    std::vector<int64_t> pair = ctx.ints(first + k);
    if (pair.size() == 1) pair.push_back(pair[0]);
    if (pair.size() != 2) ctx.fail("im2col/col2im takes int[2] sizes, got " + std::to_string(pair.size()) + " values");
    values.push_back(pair[d]);
  }
  PatchParams p{values[0], values[1], values[2], values[3]};
  if (p.kernel <= 0 || p.dilation <= 0 || p.stride <= 0 || p.padding < 0)
    ctx.fail("im2col/col2im needs positive kernel_size, dilation and stride and non-negative padding");
  return p;
}

// Number of patch positions along a (padded) length.
int64_t blockCount(int64_t paddedLength, const PatchParams& p) {
  return (paddedLength - p.dilation * (p.kernel - 1) - 1) / p.stride + 1;
}

struct PatchIndices {
  Value* indices;                // [kernel, blocks] int64
  std::optional<int64_t> blocks;  // known at export time when the spatial size is
};

// The [kernel, blocks] indices into the padded spatial dim `axis` of x that each kernel offset reads
// at each patch position; computed at run time (Range) when that size is dynamic.
PatchIndices patchIndices(Context& ctx, Value* x, int64_t axis, const PatchParams& p) {
  const ir::TensorType& t = ctx.typeOf(x);
  const ir::Dim& size = (*t.shape)[axis];
  if (size.isStatic()) {
    int64_t blocks = blockCount(size.size + 2 * p.padding, p);
    if (blocks <= 0) ctx.fail("im2col: the kernel does not fit in the padded input");
    std::vector<int64_t> indices;
    for (int64_t k = 0; k < p.kernel; ++k)
      for (int64_t b = 0; b < blocks; ++b) indices.push_back(k * p.dilation + b * p.stride);
    return {ctx.constant(ir::TensorData::fromInt64s(indices, {p.kernel, blocks})), blocks};
  }
  Value* length = ctx.op("Gather", {ctx.op("Shape", {x}), ctx.constInt64(axis)}, {attr::i("axis", 0)});
  Value* end = ctx.op("Add", {length, ctx.constInt64(2 * p.padding - p.dilation * (p.kernel - 1))});
  Value* starts = ctx.op("Range", {ctx.constInt64(0), end, ctx.constInt64(p.stride)});
  std::vector<int64_t> offsets;
  for (int64_t k = 0; k < p.kernel; ++k) offsets.push_back(k * p.dilation);
  Value* kernelOffsets = ctx.constant(ir::TensorData::fromInt64s(offsets, {p.kernel, 1}));
  return {ctx.op("Add", {ctx.unsqueeze(starts, {0}), kernelOffsets}), std::nullopt};
}

// The size of v along `axis` as a 1-D int64 tensor of one element.
Value* sizeAlong(Context& ctx, Value* v, int64_t axis) {
  return ctx.op("Slice", {ctx.op("Shape", {v}), ctx.constInt64s({axis}), ctx.constInt64s({axis + 1})});
}

// im2col(self, kernel_size, dilation, padding, stride): (N, C, H, W) -> (N, C*kh*kw, L), the
// channel index c*kh*kw + i*kw + j and the patch index row*cols + col, as F.unfold lays them out.
Outputs im2col(Context& ctx) {
  Value* x = ctx.tensor(0);
  int64_t rank = ctx.requireRank(x, "the im2col input");
  if (rank != 3 && rank != 4) ctx.fail("im2col takes a 3-D or 4-D input, got rank " + std::to_string(rank));
  if (rank == 3) x = ctx.unsqueeze(x, {0});
  PatchParams rows = patchParams(ctx, 1, 0), cols = patchParams(ctx, 1, 1);
  PatchIndices rowIndices = patchIndices(ctx, x, 2, rows);
  PatchIndices colIndices = patchIndices(ctx, x, 3, cols);
  Value* padded = x;
  if (rows.padding || cols.padding)
    padded = ctx.op("Pad", {x, ctx.constInt64s({0, 0, rows.padding, cols.padding, 0, 0, rows.padding, cols.padding})});
  Value* byRow = ctx.op("Gather", {padded, rowIndices.indices}, {attr::i("axis", 2)});    // N, C, kh, bh, Wp
  Value* patches = ctx.op("Gather", {byRow, colIndices.indices}, {attr::i("axis", 4)});   // N, C, kh, bh, kw, bw
  Value* ordered = ctx.op("Transpose", {patches}, {attr::ints("perm", {0, 1, 2, 4, 3, 5})});
  Value* blocks = rowIndices.blocks && colIndices.blocks
                      ? ctx.constInt64s({*rowIndices.blocks * *colIndices.blocks})
                      : ctx.op("Mul", {sizeAlong(ctx, rowIndices.indices, 1), sizeAlong(ctx, colIndices.indices, 1)});
  Value* out = ctx.op("Reshape", {ordered, ctx.op("Concat", {ctx.constInt64s({0, -1}), blocks}, {attr::i("axis", 0)})});
  // The shape is computed, so say the rank (and what is static) here: (N, C*kh*kw, L).
  const std::vector<ir::Dim>& in = *ctx.typeOf(x).shape;
  ir::Dim channels = in[1].isStatic() ? ir::Dim::fixed(in[1].size * rows.kernel * cols.kernel) : ir::Dim{};
  ir::Dim positions = rowIndices.blocks && colIndices.blocks ? ir::Dim::fixed(*rowIndices.blocks * *colIndices.blocks) : ir::Dim{};
  ctx.setType(out, ir::TensorType{ctx.dtypeOf(x), std::vector<ir::Dim>{in[0], channels, positions}});
  return {rank == 3 ? ctx.squeeze(out, {0}) : out};
}

// col2im(self, output_size, kernel_size, dilation, padding, stride), F.fold: every column value is
// added into the output pixel it was read from, a ScatterElements with reduction="add" (opset 16)
// over the padded image flattened to H*W, then the padding is cut off.
Outputs col2im(Context& ctx) {
  Value* x = ctx.tensor(0);
  int64_t rank = ctx.requireRank(x, "the col2im input");
  if (rank != 2 && rank != 3) ctx.fail("col2im takes a 2-D or 3-D input, got rank " + std::to_string(rank));
  if (rank == 2) x = ctx.unsqueeze(x, {0});
  std::vector<int64_t> outputSize = ctx.ints(1);
  if (outputSize.size() == 1) outputSize.push_back(outputSize[0]);
  if (outputSize.size() != 2) ctx.fail("col2im: output_size must have 2 values");
  PatchParams rows = patchParams(ctx, 2, 0), cols = patchParams(ctx, 2, 1);
  int64_t paddedH = outputSize[0] + 2 * rows.padding, paddedW = outputSize[1] + 2 * cols.padding;
  int64_t blocksH = blockCount(paddedH, rows), blocksW = blockCount(paddedW, cols);
  if (blocksH <= 0 || blocksW <= 0) ctx.fail("col2im: the kernel does not fit in the padded output_size");
  const ir::TensorType& t = ctx.typeOf(x);
  if ((*t.shape)[2].isStatic() && (*t.shape)[2].size != blocksH * blocksW)
    ctx.fail("col2im: the input has " + std::to_string((*t.shape)[2].size) + " patches, but output_size, "
             "kernel_size, dilation, padding and stride give " + std::to_string(blocksH * blocksW));
  // Target of column value (i, j, bi, bj): padded pixel (bi*sh + i*dh, bj*sw + j*dw).
  std::vector<int64_t> targets;
  for (int64_t i = 0; i < rows.kernel; ++i)
    for (int64_t j = 0; j < cols.kernel; ++j)
      for (int64_t bi = 0; bi < blocksH; ++bi)
        for (int64_t bj = 0; bj < blocksW; ++bj)
          targets.push_back((bi * rows.stride + i * rows.dilation) * paddedW + bj * cols.stride + j * cols.dilation);
  int64_t perChannel = static_cast<int64_t>(targets.size());
  Value* updates = ctx.op("Reshape", {x, ctx.constInt64s({0, -1, perChannel})});  // N, C, kh*kw*L
  Value* updatesShape = ctx.op("Shape", {updates});
  Value* indices = ctx.op("Expand", {ctx.constant(ir::TensorData::fromInt64s(targets, {1, 1, perChannel})), updatesShape});
  Value* imageShape = ctx.op("Concat", {ctx.op("Slice", {updatesShape, ctx.constInt64s({0}), ctx.constInt64s({2})}),
                                        ctx.constInt64s({paddedH * paddedW})}, {attr::i("axis", 0)});
  Value* zeros = ctx.op("Expand", {ctx.constScalar(0, ctx.dtypeOf(x)), imageShape});
  Value* summed = ctx.op("ScatterElements", {zeros, indices, updates},
                         {attr::i("axis", 2), attr::s("reduction", "add")});
  Value* image = ctx.op("Reshape", {summed, ctx.constInt64s({0, 0, paddedH, paddedW})});
  if (rows.padding || cols.padding)
    image = ctx.op("Slice", {image, ctx.constInt64s({rows.padding, cols.padding}),
                             ctx.constInt64s({rows.padding + outputSize[0], cols.padding + outputSize[1]}),
                             ctx.constInt64s({2, 3})});
  return {rank == 2 ? ctx.squeeze(image, {0}) : image};
}

// From opset 18 one Col2Im node: the same checks, then ONNX's own op (image_shape and block_shape
// inputs, symmetric pads).
Outputs col2im18(Context& ctx) {
  Value* x = ctx.tensor(0);
  int64_t rank = ctx.requireRank(x, "the col2im input");
  if (rank != 2 && rank != 3) ctx.fail("col2im takes a 2-D or 3-D input, got rank " + std::to_string(rank));
  std::vector<int64_t> outputSize = ctx.ints(1);
  if (outputSize.size() == 1) outputSize.push_back(outputSize[0]);
  if (outputSize.size() != 2) ctx.fail("col2im: output_size must have 2 values");
  PatchParams rows = patchParams(ctx, 2, 0), cols = patchParams(ctx, 2, 1);
  int64_t blocksH = blockCount(outputSize[0] + 2 * rows.padding, rows);
  int64_t blocksW = blockCount(outputSize[1] + 2 * cols.padding, cols);
  if (blocksH <= 0 || blocksW <= 0) ctx.fail("col2im: the kernel does not fit in the padded output_size");
  const ir::TensorType& t = ctx.typeOf(x);
  if ((*t.shape)[rank - 1].isStatic() && (*t.shape)[rank - 1].size != blocksH * blocksW)
    ctx.fail("col2im: the input has " + std::to_string((*t.shape)[rank - 1].size) + " patches, but output_size, "
             "kernel_size, dilation, padding and stride give " + std::to_string(blocksH * blocksW));
  Value* batched = rank == 2 ? ctx.unsqueeze(x, {0}) : x;
  Value* image = ctx.op("Col2Im", {batched, ctx.constInt64s(outputSize), ctx.constInt64s({rows.kernel, cols.kernel})},
                        {attr::ints("dilations", {rows.dilation, cols.dilation}),
                         attr::ints("pads", {rows.padding, cols.padding, rows.padding, cols.padding}),
                         attr::ints("strides", {rows.stride, cols.stride})});
  return {rank == 2 ? ctx.squeeze(image, {0}) : image};
}

}  // namespace

void registerSamplingSymbolics(Registry& r) {
  r.onOp("aten::grid_sampler", 16, gridSampler);
  r.onOp("aten::grid_sampler_2d", 16, gridSampler);
  r.onOp("aten::grid_sampler_3d", 20, gridSampler);
  r.onOp("aten::affine_grid_generator", kMinOpset, affineGrid);
  r.onOp("aten::affine_grid_generator", 20, affineGrid20);
  r.onOp("aten::im2col", kMinOpset, im2col);
  r.onOp("aten::col2im", 16, col2im);  // ScatterElements reduction="add" is opset 16
  r.onOp("aten::col2im", 18, col2im18);
}

}  // namespace pt2onnx::symbolic
