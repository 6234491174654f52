"""Shared fixtures for the CPU tests: tiny Qwen3 checkpoints written the way transformers writes
them (config.json, safetensors single-file or sharded, tokenizer.json), and a runner for the
`tfdash` command as a real subprocess.

transformers is a test-only reference here: it builds the checkpoints and, in
test_reference_hf.py, is the forward tfdash must agree with.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
import time
from dataclasses import dataclass
from pathlib import Path

import pytest

import serial_lock
from serial_lock import pytest_configure_node, pytest_runtest_protocol, pytest_unconfigure  # noqa: F401

REPO = Path(__file__).resolve().parents[1]

# The tiny shape every checkpoint test uses: GQA 2:1, q/k norms, head_dim != hidden/heads.
TINY = dict(hidden_size=64, num_hidden_layers=2, num_attention_heads=4, num_key_value_heads=2,
            head_dim=16, intermediate_size=128, vocab_size=300, rope_theta=1e6,
            max_position_embeddings=256, rms_norm_eps=1e-6)


def word_tokenizer(vocab_size: int):
    """A WordLevel tokenizer over "w0".."w{V-1}", whitespace-split; unknown words -> w0."""
    from tokenizers import Tokenizer, decoders, models, pre_tokenizers

    tok = Tokenizer(models.WordLevel({f"w{i}": i for i in range(vocab_size)}, unk_token="w0"))
    tok.pre_tokenizer = pre_tokenizers.Whitespace()
    tok.decoder = decoders.WordPiece()  # joins words with spaces
    return tok


def hf_model(tied: bool = True, seed: int = 0, **overrides):
    """A randomly initialised Qwen3ForCausalLM with non-trivial weights: matrices N(0, 0.2),
    norm weights N(1, 0.1) (so the norm scale is exercised), an independent lm_head when untied."""
    import torch
    from transformers import Qwen3Config, Qwen3ForCausalLM

    cfg = Qwen3Config(**{**TINY, **overrides}, tie_word_embeddings=tied, attn_implementation="eager")
    torch.manual_seed(seed)
    m = Qwen3ForCausalLM(cfg).eval()
    with torch.no_grad():
        for p in m.parameters():
            if p.dim() > 1:
                p.normal_(0.0, 0.2)
            else:
                p.normal_(1.0, 0.1)
    if not tied:
        assert m.lm_head.weight.data_ptr() != m.model.embed_tokens.weight.data_ptr()
    return m


@dataclass(frozen=True)
class Ckpt:
    path: Path
    tied: bool
    sharded: bool
    dtype: str


def write_ckpt(path: Path, tied=True, sharded=False, dtype="float32", seed=0, **overrides) -> Ckpt:
    """Save a tiny Qwen3 checkpoint with transformers' save_pretrained, plus a tokenizer.json."""
    import torch
    from transformers.utils import logging as hf_logging

    hf_logging.disable_progress_bar()  # no "Writing model shards" bars on stderr
    m = hf_model(tied=tied, seed=seed, **overrides)
    m = m.to(getattr(torch, dtype))
    kwargs = {"max_shard_size": "40KB"} if sharded else {}
    m.save_pretrained(path, **kwargs)
    word_tokenizer(m.config.vocab_size).save(str(path / "tokenizer.json"))
    if sharded:
        assert (path / "model.safetensors.index.json").is_file()
        assert len(list(path.glob("model-*.safetensors"))) >= 3
    else:
        assert (path / "model.safetensors").is_file()
    return Ckpt(path, tied, sharded, dtype)


@pytest.fixture(scope="session")
def ckpt_factory(tmp_path_factory):
    """make(tied=, sharded=, dtype=, seed=, **config overrides) -> Ckpt, built once per argument set.
    Tests that modify a checkpoint must copy it first (see `ckpt_copy`)."""
    cache: dict = {}

    def make(**kw) -> Ckpt:
        key = tuple(sorted(kw.items()))
        if key not in cache:
            d = tmp_path_factory.mktemp("ckpt")
            cache[key] = write_ckpt(d, **kw)
        return cache[key]

    return make


@pytest.fixture
def ckpt_copy(ckpt_factory, tmp_path):
    """make(**kw) -> a private, writable copy of a factory checkpoint."""

    def make(**kw) -> Path:
        src = ckpt_factory(**kw).path
        dst = tmp_path / f"ckpt{len(list(tmp_path.iterdir()))}"
        shutil.copytree(src, dst)
        return dst

    return make


_KERNEL_BUILDS = []  # the run's KernelBuilds, made by the first of the hook or the fixture below


def _kernel_builds(config):
    if not _KERNEL_BUILDS:
        import tempfile

        from kernel_builds import KernelBuilds

        # nice: the builds run beside the tests collected before the ones that read them; under xdist
        # each takes a shared turn of serial_lock's, so none runs beside a serial test
        _KERNEL_BUILDS.append(KernelBuilds(Path(tempfile.mkdtemp(prefix="tfdash-tlcache-")), nice=19,
                                           lock=serial_lock.folder(config)))
    return _KERNEL_BUILDS[0]


@pytest.hookimpl(trylast=True)
def pytest_collection_modifyitems(config, items):
    """TFDASH_TEST_SHARD=i/n keeps the i-th of n contiguous slices of the selected tests (after -m
    and -k), so that n processes on one GPU machine compile their kernels side by side; contiguous,
    so the cases of one test, which share their kernels, mostly stay in one process."""
    shard = os.environ.get("TFDASH_TEST_SHARD")
    if not shard:
        return
    try:
        i, n = (int(x) for x in shard.split("/"))
        assert 0 <= i < n
    except (ValueError, AssertionError):
        raise pytest.UsageError(f"TFDASH_TEST_SHARD={shard!r}: expected i/n with 0 <= i < n") from None
    lo, hi = len(items) * i // n, len(items) * (i + 1) // n
    config.hook.pytest_deselected(items=items[:lo] + items[hi:])
    items[:] = items[lo:hi]


