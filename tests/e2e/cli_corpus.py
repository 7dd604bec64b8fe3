"""The CLI test corpus: every archive the CLI tests write (test_cli.py, test_cli_arguments.py,
test_cli_runtime.py, test_scripted_cli.py, test_inspect.py), the committed archives of tests/archives/
and the sourceless archives of issue 64 (a packed GRU, a packed classifier, a greedy decoder, a List[str]
argument), each with the -i/-d/--opset the tests give the CLI. Ones that convert and ones that do not
(unsupported ops, an export that fails only with a dynamic axis, example shapes PyTorch rejects, a
torch.save pickle), for tests that run a command over all of them (test_report_agrees_with_convert.py).

The models come from the test modules that define them (imported, not copied: a renamed class fails
here loudly); the corpus only adds how each is saved and the arguments."""
import dataclasses
import json
import os
import pathlib
import sys
from typing import Callable, List

import torch

E2E = pathlib.Path(__file__).resolve().parent
ARCHIVES = E2E.parent / "archives"
if str(E2E) not in sys.path:
    sys.path.insert(0, str(E2E))

import test_cli  # noqa: E402
import test_cli_arguments  # noqa: E402
import test_inspect  # noqa: E402
import test_scripted_cli  # noqa: E402
from samples import models, scripted_patterns  # noqa: E402


@dataclasses.dataclass
class CorpusArchive:
    name: str
    build: Callable[[pathlib.Path], pathlib.Path]  # writes the archive into a directory; returns its path
    args: List[str]  # -i / -d / --opset, as the tests give them


def traced(make, example):
    """A builder tracing `make()` on `example` (a tuple)."""
    def build(directory):
        path = directory / "model.pt"
        torch.manual_seed(0)
        torch.jit.save(torch.jit.trace(make().eval(), example), str(path))
        return path
    return build


def scripted(make):
    def build(directory):
        path = directory / "model.pt"
        torch.manual_seed(0)
        torch.jit.save(torch.jit.script(make().eval()), str(path))
        return path
    return build


def committed(path):
    return lambda directory: path


def specs(*items):
    """-i for each item: specs("x:2x3", "n=3") -> ["-i", "x:2x3", "-i", "n=3"]."""
    return [a for s in items for a in ("-i", s)]


def axes(*items):
    return [a for s in items for a in ("-d", s)]


# ---------------------------------------------------------------------------------------------
# Issue 64's sourceless archives (/tmp/z64/make_zoo.py): models whose source a user does not have.


class PackedGru(torch.nn.Module):
    """pad_packed_sequence back to the input's length (total_length=ids.size(1)): an int ONNX cannot
    give the op when the sequence axis is dynamic."""

    def __init__(self):
        super().__init__()
        self.emb = torch.nn.Embedding(100, 16)
        self.gru = torch.nn.GRU(16, 16, batch_first=True)

    def forward(self, ids, lengths):
        p = torch.nn.utils.rnn.pack_padded_sequence(self.emb(ids), lengths, batch_first=True, enforce_sorted=False)
        o, _ = self.gru(p)
        o, _ = torch.nn.utils.rnn.pad_packed_sequence(o, batch_first=True, total_length=ids.size(1))
        return o


