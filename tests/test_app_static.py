"""The dashboard on a recorded snapshot (tests/fixtures/snapshot-1.7b.json), driven with Pilot:
the kernel table (sort, filter, group), the drill-down and back, every export loading back, the
theme and its persistence, the help screen, the palette, and `tfdash open`'s errors."""

from __future__ import annotations

import csv
import json

import pytest
from fixtures.appkit import SNAPSHOT, isolated_config, sync  # noqa: F401  (fixture)
from textual.widgets import DataTable

from tfdash.app.main import open_main, snapshot_app
from tfdash.errors import TfdashError

SIZE = (160, 48)


def fake_tilelang(family: str) -> str:
    return f"def {family}_kernel(dims):\n    ...  # a stand-in: the test does not depend on kernels/*.py\n"


def make_app(**kw):
    kw.setdefault("tilelang_source", fake_tilelang)
    return snapshot_app(SNAPSHOT, **kw)


def table_labels(app) -> list[str]:
    from tfdash.app.widgets.kernel_table import KernelTable

    return [r.label for r in app.screen.query_one(KernelTable).rows]


@sync
async def test_opens_the_snapshot_read_only(isolated_config):
    app = make_app()
    async with app.run_test(size=SIZE) as pilot:
        await pilot.pause()
        assert app.state == "snapshot"
        assert app.snapshot is not None and app.snapshot.new_tokens == 2048
        from tfdash.app.widgets.continuation import Continuation

        cont = app.screen.query_one(Continuation)
        assert cont.text.strip() and cont.text.endswith(app.snapshot.tokens[-1].text)
        await pilot.press("space")  # pause: a read-only snapshot says so and stays put
        await pilot.press("p")
        await pilot.pause()
        assert app.state == "snapshot"


@pytest.mark.parametrize("size", [(160, 48), (80, 24)])
@sync
async def test_a_saved_snapshot_offers_no_key_that_needs_an_engine(isolated_config, size):
    """space, r and p have no engine to act on in a saved snapshot: the footer and the palette leave
    them out, and pressed anyway each says it is read-only. `a` with no A/B recorded says so at once,
    not after a list of variants that cannot run."""
    from test_app_fit import footer, settle, toast_lines

    app = make_app()
    async with app.run_test(size=size, notifications=True) as pilot:
        await settle(pilot)
        keys = footer(app)
        assert "q Quit" in keys and not any(k in keys for k in ("space Pause", "r Re-run", "p Profile")), keys
        titles = [c.title for c in app.get_system_commands(app.screen)]
        assert not any(t.startswith(("Pause", "Re-run", "Profile", "A/B")) for t in titles), titles
        for key, what in (("space", "pause"), ("r", "re-run"), ("p", "profile"), ("a", "A/B")):
            await pilot.press(key)
            await settle(pilot)
            text = " ".join(toast_lines(app))
            assert f"nothing to {what}" in text and "A/B a plan variant" not in text, (key, text)
            app.clear_notifications()
        await pilot.press("enter")  # the drill-down's footer, too
        await settle(pilot)
        keys = footer(app)
        assert "esc Back" in keys and not any(k in keys for k in ("space Pause", "r Re-run", "p Profile")), keys


