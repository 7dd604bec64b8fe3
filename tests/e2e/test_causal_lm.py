"""Decoders with a KV cache (pt2onnx.export_causal_lm, docs/causal_lm.md): transformers causal LMs
built from configs (samples/causal_lms.py) exported under Optimum's names, then a prefill and greedy
decode steps in onnxruntime give the tokens of PyTorch's generate(), batch 2 with a left-padded row."""
import shlex
import subprocess

import numpy as np
import onnx
import onnxruntime as ort
import pytest
import torch

import pt2onnx
from pt2onnx.causal_lm import greedy_generate, past_names, present_names
from samples import causal_lms

STEPS = 8


def torch_generate(model, ids, mask, steps=STEPS):
    """PyTorch's greedy tokens and raw logits (the models have no end-of-sequence token)."""
    with torch.no_grad():
        out = model.generate(input_ids=ids, attention_mask=mask, max_new_tokens=steps, do_sample=False,
                             output_logits=True, return_dict_in_generate=True)
    return out.sequences[:, ids.shape[1]:].numpy(), torch.stack(out.logits).numpy()


def check_generation(session, model, batch=2, length=5, seed=0):
    ids, mask = causal_lms.prompts(batch, length, seed)
    expected_tokens, expected_logits = torch_generate(model, ids, mask)
    tokens, logits = greedy_generate(session, ids.numpy(), mask.numpy(), STEPS)
    np.testing.assert_allclose(logits, expected_logits, rtol=1e-4, atol=1e-4)
    np.testing.assert_array_equal(tokens, expected_tokens)


def ort_session(path, threads=1):
    options = ort.SessionOptions()
    options.intra_op_num_threads = threads
    return ort.InferenceSession(str(path), options, providers=["CPUExecutionProvider"])


@pytest.fixture(scope="module")
def models():
    return {}


def model_of(models, kind):
    if kind not in models:
        models[kind] = causal_lms.build(kind)
    return models[kind]


@pytest.mark.parametrize("kind", causal_lms.KINDS)
def test_greedy_decoding_matches_generate(kind, models, tmp_path):
    model = model_of(models, kind)
    path = tmp_path / f"{kind}.onnx"
    pt2onnx.export_causal_lm(model, str(path))
    proto = onnx.load(str(path))
    layers = model.config.num_hidden_layers
    assert [i.name for i in proto.graph.input] == ["input_ids", "attention_mask", "position_ids", *past_names(layers)]
    assert [o.name for o in proto.graph.output] == ["logits", *present_names(layers)]
    past = proto.graph.input[3].type.tensor_type.shape.dim
    assert [d.dim_param or d.dim_value for d in past][0::2] == ["batch_size", "past_sequence_length"]
    check_generation(ort_session(path), model)


@pytest.mark.parametrize("kind,opset", [("gpt2", 14), ("llama", 14), ("qwen2", 18), ("gpt2", 23), ("llama", 23),
                                        ("phi3", 25)])
def test_other_opsets_batches_and_threads(kind, opset, models, tmp_path):
    """Batch 3 with other prompts and lengths, 2 threads; ONNX's Attention op from opset 23."""
    model = model_of(models, kind)
    path = tmp_path / "decoder.onnx"
    pt2onnx.export_causal_lm(model, str(path), opset_version=opset)
    ops = {n.op_type for n in onnx.load(str(path)).graph.node}
    assert ("Attention" in ops) == (opset >= 23)
    check_generation(ort_session(path, threads=2), model, batch=3, length=7, seed=1)
    check_generation(ort_session(path), model, batch=1, length=3, seed=2)


def test_pt2onnx_session_runs_the_decoder(models, tmp_path):
    model = model_of(models, "qwen2")
    path = tmp_path / "decoder.onnx"
    pt2onnx.export_causal_lm(model, str(path))
    check_generation(pt2onnx.InferenceSession(str(path)), model)


def test_archive_converts_through_the_cli_with_the_same_names(cli, models, tmp_path):
    """save_causal_lm's archive and .args: a fleet directory converts it by itself, and one archive with
    the .args file's arguments on the command line; both decode as PyTorch does."""
    model = model_of(models, "mistral")
    (tmp_path / "lms").mkdir()
    archive = tmp_path / "lms" / "mistral.pt"
    arguments = pt2onnx.save_causal_lm(model, str(archive))
    spec_lines = [line for line in archive.with_suffix(".pt.args").read_text().splitlines() if not line.startswith("#")]
    assert shlex.split(" ".join(spec_lines)) == arguments
    fleet = subprocess.run([cli, "convert", str(tmp_path / "lms"), "-o", str(tmp_path / "onnx")],
                           capture_output=True, text=True, timeout=600)
    assert fleet.returncode == 0, fleet.stdout + fleet.stderr
    single = subprocess.run([cli, "convert", str(archive), "-o", str(tmp_path / "single.onnx"), *arguments],
                            capture_output=True, text=True, timeout=600)
    assert single.returncode == 0, single.stdout + single.stderr
    layers = model.config.num_hidden_layers
    for path in (tmp_path / "onnx" / "mistral.onnx", tmp_path / "single.onnx"):
        proto = onnx.load(str(path))
        assert [i.name for i in proto.graph.input][3:] == past_names(layers)
        assert [o.name for o in proto.graph.output] == ["logits", *present_names(layers)]
        check_generation(ort_session(path), model)


def test_what_export_causal_lm_refuses(tmp_path):
    with pytest.raises(TypeError, match="transformers causal LM"):
        pt2onnx.export_causal_lm(torch.nn.Linear(2, 2), str(tmp_path / "x.onnx"))
    with pytest.raises(TypeError, match="'input_names' is not an option"):
        pt2onnx.export_causal_lm(causal_lms.build("gpt2", layers=1), str(tmp_path / "x.onnx"), input_names=["a"])
    assert not (tmp_path / "x.onnx").exists()


def test_sliding_window_models_are_refused_until_the_window_is_lifted(tmp_path):
    """A decoder attending to the whole cache computes another thing past the window (measured: other
    tokens from the first step): refused, saying how to export one for sequences within the window."""
    model = causal_lms.build("mistral")
    model.config.sliding_window = 16
    with pytest.raises(pt2onnx.ExportError, match="sliding window of 16 tokens.*sliding_window = None"):
        pt2onnx.export_causal_lm(model, str(tmp_path / "x.onnx"))
    assert not (tmp_path / "x.onnx").exists()
    model.config.sliding_window = None
    pt2onnx.export_causal_lm(model, str(tmp_path / "x.onnx"))
    check_generation(ort_session(tmp_path / "x.onnx"), model)


def test_a_model_in_training_mode_is_exported_in_eval_mode_and_left_in_its_mode(tmp_path):
    """Dropout (GPT-2's config has 0.1) is not traced, and the user's model keeps its mode."""
    model = causal_lms.build("gpt2")
    model.train()
    pt2onnx.export_causal_lm(model, str(tmp_path / "decoder.onnx"))
    arguments = pt2onnx.save_causal_lm(model, str(tmp_path / "decoder.pt"))
    assert model.training and all(m.training for m in model.modules())
    assert arguments and (tmp_path / "decoder.pt.args").exists()
    ops = {n.op_type for n in onnx.load(str(tmp_path / "decoder.onnx")).graph.node}
    assert "Dropout" not in ops
    check_generation(ort_session(tmp_path / "decoder.onnx"), model.eval())
