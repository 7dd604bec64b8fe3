"""docs/cli.md's scripted `net.pt` (an int, a List[int], a tuple and an Optional left out), for the
tests of the command lines that doc shows."""
from typing import List, Optional, Tuple

import torch

# The doc's command lines' -i specs for it.
SPECS = ["-i", "x:2x3", "-i", "n=3", "-i", "sizes=[3,2]", "-i", "state:(2x3,2x3)"]


class Net(torch.nn.Module):
    def forward(self, x: torch.Tensor, n: int, sizes: List[int], state: Tuple[torch.Tensor, torch.Tensor],
                mask: Optional[torch.Tensor] = None):
        for _ in range(n):
            x = x * state[0] + state[1]
        if mask is not None:
            x = x.masked_fill(mask, 0.0)
        return x.reshape(sizes)


def save_net(path):
    torch.jit.save(torch.jit.script(Net()), str(path))
    return path
