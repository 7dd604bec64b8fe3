"""Candidate shapes of a forward() tensor argument, for `pt2onnx inspect`, read from the ops of the
archive's inlined graph that consume it: a convolution's weight gives the channels and the number of
spatial dims, a Linear's or a frozen matmul's its features, an LSTM its input size, layer_norm its
normalized shape, stft a waveform, embedding token ids. The argument is followed through ops that keep
its shape (device moves, casts, elementwise ops), into If and Loop bodies, and back through ops that
change it in a known way (unsqueeze, transpose, permute: `wav.unsqueeze(1)` into a conv1d is an [N, T]
waveform).

Each shape comes with the axes that may vary ({axis: dim name}): "batch", "sequence", "height",
"width", "depth", "time", "length". Inputs that share a dim name vary together (ids and their mask
share batch and sequence); which of them really vary is decided by dynamic_axes_check, not here."""
import torch

BATCH = 2  # of every tensor a rule shapes (one size, so that inputs combine)
SEQUENCE = 8
WAVEFORM = 16000  # one second at 16 kHz
B, S, H, W, D, T, L = "batch", "sequence", "height", "width", "depth", "time", "length"
# Spatial sizes tried, by the number of spatial dims a convolution reads (224 first: torchvision's).
SPATIAL = {1: [1024, 64, WAVEFORM], 2: [224, 64, 299, 32, 520], 3: [(16, 112, 112), (8, 64, 64), (16, 224, 224)]}
SPATIAL_DIMS = {1: (L,), 2: (H, W), 3: (D, H, W)}
# Shapes for a tensor no reader tells the shape of, with the axes they would make dynamic.
GENERIC_SHAPES = [((BATCH, SEQUENCE), {0: B, 1: S}), ((BATCH, 3, 224, 224), {0: B, 2: H, 3: W}),
                  ((3, 224, 224), {1: H, 2: W}),  # one image, as torchvision's detection models take them
                  ((BATCH, SEQUENCE, 16), {0: B, 1: S}), ((SEQUENCE,), {0: S}), ((BATCH, 3, 64, 64), {0: B, 2: H, 3: W}),
                  ((BATCH, WAVEFORM), {0: B, 1: T}), ((1, SEQUENCE), {0: B, 1: S})]
WAVEFORM_SHAPES = [((BATCH, WAVEFORM), {0: B, 1: T}), ((WAVEFORM,), {0: T})]
LENGTHS_SHAPES = [((BATCH,), {0: B})]
# A mask's or integer argument's: [batch, sequence] (a padding mask), [sequence, sequence] (an attention mask).
MASK_SHAPES = [((BATCH, SEQUENCE), {0: B, 1: S}), ((SEQUENCE, SEQUENCE), {0: S, 1: S}), ((BATCH,), {0: B}),
               ((SEQUENCE,), {0: S})]
# Ops a tensor goes through unchanged in shape, followed to the op that tells its shape.
SHAPE_PRESERVING = {"aten::contiguous", "aten::to", "aten::cpu", "aten::cuda", "aten::clone", "aten::dropout",
                    "aten::detach", "aten::relu", "aten::float", "aten::type_as", "aten::mul", "aten::add", "aten::sub",
                    "aten::div", "prim::TupleUnpack", "aten::feature_dropout", "aten::gelu", "aten::tanh",
                    "aten::sigmoid", "prim::unchecked_cast", "aten::as_tensor", "aten::neg", "aten::abs",
                    "aten::pow", "aten::log", "aten::exp", "aten::sqrt", "aten::clamp"}
ELEMENTWISE_BINARY = {"aten::mul", "aten::add", "aten::sub", "aten::div"}  # either operand keeps the shape
CONVOLUTIONS = ("aten::_convolution", "aten::conv1d", "aten::conv2d", "aten::conv3d", "aten::conv_transpose1d",
                "aten::conv_transpose2d", "aten::conv_transpose3d")


def attribute(module, value, self_value):
    """The Python object a prim::GetAttr chain from `self` reads (a parameter tensor, a submodule)."""
    node = value.node()
    if value is self_value or value.debugName() == self_value.debugName():
        return module
    if node.kind() != "prim::GetAttr":
        return None
    base = attribute(module, node.input(), self_value)
    return getattr(base, node.s("name"), None) if base is not None else None


def constant(value, rules=None):
    """A value known without running: a constant, a list of them, or (with `rules`) an attribute."""
    node = value.node()
    if node.kind() == "prim::Constant":
        return value.toIValue()
    if node.kind() == "prim::ListConstruct":
        items = [constant(v, rules) for v in node.inputs()]
        return None if any(i is None for i in items) else items
    if rules is not None and node.kind() == "prim::GetAttr":
        found = rules.tensor(value)
        return list(found) if isinstance(found, tuple) else found
    return None


