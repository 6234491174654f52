"""--seed given or not: every parser's default is None, so an explicit `--seed 0` with --ckpt is
refused as any other seed is (it was taken silently, being the default's value), while a run on
random weights without --seed still builds, and records, seed 0."""

from __future__ import annotations

import pytest
from conftest import assert_one_line_error

from tfdash.cli import main

pytestmark = pytest.mark.usefixtures("one_thread")


def test_bench_refuses_seed_0_with_a_checkpoint(ckpt_factory, capsys):
    ckpt = ckpt_factory(tied=False, sharded=True)
    capsys.readouterr()
    rc = main(["bench", "--ckpt", str(ckpt.path), "--seed", "0", "--backends", "torch-graph",
               "--max-new-tokens", "8"])
    out, err = capsys.readouterr()
    assert rc == 2 and out == ""
    assert_one_line_error(err, "--seed 0", "give --ckpt or --seed, not both")


def test_the_dashboard_refuses_seed_0_with_a_checkpoint_before_its_screen(ckpt_factory, capsys, monkeypatch):
    from tfdash.app import main as app_main

    def opened(*a, **kw):
        raise AssertionError("the dashboard's screen was built")

    monkeypatch.setattr(app_main, "live_app", opened)
    monkeypatch.setenv("TFDASH_FORCE_TUI", "1")  # the dashboard, though pytest's stdout is no terminal
    capsys.readouterr()
    rc = main(["--ckpt", str(ckpt_factory(tied=False, sharded=True).path), "--seed", "0", "--max-new-tokens", "2"])
    out, err = capsys.readouterr()
    assert rc == 2 and out == ""
    assert_one_line_error(err, "--seed 0", "give --ckpt or --seed, not both")


def test_the_parsers_leave_an_absent_seed_none():
    from tfdash.cli import run_parser
    from tfdash.profiling import bench_args, counters_cli

    for p, base in ((run_parser(), []), (bench_args.parser(), []), (counters_cli.parser(), ["--all"])):
        assert p.parse_args(base).seed is None
        assert p.parse_args([*base, "--seed", "0"]).seed == 0


def test_a_counters_child_gets_no_seed_unless_one_was_given():
    from tfdash.profiling.counters import child_command

    assert "--seed" not in child_command({"ckpt": "/ckpt", "seed": None}, 0)
    argv = child_command({"model": "qwen3-tiny", "seed": 0}, 0)
    assert argv[argv.index("--seed") + 1] == "0"


def test_no_seed_builds_and_records_seed_0():
    import torch

    from tfdash.engine import load_engine

    unset = load_engine(model="qwen3-tiny", device="cpu", capacity=64)
    zero = load_engine(model="qwen3-tiny", device="cpu", capacity=64, seed=0)
    other = load_engine(model="qwen3-tiny", device="cpu", capacity=64, seed=1)
    assert unset.seed == 0
    name = next(n for n, s in unset.plan.buffers.items() if s.kind == "weight")
    assert torch.equal(unset.runtime.bufs[name], zero.runtime.bufs[name])
    assert not torch.equal(unset.runtime.bufs[name], other.runtime.bufs[name])
