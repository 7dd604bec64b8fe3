"""transformers encoders and decoders built from configs (random weights, nothing downloaded), as
tests and bench/ export them: each wrapped to take tensors and return its last hidden state, with
the arguments ONNX Runtime's transformer optimizer needs (model_type, num_heads, hidden_size)."""
from dataclasses import dataclass

import torch

KINDS = ("bert", "roberta", "distilbert", "gpt2", "vit", "t5", "whisper")
# What onnxruntime.transformers.optimizer.optimize_model is told each one is.
ORT_MODEL_TYPES = {"bert": "bert", "roberta": "bert", "distilbert": "bert", "gpt2": "gpt2", "vit": "vit",
                   "t5": "t5", "whisper": "bart"}


@dataclass
class TransformerCase:
    kind: str
    model: torch.nn.Module          # takes `input_names` positionally, returns last_hidden_state
    args: tuple                     # example arguments
    input_names: list
    dynamic_axes: dict
    ort_model_type: str
    num_heads: int
    hidden_size: int
    num_layers: int

    def inputs(self, batch, length, padding=0, seed=0):
        """Inputs of another size than the example's: token ids with the last `padding` positions of
        row 1 padded (right padding, as ORT's fused Attention assumes), or random features."""
        g = torch.Generator().manual_seed(seed)
        if self.kind == "vit":
            size = self.model.inner.config.image_size
            return (torch.randn(batch, 3, size, size, generator=g),)
        if self.kind == "whisper":
            config = self.model.inner.config
            return (torch.randn(batch, config.num_mel_bins, 2 * config.max_source_positions, generator=g),)
        ids = torch.randint(0, 100, (batch, length), generator=g)
        mask = torch.ones(batch, length, dtype=torch.int64)
        if padding:
            mask[min(1, batch - 1), length - padding:] = 0
        return (ids, mask)


class _LastHiddenState(torch.nn.Module):
    def __init__(self, inner, names, extra):
        super().__init__()
        self.inner, self.names, self.extra = inner, names, extra

    def forward(self, *args):
        return self.inner(**dict(zip(self.names, args)), **self.extra).last_hidden_state


def build(kind, size="tiny", layers=2):
    """`size` "tiny" (hidden 64, 4 heads: tests) or "base" (the published base sizes: bench/)."""
    import transformers

    torch.manual_seed(0)
    tiny = size == "tiny"
    bert_sizes = dict(hidden_size=64, num_attention_heads=4, intermediate_size=128) if tiny else {}
    extra = {}
    if kind == "bert":
        model = transformers.BertModel(transformers.BertConfig(num_hidden_layers=layers, **bert_sizes))
    elif kind == "roberta":
        model = transformers.RobertaModel(transformers.RobertaConfig(num_hidden_layers=layers, **bert_sizes))
    elif kind == "distilbert":
        sizes = dict(dim=64, n_heads=4, hidden_dim=128) if tiny else {}
        model = transformers.DistilBertModel(transformers.DistilBertConfig(n_layers=layers, **sizes))
    elif kind == "gpt2":
        sizes = dict(n_embd=64, n_head=4) if tiny else {}
        model = transformers.GPT2Model(transformers.GPT2Config(n_layer=layers, **sizes))
        extra = {"use_cache": False}
    elif kind == "vit":
        sizes = dict(image_size=32, patch_size=8, **bert_sizes) if tiny else {}
        model = transformers.ViTModel(transformers.ViTConfig(num_hidden_layers=layers, **sizes))
    elif kind == "t5":
        sizes = dict(d_model=64, num_heads=4, d_kv=16, d_ff=128) if tiny else {}
        model = transformers.T5EncoderModel(transformers.T5Config(num_layers=layers, **sizes))
    elif kind == "whisper":
        from transformers.models.whisper.modeling_whisper import WhisperEncoder

        sizes = (dict(d_model=64, encoder_attention_heads=4, encoder_ffn_dim=128, max_source_positions=50,
                      num_mel_bins=16) if tiny else dict(max_source_positions=100))
        model = WhisperEncoder(transformers.WhisperConfig(encoder_layers=layers, **sizes))
    else:
        raise ValueError(f"unknown kind {kind!r}; one of {KINDS}")
    model.eval()
    config = model.config
    if kind in ("vit", "whisper"):
        names = ["pixel_values"] if kind == "vit" else ["input_features"]
        axes = {names[0]: {0: "batch"}}
    else:
        names = ["input_ids", "attention_mask"]
        axes = {n: {0: "batch", 1: "sequence"} for n in names}
    heads = next(getattr(config, a) for a in ("num_attention_heads", "n_head", "num_heads", "n_heads",
                                              "encoder_attention_heads") if hasattr(config, a))
    hidden = next(getattr(config, a) for a in ("hidden_size", "n_embd", "d_model", "dim") if hasattr(config, a))
    wrapper = _LastHiddenState(model, names, extra).eval()
    case = TransformerCase(kind, wrapper, (), names, axes, ORT_MODEL_TYPES[kind], heads, hidden, layers)
    case.args = case.inputs(2, 8)
    return case