def _same_shape_successors(use):
    """Values that hold what `use` reads, unchanged in shape: a shape-preserving op's outputs, a Loop
    body's parameter for a value the loop carries, or the If/Loop output a block returns it as."""
    user = use.user
    if user.kind() in SHAPE_PRESERVING and (use.offset == 0 or user.kind() in ELEMENTWISE_BINARY):
        return list(user.outputs())
    if user.kind() == "prim::Loop" and use.offset >= 2:  # Loop(trip count, condition, carried...)
        return [list(list(user.blocks())[0].inputs())[use.offset - 1]]  # body(counter, carried...)
    if user.kind() == "prim::Return":
        owner = user.owningBlock().owningNode()
        if owner is None:
            return []
        outputs = list(owner.outputs())
        k = use.offset - (1 if owner.kind() == "prim::Loop" else 0)  # a Loop body returns its condition first
        return [outputs[k]] if 0 <= k < len(outputs) else []
    return []


def _unsqueezed_back(shape, axes, dim):
    """An unsqueeze(dim)'s output shape taken back to its input: the axis removed (whatever size the
    reader's rule gave it: a conv's batch of an unbatched image made [1, C, H, W])."""
    rank = len(shape)
    dim = dim + rank if dim < 0 else dim
    if not 0 <= dim < rank:
        return None
    return (shape[:dim] + shape[dim + 1:],
            {(a if a < dim else a - 1): d for a, d in axes.items() if a != dim})


def _permuted_back(shape, axes, permutation):
    """A permute's (or transpose's) output shape taken back to its input."""
    rank = len(shape)
    permutation = [p + rank if p < 0 else p for p in permutation]
    if sorted(permutation) != list(range(rank)):
        return None
    inverse = [0] * rank
    for out_axis, in_axis in enumerate(permutation):
        inverse[in_axis] = out_axis
    return (tuple(shape[inverse[k]] for k in range(rank)),
            {permutation[a]: d for a, d in axes.items()})


