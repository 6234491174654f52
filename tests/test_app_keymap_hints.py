"""A key the user remapped in config.json is the key every hint names: the toasts, the status
lines, the dialogs' box subtitles and the panes' texts that tell what to press say the new key,
never the default one, which after the remap does nothing. Unmapped, the texts are the ones the
other tests assert (bindings.key_name gives the default display)."""

from __future__ import annotations

import json
import threading

from fixtures import appkit
from fixtures.appkit import SNAPSHOT, LiveStandIn, sync
from test_app_compare import wait_for
from test_app_dialogs import box_lines
from test_app_fit import settle, toast_lines
from test_app_live import toasts_of
from test_first_hour_app import screen_text
from test_app_unprofiled import unprofiled

from tfdash.app import bindings
from tfdash.app.app import TfdashApp
from tfdash.app.main import snapshot_app

isolated_config = appkit.isolated_config  # the fixture: the tests below take it by this name
RUN_KEYS = {"pause": "z", "rerun": "f5", "profile": "o", "baseline": "B"}


def remap(config_dir, keymap: dict[str, str]) -> None:
    """The user's config.json, with `keymap` in it (the app reads it when built)."""
    (config_dir / "config.json").write_text(json.dumps({"keymap": keymap}))


class HeldStandIn(LiveStandIn):
    """A live run paused by the user: a profile window is taken once it resumes, and neither a
    marginal nor an A/B is measured while it holds."""

    running = True
    paused = True

    def request_profile(self, steps: int = 32) -> bool:
        return True


class SlowABStandIn(LiveStandIn):
    """A live source whose A/B runs until it is cancelled."""

    def ab(self, what: str, progress=None, cancel=None, **sizes) -> dict:
        cancel.wait(10)
        return {"what": what, "unavailable": "cancelled before its first window"}


def test_key_name_is_the_footers_display_of_the_first_key_and_the_default_unmapped():
    assert bindings.key_names(None, "pause", "rerun", "profile", "ab.start", "ab.close", "picker.clear") == \
        {"pause": "space", "rerun": "r", "profile": "p", "ab.start": "⏎", "ab.close": "esc", "picker.clear": "x"}
    app = TfdashApp(LiveStandIn(), theme="tfdash-dark")
    app.set_keymap({"pause": "ctrl+z,P", "ab.close": "escape", "rerun": "f5"})
    assert bindings.key_names(app, "pause", "ab.close", "rerun", "profile") == \
        {"pause": "^z", "ab.close": "esc", "rerun": "f5", "profile": "p"}


@sync
async def test_the_run_toasts_name_the_remapped_keys(isolated_config):
    remap(isolated_config, RUN_KEYS)
    app = TfdashApp(LiveStandIn(unprofiled()), theme="tfdash-dark")  # live, no run in progress
    async with app.run_test(size=(160, 48)) as pilot:
        await settle(pilot)
        said = []
        notify = app.notify
        app.notify = lambda message, **kw: (said.append(str(message)), notify(message, **kw))
        await pilot.press("z", "o")
        await pilot.pause()
    assert said == ["no run in progress to pause (f5 re-runs)", "no run in progress to profile (f5 re-runs)"], said


@sync
async def test_profiling_while_paused_names_the_remapped_pause_key(isolated_config):
    remap(isolated_config, RUN_KEYS)
    app = TfdashApp(HeldStandIn(), theme="tfdash-dark")
    async with app.run_test(size=(160, 48)) as pilot:
        await settle(pilot)
        said = []
        notify = app.notify
        app.notify = lambda message, **kw: (said.append(str(message)), notify(message, **kw))
        await pilot.press("o")
        await pilot.pause()
    assert said == ["profiling 32 steps once the run resumes (z)"], said


@sync
async def test_an_unprofiled_live_run_names_the_remapped_profile_key(isolated_config):
    remap(isolated_config, RUN_KEYS)
    app = TfdashApp(LiveStandIn(unprofiled()), theme="tfdash-dark")
    async with app.run_test(size=(80, 24)) as pilot:
        await settle(pilot)
        folded = screen_text(app)
        await pilot.press("T")
        await settle(pilot)
        timeline = screen_text(app)
    async with TfdashApp(LiveStandIn(unprofiled()), theme="tfdash-dark").run_test(size=(160, 48)) as pilot:
        await settle(pilot)
        wide = screen_text(pilot.app)
    assert "press o to profile a window" in folded and "roofline not profiled yet · o profiles" in folded, folded
    assert "not profiled yet · o profiles a window" in timeline, timeline
    assert "· press o to profile" in wide, wide  # the roofline pane's note
    assert not [s for s in ("press p", "p profiles", "· p ", "(p)") if s in folded + timeline + wide]
    assert "no profiled step yet: o profiles a window" in timeline, timeline  # the view's own line


