"""The dialogs over the dashboard, as a user meets them at 80x24 and 120x40: what each shows before
anything is chosen or run, and that the room goes to what there is to read."""

from __future__ import annotations

import dataclasses

import pytest
from fixtures.appkit import SNAPSHOT, LiveStandIn, isolated_config, sync  # noqa: F401  (fixture)
from test_app_fit import make_app, screen_text, settle

from tfdash.app.app import TfdashApp
from tfdash.app.main import snapshot_app
from tfdash.profiling.ab import VARIANTS
from tfdash.profiling.export import load_snapshot


def box_lines(text: str, title: str) -> list[str]:
    """The lines inside the dialog whose top border carries `title`, stripped."""
    lines = text.splitlines()
    top = next(i for i, line in enumerate(lines) if title in line)
    x = lines[top].rindex("╭", 0, lines[top].index(title))
    inside = []
    for line in lines[top + 1:]:
        if line[x:x + 1] != "│":
            break
        inside.append(line[x + 1:].split("│")[0].strip())
    return inside


def live_app():
    """The dashboard of a live run (a stand-in source): the A/B dialog opens before anything ran."""
    return TfdashApp(LiveStandIn(), theme="tfdash-dark")


@pytest.mark.parametrize(("size", "rows"), [((80, 24), 12), ((120, 40), len(VARIANTS))])
@sync
async def test_the_ab_dialog_before_a_run_gives_the_variants_the_room(isolated_config, size, rows):
    """Nothing run yet: no empty "side" or "op" headers under the variants, one line that says what
    ⏎ does here, and the variants take the rest (all of them in 120x40)."""
    app = live_app()
    async with app.run_test(size=size) as pilot:
        await settle(pilot)
        await pilot.press("a")
        await settle(pilot)
        inside = box_lines(screen_text(app), "A/B a plan variant")
    shown = [name for name in VARIANTS if any(line.split(" ")[0] == name for line in inside)]
    assert len(shown) >= rows, inside
    assert not any(line.startswith(("side ", "op ")) for line in inside), inside
    assert [line for line in inside if line][-1] == "pick a variant, ⏎ runs it", inside


@sync
async def test_an_ab_that_did_not_run_shows_its_reason_and_no_empty_tables(isolated_config):
    result = {"what": "tilelang-gu1", "unavailable": "RuntimeError: no GPU"}
    app = snapshot_app(dataclasses.replace(load_snapshot(SNAPSHOT), ab=(result,)), theme="tfdash-dark")
    async with app.run_test(size=(120, 40)) as pilot:
        await settle(pilot)
        await pilot.press("a")
        await settle(pilot)
        inside = box_lines(screen_text(app), "A/B a plan variant")
    assert "A/B tilelang-gu1: RuntimeError: no GPU" in inside and "the A/B did not run" in inside, inside
    assert not any(line.startswith(("side ", "op ")) for line in inside), inside


@sync
async def test_the_picker_with_nothing_to_offer_is_its_hint_and_enter_says_why(isolated_config, tmp_path,
                                                                                monkeypatch):
    """No snapshot to pick: no empty table header and no "⏎ compare" on the box; ⏎ says why it does
    nothing, and the intro's way to get one (esc, then e) is what does it."""
    monkeypatch.chdir(tmp_path)
    app = snapshot_app(SNAPSHOT, theme="tfdash-dark", export_dir=tmp_path / "exports")
    async with app.run_test(size=(80, 24)) as pilot:
        await settle(pilot)
        await pilot.press("b")
        await settle(pilot)
        text = screen_text(app)
        inside = box_lines(text, "baseline snapshot")
        assert not any(line.startswith("file ") for line in inside), inside
        assert "⏎ compare" not in text and "x none" not in text and "─ esc close ─" in text, text
        assert "e on the dashboard (esc closes this) writes" in " ".join(inside), inside
        await pilot.press("enter")
        await settle(pilot)
        inside = box_lines(screen_text(app), "baseline snapshot")
        assert "no snapshot to compare against yet: esc, then e writes one" in inside, inside
        await pilot.press("escape", "e", "b")
        await settle(pilot)
        inside = box_lines(screen_text(app), "baseline snapshot")
    assert any(line.startswith("file ") for line in inside), inside
    assert any(line.startswith(("tfdash-", "…")) and line.endswith("  ✓") for line in inside), inside


@pytest.mark.parametrize(("key", "keys"), [("a", ["⏎ Run", "esc Close"]),
                                           ("b", ["esc Close"]), ("question_mark", ["esc Close"])])
