"""The help screen (`?`): every key, its binding id, and where to remap it."""

from __future__ import annotations

from rich.text import Text
from textual.app import ComposeResult
from textual.containers import Vertical
from textual.content import Content
from textual.screen import ModalScreen
from textual.widgets import DataTable, Static

from tfdash.app import bindings
from tfdash.app.config import valid_keymap
from tfdash.textsafe import visible


class HelpScreen(ModalScreen):
    BINDINGS = bindings.HELP

    def compose(self) -> ComposeResult:
        with Vertical(id="help-box"):
            yield Static(id="help-intro")
            yield DataTable(id="help-table", cursor_type="row", zebra_stripes=True)

    def on_mount(self) -> None:
        box = self.query_one("#help-box")
        box.border_title = "keys"
        box.border_subtitle = "esc to close"
        app = self.app
        keymap = getattr(app, "config", None)
        keymap = valid_keymap(keymap.keymap) if keymap is not None else {}  # what is really bound
        path = app.config.path if getattr(app, "config", None) is not None else "config.json"
        self.query_one("#help-intro", Static).update(Content.assemble(
            ("Remap any key by its id in ", "$text-muted"), (visible(str(path)), "bold"), (":  ", "$text-muted"),
            ('{"keymap": {"pause": "p", "export.svg": "f12"}}', "$text-accent"),
            ("\nEvery action is also in the command palette (", "$text-muted"),
            (bindings.describe_key(app.COMMAND_PALETTE_BINDING, app), "bold"),
            (").", "$text-muted")))
        t = self.query_one("#help-table", DataTable)
        t.add_columns("where", Text("key", justify="right"), "does", "id")
        for scope, table in bindings.SCOPES.items():
            for b in table:
                key = bindings.describe_key(bindings.effective_key(b, keymap), app)
                t.add_row(Text(scope, style="dim"), Text(visible(key), style="bold", justify="right"),
                          b.tooltip or b.description, Text(b.id or "", style="dim"))
