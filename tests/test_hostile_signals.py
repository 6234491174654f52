"""Signals: SIGTERM and SIGHUP are handled like Ctrl+C, and nothing measured is lost.

On CPU, SIGTERM to `tfdash --headless --profile --export DIR` and to the dashboard with `--save`
(on a pty) stops the engine, writes the summary and valid files that `tfdash open` loads, says
it was interrupted, and exits 143. A second signal during the final write waits for it.
"""

from __future__ import annotations

import os
import re
import select
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
from conftest import read_pty

from tfdash.profiling.export import load_snapshot
from tfdash.signals import Interrupted, exit_code, finishing, stop_signals

REPO = Path(__file__).resolve().parents[1]
ENV = {**os.environ, "PYTHONPATH": str(REPO), "OMP_NUM_THREADS": "1"}

pytestmark = pytest.mark.skipif(sys.platform != "linux", reason="POSIX signals and a pty")


def test_exit_codes_follow_the_shell():
    assert exit_code(KeyboardInterrupt()) == 130
    assert exit_code(Interrupted(signal.SIGTERM)) == 143
    assert exit_code(Interrupted(signal.SIGHUP)) == 129


def test_sigterm_raises_where_the_main_thread_is():
    with pytest.raises(Interrupted) as e:
        with stop_signals():
            os.kill(os.getpid(), signal.SIGTERM)
            time.sleep(5)
    assert e.value.signum == signal.SIGTERM
    assert signal.getsignal(signal.SIGTERM) is signal.SIG_DFL or callable(signal.getsignal(signal.SIGTERM))


def test_a_signal_during_the_final_write_waits_for_it(capsys):
    done = []
    with finishing() as came:
        os.kill(os.getpid(), signal.SIGINT)
        os.kill(os.getpid(), signal.SIGTERM)
        time.sleep(0.05)
        done.append("written")
    assert done == ["written"] and came == [signal.SIGINT, signal.SIGTERM]
    assert "writing the summary and the files first" in capsys.readouterr().err


def _wait_for(p, stream, needle: bytes, timeout: float) -> bytes:
    buf = b""
    end = time.monotonic() + timeout
    while time.monotonic() < end and needle not in buf:
        r, _, _ = select.select([stream], [], [], 0.2)
        if r:
            chunk = os.read(stream.fileno() if hasattr(stream, "fileno") else stream, 65536)
            if not chunk:
                break
            buf += chunk
    return buf


@pytest.mark.slow
@pytest.mark.parametrize("sig", [signal.SIGTERM, signal.SIGHUP])
def test_signal_to_headless_export_writes_files_that_open_loads(tmp_path, sig):
    out = tmp_path / "export"
    p = subprocess.Popen([sys.executable, "-m", "tfdash", "--headless", "--profile", "--export", str(out),
                          "--model", "qwen3-tiny", "--device", "cpu", "--max-new-tokens", "7000",
                          "--prompt", "hello"], stdout=subprocess.PIPE, stderr=subprocess.PIPE, cwd=REPO,
                         env=ENV)
    try:
        first = _wait_for(p, p.stdout, b"hello", 120)  # tokens streaming
        assert b"hello" in first
        time.sleep(1.0)
        p.send_signal(sig)
        stdout, stderr = p.communicate(timeout=120)
    finally:
        if p.poll() is None:
            p.kill()
    stdout, stderr = (first + stdout).decode(), stderr.decode()
    assert p.returncode == 128 + sig, stderr
    assert f"interrupted ({signal.Signals(sig).name})" in stderr and "Traceback" not in stderr
    assert "tok/s over the whole generation" in stdout and "wrote " in stdout
    snap = load_snapshot(out / "snapshot.json")
    assert 16 <= snap.new_tokens < 7000
    assert (out / "trace.json").stat().st_size and (out / "kernels.csv").stat().st_size
    from tfdash.app.main import snapshot_app

    assert snapshot_app(out / "snapshot.json").source.snapshot() == snap  # what `tfdash open` builds


