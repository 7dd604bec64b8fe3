"""How forward() uses a tensor argument, read from its inlined TorchScript graph, for `pt2onnx inspect`:
which dtype the argument takes (token ids, lengths, bool or integer masks, floats) and the values that
are valid for it. An archive keeps no dtypes, so the ops that read the argument tell: the argument is
followed through ops that keep its elements (views, slices, Optional unwrapping) and into prim::If and
prim::Loop bodies (a loop's inputs are its body's parameters; a block's results its owner's outputs
and, for a loop, the next iteration's parameters)."""
import dataclasses
import functools
import re

import torch

# Ops whose output holds the input's elements with its dtype (a view, a copy, a piece).
DATA_PRESERVING = {
    "aten::slice", "aten::select", "aten::unsqueeze", "aten::squeeze", "aten::view", "aten::reshape",
    "aten::transpose", "aten::permute", "aten::expand", "aten::expand_as", "aten::contiguous", "aten::clone",
    "aten::detach", "aten::flatten", "aten::narrow", "aten::repeat", "aten::t", "aten::chunk", "aten::split",
    "aten::unbind", "aten::__getitem__", "aten::unsqueeze_", "aten::squeeze_", "prim::unchecked_cast",
    "aten::flip", "aten::roll", "aten::cpu", "aten::cuda", "prim::tolist", "aten::as_tensor", "aten::tensor",
}
# Readers that need floating-point data (the argument is a feature tensor, not ids or a mask).
FLOAT_READERS = {
    "aten::linear", "aten::_convolution", "aten::conv1d", "aten::conv2d", "aten::conv3d", "aten::conv_transpose1d",
    "aten::conv_transpose2d", "aten::conv_transpose3d", "aten::layer_norm", "aten::batch_norm",
    "aten::instance_norm", "aten::group_norm", "aten::lstm", "aten::gru", "aten::rnn_tanh", "aten::rnn_relu",
    "aten::_transformer_encoder_layer_fwd", "aten::_native_multi_head_attention", "aten::softmax",
    "aten::log_softmax", "aten::sigmoid", "aten::tanh", "aten::gelu", "aten::exp", "aten::log", "aten::sqrt",
    "aten::rsqrt", "aten::sin", "aten::cos", "aten::erf", "aten::addmm", "aten::mm", "aten::bmm", "aten::baddbmm",
}
SCALAR_ARITHMETIC = {"aten::add", "aten::sub", "aten::rsub", "aten::mul", "aten::div"}
LOGICAL = {"aten::logical_not", "aten::logical_and", "aten::logical_or", "aten::logical_xor"}
COMPARISONS = {"aten::eq", "aten::ne", "aten::gt", "aten::lt", "aten::ge", "aten::le"}
# Schema argument names that take a mask (masked_fill, attention's attn_mask / key_padding_mask) or a
# condition (where): bool tensors.
MASK_ARGUMENTS = {"mask", "attn_mask", "key_padding_mask", "src_key_padding_mask", "condition"}
INDEX_ARGUMENTS = {"indices", "index"}
# ScalarType codes of aten::to's dtype argument.
SCALAR_TYPES = {0: "uint8", 1: "int8", 2: "int16", 3: "int32", 4: "int64", 5: "float16", 6: "float32",
                7: "float64", 11: "bool", 15: "bfloat16"}
LENGTHS_NAME = re.compile(r"(^|_)(lengths?|lens|seq_lens?)$", re.IGNORECASE)
ADDITIVE_MASK_SCALE = -1000.0  # `(1 - mask) * -10000`: a mask made additive (HF BERT's extended mask)