def pytest_collection_finish(session):
    """Queue every sm_90a build the selected tests read (a test module's `builds_read_by(item)`
    gives a test's builds as (launch, compile_one options, ptxas too)) and start them now, in two
    low-priority workers, so they overlap the tests that run first; a test waits for its own. An
    xdist worker only queues them (see pytest_itemcollected)."""
    if session.config.option.collectonly:
        return
    queued = False
    for item in session.items:
        read_by = getattr(getattr(item, "module", None), "builds_read_by", None)
        for launch, options, ptxas in read_by(item) if read_by else ():
            _kernel_builds(session.config).prefetch([launch], ptxas=lambda _, p=ptxas: p, **options)
            queued = True
    if queued and not hasattr(session.config, "workerinput"):
        _kernel_builds(session.config).start()


def pytest_itemcollected(item):
    """Two xdist_groups, each run by one worker under `pytest -n 2 --dist loadgroup` (the README's):
    the `serial` tests, back to back (serial_lock.py), and the tests that read sm_90a builds: a worker
    queues every build at collection but submits none (above) until a test of its own reads one, so
    the other builds none. (Under plain `-n`, --dist load, each worker that runs one of them builds
    them all.)"""
    read_by = getattr(getattr(item, "module", None), "builds_read_by", None)
    if item.get_closest_marker("serial"):
        item.add_marker(pytest.mark.xdist_group("serial"))
    elif "kernel_builds" in getattr(item, "fixturenames", ()) or (read_by and read_by(item)):
        item.add_marker(pytest.mark.xdist_group("sm90a-builds"))
        item.stash[serial_lock.FREE] = True  # it waits on builds, which take their own turns


def pytest_sessionfinish(session):
    """Stop the build workers (a build still queued is dropped) and remove their kernel cache."""
    if _KERNEL_BUILDS:
        builds = _KERNEL_BUILDS.pop()
        builds.close()
        shutil.rmtree(builds.cache_dir, ignore_errors=True)


@pytest.fixture(scope="session")
def kernel_builds(pytestconfig):
    """The run's sm_90a kernel builds (tests/kernel_builds.py): each distinct kernel lowered and built
    once, by two worker processes, into a kernel cache that starts empty."""
    return _kernel_builds(pytestconfig)


@pytest.fixture(scope="module")
def one_thread():
    """Torch on one intra-op thread for the module: the tiny models here gain nothing from two,
    and on a busy 2-core runner OpenMP's spinning threads can make a step ten times slower."""
    import torch

    before = torch.get_num_threads()
    torch.set_num_threads(1)
    yield
    torch.set_num_threads(before)


@dataclass
class Run:
    rc: int
    stdout: str
    stderr: str
    wall_s: float


def run_tfdash(*args: str, timeout: float = 120, env: dict | None = None) -> Run:
    """`python -m tfdash ARGS` in a fresh interpreter, as a user would run it."""
    t0 = time.perf_counter()
    p = subprocess.run([sys.executable, "-m", "tfdash", *args], capture_output=True, text=True,
                       timeout=timeout, cwd=REPO, env={**os.environ, **(env or {})})
    return Run(p.returncode, p.stdout, p.stderr, time.perf_counter() - t0)


def assert_one_line_error(stderr: str, *needles: str) -> str:
    """stderr is exactly one non-empty line, `tfdash: error: ...` (or `tfdash CMD: error: ...`, as a
    command's parser says a bad argument), naming each needle; no traceback."""
    assert "Traceback" not in stderr, stderr
    lines = [line for line in stderr.splitlines() if line.strip()]
    assert len(lines) == 1, stderr
    assert re.match(r"tfdash( [a-z]+)?: error: ", lines[0]), stderr
    for n in needles:
        assert n in lines[0], (n, lines[0])
    return lines[0]


def read_json(path: Path) -> dict:
    return json.loads(Path(path).read_text(encoding="utf-8"))


def read_pty(master: int, buf: bytearray, seconds: float) -> None:
    """Append what a pty's master side gives within `seconds` to `buf` (stops early at its end)."""
    import select

    end = time.monotonic() + seconds
    while time.monotonic() < end:
        r, _, _ = select.select([master], [], [], 0.2)
        if r:
            try:
                chunk = os.read(master, 65536)
            except OSError:
                return
            if not chunk:
                return
            buf.extend(chunk)


@pytest.fixture(autouse=True)
def _stop_signals_as_a_process_starts():
    """Each test starts with SIGINT raising KeyboardInterrupt and ends with SIGINT, SIGTERM and
    SIGHUP handled as they were: the tests run many commands and apps in one process, and one that
    left its handler behind (an app's hand-over, which notes a signal for an app no longer running)
    swallowed a later test's Ctrl+C, where a real command starts a process of its own."""
    import signal
    import threading

    if threading.current_thread() is not threading.main_thread():
        yield
        return
    sigs = [s for s in (signal.SIGINT, getattr(signal, "SIGTERM", None), getattr(signal, "SIGHUP", None)) if s]
    before = {s: signal.getsignal(s) for s in sigs}
    if before[signal.SIGINT] is not signal.default_int_handler:
        signal.signal(signal.SIGINT, signal.default_int_handler)
        before[signal.SIGINT] = signal.default_int_handler
    yield
    for s, h in before.items():
        if h is not None and signal.getsignal(s) is not h:
            signal.signal(s, h)
