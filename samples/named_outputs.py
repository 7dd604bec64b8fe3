"""Models whose exported names tests/e2e/test_names.py checks from Python and the CLI: scripted
outputs (TorchScript names them "y.1" in memory, "y0" in an archive), module scopes through
containers (a ModuleList loop, a Sequential, nested blocks) and dict outputs (detection-style
List[Dict[str, Tensor]]).

Each builder returns (model, example_args), in eval mode.
"""
from typing import Dict, List

import torch


class Gate(torch.nn.Module):
    """A scripted branch: the output is a TorchScript value named "y" ("y.1", "y0")."""

    def forward(self, x, y):
        if bool(x.sum() > 0):
            y = y * 2
        return y


class Block(torch.nn.Module):
    def __init__(self, n):
        super().__init__()
        self.fc = torch.nn.Linear(n, n)
        self.act = torch.nn.ReLU()

    def forward(self, x):
        return self.act(self.fc(x))


class Stack(torch.nn.Module):
    """Modules reached through containers: blocks.0.fc is fetched as `getattr(self.blocks, "0")`."""

    def __init__(self):
        super().__init__()
        self.stem = torch.nn.Conv2d(3, 4, 3)
        self.blocks = torch.nn.ModuleList([Block(4), Block(4)])
        self.head = torch.nn.Sequential(torch.nn.Linear(4, 3), torch.nn.Tanh())

    def forward(self, x):
        x = self.stem(x).mean((2, 3))
        for block in self.blocks:
            x = block(x)
        return self.head(x)


def _detections(image):
    flat = image.flatten(1)
    return {"boxes": flat[:, :4], "labels": (flat[:, 0] > 0).long(), "scores": flat.sigmoid().amax(1)}


class Detections(torch.nn.Module):
    """One dict per image, as torchvision's detection models return them (traced: a Python loop)."""

    def forward(self, images):
        return [_detections(image) for image in images]


class OneDict(torch.nn.Module):
    """A dict, scriptable and traceable (strict=False), keys not in sorted order."""

    def forward(self, x) -> Dict[str, torch.Tensor]:
        return {"scores": x.sigmoid(), "boxes": x * 2}


class TwoDicts(torch.nn.Module):
    """List[Dict[str, Tensor]] with a dict per image, scriptable."""

    def forward(self, x) -> List[Dict[str, torch.Tensor]]:
        return [{"boxes": x[0] + 1, "scores": x[0].sigmoid()}, {"boxes": x[1] + 1, "scores": x[1].sigmoid()}]


class Nested(torch.nn.Module):
    """A plain output beside a nested dict."""

    def forward(self, x):
        return x + 1, {"aux": {"logits": x * 3}, "mask": x > 0}


def build_gate():
    return Gate().eval(), (torch.ones(2), torch.randn(2))


def build_stack():
    torch.manual_seed(0)
    return Stack().eval(), (torch.randn(1, 3, 8, 8),)


def build_detections():
    torch.manual_seed(0)
    return Detections().eval(), (torch.randn(2, 3, 4, 4),)


def build_one_dict():
    torch.manual_seed(0)
    return OneDict().eval(), (torch.randn(2, 3),)


def build_two_dicts():
    torch.manual_seed(0)
    return TwoDicts().eval(), (torch.randn(2, 3),)


def build_nested():
    torch.manual_seed(0)
    return Nested().eval(), (torch.randn(2, 3),)