@sync
async def test_sort_filter_and_group_the_kernel_table(isolated_config):
    app = make_app()
    async with app.run_test(size=SIZE) as pilot:
        await pilot.pause()
        from tfdash.app.widgets.kernel_table import KernelTable

        kt = app.screen.query_one(KernelTable)
        # Default: grouped by op, costliest measured first.
        assert kt.group == "op"
        measured = [r.measured for r in kt.rows]
        assert measured == sorted(measured, reverse=True)
        assert table_labels(app)[0] == "gate_up"
        # s: the next column to the right (p90, then gap); S reverses it.
        await pilot.press("s")
        assert kt.sort == ("p90", True) and "p90" in app.screen.query_one("#kernel-table", DataTable).columns
        p90 = [r.p90 for r in kt.rows]
        assert None not in p90 and p90 == sorted(p90, reverse=True)
        assert all(r.p90 >= r.measured for r in kt.rows)  # Σ p90 over the members, never under Σ p50
        await pilot.press("s")
        assert kt.sort == ("gap", True)
        gap = [r.gap for r in kt.rows]
        assert gap == sorted(gap, reverse=True)
        assert table_labels(app)[0] == "argmax"
        await pilot.press("S")
        assert kt.sort == ("gap", False)
        assert [r.gap for r in kt.rows] == sorted(gap)
        # Every column sorts.
        for _ in range(8):
            await pilot.press("s")
            key, desc = kt.sort
            values = [r.value(key) for r in kt.rows if r.value(key) is not None]
            assert values == sorted(values, reverse=desc), key
        # g: op -> family -> layer -> none (every launch).
        await pilot.press("g")
        assert kt.group == "family"
        assert sorted(table_labels(app)) == sorted({k.family for k in app.snapshot.kernels})
        assert "gemv" in table_labels(app)
        await pilot.press("g")
        assert kt.group == "layer"
        assert len(kt.rows) == 29  # 28 layers and the launches outside them
        await pilot.press("g")
        assert kt.group == "none"
        n = len(app.snapshot.kernels)
        assert len(kt.rows) == n and kt.table.row_count == n
        # /: filter by name, live; Enter keeps it, Escape clears it.
        await pilot.press("slash")
        await pilot.press(*"gate_up")
        await pilot.pause()
        assert len(kt.rows) == 28 and all(r.label.endswith(".gate_up") for r in kt.rows)
        await pilot.press("enter")
        assert kt.filter_text == "gate_up" and kt.table.has_focus
        await pilot.press("g")  # group by op: the filter holds
        assert table_labels(app) == ["gate_up"]
        await pilot.press("slash", "escape")
        await pilot.pause()
        assert kt.filter_text == "" and len(kt.rows) == len({r.role.split(".")[-1] for r in app.snapshot.kernels})
        # Two words must both match.
        await pilot.press("slash", *"gemv proj", "enter")
        assert sorted(table_labels(app)) == ["o_proj", "qkv_proj"]


@sync
async def test_the_cursor_on_the_top_row_stays_on_top_and_a_moved_one_follows_its_row(isolated_config):
    """A fresh table's cursor is on the costliest op; re-sorted, ⏎ opens the new top row, not the old
    top row wherever it went. A cursor the user moved follows its row through a re-sort."""
    from tfdash.app.screens.drill import DrillScreen

    app = make_app()
    async with app.run_test(size=SIZE) as pilot:
        await pilot.pause()
        assert table_labels(app)[0] == "gate_up"
        await pilot.press("s", "s")  # by gap: argmax on top, gate_up far down
        assert table_labels(app)[0] == "argmax" and table_labels(app).index("gate_up") > 2
        await pilot.press("enter")
        await pilot.pause()
        assert isinstance(app.screen, DrillScreen) and app.screen.row.label == "argmax"
        await pilot.press("escape", "down", "down")
        await pilot.pause()
        chosen = table_labels(app)[2]
        await pilot.press("S")  # reversed: the chosen op moves
        assert table_labels(app).index(chosen) != 2
        await pilot.press("enter")
        await pilot.pause()
        assert isinstance(app.screen, DrillScreen) and app.screen.row.label == chosen


KEY_NAMES = {"/": "slash", "_": "underscore", "\x1b": "escape", "\r": "enter"}


async def burst(app, pilot, typed: str) -> None:
    """`typed` as a terminal delivers a paste or a fast typist: every key queued before the app
    handles the first (Pilot's press waits for the app to go idle after each key)."""
    from textual import events

    for ch in typed:
        app.post_message(events.Key(KEY_NAMES.get(ch, ch), ch if ch.isprintable() else None))
    for _ in range(3):
        await pilot.pause()


