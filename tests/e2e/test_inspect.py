"""`pt2onnx inspect`: for archives the tests write (a traced torchvision classifier, a scripted
nn.TransformerEncoder, a scripted module with int/bool/Optional/list arguments, a scripted LSTM
stack, a conv net whose input size is not 224; token-id models: an LSTM tagger on packed sequences,
an encoder with a bool padding mask, a small BERT written by hand; a Linear reached inside a loop),
the convert line it prints runs as printed (through shlex or bash), and the model it writes matches
PyTorch in ONNX Runtime and the builtin runtime on other inputs than the line's (another batch size,
sequence length, loop count, other ints and bools); the signature, submodules, ops, unsupported ops
and file format version it reports are the archive's; a model it cannot find an example for, a
corrupt archive and a wrong -i are clear results."""
import json
import math
import os
import shlex
import subprocess
import sys
import zipfile
from typing import List, Optional, Tuple

import numpy as np
import pytest
import torch

import pt2onnx
from samples import ort


def run(*argv, **kw):
    return subprocess.run([str(a) for a in argv], capture_output=True, text=True, timeout=600, **kw)


def inspect_json(cli, archive, *extra):
    proc = run(cli, "inspect", archive, "--format", "json", *extra)
    assert proc.returncode in (0, 1), proc.stderr
    return json.loads(proc.stdout), proc.returncode


def convert_as_printed(cli, report, out):
    """Runs the printed convert line, its -o pointed at `out`."""
    argv = shlex.split(report["convert_command"])
    assert argv[:2] == ["pt2onnx", "convert"]
    argv[0] = str(cli)
    argv[argv.index("-o") + 1] = str(out)
    proc = run(*argv)
    assert proc.returncode == 0, report["convert_command"] + "\n" + proc.stderr
    return out


def outputs(path, feeds):
    return {"ort": list(ort.run(path, feeds).values()), "builtin": pt2onnx.InferenceSession(str(path)).run(None, feeds)}


def check_against_torch(module, path, args, feeds):
    with torch.no_grad():
        expected = module(*args)
    expected = [expected] if isinstance(expected, torch.Tensor) else list(expected)
    for runtime, got in outputs(path, feeds).items():
        assert len(got) == len(expected), runtime
        for e, g in zip(expected, got):
            assert ort.max_rel_error(e.detach().numpy(), g) < 1e-4, runtime


