"""Scripted TorchScript control-flow patterns (torch.jit.script), each with the example arguments it
is exported with and argument sets that take *other* branches and trip counts than the example:
an exporter that specialized data-dependent control flow to the example input fails on those.

Each entry of PATTERNS is (name, module factory, example args, [runs], export kwargs, what the runs
exercise). Arguments are tensors, Python numbers (0-d model inputs) or None (Optional, dropped)."""
from typing import List, Optional, Tuple

import torch
from torch import Tensor, nn


class IfElif(nn.Module):
    def forward(self, x):
        s = x.sum()
        if s > 1.0:
            y = x * 2
        elif s < -1.0:
            y = x.abs() + 1
        else:
            y = x - 3
        return y


class IfReturnsTuple(nn.Module):
    def forward(self, x, y):
        if x.mean() > y.mean():
            a, b = x + y, x - y
        else:
            a, b = y * 2, x * 3
        return a, b


class ForCarriesSeveral(nn.Module):
    def forward(self, x, n: int):
        acc = torch.zeros_like(x)
        prod = torch.ones_like(x)
        for i in range(n):
            acc = acc + x * i
            prod = prod * (x + 1)
        return acc, prod


class WhileTensorCondition(nn.Module):
    def forward(self, x):
        steps = 0
        while bool(x.abs().max() > 1.0):
            x = x / 2
            steps += 1
        return x, steps


class BreakOnCondition(nn.Module):
    def forward(self, x, n: int):
        for i in range(n):
            if x.sum() > 10.0:
                break
            x = x * 2 + 1
        return x


class ContinueOnIndex(nn.Module):
    def forward(self, x, n: int):
        acc = torch.zeros_like(x)
        for i in range(n):
            if i % 2 == 0:
                continue
            acc = acc + x * i
        return acc


class NestedLoops(nn.Module):
    def forward(self, x, n: int):
        y = x
        for i in range(n):
            for j in range(i):
                y = y + x * j
            y = y * 0.5
        return y


class AppendThenStack(nn.Module):
    def forward(self, x, n: int):
        outs: List[Tensor] = []
        for i in range(n):
            outs.append(x * (i + 1))
        return torch.stack(outs, 0)


class AppendThenCat(nn.Module):
    def forward(self, x):
        parts: List[Tensor] = [x]
        while bool(parts[-1].sum() > 1.0):
            parts.append(parts[-1] / 3)
        return torch.cat(parts, 1), len(parts)


class ListIndexing(nn.Module):
    def forward(self, x, k: int):
        options = [x, x * 2, x.neg(), x + 10]
        return options[k]


class OptionalArgument(nn.Module):
    def forward(self, x, bias: Optional[Tensor] = None):
        if bias is not None:
            x = x + bias
        return x * 2


class OptionalAttribute(nn.Module):
    def __init__(self, with_bias: bool):
        super().__init__()
        self.bias: Optional[Tensor] = torch.full((4,), 0.5) if with_bias else None

    def forward(self, x):
        bias = self.bias
        if bias is not None:
            return x + bias
        return x - 1


class ShapeBranch(nn.Module):
    def forward(self, x):
        if x.size(0) > 2:
            return x.sum(0, keepdim=True)
        return x * 10


class NumberArguments(nn.Module):
    def forward(self, x, n: int, scale: float, flag: bool):
        if flag:
            return x * scale + n
        return x - n * 2


class EarlyReturn(nn.Module):
    def forward(self, x):
        if x.sum() > 0:
            return x * 2
        y = x + 1
        return y * 3


class RaiseGuard(nn.Module):
    def forward(self, x):
        if x.dim() != 2:
            raise ValueError("expected a matrix, got " + str(x.dim()) + " dims")
        torch._assert(x.size(1) == 4, "four columns")
        if x.max() > 0:
            return x.relu()
        return x.sigmoid()


class StringOnlyGuard(nn.Module):
    def __init__(self):
        super().__init__()
        self.mode = "fast"

    def forward(self, x):
        if self.mode not in ["fast", "slow"]:
            raise RuntimeError(f"unknown mode {self.mode}")
        if self.mode == "fast":
            x = x * 3
        return x.cumsum(0) if bool(x[0, 0] > 0) else x


