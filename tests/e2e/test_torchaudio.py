"""torchaudio's models and feature transforms (small configurations, random weights): exported from
Python with pt2onnx.export and, traced or scripted, saved as archives and converted by the CLI; both
run in ONNX Runtime and the builtin runtime against PyTorch on the example and on inputs of other
batch sizes and lengths (dynamic axes). Tiers whose torch has no torchaudio beside it report these
tests as skipped with that reason (tests/conftest.py)."""
import subprocess

import numpy as np
import pytest
import torch
import torchaudio

import pt2onnx

from tests.e2e.roundtrip_checks import check_runs


class FirstOutput(torch.nn.Module):
    """The emissions of a wav2vec2 model (its second output, the lengths, is None without lengths)."""

    def __init__(self, model):
        super().__init__()
        self.model = model

    def forward(self, waveforms):
        return self.model(waveforms)[0]


def _sorted_lengths(batch, length, seed):
    """Valid lengths in decreasing order, the first equal to LENGTH (pack_padded_sequence's default)."""
    return torch.sort(_lengths(batch, length, seed), descending=True).values


class _DeterministicPrenet(torch.nn.Module):
    """Tacotron2's decoder prenet without its dropout, which the paper (and torchaudio) apply at
    inference too: with it no two runs of the model agree, so nothing could be compared."""

    def __init__(self, prenet):
        super().__init__()
        self.layers = prenet.layers

    def forward(self, x):
        for linear in self.layers:
            x = torch.relu(linear(x))
        return x


def _tacotron2():
    model = torchaudio.models.Tacotron2(mask_padding=True, n_symbol=40, n_mels=20, encoder_embedding_dim=64,
                                        symbol_embedding_dim=64, encoder_n_convolution=2, decoder_rnn_dim=64, prenet_dim=32,
                                        attention_rnn_dim=64, attention_hidden_dim=32, postnet_n_convolution=2,
                                        postnet_embedding_dim=32)
    model.decoder.prenet = _DeterministicPrenet(model.decoder.prenet)
    return model


def _seeded(factory):
    torch.manual_seed(0)
    return factory().eval()


def _randn(*shape, seed):
    return torch.randn(*shape, generator=torch.Generator().manual_seed(seed))


