"""Causal language models with a KV cache, as Optimum and onnxruntime-genai run them (docs/causal_lm.md).

    pt2onnx.export_causal_lm(model, "decoder.onnx")

One call on what transformers' `AutoModelForCausalLM` returns writes a decoder with inputs
`input_ids`, `attention_mask` (past + new length), `position_ids` and `past_key_values.N.key` /
`.value` (batch, kv heads, past length, head size), outputs `logits` and `present.N.key` / `.value`:
dynamic batch, past length (0 for the prefill) and new-token length. The transformers Cache object
the model takes is built inside the traced wrapper (`CausalLMWithCache`), so the user writes none;
`save_causal_lm` saves that same wrapper as a TorchScript archive with the `pt2onnx convert`
arguments that export it under the same names.
"""
import contextlib
import inspect
import shlex
import warnings

import torch

INPUT_IDS, ATTENTION_MASK, POSITION_IDS, LOGITS = "input_ids", "attention_mask", "position_ids", "logits"


def past_names(layers):
    """past_key_values.0.key, past_key_values.0.value, past_key_values.1.key, ..."""
    return [f"past_key_values.{i}.{kind}" for i in range(layers) for kind in ("key", "value")]


def present_names(layers):
    return [f"present.{i}.{kind}" for i in range(layers) for kind in ("key", "value")]


def _cache_argument(model):
    # transformers 5.x renamed forward()'s `past_key_values` to `cache` (the old name warns).
    return "cache" if "cache" in inspect.signature(model.forward).parameters else "past_key_values"


def _cache_of(output):
    cache = getattr(output, "cache", None)  # transformers 5.x; before: past_key_values
    return cache if cache is not None else output.past_key_values


@contextlib.contextmanager
def _in_eval_mode(model):
    """The model in eval mode (no dropout traced) and back in its own mode after."""
    was_training = model.training
    model.eval()
    try:
        yield
    finally:
        model.train(was_training)


def _layers_of(cache):
    """[(keys, values)] of a transformers Cache, whichever of its layouts this release has."""
    if hasattr(cache, "layers"):
        return [(layer.keys, layer.values) for layer in cache.layers]
    if hasattr(cache, "key_cache"):
        return list(zip(cache.key_cache, cache.value_cache))
    return [tuple(kv[:2]) for kv in cache]


def _sliding_window(config):
    """The window of a model whose cache keeps only the last tokens of some layers (Mistral's
    sliding_window, Qwen2's use_sliding_window), else None."""
    layers = getattr(_new_cache(config), "layers", [])
    return getattr(config, "sliding_window", None) if any("Sliding" in type(l).__name__ for l in layers) else None


def _new_cache(config):
    from transformers import DynamicCache
    try:
        return DynamicCache(config=config)
    except TypeError:  # releases before the config argument
        return DynamicCache()


class CausalLMWithCache(torch.nn.Module):
    """forward(input_ids, attention_mask, position_ids, past_key_values) -> (logits, *present), the
    tuple `past_key_values` and `present` flattened as key, value of layer 0, key, value of layer 1,
    ...: the model's Cache object is filled from them inside forward(), so a trace records it as
    graph ops."""

    def __init__(self, model, num_layers):
        super().__init__()
        self.model = model
        self.num_layers = num_layers
        self.cache_argument = _cache_argument(model)
        # The wrapper's mode is the model's: an export restores the mode it found, on both.
        self.training = model.training

    def forward(self, input_ids, attention_mask, position_ids, past_key_values):
        past = past_key_values
        if len(past) != 2 * self.num_layers:
            raise ValueError(f"expected {2 * self.num_layers} past tensors (key and value of {self.num_layers} "
                             f"layers), got {len(past)}")
        cache = _new_cache(self.model.config)
        for layer in range(self.num_layers):
            cache.update(past[2 * layer], past[2 * layer + 1], layer)
        out = self.model(input_ids=input_ids, attention_mask=attention_mask, position_ids=position_ids,
                         use_cache=True, **{self.cache_argument: cache})
        flat = [out.logits]
        for keys, values in _layers_of(_cache_of(out)):
            flat += [keys, values]
        return tuple(flat)


