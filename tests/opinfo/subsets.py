"""Named subsets of the OpInfo corpus (tests/opinfo/README.md)."""

# What .ci/run checks on every run: entries from every op family (elementwise, reductions, shape,
# indexing, linear algebra, convolution and pooling, normalization, losses, decompositions), ok and
# located errors alike, so that a change to any family moves some status here.
FAST = [
    "abs", "acosh", "add", "addcmul", "addmm", "amax", "argmax", "argsort", "atan2", "cat",
    "clamp", "copysign", "cross", "cummax", "cumprod", "cumsum", "diag_embed", "diagonal", "diff", "div.floor_rounding",
    "einsum", "erfc", "expand", "flip", "fmax", "gather", "hypot", "index_select", "isclose", "kron", "lerp",
    "linalg.vector_norm", "log_softmax", "logaddexp", "logcumsumexp", "logit", "logsumexp", "masked_fill", "matmul",
    "max.reduction_with_dim", "mean", "nan_to_num", "nanmean", "nansum", "nn.functional.avg_pool2d",
    "nn.functional.batch_norm", "nn.functional.binary_cross_entropy_with_logits", "nn.functional.conv2d",
    "nn.functional.conv_transpose2d", "nn.functional.cosine_similarity", "nn.functional.cross_entropy",
    "nn.functional.embedding", "nn.functional.gelu", "nn.functional.group_norm", "nn.functional.interpolate.bilinear",
    "nn.functional.kl_div", "nn.functional.layer_norm", "nn.functional.max_pool2d", "nn.functional.mse_loss",
    "nn.functional.nll_loss", "nn.functional.pad.constant", "nn.functional.pixel_shuffle", "nn.functional.prelu",
    "nn.functional.scaled_dot_product_attention", "nn.functional.smooth_l1_loss", "permute", "pow", "prod",
    "remainder", "repeat", "roll", "rsqrt", "scatter", "signbit", "softmax", "sort", "split", "squeeze", "stack",
    "std", "sum", "t", "tensordot", "topk", "trace", "transpose", "tril", "unfold", "var_mean", "where", "xlogy",
    "sum_to_size", "trapezoid", "take_along_dim", "isin", "cov",
]

# Entries called from scripted modules (scripted.py): ops with list, optional and scalar arguments.
SCRIPTED = [
    "addcmul", "amax", "argmax", "argsort", "cat", "clamp", "cross", "cumprod", "cumsum", "diagonal", "diff",
    "flatten", "flip", "full_like", "gather", "index_select", "lerp", "linalg.vector_norm", "log_softmax",
    "logit", "logsumexp", "mean", "movedim", "nan_to_num", "narrow", "nn.functional.avg_pool2d",
    "nn.functional.conv2d", "nn.functional.group_norm", "nn.functional.layer_norm",
    "nn.functional.linear", "nn.functional.max_pool2d", "nn.functional.pad.constant", 
    "norm", "permute", "prod", "roll", "softmax", "sort", "split", "squeeze", "stack", "std", "sum",
    "tensordot", "topk", "transpose", "tril", "triu", "unflatten", "unsqueeze", "var",
]
