"""The prompt's plan: the launches that take `rows` prompt positions at once (a chunk).

The decode step walks a prompt one position a step, streaming every weight once a position. A
chunk streams them once for up to `rows` positions, through tensor-core GEMMs (tfdash.kernels.rows)
and a causal attention over the cache (tfdash.kernels.rows_attention). A chunk leaves its
positions' K/V in the cache, and its last row's residual in the decode step's `x`: the runtime then
runs the step's head launches alone on it (`Runtime.head_step`: lm_head, argmax), whose token is
the first new one, as the step at the prompt's last position would have made it.

    embed                 x[m] = E[prompt[start + m]]
    L{i}.attn_norm        xn = rmsnorm(x)
    L{i}.qkv_proj         qkv = xn @ W_qkv^T
    L{i}.qk_norm_rope     q = rope(norm(q)); k_cache[start + m] = rope(norm(k)); v_cache[start + m] = v
    L{i}.attention        attn[m] = softmax(q k^T / sqrt(d)) v over positions 0 .. start + m
    L{i}.o_proj           x += attn @ W_o^T
    L{i}.mlp_norm         xn = rmsnorm(x)
    L{i}.gate_up          h = silu(g) * u, g|u = xn @ W_gu^T
    L{i}.down             x += h @ W_down^T
    last                  x_step = x[count - 1]  (the decode step's residual: its head reads it)

Its buffers that the decode plan has too (the weights, the cache, the RoPE tables, the prompt) are
the decode runtime's own tensors; its own are the chunk's rows and the chunk's `pf_start` and
`pf_count`, which the runtime sets before each chunk (tfdash.engine.prefill).
"""

from __future__ import annotations

from types import MappingProxyType

from tfdash.engine.plan import BufferSpec, Launch, StepPlan

ROWS = 16  # positions a chunk takes: one mma tile of rows, so each weight streams once for 16


def build_prefill_plan(plan: StepPlan, rows: int = ROWS) -> StepPlan:
    """The chunk plan for `plan`'s model, dtype and cache (see the module doc)."""
    cfg, dt, C = plan.config, plan.dtype, plan.capacity
    H, D, I, V, L = cfg.hidden_size, cfg.head_dim, cfg.intermediate_size, cfg.vocab_size, cfg.num_layers
    nH, nKV, M, eps = cfg.num_heads, cfg.num_kv_heads, rows, cfg.rms_norm_eps
    buffers: dict[str, BufferSpec] = {}
    launches: list[Launch] = []

    def buf(name, shape, dtype, kind, parent=None, index=None):
        buffers[name] = BufferSpec(name, tuple(shape), dtype, kind, parent, index)

    def launch(role, layer, fam, kernel, dims, **args):
        launches.append(Launch(len(launches), role, layer, fam, kernel,
                               MappingProxyType(dict(dims, dtype=dt, M=M)), MappingProxyType(args)))

    def gemm(role, layer, N, K, epilogue, **args):
        kernel = f"rows_gemm_{role.split('.', 1)[1]}"
        launch(role, layer, "rows_gemm", kernel, dict(N=N, K=K, epilogue=epilogue), **args)

    for name in ("prompt", "embed", "rope_cos", "rope_sin", "k_cache", "v_cache", "x"):
        s = plan.buffers[name]
        buf(name, s.shape, s.dtype, s.kind)
    buf("pf_start", (1,), "int32", "activation")
    buf("pf_count", (1,), "int32", "activation")
    buf("pf_x", (M, H), dt, "activation")
    buf("pf_xn", (M, H), dt, "activation")
    buf("pf_qkv", (M, cfg.qkv_size), dt, "activation")
    buf("pf_q", (M, cfg.q_size), dt, "activation")
    buf("pf_attn", (M, cfg.q_size), dt, "activation")
    buf("pf_h", (M, I), dt, "activation")
    heads = dict(n_heads=nH, n_kv_heads=nKV, head_dim=D, capacity=C)
    chunk = dict(start="pf_start", count="pf_count")

    launch("embed", None, "rows_embed", "rows_embed", dict(H=H, V=V, C=C), prompt="prompt", table="embed",
           out="pf_x", **chunk)
    for i in range(L):
        p = f"L{i}."
        for name in ("attn_norm", "w_qkv", "q_norm", "k_norm", "w_o", "mlp_norm", "w_gu", "w_down"):
            s = plan.buffers[p + name]
            buf(p + name, s.shape, s.dtype, s.kind)
        for name in ("k_cache", "v_cache"):
            buf(p + name, (nKV, C, D), dt, "cache", parent=name, index=i)
        launch(p + "attn_norm", i, "rows_rmsnorm", "rows_rmsnorm", dict(H=H, eps=eps), x="pf_x",
               w=p + "attn_norm", out="pf_xn")
        gemm(p + "qkv_proj", i, cfg.qkv_size, H, "store", x="pf_xn", w=p + "w_qkv", out="pf_qkv")
        launch(p + "qk_norm_rope", i, "rows_rope", "rows_rope", dict(heads, eps=eps), qkv="pf_qkv",
               q_norm=p + "q_norm", k_norm=p + "k_norm", cos="rope_cos", sin="rope_sin", q="pf_q",
               k_cache=p + "k_cache", v_cache=p + "v_cache", **chunk)
        launch(p + "attention", i, "rows_attention", "rows_attention", heads, q="pf_q", k_cache=p + "k_cache",
               v_cache=p + "v_cache", out="pf_attn", **chunk)
        gemm(p + "o_proj", i, H, cfg.q_size, "residual", x="pf_attn", w=p + "w_o", out="pf_x")
        launch(p + "mlp_norm", i, "rows_rmsnorm", "rows_rmsnorm", dict(H=H, eps=eps), x="pf_x",
               w=p + "mlp_norm", out="pf_xn")
        gemm(p + "gate_up", i, 2 * I, H, "silu_mul", x="pf_xn", w=p + "w_gu", out="pf_h")
        gemm(p + "down", i, H, I, "residual", x="pf_h", w=p + "w_down", out="pf_x")
    launch("last", None, "rows_last", "rows_last", dict(H=H), rows="pf_x", count="pf_count", out="x")
    return StepPlan(cfg, dt, C, MappingProxyType(buffers), tuple(launches),
                    MappingProxyType({"prefill_rows": rows}))


def prefill_unsupported(plan: StepPlan) -> str | None:
    """Why the tilelang prompt kernels cannot take `plan`'s shape (None: they can)."""
    from tfdash.kernels.base import family

    for launch in build_prefill_plan(plan).kernels().values():
        fam = family(launch.family)
        why = fam.supported(launch.dims) if fam.supported else None
        if why:
            return why
    return None
