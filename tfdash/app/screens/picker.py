"""The baseline picker (`b`): recent snapshot exports, newest first, each with its model, dtype,
when it was recorded and its tok/s, and whether it compares with the run on screen. In a narrow
box the model goes first (where a file is unreadable, it holds why), then the verdict's words (its
✓ or ✗ stays) and dtype, which the verdict sums up: when and how fast are what tell one row from the
next, so they stay longest. "recorded" is UTC:
the snapshot's start, or for one without it the file's modification time. A file is named as
`snapshot_label` names it (`DIR/snapshot.json` for a `--headless --export DIR` folder, whose files
all share one name); a name too long for the box loses its start, never its end, which tells one
export from the next. Enter makes the selected one the baseline (`app.set_baseline`); one of another
shape or dtype is refused with the line `tfdash diff` gives, shown under the list. With no snapshot
to offer the box is its intro alone: how to write one (the dashboard's keys do not act while it is
open, and ⏎ is not offered). The snapshots are read in a worker (app.action_baseline): a list that
takes longer than a blink opens as its intro and "reading N snapshots…", filled when read, and esc
closes it at once meanwhile. Every string from a file is Text, never markup.
"""

from __future__ import annotations

import time

from rich.text import Text
from textual.actions import SkipAction
from textual.app import ComposeResult
from textual.containers import Vertical
from textual.content import Content
from textual.screen import ModalScreen
from textual.widgets import DataTable, Static

from tfdash.app import bindings
from tfdash.app.widgets.footer import FitFooter
from tfdash.app.widgets.row_list import RowList
from tfdash.app.compare import Recent
from tfdash.app.layout import FitsBeforeDraw, cell_widths, fill_whole
from tfdash.app.messages import BaselineChosen
from tfdash.app.widgets.kernel_cells import tail
from tfdash.profiling.export import snapshot_label
from tfdash.textsafe import visible


COLUMNS = (("file", "file"), ("model", "model"), ("dtype", "dtype"), ("recorded", "recorded"),
           ("tok", Text("tok/s", justify="right")), ("fit", "against this run"))
TERSE = (*COLUMNS[:-1], ("fit", "compares"))  # the columns under the verdict's mark alone (SHORT)
# In a narrow box the last listed go first; "words" is the verdict's words, its mark alone left in "fit".
PRIORITY = ("file", "fit", "recorded", "tok", "dtype", "words", "model")
TELL_APART = 4  # PRIORITY's first 4: a file name is cut at its start to keep them, never for the rest
SHORT = len(COLUMNS)  # row_cells' last cell: the verdict as its mark ("✓", "✗ dtype"), where its words do not fit
FILE_MIN = 24  # cells a file name is cut to, at least, to keep a column beside it ("…" and a folder
# name's last 9 cells before "/snapshot.json"); below that the name has the row alone


def row_cells(e: Recent, current) -> list[Text]:
    """file, model, dtype, recorded, tok/s, how it compares with `current` (a snapshot), and that
    verdict short (SHORT)."""
    from tfdash.profiling.diff import differences

    name = Text(visible(snapshot_label(e.path)), style="bold")
    if e.snapshot is None:
        return [name, Text(visible(e.error or "?"), style="italic"), Text(""), Text(""), Text(""),
                Text("unreadable"), Text("✗ unreadable")]
    m = e.snapshot.meta
    model = str(m.model.get("name", "?")) if isinstance(m.model, dict) else "?"
    when = visible(m.started_at.replace("T", " ").removesuffix("Z")[:16]) if m.started_at else \
        time.strftime("%Y-%m-%d %H:%M", time.gmtime(e.mtime))  # UTC, as started_at is: one clock in the column
    tps = Text(f"{e.snapshot.tok_per_s:,.1f}" if e.snapshot.wall_ns else "—", justify="right")
    # compared by shape and dtype: a model named otherwise (a checkpoint in another folder) compares too
    diffs = differences(e.snapshot, current) if current is not None else []
    if diffs:  # the first that refuses it: differences() puts the names first only to say which two they are
        first = next((d for d in diffs if not d.startswith("model name:")), diffs[0])
        fit, short = Text(visible(first), style="italic"), Text(visible("✗ " + first.split(":")[0]), style="italic")
    elif not any(k.measured_p50_ns is not None for k in e.snapshot.kernels):  # compares, but with no Δ to show
        fit = Text("same shape and dtype, not profiled", style="italic")
        short = Text("✓ not profiled", style="italic")
    else:
        fit, short = Text("✓ same shape and dtype"), Text("✓")
    return [name, Text(visible(model)), Text(visible(m.dtype)), Text(when), tps, fit, short]