class PackedClassifier(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.emb = torch.nn.Embedding(100, 32)
        self.lstm = torch.nn.LSTM(32, 24, batch_first=True)
        self.fc = torch.nn.Linear(24, 5)

    def forward(self, ids, lengths):
        e = self.emb(ids)
        p = torch.nn.utils.rnn.pack_padded_sequence(e, lengths.cpu(), batch_first=True, enforce_sorted=False)
        _, (h, _) = self.lstm(p)
        return self.fc(h[-1])


class GreedyDecoder(torch.nn.Module):
    """A defaulted int argument (max_len) that convert freezes unless -i gives it."""

    def __init__(self):
        super().__init__()
        self.emb = torch.nn.Embedding(50, 16)
        self.gru = torch.nn.GRU(16, 16, batch_first=True)
        self.out = torch.nn.Linear(16, 50)

    def forward(self, src, max_len: int = 12):
        h = self.gru(self.emb(src))[1]
        tok = src[:, -1:]
        outs = []
        for _ in range(max_len):
            o, h = self.gru(self.emb(tok), h)
            tok = self.out(o).argmax(-1)
            outs.append(tok)
        return torch.cat(outs, 1)


class Words(torch.nn.Module):
    """A List[str] argument: ONNX has no input for it."""

    def forward(self, x, words: List[str]):
        if words[0] == "double":
            return x * 2
        return x + len(words)


def lengths_file(directory, values):
    """-i lengths=FILE: real lengths (the spec's zeros do not pack)."""
    import numpy as np
    path = directory / "lengths.npy"
    np.save(path, np.array(values, dtype=np.int64))
    return path


def with_lengths(build, values):
    """The builder, which also writes lengths.npy beside the archive (the args name it as {dir})."""
    def both(directory):
        lengths_file(directory, values)
        return build(directory)
    return both


PACKED_GRU_ARGS = ["-i", "ids:2x8:int64", "-i", "lengths={dir}/lengths.npy"]
PACKED_GRU_DYNAMIC = axes("ids:0=batch", "ids:1=sequence", "lengths:0=batch")


def _tests_archives():
    """The committed archives of tests/archives/ (torch 1.13, 2.9, 2.15), with their manifests' arguments."""
    out = []
    for manifest in sorted(ARCHIVES.glob("torch-*/*.json")):
        m = json.loads(manifest.read_text())
        out.append(CorpusArchive(f"{manifest.parent.name}/{m['archive']}", committed(manifest.parent / m["archive"]),
                                 specs(*m["cli_input_shapes"]) + axes(*m["cli_dynamic_axes"])))
    return out


def _pickled(directory):
    path = directory / "pickled.pt"
    torch.save(test_cli_arguments.Linear43(), str(path))
    return path


def _resnet18(directory):
    path = directory / "r18.pt"
    models.save_traced("resnet18", path)
    return path


def _group_norm():
    return torch.nn.Sequential(torch.nn.Conv2d(64, 64, 3, padding=1), torch.nn.GroupNorm(8, 64))


def _transformer_decoder():
    layer = torch.nn.TransformerDecoderLayer(16, 2, 32, dropout=0.0, batch_first=True)
    return torch.nn.TransformerDecoder(layer, 2)


def _transformer_encoder():
    layer = torch.nn.TransformerEncoderLayer(16, 2, 32, batch_first=True, dropout=0.0)
    return torch.nn.TransformerEncoder(layer, 2, enable_nested_tensor=False)


SIGNATURE = specs("x:2x3", "n=3", "flag=true", "scale=0.5", "sizes=[3,2]", "pair:(2x3,2x3)")
TOKENS = (torch.randint(0, 50, (2, 10)), torch.ones(2, 10, dtype=torch.int64))

CORPUS = [
    # test_cli.py
    CorpusArchive("cnn", traced(lambda: test_cli.tiny_cnn()[0], (torch.randn(2, 3, 8, 8),)), specs("x:1x3x8x8")),
    CorpusArchive("cnn dynamic batch", traced(lambda: test_cli.tiny_cnn()[0], (torch.randn(2, 3, 8, 8),)),
                  specs("x:2x3x8x8") + axes("x:0=batch")),
    CorpusArchive("two inputs", traced(test_cli.TwoInputs, (torch.randn(2, 4), torch.randn(2, 3))),
                  specs("image:2x4", "mask:2x3")),
    CorpusArchive("erfcx (unsupported)", traced(test_cli.Erfcx, (torch.randn(2, 3),)), specs("x:2x3") + ["--opset", "15"]),
    CorpusArchive("group norm", traced(_group_norm, (torch.randn(1, 64, 1, 1025),)), specs("input:1x64x1x1025")),
    # test_cli_runtime.py
    CorpusArchive("resnet18", _resnet18, specs("x:1x3x224x224")),
    # test_cli_arguments.py
    CorpusArchive("signature", scripted(test_cli_arguments.Signature), SIGNATURE),
    CorpusArchive("signature, defaults given", scripted(test_cli_arguments.Signature),
                  SIGNATURE + specs("mask:2x3:bool", "bias=1.5")),
    CorpusArchive("signature, reshape the example does not fit", scripted(test_cli_arguments.Signature),
                  specs("x:2x3", "n=3", "flag=true", "scale=0.5", "sizes=[5,7]", "pair:(2x3,2x3)")),
    CorpusArchive("list of tensors", scripted(test_cli_arguments.Stack), specs("xs:[2x3,2x3,2x3]", "k=2")),
    CorpusArchive("dynamic axis typo", scripted(test_cli_arguments.Stack),
                  specs("xs:[2x3,2x3]", "k=1") + axes("xs.3:0=batch")),
    CorpusArchive("transformer decoder", scripted(_transformer_decoder),
                  specs("tgt:2x5x16", "memory:2x7x16") + axes("tgt:0=b", "tgt:1=t", "memory:0=b", "memory:1=s")),
    CorpusArchive("transformer encoder, masks left out", scripted(_transformer_encoder),
                  specs("src:2x5x16") + axes("src:0=batch")),
    CorpusArchive("linear, shape PyTorch rejects", traced(test_cli_arguments.Linear43, (torch.randn(2, 4),)),
                  specs("x:2x5") + axes("x:0=batch")),
    CorpusArchive("conv, channels PyTorch rejects", scripted(test_cli_arguments.Conv3), specs("x:1x4x16x16")),
    CorpusArchive("conv dynamic width", scripted(test_cli_arguments.Conv3),
                  specs("x:1x3x16x16") + axes("x:0=batch", "x:-1=width")),
    CorpusArchive("token ids given as floats", scripted(test_cli_arguments.TokenClassifier),
                  specs("ids:2x10", "mask:2x10:int64")),
    CorpusArchive("token classifier", traced(test_cli_arguments.TokenClassifier, TOKENS),
                  specs("ids:2x10:int64", "mask:2x10:int64") + axes("ids:0=b", "ids:1=s", "mask:0=b", "mask:1=s")),
    CorpusArchive("torch.save pickle", _pickled, specs("x:2x4")),
    # test_scripted_cli.py
    CorpusArchive("if/elif", scripted(scripted_patterns.IfElif), specs("x:3x4") + ["--opset", "17"]),
    CorpusArchive("unsupported in a branch", scripted(test_scripted_cli.UnsupportedInBranch), specs("x:2x3")),
    # test_inspect.py
    CorpusArchive("inspect signature", scripted(test_inspect.Signature),
                  specs("x:2x6", "n=2", "flag=false", "sizes=[2,2]")),
    CorpusArchive("digits", scripted(test_inspect.SmallInputNet), specs("x:2x1x32x32") + axes("x:0=batch")),
    CorpusArchive("packed tagger", with_lengths(scripted(test_inspect.PackedTagger), [8, 5]),
                  specs("tokens:2x8:int64", "lengths={dir}/lengths.npy")
                  + axes("tokens:0=batch", "tokens:1=sequence", "lengths:0=batch")),
    CorpusArchive("padded encoder", scripted(test_inspect.PaddedEncoder),
                  specs("src:2x8x32", "src_key_padding_mask:2x8:bool") + ["--opset", "17"]
                  + axes("src:0=batch", "src:1=sequence", "src_key_padding_mask:0=batch",
                         "src_key_padding_mask:1=sequence")),
    CorpusArchive("hand-written bert", scripted(test_inspect.HandWrittenBert),
                  specs("input_ids:2x8:int64", "attention_mask:2x8:int64", "token_type_ids:2x8:int64")
                  + axes(*[f"{n}:{a}" for n in ("input_ids", "attention_mask", "token_type_ids")
                           for a in ("0=batch", "1=sequence")])),
    CorpusArchive("looped linear", scripted(test_inspect.LoopedLinear), specs("x:2x6", "steps=2") + axes("x:0=batch")),
    CorpusArchive("stateful step", scripted(test_inspect.StatefulStep),
                  specs("x:2x16", "state:(1x2x16,1x2x16)", "sizes=[16,2]")),
    CorpusArchive("flattened tokens", scripted(test_inspect.FlattenedTokens), specs("ids:2x8:int64") + axes("ids:0=batch")),
    CorpusArchive("flattened tokens, dynamic sequence", scripted(test_inspect.FlattenedTokens),
                  specs("ids:2x8:int64") + axes("ids:0=batch", "ids:1=sequence")),
    # issue 64
    CorpusArchive("packed gru", with_lengths(scripted(PackedGru), [8, 5]), PACKED_GRU_ARGS),
    CorpusArchive("packed gru, dynamic sequence", with_lengths(scripted(PackedGru), [8, 5]),
                  PACKED_GRU_ARGS + PACKED_GRU_DYNAMIC),
    CorpusArchive("packed classifier", with_lengths(scripted(PackedClassifier), [8, 5]),
                  specs("ids:2x8:int64", "lengths={dir}/lengths.npy") + axes("ids:0=batch", "lengths:0=batch")),
    CorpusArchive("greedy decoder", scripted(GreedyDecoder), specs("src:1x5:int64")),
    CorpusArchive("greedy decoder, max_len given", scripted(GreedyDecoder), specs("src:1x5:int64", "max_len=4")),
    CorpusArchive("List[str] argument", scripted(Words), specs("x:2x3", "words=[double,b]")),
] + _tests_archives()


def materialize(entry, directory):
    """Writes `entry`'s archive into `directory` (made if missing); returns (archive, args) with {dir}
    in the args replaced by the directory."""
    directory = pathlib.Path(directory)
    os.makedirs(directory, exist_ok=True)
    path = entry.build(directory)
    return path, [a.replace("{dir}", str(directory)) for a in entry.args]