@sync
async def test_what_is_typed_right_after_slash_goes_into_the_filter_and_esc_clears_it(isolated_config, tmp_path,
                                                                                       monkeypatch):
    """`/` gives the filter the keys at once: typed straight after it, `lm_head` is the filter (its
    e and a were the table's export and A/B keys while the focus was still on its way), and an esc
    straight after `/` clears a kept filter, as the input's placeholder and the caption promise."""
    from test_app_fit import screen_text

    out = tmp_path / "out"
    out.mkdir()
    monkeypatch.chdir(out)
    app = make_app(export_dir=out)
    async with app.run_test(size=(120, 40)) as pilot:
        await pilot.pause()
        await burst(app, pilot, "/lm_head\r")
        text = screen_text(app)
        assert "filter lm_head  1 row · 1 of 143 launches" in text and "A/B a plan variant" not in text, text
        await burst(app, pilot, "/\x1b")
        text = screen_text(app)
        assert "filter" not in text.split("╭─ kernels")[1].splitlines()[1] and "8 rows" in text, text
    assert list(out.iterdir()) == [], "a key meant for the filter exported something"


@sync
async def test_click_a_header_to_sort(isolated_config):
    app = make_app()
    async with app.run_test(size=SIZE) as pilot:
        await pilot.pause()
        from tfdash.app.widgets.kernel_table import KernelTable

        kt = app.screen.query_one(KernelTable)
        gap = kt.table.columns["gap"]
        kt.table.post_message(kt.table.HeaderSelected(kt.table, gap.key, 4, gap.label))  # a click on "gap ×"
        await pilot.pause()
        assert kt.sort == ("gap", True)
        gaps = [r.gap for r in kt.rows]
        assert gaps == sorted(gaps, reverse=True) and table_labels(app)[0] == "argmax"


@sync
async def test_drill_into_a_kernel_and_back(isolated_config):
    calls = []

    def fake_cuda(launch):
        calls.append(launch.role)
        return f"extern \"C\" __global__ void {launch.kernel}_kernel() {{}}\n"

    app = make_app(cuda_source=fake_cuda)
    messages = []
    async with app.run_test(size=SIZE, message_hook=messages.append) as pilot:
        await pilot.pause()
        from tfdash.app.screens.drill import DrillScreen
        from tfdash.app.screens.main import MainScreen
        from tfdash.app.widgets.code import CodeView

        await pilot.press("enter")
        await pilot.pause()
        drill = app.screen
        assert isinstance(drill, DrillScreen)
        assert drill.row.label == "gate_up" and drill.row.count == 28
        inst = drill.query_one("#instances-table")
        assert inst.row_count == 28
        assert drill.query_one("#operands-table").row_count == 4  # x, norm_w, w, out
        caption = str(drill.query_one("#operands-caption").render())  # the launch's grid, and its rounds
        assert ("grid 264, 256 threads · 6,144 2-row groups over 2,112 warps: 3 rounds, "
                "the last 91% busy") in caption, caption
        sweep = str(drill.query_one("#sweep-caption").render())  # the sweep's axis, as the pane says it
        assert "over ctx 0…2,111" in sweep and "measured" in sweep and "@ 1,024" in sweep
        assert drill_measured(app, drill) == ([1024], pytest.approx([drill.row.measured]))
        assert "gemv_kernel" in drill.query_one("#tilelang-code", CodeView).text
        # The CUDA tab compiles lazily, in a worker; then it is cached.
        assert calls == []
        await pilot.press("2")
        await app.workers.wait_for_complete()
        await pilot.pause()
        assert calls == ["L0.gate_up"]
        assert "gemv_gate_up_kernel" in drill.query_one("#cuda-code", CodeView).text
        # Moving the cursor moves the current launch; same kernel and dims: no second compile.
        await pilot.press("down")
        await app.workers.wait_for_complete()
        await pilot.pause()
        assert drill.current == [k.index for k in app.snapshot.kernels if k.role == "L1.gate_up"][0]
        assert calls == ["L0.gate_up"]
        # m on a saved snapshot: unavailable, with the reason; the recorded marginal is shown.
        await pilot.press("m")
        await app.workers.wait_for_complete()
        await pilot.pause()
        from tfdash.app.messages import MarginalMeasured

        [m] = {id(m): m for m in messages if isinstance(m, MarginalMeasured)}.values()  # it bubbles: seen twice
        assert m.what == "L1.gate_up" and "no live session" in m.result["unavailable"]
        assert "no live session to measure" in str(drill.query_one("#marginal-body").render())
        await pilot.press("escape")
        await pilot.pause()
        assert isinstance(app.screen, MainScreen)
        # Drill from one launch (group none): its op opens, every layer, the cursor on that launch.
        await pilot.press("g", "g", "g", "slash", *"L3.attention", "enter", "enter")
        await pilot.pause()
        assert isinstance(app.screen, DrillScreen) and app.screen.row.label == "attention"
        assert app.screen.row.count == 28
        l3 = [k.index for k in app.snapshot.kernels if k.role == "L3.attention"][0]
        assert app.screen.current == l3
        assert app.screen.query_one("#instances-table").cursor_row == 3
        kinds = {str(cell) for i in range(app.screen.query_one("#operands-table").row_count)
                 for cell in app.screen.query_one("#operands-table").get_row_at(i)}
        assert "KV cache" in kinds
        caption = str(app.screen.query_one("#operands-caption").render())
        assert "17 cache blocks over 32 programs a kv head: 1 round, 53% busy" in caption, caption  # ctx 1,024
        await pilot.press("backspace")
        assert isinstance(app.screen, MainScreen)