class LoopCallsSubmodule(nn.Module):
    def __init__(self):
        super().__init__()
        self.lin = nn.Linear(4, 4)

    def forward(self, x, n: int):
        for _ in range(n):
            x = torch.tanh(self.lin(x))
        return x


class ZeroTripLoop(nn.Module):
    def forward(self, x, n: int):
        for i in range(n):
            x = x + i + 1
        return x


class IfInsideLoop(nn.Module):
    def forward(self, x, n: int):
        for i in range(n):
            if x.sum() > 0:
                x = x - 1.5
            else:
                x = x + 2.0
        return x


class LoopInsideIf(nn.Module):
    def forward(self, x, n: int):
        if x.mean() > 0:
            for i in range(n):
                x = x * 1.5
        else:
            x = x - n
        return x


class InPlaceInBranch(nn.Module):
    def forward(self, x):
        y = x.clone()
        if y.sum() > 0:
            y.mul_(2)
        else:
            y.add_(5)
        return y


class RangeWithStart(nn.Module):
    def forward(self, x, a: int, b: int):
        acc = x
        for i in range(a, b, 2):
            acc = acc + i
        return acc


class WhileWithCounter(nn.Module):
    def forward(self, x, limit: int):
        i = 0
        while i < limit and bool(x.sum() < 100.0):
            x = x * 2
            i += 1
        return x, i


class IntArithmetic(nn.Module):
    def forward(self, x, n: int):
        k = n // 3 + n % 3
        return x * k, k


class TrainingFlagFolded(nn.Module):
    def __init__(self):
        super().__init__()
        self.drop = nn.Dropout(0.5)
        self.bn = nn.BatchNorm1d(4)

    def forward(self, x):
        if self.training:
            x = x * 100
        return self.drop(self.bn(x))


def _t(*shape, scale=1.0, offset=0.0, seed=0):
    g = torch.Generator().manual_seed(seed)
    return torch.randn(*shape, generator=g) * scale + offset


