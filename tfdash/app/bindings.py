"""Every key of the dashboard, as data. Each binding has an id, so users can remap it:

    ~/.config/tfdash/config.json   {"keymap": {"pause": "P", "export.svg": "f12"}}

The help screen (`?`) and the command palette list these same tables, so what is documented is
what is bound. Ids are stable: they are the public names of the actions.
"""

from __future__ import annotations

from textual.binding import Binding

from tfdash.app.config import TYPED
from tfdash.app.layout import BOTTOM_MIN_H, EOS_AGAIN, NARROW_W, NO_STEP_TO_PROFILE, SHORT_H, ProfileKeys

APP = [
    Binding("q", "quit", "Quit", id="quit", tooltip="Stop the engine cleanly, keep what was measured, quit"),
    Binding("ctrl+c", "interrupt", "Quit", id="interrupt", show=False, priority=True,
            tooltip="As {quit}, but the command exits 130 (interrupted), where {quit} exits 0"),
    Binding("question_mark", "help", "Help", id="help", key_display="?", tooltip="Every key, and how to remap it"),
    Binding("space", "pause", "Pause", id="pause", tooltip="Pause or resume the decode"),
    Binding("r", "rerun", "Re-run", id="rerun", tooltip="Stop this generation and start it again"),
    Binding("p", "profile", "Profile", id="profile", tooltip="Profile a window of steps per kernel now"),
    Binding("b", "baseline", "Baseline", id="baseline",
            tooltip="Compare against a recent snapshot: Δ columns, both sides in the drill-down and roofline"),
    Binding("a", "ab", "A/B", id="ab",
            tooltip="A/B a plan variant against the running plan, live, on this generation"),
    Binding("e", "export('snapshot')", "Snapshot", id="export.snapshot",
            tooltip="Write the profile snapshot (JSON; `tfdash open` reads it)"),
    Binding("c", "export('csv')", "CSV", id="export.csv", tooltip="Write a CSV of every launch, one row each, whatever the table's grouping or filter"),
    Binding("t", "export('trace')", "Trace", id="export.trace",
            tooltip="Write a Chrome trace (chrome://tracing, Perfetto)"),
    Binding("ctrl+s", "export('svg')", "SVG", id="export.svg", key_display="^s",
            tooltip="Save an SVG screenshot of the screen"),
    Binding("ctrl+t", "change_theme", "Theme", id="theme", key_display="^t",
            tooltip="Pick a theme (the choice is saved)"),
]

MAIN = [
    Binding("s", "sort", "Sort", id="table.sort", tooltip="Sort the kernel table by the next column"),
    Binding("S", "reverse", "Reverse", id="table.reverse", show=False, tooltip="Reverse the sort order"),
    # priority: acted on as it arrives, so the keys typed straight after it already reach the filter
    Binding("slash", "filter", "Filter", id="table.filter", key_display="/", priority=True,
            tooltip="Filter the kernel table by name"),
    Binding("g", "group", "Group", id="table.group", tooltip="Group by op, family, layer, or none (every launch)"),
    Binding("v", "panes", "Panes", id="panes", tooltip=f"Where the roofline pane is a line under the header "
            f"(under {NARROW_W} columns, under {SHORT_H} rows, or where its lines would leave the kernel table "
            f"under {BOTTOM_MIN_H} rows): the roofline and NVML panes in place of the others, and back"),
    Binding("T", "timeline", "Timeline", id="timeline",
            tooltip="The profiled step's kernels on a time axis: PDL overlap and gaps"),
]

TABLE = [  # on the kernel table itself, so Enter opens a row rather than DataTable's select
    Binding("enter", "drill", "Drill in", id="table.drill", key_display="⏎",
            tooltip="Open the selected row: instances, operands, ctx_len sweep, source"),
]