def position_ids_for(attention_mask, new_length):
    """The position of each new token as transformers' generate() computes it from the mask: the
    count of real tokens before it (left padding skipped), 1 on padding."""
    positions = attention_mask.long().cumsum(-1) - 1
    positions = positions.masked_fill(attention_mask == 0, 1)
    return positions[:, attention_mask.shape[1] - new_length:]


def _num_layers(model):
    config = model.config
    for name in ("num_hidden_layers", "n_layer", "num_layers"):
        if isinstance(getattr(config, name, None), int):
            return getattr(config, name)
    raise ValueError(f"cannot tell the number of layers of {type(model).__name__} from its config")


class CausalLMExport:
    """What export_causal_lm exports: the wrapper, its example arguments, names and dynamic axes."""

    def __init__(self, model, batch=2, past_length=3, new_length=2):
        if not hasattr(model, "config"):
            raise TypeError(f"export_causal_lm takes a transformers causal LM (what AutoModelForCausalLM returns), "
                            f"got {type(model).__name__}")
        self.num_layers = _num_layers(model)
        if window := _sliding_window(model.config):
            from ._pt2onnx import ExportError
            raise ExportError(
                f"{type(model).__name__} attends within a sliding window of {window} tokens (config.sliding_window): "
                f"export_causal_lm writes decoders that attend to the whole cache, so its model would compute "
                f"another thing past {window} tokens. For sequences of at most {window} tokens, where the two are "
                f"the same, set model.config.sliding_window = None before exporting")
        self.wrapper = CausalLMWithCache(model, self.num_layers)
        vocab = int(getattr(model.config, "vocab_size", 2) or 2)
        g = torch.Generator().manual_seed(0)
        total = past_length + new_length
        # The example's last row is left-padded, so the trace takes the masked path, not one that
        # transformers takes only for a mask of ones.
        mask = torch.ones(batch, total, dtype=torch.int64)
        mask[-1, :1] = 0
        prefix = torch.randint(0, vocab, (batch, past_length), generator=g)
        with torch.no_grad(), _in_eval_mode(model):
            prefill = model(input_ids=prefix, attention_mask=mask[:, :past_length],
                            position_ids=position_ids_for(mask[:, :past_length], past_length), use_cache=True)
        past = [t.detach().clone() for kv in _layers_of(_cache_of(prefill)) for t in kv]
        ids = torch.randint(0, vocab, (batch, new_length), generator=g)
        self.args = (ids, mask, position_ids_for(mask, new_length), tuple(past))
        self.input_names = [INPUT_IDS, ATTENTION_MASK, POSITION_IDS] + past_names(self.num_layers)
        self.output_names = [LOGITS] + present_names(self.num_layers)
        # Optimum's axis names (optimum/exporters/onnx: TextDecoderWithPositionIdsOnnxConfig).
        axes = {INPUT_IDS: {0: "batch_size", 1: "sequence_length"},
                ATTENTION_MASK: {0: "batch_size", 1: "past_sequence_length + sequence_length"},
                POSITION_IDS: {0: "batch_size", 1: "sequence_length"},
                LOGITS: {0: "batch_size", 1: "sequence_length"}}
        for name in past_names(self.num_layers):
            axes[name] = {0: "batch_size", 2: "past_sequence_length"}
        for name in present_names(self.num_layers):
            axes[name] = {0: "batch_size", 2: "past_sequence_length + sequence_length"}
        self.dynamic_axes = axes


def export_causal_lm(model, path, **options):
    """Exports a transformers causal LM (GPT-2, Llama, Qwen2, Mistral, Phi-3, ...) as a decoder with a
    KV cache under Optimum's names (module docstring); `options` are pt2onnx.export's (opset_version,
    do_constant_folding, ...). Returns the export's summary."""
    from .exporter import export
    for given in ("input_names", "output_names", "dynamic_axes"):
        if given in options:
            raise TypeError(f"export_causal_lm names the inputs, outputs and axes itself; '{given}' is not "
                            "an option of it")
    spec = CausalLMExport(model)
    with warnings.catch_warnings(), torch.no_grad():
        warnings.filterwarnings("ignore", category=torch.jit.TracerWarning)
        warnings.filterwarnings("ignore", category=FutureWarning)
        return export(spec.wrapper, spec.args, path, input_names=spec.input_names,
                      output_names=spec.output_names, dynamic_axes=spec.dynamic_axes, **options)