def _tokens_shown(buf: bytearray) -> int:
    """The largest 'N tokens of 7,000' the throughput pane has drawn so far."""
    from test_app_terminal import _plain

    found = [int(m.group(1).replace(",", "")) for m in re.finditer(r"([\d,]+)\s+tokens of 7,000", _plain(buf))]
    return max(found, default=0)


@pytest.mark.slow
def test_sigterm_to_the_dashboard_saves_the_snapshot(tmp_path):
    import pty

    save = tmp_path / "final.json"
    master, slave = pty.openpty()
    env = {**ENV, "TFDASH_CONFIG_DIR": str(tmp_path / "cfg"), "TFDASH_CACHE_DIR": str(tmp_path / "cache"),
           "TERM": "xterm-256color", "COLUMNS": "160", "LINES": "48"}
    p = subprocess.Popen([sys.executable, "-m", "tfdash", "--model", "qwen3-tiny", "--device", "cpu",
                          "--max-new-tokens", "7000", "--save", str(save)], stdin=slave, stdout=slave,
                         stderr=slave, cwd=REPO, env=env, close_fds=True)
    os.close(slave)
    buf = bytearray()

    def drain(seconds: float) -> None:
        read_pty(master, buf, seconds)

    try:
        end = time.monotonic() + 120
        while _tokens_shown(buf) < 16 and time.monotonic() < end and p.poll() is None:
            drain(0.5)  # tokens streaming in
        p.send_signal(signal.SIGTERM)
        end = time.monotonic() + 60
        while p.poll() is None and time.monotonic() < end:
            drain(0.3)
        rc = p.wait(timeout=5)
        drain(0.5)
    finally:
        if p.poll() is None:
            p.kill()
        os.close(master)
    text = bytes(buf).decode("utf-8", "replace")
    assert rc == 143, text[-2000:]
    assert "interrupted (SIGTERM)" in text and "snapshot saved to" in text and "Traceback" not in text
    snap = load_snapshot(save)
    assert 16 <= snap.new_tokens < 7000


@pytest.mark.slow
@pytest.mark.parametrize("how", ["key", "signal"])
def test_ctrl_c_and_sigint_to_the_dashboard_exit_130(tmp_path, how):
    """Ctrl+C typed on the dashboard's terminal (a key: the terminal is raw) and a SIGINT sent to it
    (`kill -INT`) both quit as q does and exit 130, the line said after the screen is restored."""
    import pty

    master, slave = pty.openpty()
    env = {**ENV, "TFDASH_CONFIG_DIR": str(tmp_path / "cfg"), "TFDASH_CACHE_DIR": str(tmp_path / "cache"),
           "TERM": "xterm-256color", "COLUMNS": "160", "LINES": "48"}
    p = subprocess.Popen([sys.executable, "-m", "tfdash", "--model", "qwen3-tiny", "--device", "cpu",
                          "--max-new-tokens", "7000"], stdin=slave, stdout=slave, stderr=slave, cwd=REPO, env=env,
                         close_fds=True)
    os.close(slave)
    buf = bytearray()
    try:
        end = time.monotonic() + 120
        while _tokens_shown(buf) < 16 and time.monotonic() < end and p.poll() is None:
            read_pty(master, buf, 0.5)
        if how == "key":
            os.write(master, b"\x03")
        else:
            p.send_signal(signal.SIGINT)
        end = time.monotonic() + 60
        while p.poll() is None and time.monotonic() < end:
            read_pty(master, buf, 0.3)
        rc = p.wait(timeout=5)
        read_pty(master, buf, 0.5)
    finally:
        if p.poll() is None:
            p.kill()
        os.close(master)
    text = bytes(buf).decode("utf-8", "replace")
    assert rc == 130, text[-2000:]
    tail = text[text.rindex("\x1b[?1049l"):]  # after the alternate screen is left
    assert "tfdash: interrupted (SIGINT); what was measured is kept" in tail and "Traceback" not in text


