"""Quantization-aware training models for tests and benchmarks: torch.ao's QAT flow on a small MLP."""
import torch
import torch.ao.quantization as tq
import torch.nn as nn


class Mlp(nn.Module):
    """QuantStub -> Linear -> ReLU -> Linear -> ReLU -> Linear -> DeQuantStub."""

    def __init__(self, sizes=(16, 32, 32, 5)):
        super().__init__()
        self.quant, self.dequant = tq.QuantStub(), tq.DeQuantStub()
        self.fc1, self.relu = nn.Linear(sizes[0], sizes[1]), nn.ReLU()
        self.fc2, self.fc3 = nn.Linear(sizes[1], sizes[2]), nn.Linear(sizes[2], sizes[3])

    def forward(self, x):
        return self.dequant(self.fc3(self.relu(self.fc2(self.relu(self.fc1(self.quant(x)))))))


def fake_quantize_qconfig():
    """torch.ao's classic FakeQuantize modules: uint8 activations per tensor, int8 weights per channel."""
    act = tq.FakeQuantize.with_args(observer=tq.MovingAverageMinMaxObserver, quant_min=0, quant_max=255)
    weight = tq.FakeQuantize.with_args(observer=tq.MovingAveragePerChannelMinMaxObserver, quant_min=-128,
                                       quant_max=127, dtype=torch.qint8, qscheme=torch.per_channel_symmetric)
    return tq.QConfig(activation=act, weight=weight)


def four_bit_qconfig():
    """4-bit QAT: uint4 activations (0..15) per tensor, int4 weights (-8..7) per channel."""
    act = tq.FakeQuantize.with_args(observer=tq.MovingAverageMinMaxObserver, quant_min=0, quant_max=15)
    weight = tq.FakeQuantize.with_args(observer=tq.MovingAveragePerChannelMinMaxObserver, quant_min=-8,
                                       quant_max=7, dtype=torch.qint8, qscheme=torch.per_channel_symmetric)
    return tq.QConfig(activation=act, weight=weight)


def qat_mlp(qconfig, sizes=(16, 32, 32, 5), input_scale=2.0):
    """prepare_qat, five SGD steps with the observers on (they see data, the weights move), then the
    observers off and eval(): a model ready to export."""
    torch.manual_seed(0)
    model = Mlp(sizes).train()
    model.qconfig = qconfig
    prepared = tq.prepare_qat(model)
    optimizer = torch.optim.SGD(prepared.parameters(), lr=0.01)
    for _ in range(5):
        optimizer.zero_grad()
        prepared(torch.randn(8, sizes[0]) * input_scale).pow(2).mean().backward()
        optimizer.step()
    prepared.apply(tq.disable_observer)
    return prepared.eval()