@sync
async def test_a_live_run_over_names_the_remapped_rerun_and_profile_keys(isolated_config):
    from tfdash.app.messages import RunEnded

    remap(isolated_config, RUN_KEYS)
    source = LiveStandIn(unprofiled())
    app = TfdashApp(source, theme="tfdash-dark")
    async with app.run_test(size=(80, 24)) as pilot:
        await pilot.pause()
        app.post_message(RunEnded(source.run_id))  # the generation reached its last token
        await settle(pilot)
        text = screen_text(app)
        await pilot.press("T")
        await settle(pilot)
        timeline = screen_text(app)
        await pilot.press("escape")
        await settle(pilot)
        said = []
        notify = app.notify
        app.notify = lambda message, **kw: (said.append(str(message)), notify(message, **kw))
        await pilot.press("o")
        await pilot.pause()
    assert said == ["the run is over: f5 re-runs, then o profiles"], said
    assert "measured — f5 re-runs, then o profiles" in text, text  # the Σ line under the table
    assert "roofline not profiled yet · f5 re-runs, then o profiles" in text, text
    assert "not profiled yet · f5 re-runs, then o profiles" in timeline, timeline
    assert "no profiled step: f5 re-runs, then o profiles a window" in timeline and "(p)" not in timeline, timeline


@sync
async def test_the_kept_run_toast_names_the_remapped_baseline_key(isolated_config, tmp_path):
    remap(isolated_config, RUN_KEYS)
    runs = tmp_path / "runs"
    app = TfdashApp(LiveStandIn(), theme="tfdash-dark", keep_dir=runs)
    async with app.run_test(size=(160, 48), notifications=True) as pilot:
        await settle(pilot)
        await pilot.press("f5")  # no run in progress: the one on screen is kept, and a new one starts
        await settle(pilot)
        toasts = " ".join(toast_lines(app))
    (kept,) = runs.iterdir()
    assert f"the run before is kept as {kept.name} (B compares against it)" in toasts, toasts


@sync
async def test_the_line_after_quitting_names_the_remapped_baseline_key(isolated_config, tmp_path):
    """The run kept on q is printed with how to reach it again: it said 'b in a run lists it' with
    the baseline key moved to B, where b does nothing."""
    from tfdash.app.main import final_line

    remap(isolated_config, RUN_KEYS)
    runs = tmp_path / "runs"
    app = TfdashApp(LiveStandIn(), theme="tfdash-dark", keep_dir=runs)
    async with app.run_test(size=(160, 48)) as pilot:
        await settle(pilot)
        await pilot.press("q")
        await pilot.pause()
    (kept,) = runs.iterdir()
    assert final_line(app).endswith(f"; snapshot kept as {kept} (tfdash open it; B in a run lists it)"), final_line(app)


@sync
async def test_the_ab_dialog_names_its_remapped_keys(isolated_config):
    remap(isolated_config, {"ab.start": "f6", "ab.close": "f7"})
    app = TfdashApp(SlowABStandIn(), theme="tfdash-dark")
    async with app.run_test(size=(120, 40)) as pilot:
        await settle(pilot)
        await pilot.press("a")
        await settle(pilot)
        idle = screen_text(app)
        await pilot.press("f6")
        await settle(pilot)
        said = []
        notify = app.notify
        app.notify = lambda message, **kw: (said.append(str(message)), notify(message, **kw))
        await pilot.press("f6")
        await settle(pilot)
        running = screen_text(app)
        await pilot.press("f7")  # cancels the A/B
        await settle(pilot)
    assert [line for line in box_lines(idle, "A/B a plan variant") if line][-1] == "pick a variant, f6 runs it", idle
    assert "─ f6 run · f7 close ─" in idle, idle
    assert "─ f7 cancel ─" in running, running
    assert said[0] == "the A/B of tilelang-unfused is still running (f7 cancels it)", said


