"""The one table from a Qwen3ForCausalLM checkpoint's tensor names to the StepPlan's weight buffers.

Each plan buffer is one HF tensor, or several concatenated along their output rows (q|k|v,
gate|up). The checkpoint validator, the weight packer and the transformers peer all read it:

    hf_tensors(cfg)      HF name -> shape of every tensor a checkpoint must hold
    packing(cfg)         plan buffer -> its HF parts (name, shape), concatenated in this order
    hf_views(cfg, bufs)  HF name -> a view of the plan buffer's rows (the packing undone)
    hf_config(cfg)       transformers' Qwen3Config of the same shape
"""

from __future__ import annotations

from tfdash.engine.config import ModelConfig


def _layer(cfg: ModelConfig):
    H, D, I = cfg.hidden_size, cfg.head_dim, cfg.intermediate_size
    return (  # plan buffer after "L{i}." -> HF parts after "model.layers.{i}.", each (name, shape)
        ("attn_norm", (("input_layernorm.weight", (H,)),)),
        ("mlp_norm", (("post_attention_layernorm.weight", (H,)),)),
        ("w_qkv", (("self_attn.q_proj.weight", (cfg.q_size, H)), ("self_attn.k_proj.weight", (cfg.kv_size, H)),
                   ("self_attn.v_proj.weight", (cfg.kv_size, H)))),
        ("w_o", (("self_attn.o_proj.weight", (H, cfg.q_size)),)),
        ("q_norm", (("self_attn.q_norm.weight", (D,)),)),
        ("k_norm", (("self_attn.k_norm.weight", (D,)),)),
        ("w_gu", (("mlp.gate_proj.weight", (I, H)), ("mlp.up_proj.weight", (I, H)))),
        ("w_down", (("mlp.down_proj.weight", (H, I)),)),
    )


def packing(cfg: ModelConfig) -> dict[str, tuple[tuple[str, tuple[int, ...]], ...]]:
    """Plan weight buffer -> its HF parts (name, shape), concatenated along rows in this order."""
    H, V = cfg.hidden_size, cfg.vocab_size
    out = {"embed": (("model.embed_tokens.weight", (V, H)),), "final_norm": (("model.norm.weight", (H,)),)}
    if not cfg.tie_word_embeddings:
        out["lm_head"] = (("lm_head.weight", (V, H)),)
    layer = _layer(cfg)
    for i in range(cfg.num_layers):
        for buf, parts in layer:
            out[f"L{i}.{buf}"] = tuple((f"model.layers.{i}.{name}", shape) for name, shape in parts)
    return out


def hf_tensors(cfg: ModelConfig) -> dict[str, tuple[int, ...]]:
    """HF names and shapes of every tensor a Qwen3ForCausalLM checkpoint must hold."""
    return {name: shape for parts in packing(cfg).values() for name, shape in parts}


def hf_views(cfg: ModelConfig, bufs) -> dict:
    """HF name -> the rows of the packed plan buffer that hold it (views, no copies)."""
    out = {}
    for buf, parts in packing(cfg).items():
        row = 0
        for name, shape in parts:
            out[name] = bufs[buf][row:row + shape[0]]
            row += shape[0]
    return out


def hf_config(cfg: ModelConfig):
    """transformers' Qwen3Config of cfg's shape (transformers is imported here: it is optional)."""
    from transformers import Qwen3Config

    return Qwen3Config(
        hidden_size=cfg.hidden_size, num_hidden_layers=cfg.num_layers, num_attention_heads=cfg.num_heads,
        num_key_value_heads=cfg.num_kv_heads, head_dim=cfg.head_dim, intermediate_size=cfg.intermediate_size,
        vocab_size=cfg.vocab_size, tie_word_embeddings=cfg.tie_word_embeddings, rope_theta=cfg.rope_theta,
        rms_norm_eps=cfg.rms_norm_eps, max_position_embeddings=cfg.max_position_embeddings,
    )