def fitted(width: int, rows: list[list[Text]]) -> tuple[tuple, list[list[Text]]]:
    """The columns a table `width` cells wide shows (each takes 2 cells of padding), and each row's
    cells for them: the longest start of PRIORITY that leaves the file names whole, or, to keep
    the TELL_APART columns, FILE_MIN cells (or their widest, if less), the names cut at their start
    to the room left (their ends tell one export from the next); else the names alone on the row."""
    short = [[*r[:SHORT - 1], r[SHORT]] for r in rows]
    keep, cells, room, columns = ("file",), rows, width - 2, COLUMNS
    for n in range(len(PRIORITY), 1, -1):
        shown, heads = (rows, COLUMNS) if "words" in PRIORITY[:n] else (short, TERSE)
        need = cell_widths(heads, shown)
        left = width - sum(need[k] + 2 for k in PRIORITY[:n] if k not in ("file", "words")) - 2
        if left >= (need["file"] if n > TELL_APART else min(need["file"], FILE_MIN)):
            keep, cells, room, columns = PRIORITY[:n], shown, left, heads
            break
    at = [i for i, (key, _) in enumerate(columns) if key in keep]
    return (tuple(columns[i] for i in at),
            [[Text(tail(r[0].plain, room), style=r[0].style), *(r[i] for i in at[1:])] for r in cells])


def shown_dir(d) -> str:
    """A directory as the user thinks of it: relative to the current one when inside it."""
    from pathlib import Path

    try:
        rel = Path(d).resolve().relative_to(Path.cwd().resolve())
        return str(rel) if str(rel) != "." else "the current directory"
    except (ValueError, OSError):
        return str(d)