def test_a_second_quit_in_the_dashboard_waits_for_the_first(tmp_path, monkeypatch):
    """Ctrl+C twice: the second is told the first is still stopping and writing; --save is whole."""
    import asyncio

    from fixtures.appkit import SNAPSHOT

    from tfdash.app.main import snapshot_app

    monkeypatch.setenv("TFDASH_CONFIG_DIR", str(tmp_path / "cfg"))
    save = tmp_path / "final.json"
    app = snapshot_app(SNAPSHOT, save_path=save, tilelang_source=lambda fam: "#\n")
    toasts = []
    notify = app.notify
    app.notify = lambda message, **kw: (toasts.append(str(message)), notify(message, **kw))

    async def go():
        async with app.run_test(size=(160, 48)) as pilot:
            await pilot.pause()
            await asyncio.gather(app.action_quit(), app.action_quit())

    asyncio.run(go())
    assert any("writing what was measured first" in t for t in toasts), toasts
    assert load_snapshot(save) == load_snapshot(SNAPSHOT)


@pytest.mark.slow
def test_sigterm_to_plain_headless_prints_the_summary(tmp_path):
    p = subprocess.Popen([sys.executable, "-m", "tfdash", "--headless", "--model", "qwen3-tiny", "--device", "cpu",
                          "--max-new-tokens", "7000", "--prompt", "hello"], stdout=subprocess.PIPE,
                         stderr=subprocess.PIPE, cwd=REPO, env=ENV)
    try:
        first = _wait_for(p, p.stdout, b"hello", 120)
        time.sleep(0.5)
        p.send_signal(signal.SIGTERM)
        stdout, stderr = p.communicate(timeout=60)
    finally:
        if p.poll() is None:
            p.kill()
    assert p.returncode == 143, stderr.decode()
    assert b"tok/s" in first + stdout and b"interrupted (SIGTERM)" in stderr and b"Traceback" not in stderr


def test_a_sigint_before_the_dashboard_runs_quits_it_as_it_starts(tmp_path, monkeypatch, capsys):
    """A SIGINT (`kill -INT`, or Ctrl+C before the terminal is raw) that came before the app's loop ran
    had nothing to hand over to and was dropped: the dashboard ran on. It quits as the app starts, and
    the command exits 130 with the interrupted line."""
    import asyncio

    from fixtures.appkit import SNAPSHOT
    from test_app_compare import wait_for

    from tfdash.app.main import app_signals, exit_status, snapshot_app

    monkeypatch.setenv("TFDASH_CONFIG_DIR", str(tmp_path))
    app = snapshot_app(SNAPSHOT)

    async def run() -> bool:
        async with app.run_test(size=(120, 40)) as pilot:
            await wait_for(pilot, lambda: not app.is_running, timeout=10, what="the app to quit")
        return not app.is_running

    with app_signals(app):
        signal.raise_signal(signal.SIGINT)
        time.sleep(0.3)  # any hand-over has been tried by now, well before the loop below
        assert asyncio.run(run())
    capsys.readouterr()
    assert exit_status(app) == 130
    assert capsys.readouterr().err == "tfdash: interrupted (SIGINT)\n"


def test_a_signal_handed_over_before_the_first_frame_quits_once_it_is_drawn(tmp_path, monkeypatch, capsys):
    """A SIGTERM handed over while the app's loop ran but before its first frame quit at once, and the
    dashboard's screen, mid-mount, crashed (NoMatches, exit 1). It quits once the frame is drawn, and
    the command exits 143 with the interrupted line."""
    import asyncio

    from fixtures.appkit import SNAPSHOT
    from test_app_compare import wait_for

    from tfdash.app.main import exit_status, snapshot_app

    monkeypatch.setenv("TFDASH_CONFIG_DIR", str(tmp_path))
    app = snapshot_app(SNAPSHOT)
    handed = []

    def hand_over(message) -> None:  # on the app's thread, as the CLI's handler hands it over
        if not handed and app.is_running:
            handed.append(message)
            app.quit_on_signal(signal.SIGTERM)

    async def run() -> None:
        async with app.run_test(size=(120, 40), message_hook=hand_over) as pilot:
            await wait_for(pilot, lambda: not app.is_running, timeout=10, what="the app to quit")

    asyncio.run(run())
    capsys.readouterr()
    assert handed and exit_status(app) == 143
    assert capsys.readouterr().err == "tfdash: interrupted (SIGTERM)\n"