@dataclasses.dataclass
class ArgumentUse:
    """What the graph says about one tensor argument. `kind` is the strongest evidence:
    "lengths" (pack_padded_sequence's lengths), "index" (embedding, gather, index_select... indices),
    "bool" (a mask or condition used as bool), "float" (read by a floating-point op),
    "int" (compared with a number, cast, or made an additive mask: integers work) or None."""
    kind: str = None
    index_bound: int = None  # ids must be below this (the smallest embedding table reading them)
    evidence: list = dataclasses.field(default_factory=list)  # "aten::embedding (indices)", ...
    ranks: dict = dataclasses.field(default_factory=dict, repr=False)  # evidence -> KIND_RANK of its kind

    def dtypes(self):
        """Dtypes to try, best first (None: float32, the spec's default)."""
        return {"lengths": ["int64"], "index": ["int64"], "bool": ["bool", "int64", None],
                "int": ["int64", "bool", None]}.get(self.kind, [None])


KIND_RANK = {"lengths": 5, "index": 4, "bool": 3, "float": 2, "int": 1}


@functools.lru_cache(maxsize=None)
def _schema_argument_names(schema):
    try:
        return tuple(a.name for a in torch._C.parse_schema(schema).arguments)
    except (RuntimeError, ValueError):
        return ()


def _schema_argument_name(node, offset):
    names = _schema_argument_names(node.schema())
    return names[offset] if offset < len(names) else None


def _number(value):
    node = value.node()
    if node.kind() == "prim::Constant" and value.type().kind() in ("IntType", "FloatType"):
        return value.toIValue()
    return None


def _cast_target(node):
    """The dtype an aten::to / type_as converts to ("float32", "bool", "other" for type_as/unknown), or
    None when it keeps the dtype (a device move)."""
    if node.kind() == "aten::type_as":
        return "other"
    ins = list(node.inputs())
    for v in ins[1:3]:
        kind = v.type().kind()
        if kind == "TensorType":
            return "other"
        if kind in ("IntType", "OptionalType") and v.node().kind() == "prim::Constant":
            code = v.toIValue()
            if isinstance(code, int):
                return SCALAR_TYPES.get(code, "other")
    return None


def _followed(use):
    """Values that hold what `use` reads with its elements and dtype unchanged."""
    user, kind = use.user, use.user.kind()
    if kind in DATA_PRESERVING and use.offset == 0 or kind in ("prim::ListUnpack", "prim::TupleUnpack"):
        return list(user.outputs())  # (a list reaches an unpack only as pieces of the argument: chunk, split)
    if kind == "aten::to" and use.offset == 0 and _cast_target(user) in (None, "int64", "int32", "bool"):
        return list(user.outputs())  # a device move, or `lengths.to(torch.int64)`: its readers tell
    if kind == "prim::Loop" and use.offset >= 2:  # a carried value: the body's parameter (after the counter)
        return [list(list(user.blocks())[0].inputs())[use.offset - 1]]
    if kind == "prim::Return":
        owner = user.owningBlock().owningNode()
        if owner is None:
            return []
        outputs = list(owner.outputs())
        if owner.kind() == "prim::Loop":  # a body returns its condition first, then the carried values
            body_inputs = list(user.owningBlock().inputs())
            out = [outputs[use.offset - 1]] if 1 <= use.offset <= len(outputs) else []
            return out + ([body_inputs[use.offset]] if 1 <= use.offset < len(body_inputs) else [])
        return [outputs[use.offset]] if use.offset < len(outputs) else []
    if kind in ("prim::ListConstruct", "prim::TupleConstruct"):  # the element again where it is unpacked
        out = []
        for container_use in user.output().uses():
            unpacking = container_use.user
            if unpacking.kind() in ("prim::ListUnpack", "prim::TupleUnpack"):
                out.append(list(unpacking.outputs())[use.offset])
            elif unpacking.kind() in ("aten::cat", "aten::stack") and container_use.offset == 0:
                out.extend(unpacking.outputs())
        return out
    if kind == "aten::neg":
        return list(user.outputs())
    ins = list(user.inputs())
    if kind in SCALAR_ARITHMETIC and use.offset < 2 and len(ins) >= 2 and _number(ins[1 - use.offset]) is not None:
        return list(user.outputs())  # `1.0 - mask`, `ids + 1`: what reads the result tells about the argument
    return []