@pytest.mark.parametrize("size", [(80, 24), (120, 40)])
@sync
async def test_a_dialogs_footer_names_its_own_keys_not_the_dashboards(isolated_config, key, keys, size):
    """Over the dashboard a dialog takes the keys: its footer names those (⏎ too, where a table has
    the focus), not the dashboard's s, g or q, which do nothing while it is open."""
    app = live_app() if key == "a" else make_app()
    async with app.run_test(size=size) as pilot:
        await settle(pilot)
        await pilot.press(key)
        await settle(pilot)
        footer = screen_text(app).splitlines()[-1]
    assert all(k in footer for k in keys), footer
    assert not any(k in footer for k in ("s Sort", "g Group", "q Quit", "Drill in")), footer
    assert "No baseline" not in footer, footer  # x: no baseline to drop (offered only with one)


@pytest.mark.parametrize("key", ["a", "b", "question_mark"])
@sync
async def test_q_closes_a_dialog_as_esc_does_and_a_second_q_quits(isolated_config, key):
    """In a dialog the dashboard's q would do nothing: it closes the dialog (the help's way), and
    on the dashboard the next q quits."""
    from tfdash.app.widgets.kernel_table import KernelTable

    app = live_app() if key == "a" else make_app()
    async with app.run_test(size=(120, 40)) as pilot:
        await settle(pilot)
        await pilot.press(key)
        await settle(pilot)
        assert not app.screen.query(KernelTable)
        await pilot.press("q")
        await settle(pilot)
        assert app.screen.query(KernelTable) and app.is_running
        await pilot.press("q")
        await settle(pilot)
    assert not app.is_running


def dialog_app(case: str, tmp_path):
    """The dashboard a case's dialog opens over: the picker with no snapshot to pick or one, the
    A/B dialog over a saved snapshot holding a recorded A/B or a live run."""
    from test_app_compare import recorded_ab

    from tfdash.profiling.export import write_snapshot

    exports = tmp_path / "exports"
    if case == "picker, one snapshot":
        write_snapshot(load_snapshot(SNAPSHOT), exports / "tfdash-qwen3-1.7b-20261129-101500.json")
    if case == "A/B, live run":
        return TfdashApp(LiveStandIn(ab_result=recorded_ab()), theme="tfdash-dark")
    if case == "A/B, saved snapshot":
        return snapshot_app(dataclasses.replace(load_snapshot(SNAPSHOT), ab=(recorded_ab(),)), theme="tfdash-dark")
    return make_app(export_dir=exports)


@pytest.mark.parametrize(("case", "offered"), [("picker, nothing to pick", False), ("picker, one snapshot", True),
                                               ("A/B, saved snapshot", False), ("A/B, live run", True)])
@sync
async def test_enter_is_offered_only_where_it_acts(isolated_config, tmp_path, monkeypatch, case, offered):
    """The picker with no snapshot to pick, and the A/B dialog over a saved snapshot (its recorded
    A/B shown; nothing to run one with), offered "⏎ Choose" / "⏎ Run" in the footer (the A/B's
    box "⏎ run" too) where ⏎ only said why it did nothing. Now ⏎ is offered where it acts; pressed
    where it is not, it says why and leaves the dialog as it was."""
    from test_app_fit import toast_lines

    monkeypatch.chdir(tmp_path)
    key, title, hint = ("b", "baseline snapshot", "⏎ Choose") if case.startswith("picker") else \
        ("a", "A/B a plan variant", "⏎ Run")
    messages = []
    app = dialog_app(case, tmp_path)
    async with app.run_test(size=(120, 40), message_hook=messages.append, notifications=True) as pilot:
        await settle(pilot)
        await pilot.press(key)
        await settle(pilot)
        app.clear_notifications()  # a live run's first toasts would cover the box's bottom line
        await settle(pilot)
        text = screen_text(app)
        lines = text.splitlines()
        footer, bottom = lines[-1], next(line for line in lines if "╰" in line and "esc c" in line)  # the box's
        assert (hint in footer) == offered and ("⏎" in bottom) == offered, text
        if offered:
            return
        before = box_lines(text, title)
        await pilot.press("enter")
        await settle(pilot)
        after = box_lines(screen_text(app), title)
        toasts = " ".join(toast_lines(app))
    if key == "b":
        assert after == before[:-1] + ["no snapshot to compare against yet: esc, then e writes one"], after
        assert app.baseline is None
    else:
        assert after == before and "a saved snapshot is read-only: nothing to A/B" in toasts, (after, toasts)
        assert not [m for m in messages if type(m).__name__ in ("ABMeasured", "ABProgressed")]


@sync
async def test_the_help_says_the_csv_holds_every_launch_not_the_tables_rows(isolated_config):
    """`c` writes one row per launch whatever the table shows; the help said "Write the kernel
    table as CSV", which a table grouped by op or filtered is not."""
    from test_app_fit import help_rows

    app = make_app()
    async with app.run_test(size=(160, 48)) as pilot:
        await settle(pilot)
        await pilot.press("question_mark")
        await settle(pilot)
        rows = dict((bid, does) for does, bid in help_rows(screen_text(app)))
    does = rows["export.csv"]
    assert "every launch" in does and "one row each" in does and "grouping or filter" in does, does
    assert "kernel table" not in does, does
