"""A remap onto a key a focused table answers first is left out with a toast: the table's enter
(DataTable's select_cursor) in the drill-down and the help, and any table key, dialog key or key the
filter box types or edits with under the app-wide interrupt, which answers on every screen. A
screen's own priority binding still takes its table's key (the drill-down's tabs swapped onto the
arrows)."""

from __future__ import annotations

from fixtures import appkit
from fixtures.appkit import SNAPSHOT, sync
from test_app_fit import settle
from test_app_keymap_hints import boxed, remap
from test_app_live import toasts_of
from test_first_hour_app import screen_text

from tfdash.app import bindings
from tfdash.app.config import keymap_problems
from tfdash.app.main import snapshot_app

isolated_config = appkit.isolated_config  # the fixture: the tests below take it by this name


def problems(keymap: dict[str, str]) -> list[str]:
    return keymap_problems(keymap, bindings.KEYMAP_SCOPES, bindings.all_ids())


@sync
async def test_a_remap_onto_enter_where_a_table_selects_on_it_is_left_out(isolated_config):
    """drill.back on enter never left the drill-down, help.close on enter never closed the help: the
    focused table's enter selects its row first. Both are left out with a toast, and esc still goes
    back and closes; the dashboard's enter still drills in."""
    remap(isolated_config, {"drill.back": "enter", "help.close": "enter"})
    app = snapshot_app(SNAPSHOT)
    said = toasts_of(app)
    async with app.run_test(size=(160, 48)) as pilot:
        await settle(pilot)
        await pilot.press("question_mark", "enter")  # the help's table's: the help stays
        await settle(pilot)
        help_stays = boxed(app, "keys")
        await pilot.press("escape")
        await settle(pilot)
        help_closed = not boxed(app, "keys")
        await pilot.press("enter")  # table.drill: the drill-down of the first row
        await settle(pilot)
        opened = "instances" in screen_text(app)
        await pilot.press("enter")  # the instances table's: the drill-down stays
        await settle(pilot)
        stays = "instances" in screen_text(app)
        await pilot.press("escape")
        await settle(pilot)
        back = "instances" not in screen_text(app)
    toasts = " | ".join(said)
    assert (help_stays, help_closed, opened, stays, back) == (True, True, True, True, True), toasts
    for bid, table in (("drill.back", "the instances table"), ("help.close", "the help's table")):
        assert f"{bid} and {table}'s select key are both on 'enter': {bid} stays on 'esc'" in toasts, toasts


def test_enter_is_taken_only_where_no_table_selects_on_it_first():
    """The dialogs' ⏎ (priority) and the kernel table's own drill keep enter with no word; moved away,
    a remap onto enter there is left out (the picker's and the A/B's table choose and start on it)."""
    assert problems({}) == []
    assert problems({"drill.marginal": "enter"}) == [  # the table's enter selects, its arrows move the cursor
        "drill.marginal and the instances table's select key are both on 'enter': drill.marginal stays on 'm'"]
    assert problems({"picker.choose": "c", "picker.close": "enter"}) == [
        "picker.close and the snapshot list's select key are both on 'enter': picker.close stays on 'esc'"]
    assert problems({"ab.start": "s", "ab.close": "enter"}) == [
        "ab.close and the variants table's select key are both on 'enter': ab.close stays on 'esc'"]
    assert problems({"picker.choose": "enter,c", "ab.start": "enter,s", "timeline.drill": "enter,d"}) == []
    assert problems({"table.drill": "d", "timeline.drill": "d"}) == []  # the kernel table binds no enter of its own


@sync
async def test_interrupt_onto_a_tables_key_is_left_out(isolated_config):
    """interrupt answers on every screen, before its tables and bindings: on home it quit where the
    help's home goes to its top. It is left out with a toast, and home does not quit; the drill-down's
    own tabs swapped onto the arrows are still bound without a word."""
    from textual.widgets import TabbedContent

    remap(isolated_config, {"interrupt": "home", "drill.tab.prev": "right", "drill.tab.next": "left"})
    app = snapshot_app(SNAPSHOT)
    said = toasts_of(app)
    messages = []
    async with app.run_test(size=(160, 48), message_hook=messages.append) as pilot:
        await settle(pilot)
        await pilot.press("question_mark", "home")
        await settle(pilot)
        help_open = boxed(app, "keys")
        await pilot.press("escape", "enter")  # the drill-down of the kernel table's first row
        await settle(pilot)
        await pilot.press("left")  # drill.tab.next: the next tab
        await settle(pilot)
        running = app.is_running
    toasts = " | ".join(said)
    assert help_open and running, toasts
    assert "interrupt and the kernel table's cursor key are both on 'home': interrupt stays on 'ctrl+c'" in toasts
    assert "drill.tab" not in toasts, toasts
    assert [m.pane.id for m in messages if isinstance(m, TabbedContent.TabActivated)][-1:] == ["cuda"]
    assert problems({"interrupt": "ctrl+end"}) == [
        "interrupt and the kernel table's cursor key are both on 'ctrl+end': interrupt stays on 'ctrl+c'"]


@sync
async def test_interrupt_onto_a_key_the_filter_box_types_or_a_dialog_binds_is_left_out(isolated_config):
    """interrupt answers first on every screen: on x it quit as x was typed into the filter box (the
    keymap moves it after Textual has set aside the keys an Input types) and in the picker, where x
    clears the baseline. Such a remap is left out with a toast, as one onto the box's editing keys
    and the filter's own keep onto a key it types (x was typed, never kept); x then types."""
    remap(isolated_config, {"interrupt": "x", "table.filter.keep": "y"})
    app = snapshot_app(SNAPSHOT)
    said = toasts_of(app)
    async with app.run_test(size=(160, 48)) as pilot:
        await settle(pilot)
        await pilot.press("slash", "g", "a", "x", "y")
        await settle(pilot)
        running, text = app.is_running, screen_text(app)
    toasts = " | ".join(said)
    assert running and "gaxy" in text, toasts
    assert "interrupt and a key the filter box types are both on 'x': interrupt stays on 'ctrl+c'" in toasts, toasts
    assert "interrupt and picker.clear are both on 'x'" in toasts, toasts
    assert "table.filter.keep and a key the filter box types are both on 'y'" in toasts, toasts
    assert problems({"interrupt": "delete"})[-1:] == [
        "interrupt and the filter box's editing key are both on 'delete': interrupt stays on 'ctrl+c'"]
    assert problems({"interrupt": "Q"}) == [
        "interrupt and a key the filter box types are both on 'Q': interrupt stays on 'ctrl+c'"]
    assert problems({"help.close": "ctrl+c"}) == [  # the help never saw it: interrupt quit first
        "help.close and interrupt are both on 'ctrl+c': help.close stays on 'esc'"]
    assert problems({"interrupt": "f12", "quit": "x", "table.filter.clear": "left"}) == []  # still bound