def drill_measured(app, drill):
    from tfdash.app import drill_model

    return drill_model.measured_points(app.windows, drill.row.members)


@sync
async def test_cuda_unavailable_is_a_message(isolated_config):
    def broken(launch):
        raise RuntimeError("nvcc not found\nmore detail")

    app = make_app(cuda_source=broken)
    async with app.run_test(size=SIZE) as pilot:
        await pilot.pause()
        await pilot.press("enter", "2")
        await app.workers.wait_for_complete()
        await pilot.pause()
        from tfdash.app.widgets.code import CodeView

        assert app.screen.query_one("#cuda-code", CodeView).text == "unavailable: nvcc not found"


@pytest.mark.parametrize("kind,key", [("snapshot", "e"), ("csv", "c"), ("trace", "t"), ("svg", "ctrl+s")])
@sync
async def test_each_export_writes_a_file_that_loads_back(isolated_config, tmp_path, kind, key):
    app = make_app(export_dir=tmp_path / "out")
    async with app.run_test(size=SIZE) as pilot:
        await pilot.pause()
        await pilot.press(key)
        await pilot.pause()
        path = app.last_export
        assert path is not None and path.is_file() and path.parent == tmp_path / "out"
        assert any(n.message.startswith(path.name + "\nin ") for n in app._notifications)  # the toast names the file
        if kind == "snapshot":
            from tfdash.profiling.export import load_snapshot

            assert load_snapshot(path) == app.snapshot
        elif kind == "csv":
            rows = list(csv.DictReader(path.open(encoding="utf-8")))
            assert len(rows) == len(app.snapshot.kernels) and rows[0]["role"] == "embed"
        elif kind == "trace":
            trace = json.loads(path.read_text(encoding="utf-8"))
            names = {e["name"] for e in trace["traceEvents"]}
            assert "step" in names and "gemv_lm_head_kernel" in names
        else:
            assert "<svg" in path.read_text(encoding="utf-8")
        # A second export of the same kind never overwrites the first.
        await pilot.press(key)
        await pilot.pause()
        assert app.last_export != path and app.last_export.is_file()


@sync
async def test_the_export_toast_shows_the_file_name_whole_and_its_folder_at_80x24(isolated_config, tmp_path):
    """A Chrome trace's name (the longest an export takes) is on one line of the toast at 80
    columns, and the folder below it, broken only after a "/"."""
    from test_app_fit import settle, toast_lines

    out = tmp_path / "a-folder-whose-name-is-long-enough" / "and-another-below-it" / "exports"
    out.mkdir(parents=True)  # there already: the toast says no folder was made
    app = make_app(export_dir=out)
    async with app.run_test(size=(80, 24), notifications=True) as pilot:
        await settle(pilot)
        await pilot.press("t")
        await settle(pilot)
        lines = toast_lines(app)
    assert len(app.last_export.name) >= 44
    assert lines[:2] == ["Chrome trace written", app.last_export.name], lines
    assert lines[2].startswith("in /") and "".join(lines[2:])[3:] == str(out), lines
    assert all(line.endswith("/") for line in lines[2:-1]), lines


