"""`pt2onnx inspect` on archives without their source, as a user holding only the .pt has them: the
line it prints converts, and the model runs at other sizes along every axis inspect made dynamic
(batch, sequence, image height and width, audio time), matching torch.jit.load of the archive in
ONNX Runtime. A scripted greedy decoder that takes one sentence [1, S], a classifier packing its
sequences with `lengths.cpu()`, a torchvision segmentation net, an stft audio front end, a model after
torch.jit.optimize_for_inference (no Linear left to read a width from); axes proposed also when -i
fixes the example; defaulted and Optional arguments named as baked in; and, when nothing runs, the
closest attempt with the -i that settles it."""
import shlex
from typing import Optional

import numpy as np
import pytest
import torch
from torch import nn

from samples import ort
from test_inspect import convert_as_printed, inspect_json, run


def outputs_match(archive, onnx_path, args, feeds, tolerance=1e-4):
    module = torch.jit.load(str(archive))
    with torch.no_grad():
        expected = module(*args)
    expected = [expected] if isinstance(expected, torch.Tensor) else list(expected.values()) \
        if isinstance(expected, dict) else list(expected)
    got = list(ort.run(onnx_path, feeds).values())
    assert len(got) == len(expected)
    for e, g in zip(expected, got):
        e = e.detach().numpy()
        assert g.shape == e.shape
        if e.dtype.kind in "biu":
            np.testing.assert_array_equal(g, e)
        else:
            scale = max(1.0, float(np.abs(e).max()))
            assert float(np.abs(g - e).max()) / scale < tolerance


class OneSentenceDecoder(nn.Module):
    """Greedy decoding of one sentence at a time: src is [1, S] (squeezed to [S])."""

    def __init__(self):
        super().__init__()
        self.embed = nn.Embedding(50, 16)
        self.gru = nn.GRU(16, 16)
        self.out = nn.Linear(16, 50)

    def forward(self, src, max_len: int = 12, mask: Optional[torch.Tensor] = None):
        x = self.embed(src.squeeze(0))
        if mask is not None:
            x = x * mask.squeeze(0).unsqueeze(-1)
        y, h = self.gru(x)
        token = src[0, -1:]
        tokens = []
        for i in range(max_len):
            o, h = self.gru(self.embed(token), h)
            token = self.out(o).argmax(-1)
            tokens.append(token)
        return torch.cat(tokens)


def test_scripted_greedy_decoder_of_one_sentence(cli, tmp_path):
    torch.manual_seed(0)
    archive = tmp_path / "decoder.pt"
    torch.jit.script(OneSentenceDecoder().eval()).save(str(archive))
    report, code = inspect_json(cli, archive)
    assert code == 0, report
    assert report["example"]["specs"] == ["src:1x8:int64"]
    assert "src:1=sequence" in report["dynamic_axes"] and "src:0=batch" not in report["dynamic_axes"]
    frozen = {f["name"]: f for f in report["example"]["frozen"]}
    assert frozen["max_len"]["value"] == "12" and frozen["max_len"]["spec"] == "max_len=12"
    assert frozen["mask"]["value"] == "None"
    text = run(cli, "inspect", archive).stdout
    assert "max_len=12 is baked into the model (its default); -i max_len=12 makes it an input" in text
    onnx_path = convert_as_printed(cli, report, tmp_path / "decoder.onnx")
    g = torch.Generator().manual_seed(1)
    for length in (3, 8, 21):  # other sentence lengths than the line's
        src = torch.randint(0, 50, (1, length), generator=g)
        outputs_match(archive, onnx_path, (src,), {"src": src.numpy()})


class PackedClassifier(nn.Module):
    def __init__(self):
        super().__init__()
        self.embed = nn.Embedding(100, 32)
        self.lstm = nn.LSTM(32, 24, batch_first=True)
        self.fc = nn.Linear(24, 5)

    def forward(self, ids, lengths):
        packed = nn.utils.rnn.pack_padded_sequence(self.embed(ids), lengths.cpu(), batch_first=True,
                                                   enforce_sorted=False)
        _, (h, _) = self.lstm(packed)
        return self.fc(h[-1])


def test_packed_classifier_with_lengths_through_cpu(cli, tmp_path):
    torch.manual_seed(2)
    archive = tmp_path / "packed.pt"
    torch.jit.script(PackedClassifier().eval()).save(str(archive))
    report, code = inspect_json(cli, archive)
    assert code == 0, report
    assert report["example"]["specs"] == ["ids:2x8:int64", "lengths:2:int64"]
    assert {"ids:0=batch", "ids:1=sequence", "lengths:0=batch"} <= set(report["dynamic_axes"])
    onnx_path = convert_as_printed(cli, report, tmp_path / "packed.onnx")
    g = torch.Generator().manual_seed(3)
    for batch, length in ((1, 5), (4, 13)):
        ids = torch.randint(0, 100, (batch, length), generator=g)
        lengths = torch.randint(1, length + 1, (batch,), generator=g)  # unsorted: enforce_sorted=False
        outputs_match(archive, onnx_path, (ids, lengths), {"ids": ids.numpy(), "lengths": lengths.numpy()})


