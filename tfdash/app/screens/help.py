"""The help screen (`?`): every key, its binding id, and where to remap it.

The keys come in sections, one per place they act (everywhere, the dashboard, the drill-down…),
each under a heading row, so no column repeats the place on every row. What each key does wraps
within its column, so the id (what a keymap names) stays on the screen down to 80 columns. The
rows are fitted to the table's width in the layout that gives it that width, before that frame is
drawn, and refitted when the terminal is resized (layout.FitsBeforeDraw): fitted at mount to a
guess at the width, the first frame wrapped "does" two cells short of its column."""

from __future__ import annotations

import textwrap

from rich.cells import cell_len
from rich.text import Text
from textual.app import ComposeResult
from textual.containers import Vertical
from textual.content import Content
from textual.screen import ModalScreen
from textual.widgets import DataTable, Static

from tfdash.app import bindings
from tfdash.app.widgets.footer import FitFooter
from tfdash.app.config import applied_keymap
from tfdash.app.layout import FitsBeforeDraw
from tfdash.textsafe import visible

DOES_MIN_W = 24  # the "does" column never wraps narrower than this


class HelpScreen(FitsBeforeDraw, ModalScreen):
    BINDINGS = bindings.HELP

    _rows: list[tuple[str, str, str, str]] = []  # (section, key, does, id)
    _fitted: tuple[int, ...] = ()

    def compose(self) -> ComposeResult:
        with Vertical(id="help-box"):
            yield Static(id="help-intro")
            yield DataTable(id="help-table", cursor_type="row", zebra_stripes=True)
        yield FitFooter()  # its own keys: the dashboard's footer underneath names keys that do not act here

    def on_mount(self) -> None:
        box = self.query_one("#help-box")
        box.border_title = "keys"
        app = self.app
        box.border_subtitle = f"{bindings.key_name(app, 'help.close')} to close"
        keymap = getattr(app, "config", None)
        keymap = applied_keymap(keymap.keymap, bindings.KEYMAP_SCOPES) if keymap is not None else {}  # what is bound
        path = app.config.path if getattr(app, "config", None) is not None else "config.json"
        self.query_one("#help-intro", Static).update(Content.assemble(
            ("Remap any key by its id in ", "$text-muted"), (visible(str(path)), "bold"), (":  ", "$text-muted"),
            ('{"keymap": {"pause": "P", "export.svg": "f12"}}', "$text-accent"),
            ("\nEvery action is also in the command palette (", "$text-muted"),
            (bindings.describe_key(app.COMMAND_PALETTE_BINDING, app), "bold"),
            (").", "$text-muted")))
        self._rows = [(scope, visible(bindings.describe_key(bindings.effective_key(b, keymap), app)),
                       bindings.tooltip(app, b), b.id or "")
                      for scope, table in bindings.SCOPES.items() for b in table]
        self._fill()

    def action_edge(self, end: int) -> None:
        """Home and End: the first row, or the last."""
        t = self.query_one("#help-table", DataTable)
        t.move_cursor(row=(t.row_count - 1) * end, animate=False)

    def fit_laid_out(self) -> None:
        if self._rows:  # mounted: the rows are read at mount
            self._fill()

    def _widths(self) -> tuple[int, int, int]:
        """key, does, id: "does" gets what is left once the others (each padded) and a scrollbar
        have their width. Fixed widths: the header is laid out with its rows."""
        t = self.query_one("#help-table", DataTable)
        room = t.size.width or max(self.app.size.width - 8, 0)
        key, bid = (max(cell_len(r[i]) for r in self._rows) for i in (1, 3))
        pad = 3 * 2 * t.cell_padding + t.styles.scrollbar_size_vertical
        does = min(max(len(r[2]) for r in self._rows), max(DOES_MIN_W, room - key - bid - pad))
        return key, does, bid

    def _fill(self) -> None:
        widths = self._widths()
        if widths == self._fitted:
            return
        self._fitted = widths
        t = self.query_one("#help-table", DataTable)
        row = t.cursor_row
        t.clear(columns=True)
        for label, w in zip((Text("key", justify="right"), "does", "id"), widths):
            t.add_column(label, width=w)
        section = None
        for scope, key, does, bid in self._rows:
            if scope != section:
                section = scope
                t.add_row("", Text(f"── {scope} " + "─" * max(widths[1] - cell_len(scope) - 4, 0), style="bold"), "")
            lines = textwrap.wrap(does, widths[1])  # its height given: an auto one is measured only when
            # idle, and a row refilled in a layout was drawn 0 rows high in the frame that layout drew
            t.add_row(Text(key, style="bold", justify="right"), "\n".join(lines), Text(bid, style="dim"),
                      height=max(1, len(lines)))
        t.move_cursor(row=row, animate=False)