@sync
async def test_an_export_into_a_folder_it_made_says_so_in_its_toast(isolated_config, tmp_path):
    """The export made its missing folder silently: a typo in --export-dir or the config file's
    export_dir went unseen. The toast says the folder was created, as `tfdash diff` says it; the
    next export into it, not."""
    from test_app_fit import settle, toast_lines

    out = tmp_path / "exprots" / "today"
    app = make_app(export_dir=out)
    async with app.run_test(size=(80, 24), notifications=True) as pilot:
        await settle(pilot)
        await pilot.press("e")
        await settle(pilot)
        first = toast_lines(app)
        app.clear_notifications()
        await pilot.press("c")
        await settle(pilot)
        second = toast_lines(app)
    assert first[0] == "snapshot written" and first[1].endswith(".json"), first
    at = next((i for i, line in enumerate(first) if line.startswith("(its ")), len(first))
    assert "".join(first[2:at])[3:] == str(out), first  # "in" the folder, then what was made
    assert " ".join(first[at:]).replace("/ ", "/") == f"(its folder {out} was created)", first
    assert second[0] == "CSV written" and not any("created" in line for line in second), second


@sync
async def test_save_on_quit_into_a_folder_it_made_says_so(isolated_config, tmp_path):
    """`--save runs/today/final.json` made its missing folders on quit and the line after the screen
    said only "snapshot saved to ...": a typo in a folder's name went unseen. It says so, as
    `tfdash diff` does; a save into a folder that is there, not, but over the first save it names the
    run it replaced."""
    from tfdash.app.main import final_line
    from tfdash.profiling.export import load_snapshot

    lines = []
    for _ in range(2):
        save = tmp_path / "runs" / "today" / "final.json"
        app = make_app(save_path=save)
        async with app.run_test(size=SIZE) as pilot:
            await pilot.pause()
            await pilot.press("q")
            await pilot.pause()
        assert app.saved == save and save.is_file()
        lines.append(final_line(app))
        recorded = load_snapshot(save).meta.started_at
    head = "tfdash: 2048 new tokens, "
    assert lines[0].startswith(head) and lines[0].endswith(
        f" tok/s over the run; snapshot saved to {save} (its folder {save.parent} was created)"), lines[0]
    assert lines[1].startswith(head) and lines[1].endswith(
        f"; snapshot saved to {save} (replacing the snapshot of the run recorded {recorded})"), lines[1]


@sync
async def test_export_to_an_unwritable_place_is_a_toast(isolated_config, tmp_path):
    blocker = tmp_path / "file"
    blocker.write_text("x")
    app = make_app(export_dir=blocker / "sub")
    async with app.run_test(size=SIZE) as pilot:
        await pilot.pause()
        await pilot.press("e")
        await pilot.pause()
        assert app.last_export is None
        [error] = [n for n in app._notifications if n.severity == "error"]
    assert error.message == f"cannot write {blocker / 'sub'}: Not a directory (pass another --export-dir)", error


@sync
async def test_export_to_a_configured_folder_that_cannot_be_made_names_the_config_file(isolated_config, tmp_path):
    """The folder came from config.json: the toast says so, with the file to fix, in one line."""
    import json

    blocker = tmp_path / "file"
    blocker.write_text("x")
    (isolated_config / "config.json").write_text(json.dumps({"export_dir": str(blocker / "sub")}))
    app = make_app()
    async with app.run_test(size=SIZE) as pilot:
        await pilot.pause()
        app.clear_notifications()
        await pilot.press("c")
        await pilot.pause()
        [error] = [n for n in app._notifications if n.title == "export CSV"]
    assert error.message == (f"cannot write {blocker / 'sub'}: Not a directory "
                             f"(fix export_dir in {isolated_config / 'config.json'})"), error


@sync
async def test_theme_switch_persists_to_the_config_file(isolated_config):
    app = make_app()
    async with app.run_test(size=SIZE) as pilot:
        await pilot.pause()
        assert app.theme == "tfdash-dark"
        app.theme = "tfdash-light"
        await pilot.pause()
        assert app.theme_variables["tf-good"] == "#1E7F4F"
    saved = json.loads((isolated_config / "config.json").read_text(encoding="utf-8"))
    assert saved["theme"] == "tfdash-light"
    app2 = make_app()
    async with app2.run_test(size=SIZE) as pilot:
        await pilot.pause()
        assert app2.theme == "tfdash-light"


