"""nn.LSTM, nn.GRU and nn.RNN (tanh and relu) exported with pt2onnx and run in ONNX Runtime and the
builtin runtime against PyTorch: 1-3 layers, both directions, batch_first, with and without initial
states, with and without biases, every opset; dynamic sequence length and batch checked on inputs of
other sizes than the example; packed sequences (pack_padded_sequence / pad_packed_sequence, sorted or
not, padding values, total_length) on lengths other than the example's; what ONNX cannot express
(proj_size, dropout in training) is a located error."""
import itertools
import warnings

import numpy as np
import onnx
import pytest
import torch

import pt2onnx
from samples import ort

TOLERANCE = 1e-4
INPUT, HIDDEN = 4, 5


def make(kind, layers, bidirectional, batch_first, bias=True):
    torch.manual_seed(layers * 7 + bidirectional * 3 + batch_first)
    if kind == "lstm":
        cls, extra = torch.nn.LSTM, {}
    elif kind == "gru":
        cls, extra = torch.nn.GRU, {}
    else:
        cls, extra = torch.nn.RNN, {"nonlinearity": kind.split("_")[1]}
    return cls(INPUT, HIDDEN, num_layers=layers, bidirectional=bidirectional, batch_first=batch_first, bias=bias,
               dropout=0.3 if layers > 1 else 0.0, **extra).eval()  # dropout: ignored in eval


def sequence(seq, batch, batch_first):
    return torch.randn(batch, seq, INPUT) if batch_first else torch.randn(seq, batch, INPUT)


def initial_states(kind, layers, bidirectional, batch):
    shape = (layers * (2 if bidirectional else 1), batch, HIDDEN)
    return (torch.randn(shape), torch.randn(shape)) if kind == "lstm" else torch.randn(shape)


def flatten(outputs):
    if isinstance(outputs, torch.Tensor):
        return [outputs]
    return [t for o in outputs for t in flatten(o)]


def check(model, args, path, runs):
    """Each run (argument tuples) in both runtimes against PyTorch."""
    proto = onnx.load(str(path))
    names = [i.name for i in proto.graph.input]
    session = pt2onnx.InferenceSession(str(path))
    for run_args in runs:
        with torch.no_grad():
            expected = flatten(model(*run_args))
        feeds = {n: t.numpy() for n, t in zip(names, flatten(run_args))}
        outputs = {"ort": list(ort.run(path, feeds).values()), "builtin": session.run(None, feeds)}
        for runtime, got in outputs.items():
            assert len(got) == len(expected), runtime
            for k, (e, g) in enumerate(zip(expected, got)):
                err = ort.max_rel_error(e.numpy(), g)
                assert err < TOLERANCE, f"{runtime} output {k}: {err}"


KINDS = ["lstm", "gru", "rnn_tanh", "rnn_relu"]
CONFIGS = list(itertools.product(KINDS, [1, 2, 3], [False, True], [False, True]))


@pytest.mark.parametrize("kind,layers,bidirectional,batch_first", CONFIGS,
                         ids=[f"{k}-{n}layer-{'bi' if b else 'uni'}-{'bf' if f else 'sf'}" for k, n, b, f in CONFIGS])
def test_recurrent_matches_torch(kind, layers, bidirectional, batch_first, tmp_path):
    model = make(kind, layers, bidirectional, batch_first)
    x = sequence(5, 3, batch_first)
    path = tmp_path / "m.onnx"
    pt2onnx.export(model, (x,), str(path), input_names=["x"])
    ops = {n.op_type for n in onnx.load(str(path)).graph.node}
    assert {"lstm": "LSTM", "gru": "GRU"}.get(kind, "RNN") in ops
    check(model, (x,), path, [(x,)])


@pytest.mark.parametrize("kind", KINDS)
@pytest.mark.parametrize("bidirectional", [False, True])
def test_initial_states_and_dynamic_axes(kind, bidirectional, tmp_path):
    """Initial states given; sequence length and batch dynamic, run on other sizes than exported."""
    model = make(kind, 2, bidirectional, batch_first=False)
    x, state = sequence(4, 2, False), initial_states(kind, 2, bidirectional, 2)
    path = tmp_path / "m.onnx"
    state_names = ["h0", "c0"] if kind == "lstm" else ["h0"]
    axes = {"x": {0: "seq", 1: "batch"}, **{n: {1: "batch"} for n in state_names}}
    pt2onnx.export(model, (x, state), str(path), input_names=["x"] + state_names, dynamic_axes=axes)
    runs = [(x, state)] + [(sequence(s, b, False), initial_states(kind, 2, bidirectional, b))
                           for s, b in [(7, 3), (1, 1), (9, 5)]]
    check(model, (x, state), path, runs)


@pytest.mark.parametrize("opset", [13, 14, 15, 16, 17, 18, 21, 25])
@pytest.mark.parametrize("kind", ["lstm", "gru", "rnn_tanh"])
def test_every_opset_without_biases(opset, kind, tmp_path):
    model = make(kind, 2, True, batch_first=True, bias=False)
    x = sequence(3, 2, True)
    pt2onnx.export(model, (x,), str(tmp_path / "m.onnx"), opset_version=opset)
    check(model, (x,), tmp_path / "m.onnx", [(x,)])