class Signature(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.fc = torch.nn.Linear(6, 4)

    def forward(self, x, n: int, flag: bool, sizes: List[int], bias: Optional[torch.Tensor] = None):
        y = self.fc(x)
        for _ in range(n):
            y = y * 2
        if flag:
            y = y + 1
        if bias is not None:
            y = y + bias
        return y.sum(1) + sizes[0]


class SmallInputNet(torch.nn.Module):  # 1-channel 28x28 digits: flattened features fix the size
    def __init__(self):
        super().__init__()
        self.conv = torch.nn.Conv2d(1, 4, 3)
        self.fc = torch.nn.Linear(4 * 30 * 30, 10)

    def forward(self, x):
        return self.fc(self.conv(x).relu().flatten(1))


def test_traced_torchvision_archive(cli, tmp_path):
    import torchvision
    torch.manual_seed(0)
    model = torchvision.models.resnet18().eval()
    path = tmp_path / "r18.pt"
    torch.jit.save(torch.jit.trace(model, torch.randn(1, 3, 224, 224)), str(path))
    report, code = inspect_json(cli, path)
    assert code == 0 and report["convertible"] and report["example"]["exports"]
    assert [a["name"] for a in report["forward"]["arguments"]] == ["x"]
    assert report["root_type"] == "ResNet" and {"name": "layer1.0.conv1", "type": "Conv2d"} in report["submodules"]
    assert report["ops"]["aten::_convolution"] == 20
    # A global average pool before the classifier: any image size runs.
    assert report["dynamic_axes"] == ["x:0=batch", "x:2=height", "x:3=width"]
    out = convert_as_printed(cli, report, tmp_path / "r18.onnx")
    for shape in ((3, 3, 224, 224), (1, 3, 200, 256)):  # another batch size and image size than the line's
        x = torch.randn(*shape)
        check_against_torch(torch.jit.load(str(path)), out, (x,), {"x": x.numpy()})
    text = run(cli, "inspect", path).stdout
    assert "forward(x: Tensor) -> Tensor" in text and "every op converts" in text
    assert "pt2onnx convert" in text and "-i x:2x3x224x224" in text


def test_scripted_transformer_encoder_archive(cli, tmp_path):
    torch.manual_seed(1)
    layer = torch.nn.TransformerEncoderLayer(32, 4, 64, batch_first=True, dropout=0.0)
    encoder = torch.nn.TransformerEncoder(layer, 2, enable_nested_tensor=False).eval()
    path = tmp_path / "enc.pt"
    torch.jit.save(torch.jit.script(encoder), str(path))
    report, code = inspect_json(cli, path, "--opset", "17")
    assert code == 0, report
    args = {a["name"]: a for a in report["forward"]["arguments"]}
    assert list(args) == ["src", "mask", "src_key_padding_mask", "is_causal"]
    assert args["mask"]["type"] == "Optional[Tensor]" and args["mask"]["default"] == "None"
    assert report["example"]["specs"] == ["src:2x8x32"]
    out = convert_as_printed(cli, report, tmp_path / "enc.onnx")
    src = torch.randn(3, 8, 32)
    check_against_torch(torch.jit.load(str(path)), out, (src,), {"src": src.numpy()})


def test_scripted_module_with_int_bool_optional_and_list_arguments(cli, tmp_path):
    torch.manual_seed(2)
    path = tmp_path / "sig.pt"
    torch.jit.save(torch.jit.script(Signature().eval()), str(path))
    report, code = inspect_json(cli, path)
    assert code == 0, report
    assert [(a["name"], a["type"]) for a in report["forward"]["arguments"]] == [
        ("x", "Tensor"), ("n", "int"), ("flag", "bool"), ("sizes", "List[int]"), ("bias", "Optional[Tensor]")]
    assert report["example"]["specs"] == ["x:2x6", "n=2", "flag=false", "sizes=[2,2]"]
    out = convert_as_printed(cli, report, tmp_path / "sig.onnx")
    module = torch.jit.load(str(path))
    for n, flag, batch in [(0, True, 3), (4, False, 1), (2, True, 2)]:  # other trip counts, the other branch
        x = torch.randn(batch, 6)
        feeds = {"x": x.numpy(), "n": np.array(n), "flag": np.array(flag), "sizes": np.array([5, 1])}
        check_against_torch(module, out, (x, n, flag, [5, 1]), feeds)


def test_scripted_lstm_stack_and_a_conv_net_of_another_input_size(cli, tmp_path):
    class Tagger(torch.nn.Module):
        def __init__(self):
            super().__init__()
            self.embed = torch.nn.Embedding(50, 12)
            self.lstm = torch.nn.LSTM(12, 16, num_layers=2)
            self.out = torch.nn.Linear(16, 5)

        def forward(self, tokens):
            h, _ = self.lstm(self.embed(tokens))
            return self.out(h)

    torch.manual_seed(3)
    for name, module, expected_spec in [("tagger", Tagger(), "tokens:2x8:int64"), ("digits", SmallInputNet(), None)]:
        path = tmp_path / f"{name}.pt"
        torch.jit.save(torch.jit.script(module.eval()), str(path))
        report, code = inspect_json(cli, path)
        assert code == 0, report
        if expected_spec:
            assert report["example"]["specs"] == [expected_spec]
        else:  # 224, 64 and 299 do not fit the Linear; 32 does (conv 3x3 -> 30x30)
            assert report["example"]["specs"] == ["x:2x1x32x32"] and report["example"]["tries"] > 1
        convert_as_printed(cli, report, tmp_path / f"{name}.onnx")


def test_unconvertible_ops_are_listed_with_the_line(cli, tmp_path):
    class Erfcx(torch.nn.Module):
        def forward(self, x):
            return torch.special.erfcx(x) + 1

    path = tmp_path / "erfcx.pt"
    torch.jit.save(torch.jit.script(Erfcx()), str(path))
    report, code = inspect_json(cli, path)
    assert code == 1 and report["convertible"] is False
    assert [op["op"] for op in report["unsupported"]] == ["aten::special_erfcx"]
    text = run(cli, "inspect", path).stdout
    assert "1 op kind(s) do not convert" in text and "aten::special_erfcx x1" in text


def test_no_example_found_given_specs_and_errors(cli, tmp_path):
    class Strict(torch.nn.Module):  # needs exactly 7 features, which no rule can tell
        def forward(self, x):
            torch._assert(x.shape[-1] == 7, "x must have 7 features")
            return x * 2

    path = tmp_path / "strict.pt"
    torch.jit.save(torch.jit.script(Strict()), str(path))
    proc = run(cli, "inspect", path)
    assert proc.returncode == 1, proc.stderr
    assert "no example found" in proc.stdout and "x must have 7 features" in proc.stdout and "-i" in proc.stdout
    report, code = inspect_json(cli, path, "-i", "x:3x7")  # a given spec is kept as it is
    assert code == 0 and report["example"]["specs"] == ["x:3x7"]
    convert_as_printed(cli, report, tmp_path / "strict.onnx")

    proc = run(cli, "inspect", path, "-i", "y:3x7")
    assert proc.returncode == 2 and "-i names 'y'" in proc.stderr and "forward() takes: x" in proc.stderr
    (tmp_path / "bad.pt").write_bytes(b"PK\x03\x04 not really a zip")
    proc = run(cli, "inspect", tmp_path / "bad.pt")
    assert proc.returncode == 2 and proc.stderr.startswith("pt2onnx: error:") and "Traceback" not in proc.stderr
    proc = run(cli, "inspect", tmp_path / "missing.pt")
    assert proc.returncode == 2 and "does not exist" in proc.stderr


# Token-id models, a loop and the shell: the printed line is run as printed and its model compared
# with PyTorch at a batch size and sequence length (and loop count) the line never saw.

def printed_convert_line(cli, archive, *extra):
    """inspect's text output and its convert line split as bash would (shlex)."""
    proc = run(cli, "inspect", archive, *extra)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    lines = proc.stdout.splitlines()
    line = lines[lines.index("convert with:") + 1].strip()
    return proc.stdout, line, shlex.split(line)


def run_printed_line(cli, argv, cwd):
    """Runs the printed `pt2onnx convert ...` in `cwd` (its -o is relative) and returns the model's path."""
    assert argv[:2] == ["pt2onnx", "convert"]
    proc = run(cli, *argv[1:], cwd=cwd)
    assert proc.returncode == 0, " ".join(argv) + "\n" + proc.stderr
    return os.path.join(cwd, argv[argv.index("-o") + 1])


def ort_matches_torch(module, onnx_path, args, feeds):
    with torch.no_grad():
        expected = module(*args)
    expected = [expected] if isinstance(expected, torch.Tensor) else list(expected)
    got = list(ort.run(onnx_path, feeds).values())
    assert len(got) == len(expected)
    for e, g in zip(expected, got):
        assert g.shape == tuple(e.shape)
        assert ort.max_rel_error(e.numpy(), g) < 1e-4


def padded_lengths(batch, sequence, generator):
    """Lengths in 1..sequence, longest first, the longest = sequence (pack_padded_sequence's order)."""
    lengths = torch.randint(1, sequence + 1, (batch,), generator=generator)
    lengths[0] = sequence
    return lengths.sort(descending=True).values


class PackedTagger(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.embed = torch.nn.Embedding(40, 12)
        self.lstm = torch.nn.LSTM(12, 16, batch_first=True)
        self.out = torch.nn.Linear(16, 5)

    def forward(self, tokens, lengths):
        packed = torch.nn.utils.rnn.pack_padded_sequence(self.embed(tokens), lengths, batch_first=True)
        y, _ = self.lstm(packed)
        y, _ = torch.nn.utils.rnn.pad_packed_sequence(y, batch_first=True)
        return self.out(y)


def test_lstm_tagger_takes_token_ids_and_lengths_at_any_batch_and_length(cli, tmp_path):
    torch.manual_seed(4)
    path = tmp_path / "tagger.pt"
    torch.jit.save(torch.jit.script(PackedTagger().eval()), str(path))
    text, line, argv = printed_convert_line(cli, path)
    assert "-i tokens:2x8:int64 -i lengths:2:int64" in line  # not lengths:2x3x64x64 (float)
    assert "-d tokens:0=batch -d tokens:1=sequence -d lengths:0=batch" in line
    assert "lengths: lengths (int64)" in text and "tokens: indices (int64)" in text
    onnx_path = run_printed_line(cli, argv, tmp_path)
    module = torch.jit.load(str(path))
    generator = torch.Generator().manual_seed(0)
    for batch, sequence in [(4, 6), (1, 13)]:
        tokens = torch.randint(0, 40, (batch, sequence), generator=generator)
        lengths = padded_lengths(batch, sequence, generator)
        ort_matches_torch(module, onnx_path, (tokens, lengths), {"tokens": tokens.numpy(), "lengths": lengths.numpy()})


class PaddedEncoder(torch.nn.Module):
    def __init__(self):
        super().__init__()
        layer = torch.nn.TransformerEncoderLayer(32, 4, 64, batch_first=True, dropout=0.0)
        self.encoder = torch.nn.TransformerEncoder(layer, 2, enable_nested_tensor=False)

    def forward(self, src, src_key_padding_mask):
        return self.encoder(src, src_key_padding_mask=src_key_padding_mask)


def padding_mask(batch, sequence, generator):
    """True where padded; every row keeps its first position at least."""
    kept = torch.randint(1, sequence + 1, (batch, 1), generator=generator)
    return torch.arange(sequence).unsqueeze(0) >= kept


def test_transformer_encoder_takes_a_bool_padding_mask(cli, tmp_path):
    torch.manual_seed(5)
    path = tmp_path / "padded.pt"
    torch.jit.save(torch.jit.script(PaddedEncoder().eval()), str(path))
    text, line, argv = printed_convert_line(cli, path, "--opset", "17")
    assert "-i src:2x8x32 -i src_key_padding_mask:2x8:bool" in line  # a float mask runs too, but is not what users have
    for axis in ["src:0=batch", "src:1=sequence", "src_key_padding_mask:0=batch", "src_key_padding_mask:1=sequence"]:
        assert f"-d {axis}" in line
    onnx_path = run_printed_line(cli, argv, tmp_path)
    module = torch.jit.load(str(path))
    generator = torch.Generator().manual_seed(1)
    for batch, sequence in [(3, 5), (1, 12)]:
        src = torch.randn(batch, sequence, 32, generator=generator)
        mask = padding_mask(batch, sequence, generator)
        ort_matches_torch(module, onnx_path, (src, mask), {"src": src.numpy(), "src_key_padding_mask": mask.numpy()})


class HandWrittenBert(torch.nn.Module):
    """Token ids, token types and a tokenizer's int64 attention_mask, made additive as BERT does."""

    def __init__(self, vocab=50, dim=16, heads=2, max_len=32):
        super().__init__()
        self.heads, self.head_dim = heads, dim // heads
        self.scale = 1.0 / math.sqrt(dim // heads)
        self.word = torch.nn.Embedding(vocab, dim)
        self.position = torch.nn.Embedding(max_len, dim)
        self.token_type = torch.nn.Embedding(2, dim)
        self.norm = torch.nn.LayerNorm(dim)
        self.qkv = torch.nn.Linear(dim, 3 * dim)
        self.proj = torch.nn.Linear(dim, dim)

    def forward(self, input_ids, attention_mask, token_type_ids):
        b, s = input_ids.shape
        positions = torch.arange(s, device=input_ids.device).unsqueeze(0)
        x = self.norm(self.word(input_ids) + self.position(positions) + self.token_type(token_type_ids))
        q, k, v = self.qkv(x).chunk(3, dim=-1)
        q = q.view(b, s, self.heads, self.head_dim).transpose(1, 2)
        k = k.view(b, s, self.heads, self.head_dim).transpose(1, 2)
        v = v.view(b, s, self.heads, self.head_dim).transpose(1, 2)
        scores = q @ k.transpose(-1, -2) * self.scale
        scores = scores + (1.0 - attention_mask[:, None, None, :]) * -10000.0
        y = (scores.softmax(-1) @ v).transpose(1, 2).reshape(b, s, -1)
        return self.proj(y)


def test_hand_written_bert_takes_int64_ids_masks_and_any_sequence_length(cli, tmp_path):
    torch.manual_seed(6)
    path = tmp_path / "bert.pt"
    torch.jit.save(torch.jit.script(HandWrittenBert().eval()), str(path))
    text, line, argv = printed_convert_line(cli, path)
    assert "-i input_ids:2x8:int64 -i attention_mask:2x8:int64 -i token_type_ids:2x8:int64" in line
    for name in ["input_ids", "attention_mask", "token_type_ids"]:
        assert f"-d {name}:0=batch -d {name}:1=sequence" in line
    onnx_path = run_printed_line(cli, argv, tmp_path)
    module = torch.jit.load(str(path))
    generator = torch.Generator().manual_seed(2)
    for batch, sequence in [(3, 5), (1, 20)]:  # a tokenizer's batch: ids, 1 where kept, types 0/1
        ids = torch.randint(0, 50, (batch, sequence), generator=generator)
        mask = (~padding_mask(batch, sequence, generator)).long()
        types = torch.randint(0, 2, (batch, sequence), generator=generator)
        ort_matches_torch(module, onnx_path, (ids, mask, types),
                          {"input_ids": ids.numpy(), "attention_mask": mask.numpy(), "token_type_ids": types.numpy()})


class LoopedLinear(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.fc = torch.nn.Linear(6, 6)

    def forward(self, x, steps: int):
        for _ in range(steps):
            x = torch.tanh(self.fc(x))
        return x * 2


def test_a_linear_first_reached_inside_a_loop_gives_the_example(cli, tmp_path):
    torch.manual_seed(7)
    path = tmp_path / "looped.pt"
    torch.jit.save(torch.jit.script(LoopedLinear().eval()), str(path))
    text, line, argv = printed_convert_line(cli, path)
    assert "-i x:2x6 -i steps=2 -d x:0=batch" in line
    onnx_path = run_printed_line(cli, argv, tmp_path)
    module = torch.jit.load(str(path))
    for batch, steps in [(5, 0), (1, 4), (3, 7)]:  # other batch sizes and loop counts
        x = torch.randn(batch, 6)
        ort_matches_torch(module, onnx_path, (x, steps), {"x": x.numpy(), "steps": np.array(steps)})


class StatefulStep(torch.nn.Module):
    def forward(self, x, state: Tuple[torch.Tensor, torch.Tensor], sizes: List[int]):
        return (x * state[0] + state[1]).reshape(sizes)


def test_printed_specs_paste_into_bash(cli, tmp_path):
    """The example line's and the convert line's specs (a tuple, a list) survive bash as they are printed."""
    path = tmp_path / "my model.pt"  # a space in the path too
    torch.jit.save(torch.jit.script(StatefulStep()), str(path))
    text, line, argv = printed_convert_line(cli, path, "-i", "x:2x16", "-i", "sizes=[16,2]")
    example = next(t for t in text.splitlines() if t.startswith("example: "))
    printed = example[len("example: "):example.index(" (PyTorch runs")]
    echoed = subprocess.run(["bash", "-c", "printf '%s\\n' " + printed], capture_output=True, text=True)
    assert echoed.returncode == 0, echoed.stderr
    assert echoed.stdout.split("\n")[:-1] == ["state:(1x2x16,1x2x16)", "x:2x16", "sizes=[16,2]"]
    env = dict(os.environ, PATH=os.path.dirname(cli) + os.pathsep + os.environ["PATH"])
    proc = subprocess.run(["bash", "-c", line], capture_output=True, text=True, cwd=tmp_path, env=env)
    assert proc.returncode == 0, line + "\n" + proc.stderr
    assert (tmp_path / "my model.onnx").exists()


def test_the_file_format_version_is_read_from_the_record_the_archive_has(cli, tmp_path):
    """Newer archives keep it in ARCHIVE/.data/version: an archive with only that record still says 3."""
    path = tmp_path / "m.pt"
    torch.jit.save(torch.jit.script(LoopedLinear()), str(path))
    moved = tmp_path / "data_version.pt"
    with zipfile.ZipFile(path) as source, zipfile.ZipFile(moved, "w", zipfile.ZIP_STORED) as target:
        for info in source.infolist():
            name = info.filename.replace("/version", "/.data/version") if info.filename.endswith("/version") \
                else info.filename
            target.writestr(name, source.read(info))
    assert "m/.data/version" in zipfile.ZipFile(moved).namelist()
    torch.jit.load(str(moved))  # torch reads it
    for archive in (path, moved):
        proc = run(cli, "inspect", archive)
        first = proc.stdout.splitlines()[0]
        assert "file format version 3" in first and "None" not in proc.stdout, first


class FlattenedTokens(torch.nn.Module):  # a Linear over all 8 positions: the sequence length is fixed
    def __init__(self):
        super().__init__()
        self.embed = torch.nn.Embedding(20, 4)
        self.fc = torch.nn.Linear(8 * 4, 3)

    def forward(self, ids):
        return self.fc(self.embed(ids).flatten(1))


def test_a_sequence_axis_the_model_does_not_take_is_dropped(cli, tmp_path):
    torch.manual_seed(8)
    path = tmp_path / "flat.pt"
    torch.jit.save(torch.jit.script(FlattenedTokens().eval()), str(path))
    text, line, argv = printed_convert_line(cli, path)
    assert line.endswith("-i ids:2x8:int64 -d ids:0=batch")
    assert "sequence: dropped: batch 1, sequence 11: PyTorch does not run forward()" in text
    assert "batch 3, sequence 5: PyTorch does not run forward()" in text
    onnx_path = run_printed_line(cli, argv, tmp_path)
    ids = torch.randint(0, 20, (5, 8))
    ort_matches_torch(torch.jit.load(str(path)), onnx_path, (ids,), {"ids": ids.numpy()})