@sync
async def test_an_ab_asked_for_while_paused_names_the_remapped_pause_key(isolated_config):
    remap(isolated_config, {"pause": "z"})
    source = HeldStandIn()
    app = TfdashApp(source, theme="tfdash-dark")
    async with app.run_test(size=(120, 40)) as pilot:
        await settle(pilot)
        await pilot.press("a")
        await settle(pilot)
        said = []
        notify = app.notify
        app.notify = lambda message, **kw: (said.append(str(message)), notify(message, **kw))
        await pilot.press("enter")
        await settle(pilot)
    assert said == ["resume first (z): the A/B runs between decode steps"], said
    assert source.asked == []  # the engine is not asked while it holds


@sync
async def test_the_picker_names_its_remapped_keys(isolated_config, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)  # no snapshot to pick
    remap(isolated_config, {"picker.close": "f8", "picker.choose": "f10", "export.snapshot": "f9"})
    app = snapshot_app(SNAPSHOT, theme="tfdash-dark", export_dir=tmp_path / "exports")
    async with app.run_test(size=(80, 24)) as pilot:
        await settle(pilot)
        await pilot.press("b")
        await settle(pilot)
        text = screen_text(app)
        await pilot.press("f10")
        await settle(pilot)
        after = box_lines(screen_text(app), "baseline snapshot")
    assert "─ f8 close ─" in text, text
    assert "f9 on the dashboard (f8 closes this) writes" in " ".join(box_lines(text, "baseline snapshot")), text
    assert "no snapshot to compare against yet: f8, then f9 writes one" in after, after


@sync
async def test_choosing_while_the_picker_reads_names_the_remapped_choose_key(isolated_config, tmp_path, monkeypatch):
    from test_app_picker_worker import slow_app

    remap(isolated_config, {"picker.choose": "f10"})
    app = slow_app(tmp_path, monkeypatch)
    async with app.run_test(size=(100, 30)) as pilot:
        await settle(pilot)
        await pilot.press("b")
        await pilot.pause()
        await pilot.press("f10")  # before the snapshots are listed
        await pilot.pause()
        lines = box_lines(screen_text(app), "baseline snapshot")
        await pilot.press("escape")  # the reader stops before its next file
    assert "still reading the snapshots: f10 once they are listed" in lines, lines


@sync
async def test_the_help_names_its_remapped_close_key(isolated_config):
    remap(isolated_config, {"help.close": "f2"})
    app = snapshot_app(SNAPSHOT, theme="tfdash-dark")
    async with app.run_test(size=(120, 40)) as pilot:
        await settle(pilot)
        await pilot.press("question_mark")
        await settle(pilot)
        text = screen_text(app)
    assert "─ f2 to close ─" in text, text


@sync
async def test_the_drill_down_names_its_remapped_keys(isolated_config):
    remap(isolated_config, {"pause": "z", "drill.marginal": "M", "drill.tab.marginal": "9"})
    source = HeldStandIn()
    app = TfdashApp(source, theme="tfdash-dark", tilelang_source=lambda f: f"def {f}():\n    ...\n")
    async with app.run_test(size=(160, 48)) as pilot:
        await settle(pilot)
        await pilot.press("enter")  # the kernel table's first row
        await settle(pilot)
        await pilot.press("9")
        await settle(pilot)
        text = screen_text(app)
        said = []
        notify = app.notify
        app.notify = lambda message, **kw: (said.append(str(message)), notify(message, **kw))
        await pilot.press("M")
        await settle(pilot)
    assert "9 marginal cost" in text and "Press M to measure it." in text, text
    assert said == ["resume first (z): the marginal is measured between decode steps"], said
    assert source.asked == []


@sync
async def test_the_live_sources_refusals_name_the_remapped_rerun_key(isolated_config):
    """While its session is built, the live source refuses a marginal and an A/B with the key to
    press once the run starts; after a run failed, with the key that starts a run."""
    from tfdash.app.live import LiveSource
    from tfdash.errors import TfdashError

    remap(isolated_config, {"rerun": "f5", "drill.marginal": "M"})
    release = threading.Event()

    def make_session(status):
        release.wait(10)
        raise TfdashError("no engine in this test")

    app = TfdashApp(LiveSource(make_session), theme="tfdash-dark")
    async with app.run_test(size=(120, 40)) as pilot:
        await pilot.pause()
        building = [app.source.marginal("L0.gate_up")["unavailable"], app.source.ab("tilelang-unfused")["unavailable"]]
        release.set()
        await wait_for(pilot, lambda: not app.source.running, timeout=10, what="the failed build")
        said = [app.source.marginal("L0.gate_up")["unavailable"], app.source.ab("tilelang-unfused")["unavailable"]]
    assert building == ["the engine is still being built: M once the run starts",
                        "the engine is still being built: ⏎ once the run starts"], building
    assert said == ["no run in progress to measure (f5 re-runs)", "no run in progress to A/B (f5 re-runs)"], said