class Tagger(torch.nn.Module):
    """A scripted model around a recurrent layer (nn.LSTM itself has overloaded forwards)."""

    def __init__(self, kind):
        super().__init__()
        self.rnn = make(kind, 2, True, batch_first=True)
        self.head = torch.nn.Linear(2 * HIDDEN, 3)

    def forward(self, x):
        out, _ = self.rnn(x)
        return self.head(out)


@pytest.mark.parametrize("opset", [17, 25])
@pytest.mark.parametrize("kind", ["lstm", "gru", "rnn_tanh"])
def test_scripted_recurrent_matches_torch(kind, opset, tmp_path):
    model = Tagger(kind).eval()
    x = sequence(6, 2, True)
    pt2onnx.export(torch.jit.script(model), (x,), str(tmp_path / "m.onnx"), input_names=["x"], opset_version=opset,
                   dynamic_axes={"x": {0: "batch", 1: "seq"}})
    check(model, (x,), tmp_path / "m.onnx", [(x,), (sequence(9, 4, True),)])


def test_lstm_with_projection_is_a_located_error(tmp_path):
    model = torch.nn.LSTM(INPUT, HIDDEN, proj_size=2).eval()
    with pytest.raises(pt2onnx.ExportError) as e:
        pt2onnx.export(model, (sequence(3, 2, False),), str(tmp_path / "m.onnx"))
    message = str(e.value)
    assert "aten::lstm" in message and "proj_size" in message and "opset" in message
    assert not (tmp_path / "m.onnx").exists()


def test_dropout_between_layers_in_training_is_a_located_error(tmp_path):
    model = make("gru", 2, False, batch_first=False).train()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        with pytest.raises(pt2onnx.ExportError) as e:
            pt2onnx.export(model, (sequence(3, 2, False),), str(tmp_path / "m.onnx"),
                           training=pt2onnx.TrainingMode.TRAINING)
    assert "aten::gru" in str(e.value) and "dropout" in str(e.value)


def test_weights_are_reordered_not_copied_per_call(tmp_path):
    """Two calls of one LSTM share its initializers (the gate reordering is computed in the graph)."""
    class Twice(torch.nn.Module):
        def __init__(self):
            super().__init__()
            self.lstm = make("lstm", 1, False, False)

        def forward(self, a, b):
            return self.lstm(a)[0] + self.lstm(b)[0]

    model = Twice().eval()
    args = (sequence(3, 2, False), sequence(3, 2, False))
    pt2onnx.export(model, args, str(tmp_path / "m.onnx"))
    proto = onnx.load(str(tmp_path / "m.onnx"))
    assert len(proto.graph.initializer) == 4
    check(model, args, tmp_path / "m.onnx", [args])
    np.testing.assert_equal(sorted(i.name for i in proto.graph.initializer),
                            sorted(n for n, _ in model.named_parameters()))


class Packed(torch.nn.Module):
    def __init__(self, kind, enforce_sorted, padding_value, total_length):
        super().__init__()
        self.rnn = make(kind, 2, True, batch_first=True)
        self.enforce_sorted, self.padding_value, self.total_length = enforce_sorted, padding_value, total_length

    def forward(self, x, lengths):
        packed = torch.nn.utils.rnn.pack_padded_sequence(x, lengths, batch_first=True,
                                                         enforce_sorted=self.enforce_sorted)
        out, state = self.rnn(packed)
        y, out_lengths = torch.nn.utils.rnn.pad_packed_sequence(out, batch_first=True, padding_value=self.padding_value,
                                                                total_length=self.total_length)
        return y, state, out_lengths


PACKED = list(itertools.product(["lstm", "gru", "rnn_tanh"], [True, False], [(0.0, None), (-1.0, 8)]))


@pytest.mark.parametrize("kind,enforce_sorted,padding", PACKED,
                         ids=[f"{k}-{'sorted' if s else 'unsorted'}-pad{p[0]}-total{p[1]}" for k, s, p in PACKED])
def test_packed_sequences_match_torch(kind, enforce_sorted, padding, tmp_path):
    """The sequences stop at their lengths (ONNX sequence_lens) in both directions; the output is
    cut to the longest length of each run (or total_length) and padded with padding_value."""
    model = Packed(kind, enforce_sorted, *padding).eval()
    example = (sequence(6, 3, True), torch.tensor([6, 4, 2] if enforce_sorted else [2, 6, 4]))
    path = tmp_path / "m.onnx"
    pt2onnx.export(model, example, str(path), input_names=["x", "lengths"])
    other = (sequence(6, 3, True), torch.tensor([5, 5, 1] if enforce_sorted else [3, 1, 5]))
    check(model, example, path, [example, other])