@sync
async def test_theme_key_opens_the_picker_with_our_themes(isolated_config):
    app = make_app()
    async with app.run_test(size=SIZE) as pilot:
        await pilot.pause()
        assert {"tfdash-dark", "tfdash-light", "tfdash-contrast"} <= set(app.available_themes)
        await pilot.press("ctrl+t")
        await pilot.pause()
        from textual.command import CommandPalette

        assert isinstance(app.screen, CommandPalette)
        await pilot.press(*"tfdash-contrast")
        await pilot.pause(0.3)
        await pilot.press("enter")
        await pilot.pause()
        assert app.theme == "tfdash-contrast"
    assert json.loads((isolated_config / "config.json").read_text())["theme"] == "tfdash-contrast"


@sync
async def test_keymap_from_the_config_file(isolated_config):
    (isolated_config / "config.json").write_text(json.dumps({"keymap": {"table.group": "x", "nope": "y"}}))
    app = make_app()
    async with app.run_test(size=SIZE) as pilot:
        await pilot.pause()
        from tfdash.app.widgets.kernel_table import KernelTable

        kt = app.screen.query_one(KernelTable)
        await pilot.press("g")
        assert kt.group == "op"
        await pilot.press("x")
        assert kt.group == "family"
        assert any("nope" in n.message for n in app._notifications)


@sync
async def test_a_broken_config_file_is_a_warning_not_a_crash(isolated_config):
    (isolated_config / "config.json").write_text("{not json")
    app = make_app()
    async with app.run_test(size=SIZE) as pilot:
        await pilot.pause()
        assert app.theme == "tfdash-dark"
        assert any(n.severity == "warning" and "config.json" in n.message for n in app._notifications)


@sync
async def test_help_lists_every_binding_id(isolated_config):
    from tfdash.app import bindings

    app = make_app()
    async with app.run_test(size=SIZE) as pilot:
        await pilot.pause()
        await pilot.press("question_mark")
        await pilot.pause()
        from tfdash.app.screens.help import HelpScreen

        assert isinstance(app.screen, HelpScreen)
        table = app.screen.query_one("#help-table")
        ids = {str(table.get_row_at(i)[-1]) for i in range(table.row_count)} - {""}
        assert ids == {b.id for t in bindings.SCOPES.values() for b in t}
        headings = [str(table.get_row_at(i)[1]) for i in range(table.row_count) if not str(table.get_row_at(i)[-1])]
        assert [h.strip("─ ") for h in headings] == list(bindings.SCOPES), headings
        await pilot.press("escape")
        assert not isinstance(app.screen, HelpScreen)


@sync
async def test_the_command_palette_has_the_actions(isolated_config):
    app = make_app()
    async with app.run_test(size=SIZE) as pilot:
        await pilot.pause()
        titles = [c.title for c in app.get_system_commands(app.screen)]
        for want in ("Export snapshot", "Export CSV", "Export trace", "Export SVG screenshot", "Sort", "Filter", "Group",
                     "Drill in", "Quit", "Help"):
            assert any(t.startswith(want + " (") for t in titles), want
        # Typed as a user would name them: each finds its command, first.
        from textual.fuzzy import Matcher

        for query, want in (("export csv", "Export CSV (c)"), ("compare", "Baseline: compare with a snapshot (b)")):
            best = max(titles, key=Matcher(query).match)
            assert best == want and Matcher(query).match(best) > 0, (query, best)
        # Running one from the palette does what the key does.
        from tfdash.app.widgets.kernel_table import KernelTable

        await pilot.press("ctrl+p")
        await pilot.press(*"Group (g)")
        await pilot.pause(0.3)
        await pilot.press("enter")
        await pilot.pause()
        assert app.screen.query_one(KernelTable).group == "family"


@sync
async def test_quit_returns_the_snapshot(isolated_config):
    app = make_app()
    async with app.run_test(size=SIZE) as pilot:
        await pilot.pause()
        await pilot.press("q")
        await pilot.pause()
    assert app.return_value == app.snapshot and app.final_snapshot == app.snapshot