@sync
async def test_a_remap_onto_a_taken_key_is_left_out_and_the_key_keeps_its_binding(isolated_config):
    """pause on q took quit's key: the footer offered "q Pause" and no quit, and q paused. Such a
    remap is not bound: q still quits, ? ("question_mark" as bound) still opens the help, and the
    toast says which binding keeps which key."""
    remap(isolated_config, {"pause": "q", "rerun": "?", "profile": "o"})
    app = TfdashApp(LiveStandIn(), theme="tfdash-dark")
    said = toasts_of(app)  # the config's toasts are raised as the app mounts
    async with app.run_test(size=(160, 48)) as pilot:
        await settle(pilot)
        footer = screen_text(app).splitlines()[-1]
        toasts = " | ".join(said)
        await pilot.press("question_mark")
        await settle(pilot)
        help_text = screen_text(app)
        await pilot.press("escape")
        await settle(pilot)
        await pilot.press("q")
        await settle(pilot)
    assert "q Quit" in footer and "q Pause" not in footer and "o Profile" in footer, footer
    assert "pause stays on 'space'" in toasts and "rerun stays on 'r'" in toasts, toasts
    assert "keys" in help_text and "profile" in help_text, help_text
    assert not app.is_running


@sync
async def test_a_remap_onto_a_key_textual_holds_is_left_out_and_the_palette_still_opens(isolated_config):
    """profile on ctrl+p took the command palette's key: Textual dropped its own binding for the
    remapped one, so ^p profiled, the footer's "^p palette" read "^p Profile", and the palette the
    help sends every action to could not be opened. pause on tab never paused: the screen's focus
    key answers first. Such a remap is not bound, and the toast says so."""
    from textual.command import CommandPalette

    remap(isolated_config, {"profile": "ctrl+p", "pause": "tab", "rerun": "f5"})
    app = TfdashApp(LiveStandIn(), theme="tfdash-dark")
    said = toasts_of(app)
    async with app.run_test(size=(160, 48)) as pilot:
        await settle(pilot)
        footer = screen_text(app).splitlines()[-1]
        toasts = " | ".join(said)
        await pilot.press("ctrl+p")
        await settle(pilot)
        palette = isinstance(app.screen, CommandPalette)
    assert "^p palette" in footer and "Profile" in footer and "^p Profile" not in footer, footer
    assert "f5 Re-run" in footer, footer
    assert "profile stays on 'p'" in toasts and "command palette" in toasts, toasts
    assert "pause stays on 'space'" in toasts and "tab" in toasts, toasts
    assert palette, "ctrl+p did not open the command palette"


@sync
async def test_the_help_and_the_palette_say_ctrl_c_is_the_remapped_quit_key(isolated_config):
    """quit on Q: the help's ^c row still read "Same as q", q no longer quitting; the dialogs' close
    rows said "(q too)" whatever their keys were. The help and the palette name the key bound now;
    the ^c row says how it differs from quit: it exits 130, as an interrupted command does."""
    remap(isolated_config, {"quit": "Q"})
    app = snapshot_app(SNAPSHOT, theme="tfdash-dark")
    async with app.run_test(size=(160, 48)) as pilot:
        await settle(pilot)
        commands = {c.title: c.help for c in app.get_system_commands(app.screen)}
        await pilot.press("question_mark")
        await settle(pilot)
        rows = [" ".join(str(c) for c in app.screen.query_one("#help-table").get_row_at(i))
                for i in range(app.screen.query_one("#help-table").row_count)]
    interrupt = next(r for r in rows if r.rstrip().endswith("interrupt"))
    assert "As Q, but the command exits 130 (interrupted), where Q exits 0" in interrupt, interrupt
    assert not any("q too" in r for r in rows), rows
    assert commands["Quit (Q)"] == "Stop the engine cleanly, keep what was measured, quit", commands