def test_torchvision_segmentation_net_at_other_image_sizes(cli, tmp_path):
    import torchvision
    torch.manual_seed(4)
    model = torchvision.models.segmentation.lraspp_mobilenet_v3_large(weights=None, weights_backbone=None).eval()
    archive = tmp_path / "segmentation.pt"
    torch.jit.trace(model, torch.rand(1, 3, 224, 224), strict=False).save(str(archive))
    report, code = inspect_json(cli, archive)
    assert code == 0, report
    assert report["dynamic_axes"] == ["input:0=batch", "input:2=height", "input:3=width"]
    onnx_path = convert_as_printed(cli, report, tmp_path / "segmentation.onnx")
    for shape in ((1, 3, 160, 288), (3, 3, 256, 192)):
        x = torch.rand(*shape)
        outputs_match(archive, onnx_path, (x,), {"input": x.numpy()}, tolerance=1e-3)
    # Axes are proposed, and proved, also when -i fixes the example.
    report, code = inspect_json(cli, archive, "-i", "input:1x3x256x256")
    assert code == 0 and report["example"]["specs"] == ["input:1x3x256x256"]
    assert report["dynamic_axes"] == ["input:0=batch", "input:2=height", "input:3=width"]


class StftFrontEnd(nn.Module):
    """A log power spectrogram of [N, T] waveforms, then a conv over its frequency bins."""

    def __init__(self):
        super().__init__()
        self.register_buffer("window", torch.hann_window(400))
        self.conv = nn.Conv1d(201, 32, 3, padding=1)

    def forward(self, wav):
        spectrum = torch.stft(wav, 400, 160, window=self.window, return_complex=True).abs().pow(2)
        return self.conv(torch.log(spectrum + 1e-6))


class WaveformConv(nn.Module):
    """[N, T] waveforms made [N, 1, T] for a strided conv1d."""

    def __init__(self):
        super().__init__()
        self.conv = nn.Conv1d(1, 8, 400, stride=160)

    def forward(self, wav):
        return self.conv(wav.unsqueeze(1)).relu().mean(-1)


@pytest.mark.parametrize("module, time_dim", [(StftFrontEnd, "time"), (WaveformConv, "length")])
def test_audio_front_ends_take_waveforms_of_any_length(cli, tmp_path, module, time_dim):
    torch.manual_seed(5)
    archive = tmp_path / "audio.pt"
    torch.jit.script(module().eval()).save(str(archive))
    report, code = inspect_json(cli, archive)
    assert code == 0, report
    assert report["example"]["specs"][0].startswith("wav:2x")
    assert report["dynamic_axes"] == ["wav:0=batch", f"wav:1={time_dim}"]
    onnx_path = convert_as_printed(cli, report, tmp_path / "audio.onnx")
    for shape in ((1, 8000), (3, 24000)):
        wav = torch.randn(*shape)
        outputs_match(archive, onnx_path, (wav,), {"wav": wav.numpy()}, tolerance=1e-3)


class Mlp(nn.Module):
    def __init__(self):
        super().__init__()
        self.a = nn.Linear(20, 30)
        self.b = nn.Linear(30, 3)

    def forward(self, x):
        return self.b(torch.relu(self.a(x)))


def test_optimized_for_inference_archive_reads_widths_from_constants(cli, tmp_path):
    torch.manual_seed(6)
    archive = tmp_path / "optimized.pt"
    torch.jit.optimize_for_inference(torch.jit.script(Mlp().eval())).save(str(archive))
    report, code = inspect_json(cli, archive)
    assert code == 0, report
    assert report["example"]["specs"] == ["x:2x20"] and report["dynamic_axes"] == ["x:0=batch"]
    onnx_path = convert_as_printed(cli, report, tmp_path / "optimized.onnx")
    x = torch.randn(7, 20)
    outputs_match(archive, onnx_path, (x,), {"x": x.numpy()})


class FixedGrid(nn.Module):
    """Takes only 5x7x11 elements, which no reader tells."""

    def forward(self, x):
        grid = x.view(5, 7, 11)
        return grid.sum(0)