class PickerScreen(FitsBeforeDraw, ModalScreen):
    """The table is filled once a layout has given it its size, before that frame is drawn
    (layout.FitsBeforeDraw): filled at mount, before it had a width, its first frame was an empty
    box where the snapshots would be."""

    BINDINGS = bindings.PICKER
    _fitted_to = None  # the table's size it was last filled to
    _mounted = False  # on_mount has run: a list handed over before it is shown by on_mount

    def __init__(self, count: int, reader=None, entries: list[Recent] | None = None):
        """`count` snapshot files are being read by the worker `reader`; `entries`: already read."""
        super().__init__()
        self.count, self.reader = count, reader
        self.entries = entries  # None while the worker reads them (show_entries)
        self.rows: list[list[Text]] = []  # each entry's cells (row_cells), refitted to the width
        self._kept: list[Recent] = []  # runs kept while the picker is up (kept), listed first

    def compose(self) -> ComposeResult:
        with Vertical(id="picker-box", classes="tf-modal"):
            yield Static(id="picker-intro")
            yield RowList(id="picker-table", cursor_type="row", zebra_stripes=True)
            yield Static(id="picker-status")
        yield FitFooter()  # its own keys: the dashboard's footer underneath names keys that do not act here

    def on_mount(self) -> None:
        self._mounted = True
        if self.entries is not None:
            self.show_entries(self.entries)
            return
        self._intro()
        self.query_one("#picker-table", DataTable).display = False
        n = self.count
        self.query_one("#picker-status", Static).update(
            Content.styled(f"reading {n} snapshot{'s' if n != 1 else ''}…", "italic $text-muted"))

    def on_unmount(self) -> None:
        if self.reader is not None:  # closed while reading: the worker stops before its next file
            self.reader.cancel()

    def kept(self, entry: Recent) -> None:
        """A run kept while the picker is up: r, then b at once, read the folders before the run r
        stopped was written, and the run its toast offers to compare against was not listed."""
        self._kept.append(entry)
        if self.entries is not None:  # else merged as the worker's list comes in
            self.show_entries(self.entries)

    def show_entries(self, entries: list[Recent]) -> None:
        """The snapshots read: the list (or what to do without one), focused, and the footer's ⏎. The
        runs kept meanwhile come first (the newest), the cursor left on the row it was on."""
        listed = {e.path for e in entries}
        new = [e for e in reversed(self._kept) if e.path not in listed]
        at = self._cursor_path()  # the row the cursor is on, kept there whatever comes above it
        self.entries = new + list(entries)
        if not self._mounted:  # handed over as the picker is pushed, before its widgets are there
            return
        self._intro()
        self.query_one("#picker-status", Static).update("")
        app = self.app
        self.rows = [row_cells(e, app.snapshot) for e in self.entries]
        self._fill()
        t = self.query_one("#picker-table", DataTable)
        row = next((i for i, e in enumerate(self.entries) if e.path == at), None)
        if row is not None and row != t.cursor_row:
            t.move_cursor(row=row, animate=False)
        t.display = bool(self.entries)  # an empty table would be a header, and take ⏎ to do nothing with it
        t.can_focus = bool(self.entries)
        self.set_focus(t if self.entries else None)  # (the screen's auto-focus gave it the focus already)
        self.refresh_bindings()  # ⏎ comes into the footer with a list to choose from

    def _cursor_path(self):
        """The path of the snapshot under the table's cursor, or None before a list is shown."""
        if not self._mounted or not self.entries or not self.rows:
            return None
        row = self.query_one("#picker-table", DataTable).cursor_row
        return self.entries[row].path if 0 <= row < len(self.entries) else None

    def _intro(self) -> None:
        box = self.query_one("#picker-box")
        box.border_title = "baseline snapshot"
        app = self.app
        where = ", ".join(visible(shown_dir(d)) for d in app.snapshot_dirs())
        base = getattr(app, "baseline", None)
        key = bindings.key_names(app, "picker.choose", "picker.clear", "picker.close", "export.snapshot")
        keys = ([f"{key['picker.choose']} compare"] if self.entries else []) + \
            ([f"{key['picker.clear']} none"] if base else [])  # as the footer offers them
        box.border_subtitle = " · ".join(keys + [f"{key['picker.close']} close"])
        intro = [("Snapshots in ", "$text-muted"), (where, "bold"), (", newest first. ", "$text-muted")]
        intro += [("Now against ", "$text-muted"), (visible(base.label), "bold")] if base else \
            [("No baseline now.", "$text-muted")]
        self.set_class(self.entries == [], "-empty")  # a box of its intro's height; a list's fills 85 %
        if self.entries == []:  # no table, no ⏎: what to do instead (the dashboard's keys do not act in here)
            intro += [("\nNo snapshot there yet: ", "$text-warning"), (key["export.snapshot"], "bold"),
                      (f" on the dashboard ({key['picker.close']} closes this) writes one, or "
                       "`tfdash open B.json --baseline A.json` compares two files.", "$text-muted")]
        self.query_one("#picker-intro", Static).update(Content.assemble(*intro))

    def offers(self, action: str) -> bool:
        """`x` (drop the baseline) is offered only while there is one, ⏎ only with a snapshot to
        choose (widgets/footer.py); pressed anyway, each says why it does nothing."""
        if action == "choose":
            return bool(self.entries)
        return action != "clear" or getattr(self.app, "baseline", None) is not None

    def fit_laid_out(self) -> None:
        """The table refilled where its size changed (layout.FitsBeforeDraw)."""
        size = self.query_one("#picker-table", DataTable).size
        if size != self._fitted_to:
            self._fitted_to = size
            self._fill()

    def _fill(self) -> None:
        """The columns that fit the box (fitted), refitted on resize with the cursor kept on its row."""
        t = self.query_one("#picker-table", DataTable)
        row = t.cursor_row
        scrollbar = t.styles.scrollbar_size_vertical if len(self.rows) + 1 > t.size.height else 0  # as drawn
        columns, rows = fitted(t.size.width - scrollbar, self.rows) if t.size.width > 0 else (COLUMNS, [])
        fill_whole(t, columns, rows, [str(i) for i in range(len(rows))], tuple(k for k, _ in columns), scrollbar)
        t.move_cursor(row=row, animate=False)

    def on_data_table_row_selected(self, event: DataTable.RowSelected) -> None:
        event.stop()
        self._choose()

    def _say(self, line: str) -> None:
        self.query_one("#picker-status", Static).update(Content.styled(visible(line), "$text-error"))

    def action_choose(self) -> None:
        t = self.query_one("#picker-table", DataTable)
        if self.entries is None:
            self._say(f"still reading the snapshots: {bindings.key_name(self.app, 'picker.choose')} once they are listed")
            return
        if not self.offers("choose"):  # not in the footer; pressed anyway, it says why it does nothing
            close, export = bindings.key_name(self.app, "picker.close"), bindings.key_name(self.app, "export.snapshot")
            self._say(f"no snapshot to compare against yet: {close}, then {export} writes one")
            return
        if t.has_focus and bindings.takes_enter(self.app, "picker.choose"):  # ⏎ (a priority binding, so the
            # footer shows it) runs as the key arrives, before the table has moved for the arrows typed
            # ahead of it: the table's own ⏎ selects in order (on_data_table_row_selected)
            raise SkipAction()
        self._choose()

    def _choose(self) -> None:
        t = self.query_one("#picker-table", DataTable)
        chosen = self.entries[max(0, min(t.cursor_row, len(self.entries) - 1))]
        line = self.app.set_baseline(chosen)
        if line:
            self._say(line)
            self.notify(line, title="baseline", severity="warning", timeout=8)
            return
        label = self.app.baseline.label  # as the header names it (with a folder, where the shown file has its name)
        self.app.post_message(BaselineChosen(label))  # this screen closes now
        self.notify(f"comparing against {label}", title="baseline", timeout=4)
        self.dismiss(chosen.path)

    def action_clear(self) -> None:
        if not self.offers("clear"):  # not in the footer; pressed anyway, it says why it does nothing
            self.notify("no baseline to drop", title="baseline", timeout=3)
            return
        self.app.set_baseline(None)
        self.app.post_message(BaselineChosen(None))
        self.notify("no baseline", title="baseline", timeout=3)
        self.dismiss(None)
