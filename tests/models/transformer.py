"""A pre-LayerNorm transformer encoder block: multi-head self-attention and a GELU MLP (Erf form,
as PyTorch exports nn.GELU), LayerNormalization from opset 17."""

import numpy as np

import modelkit


def _linear(b, x, din, dout):
    w = b.const("w", (b.rng.standard_normal((din, dout)) / np.sqrt(din)).astype(np.float32))
    bias = b.const("bias", b.rng.normal(0, 0.1, dout).astype(np.float32))
    return b.node("Add", [b.node("MatMul", [x, w]), bias])


def _layernorm(b, x, d):
    gamma = b.const("ln_gamma", b.rng.uniform(0.5, 1.5, d).astype(np.float32))
    beta = b.const("ln_beta", b.rng.normal(0, 0.2, d).astype(np.float32))
    return b.node("LayerNormalization", [x, gamma, beta], axis=-1, epsilon=1e-5)


def _gelu(b, x):
    inv_sqrt2 = b.const("inv_sqrt2", np.array(1 / np.sqrt(2), np.float32))
    one = b.const("one", np.array(1.0, np.float32))
    half = b.const("half", np.array(0.5, np.float32))
    erf = b.node("Erf", [b.node("Mul", [x, inv_sqrt2])])
    return b.node("Mul", [b.node("Mul", [x, half]), b.node("Add", [erf, one])])


def build(batch=1, seq=16, dim=64, heads=4, mlp_ratio=4, seed=0):
    b = modelkit.GraphBuilder(seed)
    head_dim = dim // heads
    split_heads = b.const("split_shape", np.array([batch, seq, heads, head_dim], np.int64))
    merge_heads = b.const("merge_shape", np.array([batch, seq, dim], np.int64))

    h = _layernorm(b, "input", dim)

    def heads_of(t, perm):
        return b.node("Transpose", [b.node("Reshape", [t, split_heads])], perm=perm)

    q = heads_of(_linear(b, h, dim, dim), [0, 2, 1, 3])
    k_t = heads_of(_linear(b, h, dim, dim), [0, 2, 3, 1])
    v = heads_of(_linear(b, h, dim, dim), [0, 2, 1, 3])
    scale = b.const("scale", np.array(1 / np.sqrt(head_dim), np.float32))
    scores = b.node("Mul", [b.node("MatMul", [q, k_t]), scale])
    attn = b.node("Softmax", [scores], axis=-1)
    context = b.node("Transpose", [b.node("MatMul", [attn, v])], perm=[0, 2, 1, 3])
    context = b.node("Reshape", [context, merge_heads])
    x = b.node("Add", ["input", _linear(b, context, dim, dim)])

    h = _layernorm(b, x, dim)
    h = _linear(b, _gelu(b, _linear(b, h, dim, dim * mlp_ratio)), dim * mlp_ratio, dim)
    b.node("Add", [x, h], outputs=["output"])
    model = b.model("transformer_encoder", [modelkit.float_input("input", [batch, seq, dim])],
                    [modelkit.output("output", shape=[batch, seq, dim])])
    data = np.random.default_rng(seed + 1).standard_normal((batch, seq, dim)).astype(np.float32)
    return model, {"input": data}
