"""Exports of eager modules from several Python threads at once give the bytes a sequential export
gives: PyTorch's tracer records each call's module in process-wide state, so concurrent traces once
mixed up module scopes (node names)."""
import io
import threading
import warnings

import torch

import pt2onnx


class Block(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.fc = torch.nn.Linear(16, 16)
        self.norm = torch.nn.LayerNorm(16)

    def forward(self, x):
        return self.norm(torch.relu(self.fc(x))) + x


class Deep(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.stages = torch.nn.ModuleList(torch.nn.Sequential(*[Block() for _ in range(6)]) for _ in range(4))

    def forward(self, x):
        for stage in self.stages:
            x = stage(x)
        return x


def export(model, x):
    buffer = io.BytesIO()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        pt2onnx.export(model, (x,), buffer)
    return buffer.getvalue()


def test_concurrent_exports_are_byte_identical_to_a_sequential_one():
    torch.manual_seed(0)
    model, x = Deep().eval(), torch.randn(2, 16)
    expected = export(model, x)
    for _ in range(2):
        results = [None] * 8
        errors = []

        def work(i):
            try:
                results[i] = export(model, x)
            except Exception as e:  # noqa: BLE001 - reported below
                errors.append(e)

        threads = [threading.Thread(target=work, args=(i,)) for i in range(8)]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        assert not errors
        assert [r == expected for r in results] == [True] * 8
