"""GEMV family: every projection of the decode step (batch 1, so every matmul is a GEMV).

    out[N] (=|+=) W[N, K] @ prologue(x)

prologue: "none"     h = x
          "rmsnorm"  h = rmsnorm(x) * norm_w          (the norm fused into its consumer)
          "silu_mul" h = silu(x[:K]) * x[K:]          (gate|up packed: x has 2K entries)
epilogue: "store"    out = W @ h                      (out in `out_dtype`; f32 for the logits)
          "residual" out += W @ h                     (the residual add fused into its producer)

Roundings follow transformers' Qwen3 in the model dtype: the GEMV result is rounded to the dtype
before the residual add, silu(g) is rounded before the product with u.
"""

import torch
import torch.nn.functional as F

from tfdash.kernels.base import DTYPE_BYTES, SHORT_DTYPE, Family, Operand, make_cost, register
from tfdash.kernels.common import linear_f32, rmsnorm


def prologue_torch(dims, x, norm_w):
    K = dims["K"]
    if dims["prologue"] == "rmsnorm":
        return rmsnorm(x, norm_w, dims["eps"])
    if dims["prologue"] == "silu_mul":
        return F.silu(x[:K]) * x[K:]
    return x


def torch_gemv(dims, bufs):
    h = prologue_torch(dims, bufs["x"], bufs.get("norm_w"))
    out = bufs["out"]
    if out.dtype == torch.float32 and bufs["w"].dtype != torch.float32:
        y = linear_f32(h, bufs["w"])
    else:
        y = F.linear(h, bufs["w"])
    if dims["epilogue"] == "residual":
        out.add_(y)
    else:
        out.copy_(y)


def cost(dims, ctx_len=0):
    N, K = dims["N"], dims["K"]
    es = DTYPE_BYTES[dims["dtype"]]
    out_es = DTYPE_BYTES[dims["out_dtype"]]
    flops = {SHORT_DTYPE[dims["dtype"]]: 2 * N * K}
    f32 = 0
    special = {}
    x_len = K
    ops = [Operand("w", "weight", N * K * es, 0)]
    if dims["prologue"] == "rmsnorm":
        f32 += 4 * K  # square, sum, scale by rstd, scale by norm_w
        special["rsqrt"] = 1
        ops.append(Operand("norm_w", "weight", K * es, 0))
    elif dims["prologue"] == "silu_mul":
        x_len = 2 * K
        f32 += 4 * K  # silu = g / (1 + exp(-g)), then * u
        special["exp"] = K
    ops.insert(0, Operand("x", "activation", x_len * es, 0))
    if dims["epilogue"] == "residual":
        f32 += N
        ops.append(Operand("out", "activation", N * out_es, N * out_es))
    else:
        ops.append(Operand("out", "activation", 0, N * out_es))
    flops["f32"] = flops.get("f32", 0) + f32
    return make_cost(flops, special, ops, smem=dims.get("smem"))


def _tilelang(dims):
    from tfdash.kernels.tl_gemv import gemv_kernel

    return gemv_kernel(dims)


FAMILY = register(Family(
    name="gemv",
    roles=("x", "norm_w", "w", "out"),
    cost=cost,
    torch=torch_gemv,
    tilelang=_tilelang,
    describe="out (=|+=) W @ prologue(x); prologue rmsnorm|silu_mul|none, epilogue store|residual",
))