@pytest.mark.parametrize("enforce_sorted", [True, False])
def test_packed_sequences_with_dynamic_batch_and_time(enforce_sorted, tmp_path):
    """Static typing never runs pad_packed_sequence's kernel on made-up lengths (it read out of bounds
    and killed the process): its output sizes are dynamic dims. Checked on other batch sizes, lengths."""
    model = Packed("lstm", enforce_sorted, 0.0, None).eval()
    example = (sequence(6, 3, True), torch.tensor([6, 4, 2] if enforce_sorted else [2, 6, 4]))
    path = tmp_path / "m.onnx"
    pt2onnx.export(model, example, str(path), input_names=["x", "lengths"],
                   dynamic_axes={"x": {0: "batch", 1: "time"}, "lengths": {0: "batch"}})
    others = [(sequence(9, 5, True), torch.tensor([9, 7, 7, 3, 1] if enforce_sorted else [3, 9, 1, 7, 7])),
              (sequence(4, 1, True), torch.tensor([2])),
              (sequence(5, 2, True), torch.tensor([5, 5]))]
    check(model, example, path, [example] + others)


class ScriptedTagger(torch.nn.Module):
    """A sequence tagger as users script it: token ids and lengths, packed around the recurrent layer."""

    def __init__(self, kind, layers, bidirectional, batch_first, enforce_sorted):
        super().__init__()
        torch.manual_seed(layers * 5 + bidirectional)
        self.batch_first, self.enforce_sorted = batch_first, enforce_sorted
        self.embedding = torch.nn.Embedding(30, INPUT)
        self.rnn = make(kind, layers, bidirectional, batch_first)
        self.head = torch.nn.Linear(HIDDEN * (2 if bidirectional else 1), 3)

    def forward(self, ids, lengths):
        x = self.embedding(ids)
        if not self.batch_first:
            x = x.transpose(0, 1)
        packed = torch.nn.utils.rnn.pack_padded_sequence(x, lengths, batch_first=self.batch_first,
                                                         enforce_sorted=self.enforce_sorted)
        out, _ = self.rnn(packed)
        y, _ = torch.nn.utils.rnn.pad_packed_sequence(out, batch_first=self.batch_first)
        return self.head(y)


def token_batch(batch, time, enforce_sorted, generator):
    """Ids [batch, time] and lengths in [1, time], the longest = time; sorted longest first if asked."""
    ids = torch.randint(0, 30, (batch, time), generator=generator)
    lengths = torch.randint(1, time + 1, (batch,), generator=generator)
    lengths[0] = time
    lengths = lengths.sort(descending=True).values if enforce_sorted else lengths[torch.randperm(batch, generator=generator)]
    return ids, lengths


TAGGERS = list(itertools.product(["lstm"], [1, 2], [False, True], [True, False], [False, True])) + \
    [("gru", 2, True, True, False), ("rnn_tanh", 1, True, False, True)]


@pytest.mark.parametrize("kind,layers,bidirectional,batch_first,enforce_sorted", TAGGERS)
def test_scripted_packed_tagger_matches_torch(kind, layers, bidirectional, batch_first, enforce_sorted, tmp_path):
    """Scripted, nn.LSTM sizes its zero state by batch_sizes[0] read out of the PackedSequence tuple
    and pad_packed_sequence its length by batch_sizes.size(0): both mean other things in pt2onnx's
    padded form, and were missed once the tuple hid them (a model that did not run unless batch ==
    sequence length, with a rank-4 output declared). Checked on batch sizes and lengths other than
    the example's, with the batch and sequence axes dynamic."""
    model = torch.jit.script(ScriptedTagger(kind, layers, bidirectional, batch_first, enforce_sorted).eval())
    generator = torch.Generator().manual_seed(3)
    example = token_batch(2, 7, enforce_sorted, generator)
    path = tmp_path / "m.onnx"
    pt2onnx.export(model, example, str(path), input_names=["ids", "lengths"],
                   dynamic_axes={"ids": {0: "batch", 1: "sequence"}, "lengths": {0: "batch"}})
    output = onnx.load(str(path)).graph.output[0]
    assert len(output.type.tensor_type.shape.dim) == 3
    others = [token_batch(b, t, enforce_sorted, generator) for b, t in [(5, 4), (1, 9), (3, 3), (4, 11)]]
    check(model, example, path, [example] + others)


def test_scripted_packed_tagger_archive_from_the_cli_with_a_dynamic_sequence(tmp_path, cli):
    """The archive path: `-d ids:1=sequence` used to fail on pad_packed_sequence's total_length."""
    import subprocess
    model = ScriptedTagger("lstm", 2, True, True, False).eval()
    torch.jit.save(torch.jit.script(model), str(tmp_path / "m.pt"))
    loaded = torch.jit.load(str(tmp_path / "m.pt"))
    proc = subprocess.run([cli, "convert", str(tmp_path / "m.pt"), "-o", str(tmp_path / "m.onnx"),
                           "-i", "ids:2x6:int64", "-i", "lengths:2:int64",
                           "-d", "ids:0=batch", "-d", "ids:1=sequence", "-d", "lengths:0=batch"],
                          capture_output=True, text=True)
    assert proc.returncode == 0, proc.stderr
    generator = torch.Generator().manual_seed(4)
    check(loaded, token_batch(2, 6, False, generator), tmp_path / "m.onnx",
          [token_batch(b, t, False, generator) for b, t in [(2, 6), (6, 3), (1, 12)]])