def test_no_example_names_the_closest_attempt_and_the_settling_spec(cli, tmp_path):
    archive = tmp_path / "grid.pt"
    torch.jit.script(FixedGrid()).save(str(archive))
    report, code = inspect_json(cli, archive)
    assert code == 1 and not report["example"]["found"]
    assert report["example"]["settle_with"] == ["x:SHAPE"]
    assert report["example"]["closest"][0].startswith("x:") and "shape" in report["example"]["error"]
    text = run(cli, "inspect", archive).stdout
    assert "settle it with -i x:SHAPE" in text and "closest: " in text
    report, code = inspect_json(cli, archive, "-i", "x:5x7x11")  # what it asks for settles it
    assert code == 0 and report["example"]["specs"] == ["x:5x7x11"] and report["dynamic_axes"] == []
    assert shlex.split(report["convert_command"])[-2:] == ["-i", "x:5x7x11"]


class LengthsMaskedEncoder(nn.Module):
    """[B, T, F] features and their lengths made a padding mask (`arange >= lengths`), as torchaudio's
    Conformer and Emformer take them: no pack_padded_sequence to tell they are lengths but the name."""

    def __init__(self):
        super().__init__()
        self.norm = nn.LayerNorm(20)
        self.proj = nn.Linear(20, 6)

    def forward(self, features, lengths):
        mask = torch.arange(features.size(1)).expand(features.size(0), -1) >= lengths.unsqueeze(1)
        x = self.proj(self.norm(features)).masked_fill(mask.unsqueeze(-1), 0.0)
        return x.sum(1) / lengths.unsqueeze(1).to(x.dtype)


def test_lengths_known_by_their_name_run_as_lengths(cli, tmp_path):
    torch.manual_seed(7)
    archive = tmp_path / "lengths.pt"
    torch.jit.script(LengthsMaskedEncoder().eval()).save(str(archive))
    report, code = inspect_json(cli, archive)
    assert code == 0, report
    kinds = {a["name"]: a.get("use") for a in report["forward"]["arguments"]}
    assert kinds["lengths"] == "lengths" and report["example"]["specs"][1] == "lengths:2:int64"
    assert {"features:0=batch", "features:1=sequence", "lengths:0=batch"} <= set(report["dynamic_axes"])
    onnx_path = convert_as_printed(cli, report, tmp_path / "lengths.onnx")
    g = torch.Generator().manual_seed(8)
    for batch, length in ((1, 4), (5, 13)):
        features = torch.randn(batch, length, 20, generator=g)
        lengths = torch.randint(1, length + 1, (batch,), generator=g)
        outputs_match(archive, onnx_path, (features, lengths), {"features": features.numpy(), "lengths": lengths.numpy()})


def test_torchaudio_mel_spectrogram_takes_waveforms(cli, tmp_path):
    """torchaudio reshapes the waveform to [-1, T] before its stft: no reader shapes it, so a graph
    with an stft tries waveforms first."""
    import torchaudio
    archive = tmp_path / "mel.pt"
    front_end = nn.Sequential(torchaudio.transforms.MelSpectrogram(16000), torchaudio.transforms.AmplitudeToDB())
    torch.jit.script(front_end.eval()).save(str(archive))
    report, code = inspect_json(cli, archive)
    assert code == 0, report
    assert report["example"]["specs"] == ["input:2x16000"]
    assert report["dynamic_axes"] == ["input:0=batch", "input:1=time"]
    onnx_path = convert_as_printed(cli, report, tmp_path / "mel.onnx")
    g = torch.Generator().manual_seed(9)
    for shape in ((1, 12000), (3, 20800)):
        wav = torch.randn(*shape, generator=g)
        outputs_match(archive, onnx_path, (wav,), {"input": wav.numpy()}, tolerance=2e-3)


class OneImageNet(nn.Module):
    """Takes one image [3, H, W], made a batch of one for its convolution (as a detector's transform)."""

    def __init__(self):
        super().__init__()
        self.conv = nn.Conv2d(3, 4, 3, stride=2)

    def forward(self, image):
        return self.conv(image.unsqueeze(0)).relu().mean((2, 3))


def test_one_image_varies_in_height_and_width_not_in_its_channels(cli, tmp_path):
    torch.manual_seed(10)
    archive = tmp_path / "one_image.pt"
    torch.jit.trace(OneImageNet().eval(), torch.rand(3, 64, 64)).save(str(archive))
    found, code = inspect_json(cli, archive)
    assert code == 0 and found["example"]["specs"] == ["image:3x224x224"], found
    given, code = inspect_json(cli, archive, "-i", "image:3x96x128")  # given: its axis 0 is still channels
    for report in (found, given):
        assert report["dynamic_axes"] == ["image:1=height", "image:2=width"]
    onnx_path = convert_as_printed(cli, given, tmp_path / "one_image.onnx")
    image = torch.rand(3, 40, 72)
    outputs_match(archive, onnx_path, (image,), {"image": image.numpy()})