def _classify(use, module_attribute):
    """(kind, detail, index_bound) for one reader of the argument's data, or None."""
    user, kind, offset = use.user, use.user.kind(), use.offset
    ins = list(user.inputs())
    if kind == "aten::_pack_padded_sequence" and offset == 1:
        return "lengths", "aten::_pack_padded_sequence (lengths)", None
    if kind == "aten::embedding" and offset == 1:
        table = module_attribute(ins[0])
        bound = table.shape[0] if isinstance(table, torch.Tensor) else None
        return "index", "aten::embedding (indices)", bound
    if kind in LOGICAL:
        return "bool", kind, None
    if kind in COMPARISONS:
        others = [_number(v) for k, v in enumerate(ins) if k != offset]
        if any(isinstance(n, float) and not float(n).is_integer() for n in others if n is not None):
            return None  # `x > 0.5` reads a float
        return "int", f"{kind} (compared)", None
    if kind in ("aten::to", "aten::type_as") and offset == 0:
        target = _cast_target(user)
        if target is not None:
            return ("bool" if target == "bool" else "int"), f"{kind} (cast to {target})", None
    if kind == "aten::rsub" and offset == 0 and _number(ins[1]) == 1:
        return "int", "aten::rsub (1 - mask)", None
    if kind == "aten::mul":
        n = _number(ins[1 - offset]) if len(ins) == 2 else None
        if isinstance(n, (int, float)) and n <= ADDITIVE_MASK_SCALE:
            return "int", "aten::mul (an additive mask)", None
    name = _schema_argument_name(user, offset) if kind.startswith("aten::") else None
    if name in MASK_ARGUMENTS:
        return "bool", f"{kind} ({name})", None
    if name in INDEX_ARGUMENTS:
        return "index", f"{kind} ({name})", None
    if kind in FLOAT_READERS:
        return "float", kind, None
    return None


def argument_use(value, module_attribute, name=""):
    """The ArgumentUse of a forward() argument's graph value. `module_attribute(value)` gives the
    tensor a prim::GetAttr chain reads (an embedding's table), or None."""
    found = ArgumentUse()
    seen, queue = set(), [value]
    while queue:
        v = queue.pop()
        if v.debugName() in seen or len(seen) > 2000:
            continue
        seen.add(v.debugName())
        for use in v.uses():
            if use.user.kind() == "prim::ListConstruct":  # x[ids]: ids in aten::index's list of indices
                for list_use in use.user.output().uses():
                    if list_use.user.kind() in ("aten::index", "aten::index_put_", "aten::index_put") \
                            and list_use.offset == 1:
                        _record(found, ("index", f"{list_use.user.kind()} (indices)", None))
            _record(found, _classify(use, module_attribute))
            queue.extend(_followed(use))
    # A mask by name that is only arithmetic on floats (`(1.0 - mask) * -10000`): a tokenizer's int64 works.
    if found.kind is None and "mask" in name.lower():
        found.kind = "int"
        found.evidence.append("named a mask")
    # Integers named lengths (compared with an arange to make a padding mask, or only passed on): one
    # per sequence of the batch, at most the sequence length, as pack_padded_sequence's.
    if found.kind in (None, "int") and LENGTHS_NAME.search(name):
        found.kind = "lengths"
        found.evidence.insert(0, "named lengths")
    return found


def _record(found, classified):
    if classified is None:
        return
    kind, detail, bound = classified
    if detail not in found.evidence:
        found.evidence.append(detail)
        # the strongest evidence first (what decided the kind), then in graph order
        found.evidence.sort(key=lambda d: -found.ranks.setdefault(d, KIND_RANK[kind]))
    if bound is not None:
        found.index_bound = bound if found.index_bound is None else min(found.index_bound, bound)
    if found.kind is None or KIND_RANK[kind] > KIND_RANK[found.kind]:
        found.kind = kind
