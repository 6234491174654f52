"""One weight-name table (tfdash.engine.names): the checkpoint's tensor list, the packer and the
transformers peer's views of the packed buffers agree with each other and with the plan."""

from __future__ import annotations

import dataclasses

import pytest
import torch

from tfdash.engine.checkpoint import expected_tensors
from tfdash.engine.config import preset
from tfdash.engine.names import hf_views
from tfdash.engine.plan import build_plan
from tfdash.engine.weights import pack, random_state_dict


@pytest.mark.parametrize("tied", [True, False])
def test_the_weight_name_table_packs_and_unpacks(tied):
    cfg = dataclasses.replace(preset("qwen3-tiny"), tie_word_embeddings=tied)
    sd = random_state_dict(cfg, torch.float32)
    assert {k: tuple(v.shape) for k, v in sd.items()} == expected_tensors(cfg)
    packed = pack(cfg, dict(sd))
    plan = build_plan(cfg, "float32", capacity=64)
    weights = {n: b.shape for n, b in plan.buffers.items() if b.kind == "weight"}
    assert {k: tuple(v.shape) for k, v in packed.items()} == weights
    views = hf_views(cfg, packed)
    assert set(views) == set(sd) and all(torch.equal(views[k], sd[k]) for k in sd)
    assert torch.equal(packed["L0.w_qkv"][:cfg.q_size], sd["model.layers.0.self_attn.q_proj.weight"])
