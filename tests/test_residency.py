"""scripts/residency.py's SM arithmetic: which blocks fit on an H200 SM beside which (registers a
warp at a time, threads, block slots, shared memory). The numbers are the plan's own kernels' as
ptxas reports them for sm_90a at 1.7B."""

from __future__ import annotations

import pytest
from fixtures.scripts import load_script


@pytest.fixture(scope="module")
def res():
    return load_script("residency")


def test_registers_are_given_a_warp_at_a_time(res):
    assert res.warp_regs(93) == 96 * 32  # 93 rounds up to 96 a thread
    assert res.warp_regs(255) == 256 * 32
    assert res.warp_regs(1) == 256  # a warp never gets fewer than 256


def test_blocks_alone_and_beside(res):
    qkv = res.fit(93, 256, 4096)  # 24576 registers a block
    assert qkv == 2
    held = (2 * 96 * 256, 512, 2, 2 * (4096 + 1024))
    assert res.fit(255, 128, 2596, held) == 0  # attention does not fit beside two qkv blocks
    assert res.fit(128, 128, 2596, held) == 1  # at 128 registers one would
    assert res.fit(128, 256, 12288) == 2  # down's whole row: two blocks still fit alone
    assert res.fit(14, 128, 0) == 16  # threads, not registers, bound a light kernel
    assert res.fit(16, 32, 0) == 32  # and then the block slots
    assert res.fit(16, 128, 100 * 1024) == 2  # and shared memory