def test_open_help_and_errors(tmp_path, capsys):
    with pytest.raises(SystemExit) as e:
        open_main(["--help"])
    assert e.value.code == 0
    assert "SNAPSHOT.json" in capsys.readouterr().out
    with pytest.raises(TfdashError, match="no such snapshot file"):
        open_main([str(tmp_path / "missing.json")])
    bad = tmp_path / "bad.json"
    bad.write_text('{"schema": "tfdash.snapshot", "version": 1}')
    with pytest.raises(TfdashError, match="bad.json"):
        open_main([str(bad)])


def test_open_bad_file_is_one_line_from_the_cli(tmp_path):
    from conftest import assert_one_line_error, run_tfdash

    bad = tmp_path / "bad.json"
    bad.write_text("not json at all")
    r = run_tfdash("open", str(bad), timeout=60)
    assert r.rc == 2
    assert_one_line_error(r.stderr, "bad.json")


@pytest.mark.slow
def test_cuda_source_of_a_launch():
    """The real path: a child process compiles the launch for sm_90a. Without tilelang or nvcc the
    reason comes back as one line; on a host without a CUDA driver the generated source still does."""
    from tfdash.app.drill_model import cuda_source, plan_of
    from tfdash.profiling.export import load_snapshot

    plan = plan_of(load_snapshot(SNAPSHOT))
    launch = next(la for la in plan.launches if la.role == "L0.gate_up")
    try:
        src = cuda_source(launch)
    except RuntimeError as e:
        assert str(e) and "\n" not in str(e)
        return
    assert "__global__" in src and "gemv_gate_up_kernel" in src
    assert src.startswith("// ptxas")  # the compiler's registers and spills head the source


def test_dashboard_errors_are_one_line_before_the_screen_opens(tmp_path):
    from conftest import assert_one_line_error, run_tfdash

    env = {"TFDASH_FORCE_TUI": "1", "TFDASH_CONFIG_DIR": str(tmp_path)}
    r = run_tfdash("--ckpt", str(tmp_path / "nope"), timeout=60, env=env)
    assert r.rc == 2
    assert_one_line_error(r.stderr, "nope", "does not exist")
    r = run_tfdash("--model", "qwen3-tiny", "--device", "cpu", "--max-new-tokens", "9000", timeout=60, env=env)
    assert r.rc == 2
    assert_one_line_error(r.stderr, "max_position_embeddings")


def test_the_drill_down_says_when_its_source_is_not_what_the_snapshot_ran():
    import dataclasses

    from tfdash.app.drill_model import source_note
    from tfdash.profiling.export import load_snapshot
    from tfdash.profiling.meta import kernels_source

    snap = load_snapshot(SNAPSHOT)  # recorded before snapshots kept the hash
    assert "before snapshots kept" in source_note(snap, live=False)
    assert source_note(snap, live=True) is None  # a live run's source is today's
    today = kernels_source()
    assert today and len(today) == 12
    same = dataclasses.replace(snap, meta=dataclasses.replace(snap.meta, kernels_source=today))
    assert source_note(same, live=False) is None
    other = dataclasses.replace(snap, meta=dataclasses.replace(snap.meta, kernels_source="0" * 12))
    assert "0" * 12 in source_note(other, live=False) and today in source_note(other, live=False)


@sync
async def test_space_is_offered_as_resume_while_paused(isolated_config):
    """The footer names what space does now: Pause while the run goes on, Resume once it holds."""
    from fixtures.appkit import LiveStandIn
    from test_app_fit import footer, settle

    from tfdash.app.app import TfdashApp

    class Pausable(LiveStandIn):
        running = True

        def pause(self, paused: bool = True) -> None:
            self.paused = paused

    app = TfdashApp(Pausable(), theme="tfdash-dark")
    async with app.run_test(size=(160, 48)) as pilot:
        await settle(pilot)
        running = footer(app)
        await pilot.press("space")
        await settle(pilot)
        paused = footer(app)
        await pilot.press("space")
        await settle(pilot)
        resumed = footer(app)
    assert "space Pause" in running and "Resume" not in running, running
    assert "space Resume" in paused and "space Pause" not in paused, paused
    assert "space Pause" in resumed, resumed
