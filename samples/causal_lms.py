"""transformers causal LMs built from small configs (random weights, nothing downloaded), as
tests/e2e/test_causal_lm.py and bench/ export them with pt2onnx.export_causal_lm."""
import torch

KINDS = ("gpt2", "llama", "qwen2", "mistral", "phi3")
VOCAB = 128


def build(kind, layers=2, size="tiny"):
    """What AutoModelForCausalLM returns for each kind, in eval mode: "tiny" (hidden 64, 4 heads,
    2 key/value heads where the architecture has grouped-query attention) or "small" (hidden 256).
    No end-of-sequence token: generate() then runs every step, as the ONNX decoding loops do."""
    import transformers

    torch.manual_seed(0)
    hidden = 64 if size == "tiny" else 256
    common = dict(vocab_size=VOCAB, hidden_size=hidden, intermediate_size=2 * hidden, num_hidden_layers=layers,
                  num_attention_heads=4, num_key_value_heads=2, max_position_embeddings=256,
                  pad_token_id=0, bos_token_id=1, eos_token_id=None)
    if kind == "gpt2":
        config = transformers.GPT2Config(vocab_size=VOCAB, n_embd=hidden, n_layer=layers, n_head=4, n_positions=256,
                                         pad_token_id=0, bos_token_id=1, eos_token_id=None)
    elif kind == "llama":
        config = transformers.LlamaConfig(**common)
    elif kind == "qwen2":
        config = transformers.Qwen2Config(**common)
    elif kind == "mistral":
        config = transformers.MistralConfig(**common, sliding_window=None)
    elif kind == "phi3":
        config = transformers.Phi3Config(**common)
    else:
        raise ValueError(f"unknown causal LM kind '{kind}' (known: {', '.join(KINDS)})")
    return transformers.AutoModelForCausalLM.from_config(config).eval()


def prompts(batch=2, length=5, seed=0):
    """Token ids and attention mask of `batch` prompts, row 1 left-padded by 2 (as generate() pads)."""
    g = torch.Generator().manual_seed(seed)
    ids = torch.randint(3, VOCAB, (batch, length), generator=g)
    mask = torch.ones(batch, length, dtype=torch.int64)
    if batch > 1:
        ids[1, :2] = 0
        mask[1, :2] = 0
    return ids, mask