def test_every_tooltips_key_placeholder_names_a_binding():
    """A tooltip's "{id}" is replaced by that binding's key (bindings.tooltip); one naming no binding
    would raise out of the help screen and the palette, so each is resolved here, once."""
    import re

    from tfdash.app import bindings

    every = [b for table in bindings.SCOPES.values() for b in table] + bindings.HELP
    placeholders = [b for b in every if re.search(r"\{[a-z_.]+\}", b.tooltip or "")]
    assert placeholders, "no tooltip names another binding's key: this test checks nothing"
    for b in every:
        assert "{" not in bindings.tooltip(None, b), b.id


def boxed(app, title: str) -> bool:
    """Whether a dialog whose top border carries `title` is on the screen."""
    return any("╭" in line and title in line for line in screen_text(app).splitlines())


@sync
async def test_a_remap_onto_a_key_a_dialogs_table_holds_is_left_out(isolated_config, tmp_path, monkeypatch):
    """help.close on down never closed the help, picker.close on ctrl+end never closed the picker,
    drill.back on ctrl+home never left the drill-down, ab.close on up never closed the A/B: the
    focused table's cursor keys answer first there, as the kernel table's do on the dashboard (pause
    on ctrl+end never paused). Each such remap is left out with a toast naming the table and the key
    its binding keeps, and that key still closes. A priority binding answers before the table (the
    drill-down's tabs swapped onto ←→ still switch), and the timeline, whose keys no table takes, binds
    ctrl+home."""
    import shutil

    from textual.widgets import TabbedContent

    monkeypatch.chdir(tmp_path)
    for name in ("a.json", "b.json"):  # the picker lists them: its table has the focus
        shutil.copy(SNAPSHOT, tmp_path / name)
    remap(isolated_config, {"help.close": "down", "picker.close": "ctrl+end", "drill.back": "ctrl+home",
                            "ab.close": "up", "pause": "ctrl+end", "timeline.fit": "ctrl+home",
                            "drill.tab.prev": "right", "drill.tab.next": "left"})
    app = TfdashApp(LiveStandIn(), theme="tfdash-dark", tilelang_source=lambda f: f"def {f}():\n    ...\n")
    said = toasts_of(app)
    messages = []
    titles = {}
    async with app.run_test(size=(160, 48), message_hook=messages.append) as pilot:
        await settle(pilot)
        for opener, key, title in ((["question_mark"], "down", "keys"), (["b"], "ctrl+end", "baseline snapshot"),
                                   (["a"], "up", "A/B a plan variant")):
            await pilot.press(*opener)
            await settle(pilot)
            await pilot.press(key)  # the table's: the dialog stays
            await settle(pilot)
            stays = boxed(app, title)
            await pilot.press("escape")  # the key the binding keeps
            await settle(pilot)
            titles[title] = (stays, boxed(app, title))
        await pilot.press("enter")  # the drill-down of the kernel table's first row
        await settle(pilot)
        await pilot.press("left")  # drill.tab.next, a priority binding: the next tab
        await settle(pilot)
        await pilot.press("ctrl+home")  # the instances table's: the drill-down stays
        await settle(pilot)
        drill = screen_text(app)
        await pilot.press("escape")
        await settle(pilot)
        back = screen_text(app)
    toasts = " | ".join(said)
    assert titles == {"keys": (True, False), "baseline snapshot": (True, False), "A/B a plan variant": (True, False)}
    for bid, table, key in (("help.close", "the help's table", "down"), ("picker.close", "the snapshot list", "ctrl+end"),
                            ("ab.close", "the variants table", "up"), ("drill.back", "the instances table", "ctrl+home"),
                            ("pause", "the kernel table", "ctrl+end")):
        assert f"{bid} and {table}'s cursor key are both on {key!r}: {bid} stays on " in toasts, (bid, toasts)
    assert toasts.count("pause and") == 1, toasts  # once, though the drill-down's table takes it too
    assert "timeline.fit" not in toasts and "drill.tab" not in toasts, toasts
    assert [m.pane.id for m in messages if isinstance(m, TabbedContent.TabActivated)][-1:] == ["cuda"]
    assert "instances" in drill and "instances" not in back, back