def _lengths(batch, length, seed):
    """Valid lengths, the longest equal to LENGTH (what a padded batch has)."""
    g = torch.Generator().manual_seed(seed)
    lengths = torch.randint(length // 2, length + 1, (batch,), generator=g)
    lengths[0] = length
    return lengths


# name -> (model factory, forward()'s argument names, dynamic axes, the example's arguments, other
# argument sets, how the archive is made). Argument sets vary batch and length. A model whose forward
# reads data-dependent sizes (Conformer's lengths.max()) is exported scripted from Python too: a trace
# would freeze them.
MODELS = {
    "wav2letter_waveform": (
        lambda: torchaudio.models.Wav2Letter(num_classes=12, input_type="waveform", num_features=1),
        ["x"], {"x": {0: "batch", 2: "time"}},
        lambda: (_randn(2, 1, 1600, seed=1),), lambda: [(_randn(1, 1, 2400, seed=2),), (_randn(3, 1, 960, seed=3),)],
        "trace"),
    "wav2letter_mfcc": (
        lambda: torchaudio.models.Wav2Letter(num_classes=12, input_type="mfcc", num_features=13),
        ["x"], {"x": {0: "batch", 2: "time"}},
        lambda: (_randn(2, 13, 40, seed=4),), lambda: [(_randn(1, 13, 57, seed=5),), (_randn(4, 13, 25, seed=6),)],
        "script"),
    "conv_tasnet": (
        lambda: torchaudio.models.ConvTasNet(num_sources=2, enc_kernel_size=16, enc_num_feats=32, msk_kernel_size=3,
                                             msk_num_feats=16, msk_num_hidden_feats=32, msk_num_layers=2,
                                             msk_num_stacks=2),
        ["input"], {"input": {0: "batch", 2: "time"}},
        lambda: (_randn(2, 1, 800, seed=7),), lambda: [(_randn(1, 1, 1000, seed=8),), (_randn(3, 1, 640, seed=9),)],
        "trace"),
    "deepspeech": (
        lambda: torchaudio.models.DeepSpeech(n_feature=20, n_hidden=32, n_class=10),
        ["x"], {"x": {0: "batch", 2: "time"}},
        lambda: (_randn(2, 1, 15, 20, seed=10),), lambda: [(_randn(1, 1, 23, 20, seed=11),), (_randn(3, 1, 7, 20, seed=12),)],
        "trace"),  # torch.jit.script refuses torchaudio's DeepSpeech (hardtanh(x, 0, ...): an int bound)
    "conformer": (
        lambda: torchaudio.models.Conformer(input_dim=16, num_heads=4, ffn_dim=32, num_layers=2,
                                            depthwise_conv_kernel_size=7),
        ["input", "lengths"], {"input": {0: "batch", 1: "time"}, "lengths": {0: "batch"}},
        lambda: (_randn(2, 12, 16, seed=13), _lengths(2, 12, 14)),
        lambda: [(_randn(3, 20, 16, seed=15), _lengths(3, 20, 16)), (_randn(1, 9, 16, seed=17), _lengths(1, 9, 18))],
        "script"),
    "wav2vec2": (
        lambda: FirstOutput(torchaudio.models.wav2vec2_model(
            extractor_mode="group_norm", extractor_conv_layer_config=[(16, 10, 5), (16, 3, 2), (16, 2, 2)],
            extractor_conv_bias=False, encoder_embed_dim=32, encoder_projection_dropout=0.0,
            encoder_pos_conv_kernel=8, encoder_pos_conv_groups=4, encoder_num_layers=2, encoder_num_heads=4,
            encoder_attention_dropout=0.0, encoder_ff_interm_features=64, encoder_ff_interm_dropout=0.0,
            encoder_dropout=0.0, encoder_layer_norm_first=False, encoder_layer_drop=0.0, aux_num_out=10)),
        ["waveforms"], {"waveforms": {0: "batch", 1: "time"}},
        lambda: (_randn(2, 1200, seed=19),), lambda: [(_randn(1, 2000, seed=20),), (_randn(3, 900, seed=21),)],
        "trace"),
    "mel_spectrogram": (
        lambda: torchaudio.transforms.MelSpectrogram(sample_rate=8000, n_fft=256, hop_length=64, n_mels=32),
        ["waveform"], {"waveform": {0: "batch", 1: "time"}},
        lambda: (_randn(2, 2000, seed=22),), lambda: [(_randn(1, 3000, seed=23),), (_randn(3, 1100, seed=24),)],
        "script"),
    "mfcc": (
        lambda: torchaudio.transforms.MFCC(sample_rate=8000, n_mfcc=13,
                                           melkwargs={"n_fft": 256, "hop_length": 64, "n_mels": 32}),
        ["waveform"], {"waveform": {0: "batch", 1: "time"}},
        lambda: (_randn(2, 2000, seed=25),), lambda: [(_randn(1, 3000, seed=26),), (_randn(3, 1100, seed=27),)],
        "trace"),
    # Complex spectrogram crops and pads (slice, pad, view of complex tensors), LSTM and local
    # attention in its deepest layers. Its trace freezes the length (Python arithmetic on it).
    "hdemucs": (
        lambda: torchaudio.models.HDemucs(sources=["drums", "vocals"], channels=8, nfft=1024, depth=5),
        ["input"], {"input": {0: "batch"}},
        lambda: (_randn(2, 2, 3000, seed=28),), lambda: [(_randn(1, 2, 3000, seed=29),), (_randn(3, 2, 3000, seed=30),)],
        "trace"),
}

SCRIPTED_FROM_PYTHON = {"conformer"}


@pytest.mark.parametrize("name", sorted(MODELS))
def test_torchaudio_model_from_python(name, tmp_path):
    factory, names, axes, example, others, _ = MODELS[name]
    model = _seeded(factory)
    args = example()
    path = tmp_path / f"{name}.onnx"
    exported = torch.jit.script(model) if name in SCRIPTED_FROM_PYTHON else model
    pt2onnx.export(exported, args, str(path), opset_version=17, input_names=names, dynamic_axes=axes)
    check_runs(model, path, names, [args, *others()])


@pytest.mark.parametrize("name", sorted(MODELS))
def test_torchaudio_archive_with_the_cli(name, cli, tmp_path):
    factory, names, axes, example, others, how = MODELS[name]
    model = _seeded(factory)
    args = example()
    module = torch.jit.trace(model, args) if how == "trace" else torch.jit.script(model)
    archive = tmp_path / f"{name}.pt"
    module.save(str(archive))
    loaded = torch.jit.load(str(archive))
    argv = [cli, "convert", str(archive), "-o", str(tmp_path / f"{name}.onnx"), "--opset", "17"]
    for n, a in zip(names, args):
        if a.is_floating_point():  # by shape: random values
            argv += ["-i", f"{n}:{'x'.join(map(str, a.shape))}:{str(a.dtype).removeprefix('torch.')}"]
        else:  # lengths: the real example (by shape they would be zeros, which no model runs on)
            np.save(tmp_path / f"{n}.npy", a.numpy())
            argv += ["-i", f"{n}={tmp_path / f'{n}.npy'}"]
    for n, dims in axes.items():
        argv += [arg for d, label in dims.items() for arg in ("--dynamic-axis", f"{n}:{d}={label}")]
    proc = subprocess.run(argv, capture_output=True, text=True, timeout=600)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert "warning" not in proc.stderr.lower(), proc.stderr  # the archive's debug info read as damaged, torch's own
    check_runs(loaded, tmp_path / f"{name}.onnx", names, [args, *others()])


def test_tacotron2_traced_from_python(tmp_path):
    """Tacotron2's teacher-forced decoding (an LSTM cell per mel frame, location-sensitive attention,
    packed encoder input). Its trace unrolls the loop over the frames and freezes their count
    (Python arithmetic on it) and the longest text (lengths.max().item()), as torch.onnx's would:
    the batch and the lengths below the longest vary.
    torch.jit.trace itself refuses this model (its LSTM's forward__0), so there is no traced archive."""
    model = _seeded(_tacotron2)
    names = ["tokens", "token_lengths", "mel_specgram", "mel_specgram_lengths"]
    axes = {"tokens": {0: "batch"}, "token_lengths": {0: "batch"}, "mel_specgram": {0: "batch"},
            "mel_specgram_lengths": {0: "batch"}}

    def inputs(batch, text, seed):
        return (torch.randint(0, 40, (batch, text), generator=torch.Generator().manual_seed(seed)),
                _sorted_lengths(batch, text, seed + 1), _randn(batch, 20, 15, seed=seed + 2),
                _sorted_lengths(batch, 15, seed + 3))

    args = inputs(2, 12, 31)
    path = tmp_path / "tacotron2.onnx"
    pt2onnx.export(model, args, str(path), opset_version=17, input_names=names, dynamic_axes=axes)
    check_runs(model, path, names, [args, inputs(3, 12, 35), inputs(1, 12, 39)])
