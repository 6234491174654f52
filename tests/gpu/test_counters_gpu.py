"""Nsight Compute inside the replayed graph (H200): the GEMVs of layer 0 and lm_head move what
the analyzer says, within 2 % (DRAM bytes read), and every profiled launch has its launch
settings. Skipped where ncu is missing; a host where ncu cannot read counters fails with its
one-line reason."""

import pytest
import torch

from tfdash.profiling import counters as cmod

pytestmark = pytest.mark.gpu

if not torch.cuda.is_available():
    pytest.skip("needs CUDA", allow_module_level=True)
if cmod.find_ncu() is None:
    pytest.skip("needs Nsight Compute (ncu)", allow_module_level=True)


def test_gemv_dram_reads_match_the_analyzer():
    req = cmod.prepare({"model": "qwen3-1.7b", "device": "cuda"},
                       lambda plan: cmod.select(plan, every=True, layers={0}), ctx=512, timeout_s=300)
    got = cmod.measure(req, progress=print)
    assert sorted(got) == list(req.indices)
    for i, c in got.items():
        la = req.plan.launches[i]
        assert c.kernel == cmod.device_kernel(la) and c.grid and c.block and c.registers
        if la.family == "gemv":
            assert c.read_ratio == pytest.approx(1.0, abs=0.02), (la.role, c)
