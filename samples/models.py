"""Sample models used by the demo, the end-to-end tests and the benchmarks.

Each builder returns (model, example_args) with seeded random weights (no downloads), in eval mode.
"""
import importlib

import torch


def _vision_models():
    """torchvision.models, imported when a torchvision model is built (the torch 2.13 test tier has no
    torchvision: the other samples stay usable there)."""
    return importlib.import_module("torchvision.models")


def _seeded(seed=0):
    torch.manual_seed(seed)


def _calibrated(model, shape):
    """Gives BatchNorm layers realistic running statistics (a few training-mode passes), so the
    randomly initialised network's activations stay in a normal range, then switches to eval."""
    for m in model.modules():
        if isinstance(m, torch.nn.modules.batchnorm._BatchNorm):
            m.momentum = None  # cumulative average
    model.train()
    with torch.no_grad():
        for _ in range(2):
            model(torch.randn(*shape))
    return model.eval()


def _classifier(name):
    """torchvision's classifier `name`, seeded and calibrated, with a 1x3x224x224 example."""
    _seeded()
    return _calibrated(getattr(_vision_models(), name)(), (4, 3, 224, 224)), (torch.randn(1, 3, 224, 224),)


def resnet18():
    return _classifier("resnet18")


def resnet50():
    return _classifier("resnet50")


def mobilenet_v3_small():
    return _classifier("mobilenet_v3_small")


def mobilenet_v3_large():
    return _classifier("mobilenet_v3_large")


def efficientnet_b0():
    return _classifier("efficientnet_b0")


class RecurrentLoop(torch.nn.Module):
    """An Elman-style recurrence written as a Python loop over the time steps: scripted, a Loop node
    whose trip count is the input's length (many small ops per step)."""

    def __init__(self, features=64, hidden=256):
        super().__init__()
        self.hidden = hidden
        self.inp = torch.nn.Linear(features, hidden)
        self.rec = torch.nn.Linear(hidden, hidden)
        self.out = torch.nn.Linear(hidden, features)

    def forward(self, x):  # x: (time, batch, features)
        h = torch.zeros(x.size(1), self.hidden, dtype=x.dtype)
        ys = []
        for t in range(x.size(0)):
            h = torch.tanh(self.inp(x[t]) + self.rec(h))
            ys.append(self.out(h))
        return torch.stack(ys)


def scripted_loop():
    """RecurrentLoop scripted (torch.jit.script), 64 steps of a batch of 1."""
    _seeded()
    return torch.jit.script(RecurrentLoop().eval()), (torch.randn(64, 1, 64),)


def inception_v3():
    _seeded()
    # PyTorch's default init (not torchvision's truncated normal): its float32 rounding noise is
    # 2e-5 against float64, where init_weights=True gives 1.6e-4, above the 1e-4 check.
    model = _vision_models().inception_v3(aux_logits=False, init_weights=False)
    return _calibrated(model, (4, 3, 299, 299)), (torch.randn(1, 3, 299, 299),)


class EncoderModel(torch.nn.Module):
    """nn.TransformerEncoder with batch_first inputs (batch, seq, d_model)."""

    def __init__(self, d_model=64, nhead=4, layers=2, ff=128, distinct_weights=False):
        super().__init__()
        layer = torch.nn.TransformerEncoderLayer(d_model, nhead, dim_feedforward=ff, batch_first=True)
        self.encoder = torch.nn.TransformerEncoder(layer, layers, enable_nested_tensor=False)
        if distinct_weights:  # TransformerEncoder deep-copies one layer: make every weight distinct
            with torch.no_grad():
                for p in self.parameters():
                    p.normal_(0, 0.02)

    def forward(self, x):
        return self.encoder(x)


def transformer_encoder():
    _seeded()
    return EncoderModel().eval(), (torch.randn(2, 16, 64),)


def transformer_encoder_12x768():
    _seeded()
    return EncoderModel(768, 12, 12, 3072, distinct_weights=True).eval(), (torch.randn(1, 128, 768),)


class GptBlock(torch.nn.Module):
    """A GPT-style decoder block: embedding, causal mask with tril/masked_fill, softmax attention."""

    def __init__(self, vocab=100, d=32, heads=4, seq=16):
        super().__init__()
        self.tok = torch.nn.Embedding(vocab, d)
        self.pos = torch.nn.Embedding(seq, d)
        self.ln1 = torch.nn.LayerNorm(d)
        self.qkv = torch.nn.Linear(d, 3 * d)
        self.proj = torch.nn.Linear(d, d)
        self.ln2 = torch.nn.LayerNorm(d)
        self.mlp = torch.nn.Sequential(torch.nn.Linear(d, 4 * d), torch.nn.GELU(), torch.nn.Linear(4 * d, d))
        self.head = torch.nn.Linear(d, vocab)
        self.heads = heads
        self.register_buffer("mask", torch.tril(torch.ones(seq, seq)))

    def forward(self, ids):
        b, t = ids.shape
        x = self.tok(ids) + self.pos(torch.arange(t))
        h = self.ln1(x)
        q, k, v = self.qkv(h).split(x.size(-1), dim=-1)
        hd = x.size(-1) // self.heads
        q = q.view(b, t, self.heads, hd).transpose(1, 2)
        k = k.view(b, t, self.heads, hd).transpose(1, 2)
        v = v.view(b, t, self.heads, hd).transpose(1, 2)
        att = (q @ k.transpose(-2, -1)) / (hd ** 0.5)
        att = att.masked_fill(self.mask[:t, :t] == 0, float("-inf"))
        y = torch.softmax(att, dim=-1) @ v
        x = x + self.proj(y.transpose(1, 2).reshape(b, t, -1))
        x = x + self.mlp(self.ln2(x))
        return self.head(x)


def gpt_block():
    _seeded()
    return GptBlock().eval(), (torch.randint(0, 100, (2, 16)),)


class LinearReluChain(torch.nn.Module):
    def __init__(self, depth=2000, width=64):
        super().__init__()
        self.layers = torch.nn.Sequential(*[m for _ in range(depth) for m in (torch.nn.Linear(width, width), torch.nn.ReLU())])

    def forward(self, x):
        return self.layers(x)


def linear_relu_chain(depth=2000):
    _seeded()
    return LinearReluChain(depth).eval(), (torch.randn(8, 64),)


BUILDERS = {
    "resnet18": resnet18,
    "resnet50": resnet50,
    "mobilenet_v3_small": mobilenet_v3_small,
    "inception_v3": inception_v3,
    "transformer_encoder": transformer_encoder,
    "transformer_encoder_12x768": transformer_encoder_12x768,
    "gpt_block": gpt_block,
    "linear_relu_chain": linear_relu_chain,
}


def save_traced(name, path):
    """Traces sample `name` and saves it as a TorchScript archive; returns (model, args)."""
    model, args = BUILDERS[name]()
    # Traced with autograd on, so eval-mode fused fast paths (transformer) are not recorded.
    traced = torch.jit.trace(model, args, check_trace=False)
    traced.save(str(path))
    return model, args