FILTER = [  # on the kernel table's filter box (/) while it has the focus: what is typed there is the filter's
    Binding("enter", "keep", "Keep filter", id="table.filter.keep", key_display="⏎",
            tooltip="Close the filter box, keeping the rows it leaves"),
    Binding("escape", "clear", "Clear filter", id="table.filter.clear", key_display="esc",
            tooltip="Close the filter box and clear the filter: every row again"),
]

DRILL = [
    Binding("escape,backspace", "back", "Back", id="drill.back", key_display="esc",
            tooltip="Back to the dashboard"),
    Binding("m", "marginal", "Marginal", id="drill.marginal",
            tooltip="Measure the in-graph marginal cost of the selected launch"),
    # v before 1-3 (←→ reach those tabs too): an 80-column footer keeps it
    Binding("v", "swap", "Sweep/operands", id="drill.swap",
            tooltip="In a narrow terminal: the ctx_len sweep in place of the cost by operand, and back"),
    Binding("1", "show_tab('tilelang')", "tilelang", id="drill.tab.tilelang",
            tooltip="Show the kernel's tilelang source"),
    Binding("2", "show_tab('cuda')", "CUDA", id="drill.tab.cuda",
            tooltip="Show the generated CUDA (compiled for sm_90a on demand)"),
    Binding("3", "show_tab('marginal')", "marginal", id="drill.tab.marginal",
            tooltip="Show marginal-cost results"),
    Binding("4", "show_tab('counters')", "counters", id="drill.tab.counters", show=False,
            tooltip="Show Nsight Compute's counters of the launch"),
    Binding("n", "counters", "Counters", id="drill.counters", show=False,
            tooltip="Measure the selected launch's hardware counters with Nsight Compute (in a child process)"),
    Binding("left", "step_tab(-1)", "Tabs", id="drill.tab.prev", key_display="←→", priority=True,
            tooltip="The previous source tab"),
    Binding("right", "step_tab(1)", "Tab", id="drill.tab.next", key_display="→", show=False, priority=True,
            tooltip="The next source tab"),
]

# The dialogs' Enter is a priority binding: it acts (and is in the dialog's footer) before the
# focused table's own Enter, which the footer does not show.
PICKER = [  # the baseline picker (b)
    Binding("escape,q", "dismiss", "Close", id="picker.close", key_display="esc",
            tooltip="Close, keeping the baseline"),
    Binding("enter", "choose", "Choose", id="picker.choose", key_display="⏎", priority=True,
            tooltip="Compare against the selected snapshot (refused for another shape or dtype)"),
    Binding("delete,x", "clear", "No baseline", id="picker.clear", key_display="x", tooltip="Drop the baseline"),
]

# A table with a row cursor (widgets/row_list.py): Home and End go to its first and last row. The
# DataTable's own scroll sideways, and a table whose columns fit its width has nothing to its side.
ROW_LIST = [
    Binding("home", "scroll_top", "First row", show=False),
    Binding("end", "scroll_bottom", "Last row", show=False),
]

AB = [  # the A/B screen (a)
    Binding("escape,q", "close", "Cancel/Close", id="ab.close", key_display="esc",
            tooltip="Cancel the A/B in progress (after its current window), else close"),
    Binding("enter", "start", "Run", id="ab.start", key_display="⏎", priority=True,
            tooltip="A/B the selected variant"),
    Binding("tab", "ops", "Ops", id="ab.ops", key_display="tab",
            tooltip="Move between the variants and the per-op table (↑↓ scroll it)"),
]