PATTERNS = [
    ("if_elif", IfElif, (_t(3, 4, offset=1),), [(_t(3, 4, offset=-1, seed=1),), (_t(3, 4, scale=0.01, seed=2),)],
     {}, "each of the three branches"),
    ("if_returns_tuple", IfReturnsTuple, (_t(2, 3, offset=1), _t(2, 3, seed=1)),
     [(_t(2, 3), _t(2, 3, offset=1, seed=1))], {}, "both branches"),
    ("for_carries_several", ForCarriesSeveral, (_t(2, 3), 3), [(_t(2, 3, seed=1), 0), (_t(2, 3, seed=2), 7)], {},
     "trip counts 3, 0, 7"),
    ("while_tensor_condition", WhileTensorCondition, (_t(3, scale=8),), [(_t(3, scale=0.1, seed=1),),
                                                                          (_t(3, scale=100, seed=2),)], {},
     "several, zero and many iterations"),
    ("break_on_condition", BreakOnCondition, (_t(4), 10), [(_t(4, offset=5, seed=1), 10), (_t(4, seed=2), 2)], {},
     "break after some iterations, at once, never"),
    ("continue_on_index", ContinueOnIndex, (_t(3), 5), [(_t(3, seed=1), 0), (_t(3, seed=2), 8)], {}, "0, 5, 8 trips"),
    ("nested_loops", NestedLoops, (_t(2, 2), 3), [(_t(2, 2, seed=1), 1), (_t(2, 2, seed=2), 5)], {},
     "inner trip counts varying with the outer index"),
    ("append_then_stack", AppendThenStack, (_t(2, 3), 3), [(_t(2, 3, seed=1), 1), (_t(2, 3, seed=2), 6)], {},
     "lists of 3, 1 and 6 tensors"),
    ("append_then_cat", AppendThenCat, (_t(2, 2, offset=2),), [(_t(2, 2, offset=-1, seed=1),),
                                                                (_t(2, 2, offset=30, seed=2),)], {},
     "lists of several, 1 and many tensors, and their length"),
    ("list_indexing", ListIndexing, (_t(2, 3), 1), [(_t(2, 3, seed=1), 3), (_t(2, 3, seed=2), -4)], {},
     "three different elements"),
    ("optional_argument_given", OptionalArgument, (_t(2, 4), _t(4, seed=1)), [(_t(2, 4, seed=2), _t(4, seed=3))],
     {}, "bias added (the argument is an input)"),
    ("optional_argument_none", OptionalArgument, (_t(2, 4), None), [(_t(2, 4, seed=2), None)], {},
     "no bias (the argument is dropped)"),
    ("optional_attribute_set", lambda: OptionalAttribute(True), (_t(2, 4),), [(_t(2, 4, seed=1),)], {},
     "the attribute branch"),
    ("optional_attribute_none", lambda: OptionalAttribute(False), (_t(2, 4),), [(_t(2, 4, seed=1),)], {},
     "the None branch"),
    ("shape_branch_static", ShapeBranch, (_t(3, 4),), [(_t(3, 4, seed=1),)], {},
     "the branch of the fixed batch size (folded: the size is static)"),
    ("shape_branch_dynamic", ShapeBranch, (_t(3, 4),), [(_t(1, 4, seed=1),), (_t(6, 4, seed=2),)],
     {"dynamic_axes": {"x": {0: "batch"}}}, "both branches, by batch size"),
    ("number_arguments", NumberArguments, (_t(2, 3), 2, 0.5, True), [(_t(2, 3, seed=1), -3, 2.5, True),
                                                                      (_t(2, 3, seed=2), 4, 1.0, False)], {},
     "both values of the bool, other ints and floats"),
    ("early_return", EarlyReturn, (_t(3, offset=2),), [(_t(3, offset=-2, seed=1),)], {}, "both returns"),
    ("raise_guard", RaiseGuard, (_t(2, 4, offset=1),), [(_t(2, 4, offset=-5, seed=1),)], {},
     "both branches after the dropped guards"),
    ("string_only_guard", StringOnlyGuard, (_t(3, 4, offset=2),), [(_t(3, 4, offset=-2, seed=1),)], {},
     "both branches of the data-dependent if"),
    ("loop_calls_submodule", LoopCallsSubmodule, (_t(2, 4), 2), [(_t(2, 4, seed=1), 0), (_t(2, 4, seed=2), 5)], {},
     "0, 2 and 5 applications of the submodule"),
    ("zero_trip_loop", ZeroTripLoop, (_t(3), 0), [(_t(3, seed=1), 4)], {}, "zero and four trips"),
    ("if_inside_loop", IfInsideLoop, (_t(3, offset=3), 4), [(_t(3, offset=-3, seed=1), 4), (_t(3, seed=2), 9)], {},
     "branches alternating between iterations"),
    ("loop_inside_if", LoopInsideIf, (_t(3, offset=1), 3), [(_t(3, offset=-1, seed=1), 3), (_t(3, offset=1, seed=2), 0)],
     {}, "the loop branch with 3 and 0 trips, and the other branch"),
    ("in_place_in_branch", InPlaceInBranch, (_t(3, offset=2),), [(_t(3, offset=-2, seed=1),)], {}, "both branches"),
    ("range_with_start", RangeWithStart, (_t(2), 1, 6), [(_t(2, seed=1), 5, 5), (_t(2, seed=2), -3, 10)], {},
     "ranges of 3, 0 and 7 steps"),
    ("while_with_counter", WhileWithCounter, (_t(2, offset=1), 3), [(_t(2, offset=1, seed=1), 0),
                                                                    (_t(2, offset=1, seed=2), 50)], {},
     "stopped by the counter, at once, by the tensor condition"),
    ("int_arithmetic", IntArithmetic, (_t(2), 7), [(_t(2, seed=1), -7), (_t(2, seed=2), 0)], {},
     "floor division and modulo of positive, negative and zero ints"),
    ("training_flag_folded", TrainingFlagFolded, (_t(3, 4),), [(_t(3, 4, seed=1),)], {}, "eval mode"),
]
