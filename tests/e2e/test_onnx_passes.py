"""The ONNX-level passes on real models: constant folding leaves no node computed from constants
only, equal initializers (tied weights) are stored once in eval exports and kept apart in training
exports; the models still match PyTorch in ONNX Runtime and the builtin runtime."""
import onnx
import pytest
import torch

import pt2onnx
from samples import models, ort

FOLDABLE_KEPT = {"Constant", "Identity", "RandomNormalLike", "RandomUniformLike", "Dropout"}


def nodes_of_constants_only(proto):
    constants = {o for n in proto.graph.node if n.op_type == "Constant" for o in n.output}
    return [n.op_type for n in proto.graph.node
            if n.op_type not in FOLDABLE_KEPT and n.input and all(i in constants or i == "" for i in n.input)]


def check_matches(model, args, path):
    with torch.no_grad():
        expected = model(*args)
    expected = expected if isinstance(expected, (tuple, list)) else [expected]
    proto = onnx.load(str(path))
    feeds = {i.name: a.numpy() for i, a in zip(proto.graph.input, args)}
    session = pt2onnx.InferenceSession(str(path))
    for runtime, got in (("ort", list(ort.run(path, feeds).values())), ("builtin", session.run(None, feeds))):
        for e, a in zip(expected, got):
            assert ort.max_rel_error(e.numpy(), a) <= 1e-4, runtime


@pytest.mark.parametrize("opset", [9, 17])
@pytest.mark.parametrize("name", ["transformer_encoder", "gpt_block"])
def test_constant_folding_leaves_nothing_computed_from_constants_only(name, opset, tmp_path):
    model, args = models.BUILDERS[name]()
    folded, unfolded = tmp_path / "folded.onnx", tmp_path / "unfolded.onnx"
    pt2onnx.export(model, args, folded, opset_version=opset)
    pt2onnx.export(model, args, unfolded, opset_version=opset, do_constant_folding=False)
    assert nodes_of_constants_only(onnx.load(str(folded))) == []
    assert nodes_of_constants_only(onnx.load(str(unfolded))) != [], "the model no longer tests folding"
    check_matches(model, args, folded)


class TiedLanguageModel(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.embed = torch.nn.Embedding(50, 16)
        self.mix = torch.nn.Linear(16, 16)
        self.decoder = torch.nn.Linear(16, 50, bias=False)
        self.decoder.weight = self.embed.weight  # tied
        self.extra = torch.nn.Parameter(self.mix.bias.detach().clone())  # equal values, not tied

    def forward(self, ids):
        return self.decoder(torch.tanh(self.mix(self.embed(ids)) + self.extra))


def test_tied_and_equal_initializers_are_stored_once_in_eval_exports(tmp_path):
    torch.manual_seed(0)
    model = TiedLanguageModel().eval()
    ids = torch.randint(0, 50, (2, 7))
    path = tmp_path / "m.onnx"
    pt2onnx.export(model, (ids,), path, opset_version=17, input_names=["ids"], dynamic_axes={"ids": [0, 1]})
    proto = onnx.load(str(path))
    weights = [i for i in proto.graph.initializer if sorted(i.dims) == [16, 50]]  # nor a transposed copy
    assert len(weights) == 1, [i.name for i in proto.graph.initializer]
    biases = [i for i in proto.graph.initializer if list(i.dims) == [16]]
    assert len(biases) == 1, [i.name for i in proto.graph.initializer]
    check_matches(model, (torch.randint(0, 50, (3, 5)),), path)


def test_training_exports_keep_equal_parameters_apart(tmp_path):
    torch.manual_seed(0)
    model = TiedLanguageModel()
    ids = torch.randint(0, 50, (2, 7))
    path = tmp_path / "m.onnx"
    pt2onnx.export(model, (ids,), path, opset_version=17, input_names=["ids"],
                   training=torch.onnx.TrainingMode.TRAINING)
    proto = onnx.load(str(path))
    biases = [i for i in proto.graph.initializer if list(i.dims) == [16]]
    assert len(biases) == 2, [i.name for i in proto.graph.initializer]