TIMELINE = [
    Binding("escape,backspace", "back", "Back", id="timeline.back", key_display="esc", tooltip="Back to the dashboard"),
    Binding("enter", "drill", "Drill in", id="timeline.drill", key_display="⏎",
            tooltip="Open the launch under the cursor in the drill-down"),
    Binding("plus,equals_sign", "zoom(0.5)", "Zoom in", id="timeline.zoom_in", key_display="+",
            tooltip="Zoom in about the cursor's kernel"),
    Binding("minus", "zoom(2.0)", "Zoom out", id="timeline.zoom_out", key_display="-", tooltip="Zoom out"),
    Binding("left", "pan(-1)", "Pan", id="timeline.left", key_display="←→", tooltip="Pan a quarter width left"),
    Binding("right", "pan(1)", "Pan", id="timeline.right", key_display="→", show=False,
            tooltip="Pan a quarter width right"),
    Binding("0", "fit", "Fit", id="timeline.fit", tooltip="The whole step in the width"),
    Binding("up", "move(-1)", "Up", id="timeline.up", show=False, tooltip="The kernel above"),
    Binding("down", "move(1)", "Down", id="timeline.down", show=False, tooltip="The kernel below"),
    Binding("pageup", "move(-2)", "Page up", id="timeline.page_up", show=False, tooltip="A page of kernels up"),
    Binding("pagedown", "move(2)", "Page down", id="timeline.page_down", show=False,
            tooltip="A page of kernels down"),
    Binding("left_square_bracket", "step(-1)", "Step", id="timeline.step_prev", key_display="[", show=False,
            tooltip="The step before, of those the profile window kept (the first stays, with a notice)"),
    Binding("right_square_bracket", "step(1)", "Step", id="timeline.step_next", key_display="]", show=False,
            tooltip="The step after, of those the profile window kept (the last stays, with a notice)"),
]

HELP = [
    Binding("escape,q,question_mark", "dismiss", "Close", id="help.close", key_display="esc"),
    # priority: the table's own home and end scroll sideways, and the help has nothing to its side
    Binding("home", "edge(0)", "Top", id="help.top", show=False, priority=True),
    Binding("end", "edge(1)", "Bottom", id="help.bottom", show=False, priority=True),
]

# Keys Textual binds itself, which a remap must not take. On the node that holds it (the app: the
# palette's ^p, Textual's own quit) Textual drops its binding for the remapped one, so profile on ^p
# left no way to open the palette; elsewhere its binding answers first (the screen's tab moves the
# focus, a focused table's arrows move its cursor), and the remapped key did nothing. Their ids start
# "textual.": no keymap moves them, and keymap_problems names them by their description.
TEXTUAL_APP = [
    Binding("ctrl+p", "command_palette", "Textual's command palette", id="textual.palette"),
    Binding("ctrl+q", "quit", "Textual's quit", id="textual.quit"),
]
TEXTUAL_SCREEN = [  # a screen's focus keys; a dialog binds its own (the A/B's tab)
    Binding("tab", "app.focus_next", "Textual's next-focus key", id="textual.focus_next"),
    Binding("shift+tab", "app.focus_previous", "Textual's previous-focus key", id="textual.focus_previous"),
]
# A focused DataTable's cursor keys (home and end: a RowList's first and last row, the help's sideways
# scroll) and its enter (select_cursor: the picker's and the A/B's tables choose or start on it, the
# help's and the instances table's do nothing), so a non-priority remap onto enter never reached the
# drill-down's or the help's own binding. The kernel table binds enter itself (table.drill), so its
# table_keys leave enter out. A priority binding of the same screen answers before them (config.FOCUSED:
# the drill-down's ←→ tabs, the help's home and end, the dialogs' ⏎), so only the others are shadowed;
# their ids start "textual.table."
TABLE_KEYS = (("up", "cursor_up"), ("down", "cursor_down"), ("left", "cursor_left"), ("right", "cursor_right"),
              ("pageup", "page_up"), ("pagedown", "page_down"), ("home", "scroll_top"), ("end", "scroll_bottom"),
              ("ctrl+home", "scroll_top"), ("ctrl+end", "scroll_bottom"), ("enter", "select_cursor"))