def _spec_of(name, tensor):
    dims = "x".join(str(d) for d in tensor.shape) or "1"
    return f"{name}:{dims}:{str(tensor.dtype).replace('torch.', '')}"  # the -i dtype names are torch's


def save_causal_lm(model, path):
    """Saves the wrapper export_causal_lm exports as a TorchScript archive at `path`, and beside it
    `path`.args, the `pt2onnx convert` arguments that export it with export_causal_lm's names and axes
    (the fleet reads them by itself: `pt2onnx convert DIR -o OUT`). Returns those arguments."""
    spec = CausalLMExport(model)
    with warnings.catch_warnings(), torch.no_grad(), _in_eval_mode(spec.wrapper):
        warnings.filterwarnings("ignore", category=torch.jit.TracerWarning)
        warnings.filterwarnings("ignore", category=FutureWarning)
        traced = torch.jit.trace(spec.wrapper, spec.args, check_trace=False)
    # The archive's argument names are its graph inputs' (a trace names them after values inside the model).
    argument_names = ["input_ids", "attention_mask", "position_ids", "past_key_values"]
    for value, name in zip(list(traced.graph.inputs())[1:], argument_names):
        value.setDebugName(name)
    *tensors, past = spec.args
    arguments = []
    for name, value in zip(argument_names, tensors):
        arguments += ["-i", _spec_of(name, value)]
    arguments += ["-i", "past_key_values:(" + ",".join(_spec_of("", t)[1:] for t in past) + ")"]
    arguments += ["--input-names", ",".join(spec.input_names), "--output-names", ",".join(spec.output_names)]
    for name, axes in spec.dynamic_axes.items():
        for axis, dim in axes.items():
            arguments += ["-d", f"{name}:{axis}={dim}"]
    traced.save(path)
    with open(path + ".args", "w") as f:
        f.write("# pt2onnx convert arguments of a decoder with a KV cache (pt2onnx.save_causal_lm)\n")
        f.write(" ".join(shlex.quote(a) for a in arguments) + "\n")
    return arguments


def greedy_generate(session, input_ids, attention_mask, max_new_tokens):
    """Greedy decoding with an exported decoder in an onnxruntime-shaped session (onnxruntime's or
    pt2onnx.InferenceSession): a prefill with an empty past, then one token per step, each step's
    present fed back as the next one's past. Numpy int64 arrays in; returns (the new tokens
    [batch, max_new_tokens], each step's last-position logits [steps, batch, vocab])."""
    import numpy as np

    ids = np.asarray(input_ids, dtype=np.int64)
    mask = np.asarray(attention_mask, dtype=np.int64)
    inputs = {i.name: i for i in session.get_inputs()}
    past_inputs = [n for n in inputs if n.startswith("past_key_values.")]
    element = {"tensor(float)": np.float32, "tensor(float16)": np.float16, "tensor(double)": np.float64}
    past = {}
    for name in past_inputs:
        shape = inputs[name].shape
        if not all(isinstance(d, int) for d in (shape[1], shape[3])):
            raise ValueError(f"input '{name}' has no fixed heads and head size: {shape}")
        past[name] = np.zeros((ids.shape[0], shape[1], 0, shape[3]), dtype=element.get(inputs[name].type, np.float32))
    output_names = [o.name for o in session.get_outputs()]
    tokens, step_logits = [], []
    new = ids
    for _ in range(max_new_tokens):
        positions = np.where(mask == 0, 1, mask.cumsum(-1) - 1)[:, mask.shape[1] - new.shape[1]:]
        feeds = {"input_ids": new, "attention_mask": mask, **past}
        if "position_ids" in inputs:
            feeds["position_ids"] = positions.astype(np.int64)
        results = dict(zip(output_names, session.run(output_names, feeds)))
        last = np.asarray(results["logits"])[:, -1, :]
        step_logits.append(last)
        token = last.argmax(-1).astype(np.int64)[:, None]
        tokens.append(token)
        past = {name: results["present." + name[len("past_key_values."):]] for name in past_inputs}
        new = token
        mask = np.concatenate([mask, np.ones_like(token)], axis=1)
    return np.concatenate(tokens, axis=1), np.stack(step_logits)