class ShapeRules:
    """Candidate shapes of a tensor value from the first op reading it that tells them."""

    def __init__(self, module, graph):
        self.module, self.self_value = module, list(graph.inputs())[0]
        self.reads_audio = "aten::stft" in graph.str()  # waveforms first for a tensor no reader shapes

    def tensor(self, value):
        """What a prim::GetAttr chain reads (a tensor, a number, a submodule) or a frozen constant tensor
        (torch.jit.freeze and optimize_for_inference turn parameters into constants), or None."""
        kind = value.node().kind()
        if kind == "prim::GetAttr":
            return attribute(self.module, value, self.self_value)
        if kind == "prim::Constant" and value.type().kind() == "TensorType":
            return value.toIValue()
        return None

    def shapes(self, value, depth=0, seen=None):
        """[(shape, dtype or None, {axis: dim name})] for `value`, best first; [] when no reader tells."""
        seen = seen if seen is not None else set()
        if depth > 8 or value.debugName() in seen:
            return []
        seen.add(value.debugName())
        for use in value.uses():
            found = self._from_reader(use.user, use.offset)
            if found:
                return found
        for use in value.uses():
            for out in _same_shape_successors(use):
                found = self.shapes(out, depth + 1, seen)
                if found:
                    return found
        for use in value.uses():
            found = self._through_reshaping(use, depth, seen)
            if found:
                return found
        return []

    def _through_reshaping(self, use, depth, seen):
        """Shapes of an unsqueeze's, transpose's or permute's output taken back to its input."""
        user, ins = use.user, list(use.user.inputs())
        if use.offset != 0 or user.kind() not in ("aten::unsqueeze", "aten::transpose", "aten::permute"):
            return []
        args = [constant(v) for v in ins[1:]]
        if any(a is None for a in args):
            return []
        found = []
        for shape, dtype, axes in self.shapes(user.output(), depth + 1, seen):
            if user.kind() == "aten::unsqueeze":
                back = _unsqueezed_back(shape, axes, args[0])
            elif user.kind() == "aten::transpose":
                order = list(range(len(shape)))
                a, b = (x + len(shape) if x < 0 else x for x in args)
                if not (0 <= a < len(shape) and 0 <= b < len(shape)):
                    continue
                order[a], order[b] = order[b], order[a]
                back = _permuted_back(shape, axes, order)
            else:
                back = _permuted_back(shape, axes, args[0]) if len(args[0]) == len(shape) else None
            if back is not None:
                found.append((back[0], dtype, back[1]))
        return found

    def _from_reader(self, n, index):
        kind, ins = n.kind(), list(n.inputs())
        if kind in CONVOLUTIONS and index == 0:
            w = self.tensor(ins[1])
            if not isinstance(w, torch.Tensor):
                return []
            transposed = "transpose" in kind or (kind == "aten::_convolution" and constant(ins[6]) is True)
            groups_at = 8 if kind == "aten::_convolution" else 6
            groups = constant(ins[groups_at], self) if len(ins) > groups_at else 1
            channels = w.shape[0] if transposed else w.shape[1] * (groups if isinstance(groups, int) else 1)
            k = w.dim() - 2
            spatial = SPATIAL_DIMS.get(k, ())
            axes = {0: B, **{2 + i: d for i, d in enumerate(spatial)}}
            return [((BATCH, channels) + (s if isinstance(s, tuple) else (s,) * k), None, axes)
                    for s in SPATIAL.get(k, [16])]
        if kind in ("aten::linear", "aten::matmul", "aten::mm", "aten::addmm") and index in (0, 1):
            w = self.tensor(ins[1]) if kind != "aten::addmm" else self.tensor(ins[2])
            if not isinstance(w, torch.Tensor) or w.dim() != 2:
                return []
            features = w.shape[1] if kind == "aten::linear" else w.shape[0]
            return [((BATCH, features), None, {0: B}), ((BATCH, SEQUENCE, features), None, {0: B, 1: S})]
        if kind == "aten::embedding" and index == 1:
            return [((BATCH, SEQUENCE), "int64", {0: B, 1: S}), ((SEQUENCE, BATCH), "int64", {0: S, 1: B}),
                    ((SEQUENCE,), "int64", {0: S}), ((1, SEQUENCE), "int64", {0: B, 1: S})]
        if kind == "aten::_pack_padded_sequence" and index == 1:  # lengths: one per sequence of the batch
            return [((BATCH,), "int64", {0: B})]
        if kind == "aten::stft" and index == 0:  # a waveform: [N, T] or [T]
            return [(shape, None, axes) for shape, axes in WAVEFORM_SHAPES]
        if kind == "aten::layer_norm" and index == 0:
            normalized = constant(ins[1], self)
            if isinstance(normalized, list):
                return [((BATCH, SEQUENCE) + tuple(normalized), None, {0: B, 1: S}),
                        ((BATCH,) + tuple(normalized), None, {0: B})]
        if kind in ("aten::batch_norm", "aten::instance_norm") and index == 0:
            for i in (1, 3):
                t = self.tensor(ins[i]) if i < len(ins) else None
                if isinstance(t, torch.Tensor) and t.dim() == 1:
                    c = t.shape[0]
                    return [((BATCH, c, 16, 16), None, {0: B, 2: H, 3: W}), ((BATCH, c), None, {0: B}),
                            ((BATCH, c, 16), None, {0: B, 2: L})]
        if kind in ("aten::lstm", "aten::gru", "aten::rnn_tanh", "aten::rnn_relu") and index == 0:
            params = ins[2].node()
            if params.kind() == "prim::ListConstruct":
                w = self.tensor(list(params.inputs())[0])
                if isinstance(w, torch.Tensor):
                    return [((SEQUENCE, BATCH, w.shape[1]), None, {0: S, 1: B}),
                            ((BATCH, SEQUENCE, w.shape[1]), None, {0: B, 1: S})]
        if kind in ("aten::_transformer_encoder_layer_fwd", "aten::_native_multi_head_attention") and index == 0:
            e = constant(ins[1], self)
            if isinstance(e, int):
                return [((BATCH, SEQUENCE, e), None, {0: B, 1: S}), ((SEQUENCE, BATCH, e), None, {0: S, 1: B})]
        return []


def axes_for_given_shape(name, shape, rule_shapes):
    """The axes that may vary of tensor argument `name` given with -i at `shape`: those of the first rule
    shape, else generic shape, that it fits (its rank, and its sizes on the axes that do not vary: the
    channels); else of the first rule shape of its rank; else batch for the first axis of a tensor of
    rank 2 or more and a dim of its own (NAME_dimK) for each other axis."""
    def fits(candidate, axes):  # the same rank, and the same size on every axis that does not vary
        return len(candidate) == len(shape) and all(a in axes or c == g for a, (c, g) in enumerate(zip(candidate, shape)))

    for candidate, _, axes in rule_shapes:
        if fits(candidate, axes):
            return dict(axes)
    for candidate, axes in GENERIC_SHAPES:  # e.g. [3, H, W]: one image, whose first axis is its channels
        if fits(candidate, axes):
            return dict(axes)
    for candidate, _, axes in rule_shapes:
        if len(candidate) == len(shape):
            return dict(axes)
    return {k: B if k == 0 and len(shape) > 1 else f"{name}_dim{k}" for k in range(len(shape))}