def table_keys(name: str, what: str, enter: bool = True) -> list[Binding]:
    """TABLE_KEYS as the table `what` ("the kernel table") binds them, ids textual.table[.name].KEY,
    each named for a toast as what it does there (enter selects, the others move the cursor);
    `enter` False for a table whose enter is one of ours (the kernel table's table.drill)."""
    return [Binding(key, action, f"{what}'s {'select' if key == 'enter' else 'cursor'} key",
                    id=f"textual.table.{name + '.' if name else ''}{key}")
            for key, action in TABLE_KEYS if enter or key != "enter"]


TEXTUAL_TABLE = table_keys("", "the kernel table", enter=False)  # focused on the dashboard
INSTANCES_TABLE = table_keys("instances", "the instances table")  # the drill-down's, focused as it opens
PICKER_TABLE = table_keys("picker", "the snapshot list")  # the baseline picker's, where it lists any
AB_TABLE = table_keys("ab", "the variants table")  # the A/B's (its per-op table, a tab away, takes them too)
HELP_TABLE = table_keys("help", "the help's table")

# The app's priority bindings (interrupt) answer first on every screen: in the dialogs too, whose
# ModalScreen cuts the app's other bindings off, and in a focused Input even on a key it types
# (Textual sets aside the keys an Input types before the keymap moves a binding onto one), so
# {"interrupt": "x"} quit as x was typed into the filter box, and cleared no baseline in the picker.
APP_FIRST = [b for b in APP if b.priority]


def input_keys(name: str, what: str, own: list[Binding]) -> list[Binding]:
    """A focused Input's editing keys (←→, home, end, backspace, delete, ^w ...), ids
    textual.input.NAME.KEY, less the keys `own` (its own bindings, in their place) and the app's
    priority keys by default (ctrl+c quits there rather than copies, as everywhere)."""
    from textual.widgets import Input

    taken = {k.strip() for b in own + APP_FIRST for k in b.key.split(",")}
    return [Binding(k, b.action, f"{what}'s editing key", id=f"textual.input.{name}.{k}")
            for b in Input.BINDINGS for k in (k.strip() for k in b.key.split(",")) if k not in taken]


# The filter box: one binding stands for every key it types (config.TYPED), which answers before its
# own (keep on x never kept), and its editing keys, in whose place its own are bound (clear on ← clears)
FILTER_TYPED = [Binding(TYPED, "type", "a key the filter box types", id="textual.input.filter.typed")]
FILTER_EDIT = input_keys("filter", "the filter box", FILTER)

SCOPES = {"everywhere": APP, "dashboard": MAIN + TABLE, "drill-down": DRILL, "timeline": TIMELINE,
          "baseline picker": PICKER, "A/B": AB, "filter box": FILTER}

# Tables bound together on one screen: a key may not mean two things within one of these.
KEYMAP_SCOPES = [[TEXTUAL_APP, TEXTUAL_SCREEN, APP, MAIN, TABLE, TEXTUAL_TABLE],
                 [TEXTUAL_APP, TEXTUAL_SCREEN, APP, DRILL, INSTANCES_TABLE],
                 [TEXTUAL_APP, TEXTUAL_SCREEN, APP, TIMELINE], [TEXTUAL_APP, APP_FIRST, PICKER, PICKER_TABLE],
                 [TEXTUAL_APP, APP_FIRST, AB, AB_TABLE], [TEXTUAL_APP, APP_FIRST, HELP, HELP_TABLE],
                 [TEXTUAL_APP, APP_FIRST, FILTER, FILTER_TYPED], [APP_FIRST, FILTER_EDIT]]


# The command palette searches titles only: where the footer's word is short for its screen
# ("Snapshot" beside the other exports), the palette's title says what it does, so typing
# "export" or "compare" finds it.
PALETTE_TITLES = {"export.snapshot": "Export snapshot", "export.csv": "Export CSV", "export.trace": "Export trace",
                  "export.svg": "Export SVG screenshot", "baseline": "Baseline: compare with a snapshot"}


def all_ids() -> set[str]:
    return {b.id for table in (APP, MAIN, TABLE, FILTER, DRILL, TIMELINE, PICKER, AB, HELP) for b in table if b.id}


def effective_key(binding: Binding, keymap: dict[str, str]) -> str:
    """The key(s) a binding answers to once the user's keymap is applied."""
    return keymap.get(binding.id, binding.key) if binding.id else binding.key


def binding(binding_id: str) -> Binding:
    """The binding whose id is `binding_id` (ids are unique across the tables)."""
    return next(b for table in (APP, MAIN, TABLE, FILTER, DRILL, TIMELINE, PICKER, AB, HELP) for b in table
                if b.id == binding_id)


def takes_enter(app, binding_id: str) -> bool:
    """Whether the binding `binding_id` answers to enter under the app's keymap: a dialog's ⏎ hands
    itself to its focused table (which selects in order with the arrows typed before it) only then;
    a key the user moved it to, the table does not bind."""
    keys = effective_key(binding(binding_id), getattr(app, "_keymap", None) or {})
    return "enter" in [k.strip() for k in keys.split(",")]


def key_name(app, binding_id: str) -> str:
    """The key a hint names for `binding_id` (a toast, a status line, a pane's text): the first key it
    answers to under the app's keymap, written as the footer writes it. Unmapped, the binding's own
    key_display where it has one (esc, ⏎), so the text reads as the footer does; a hint that named
    the default after a remap would name a key that does nothing. `app` None: the default keys."""
    b = binding(binding_id)
    keymap = getattr(app, "_keymap", None) or {}
    if b.id not in keymap and b.key_display:
        return b.key_display
    first = effective_key(b, keymap).split(",")[0].strip()
    return app.get_key_display(Binding(first, "")) if app is not None else first


def config_key_names(*binding_ids: str) -> dict[str, str]:
    """key_name of each id under the keymap of the user's config.json, before there is an app (the
    CLI's lines that send the user to a dashboard key); the first key as written there."""
    from tfdash.app.config import applied_keymap, load_config

    keymap = applied_keymap(load_config().keymap, KEYMAP_SCOPES)
    return {bid: keymap[bid].split(",")[0].strip() if bid in keymap else key_name(None, bid) for bid in binding_ids}


def tooltip(app, binding: Binding) -> str:
    """A binding's words in the help and the palette, each "{id}" in them the key that binding answers
    to under the app's keymap: interrupt's "Same as q" named a key that no longer quit once quit moved."""
    import re

    return re.sub(r"\{([a-z_.]+)\}", lambda m: key_name(app, m.group(1)), binding.tooltip or binding.description)


def key_names(app, *binding_ids: str) -> dict[str, str]:
    """key_name of each id, for the pure functions that word a hint (they take the names, not the app)."""
    return {bid: key_name(app, bid) for bid in binding_ids}


def profile_hint(app) -> ProfileKeys:
    """The re-run and profile keys for the hints that lead to a profile window, and what to run where
    a re-run has no step to time: one of a single new token (max_new_tokens 1) has none, as this one
    had none; nor has one after a run that ended by itself at its first token with room for more,
    which was end-of-text (greedy decode of the same prompt reaches it again)."""
    max_new, snap = getattr(app, "max_new_tokens", None), getattr(app, "snapshot", None)
    no_step = ""
    if max_new is not None and max_new < 2:
        no_step = NO_STEP_TO_PROFILE
    elif getattr(app, "state", None) == "done" and snap is not None and snap.new_tokens == 1:
        no_step = EOS_AGAIN
    return ProfileKeys(key_name(app, "rerun"), key_name(app, "profile"), no_step)


def describe_key(key: str, app=None) -> str:
    parts = [k.strip() for k in key.split(",")]
    if app is not None:
        return " / ".join(app.get_key_display(Binding(k, "")) for k in parts)
    return " / ".join(parts)
