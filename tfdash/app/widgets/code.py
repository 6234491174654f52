"""A scrollable, syntax-highlighted source view (Rich's pygments highlighter, on the pane's
background, re-coloured when the theme changes)."""

from __future__ import annotations

from rich.syntax import Syntax
from textual.containers import ScrollableContainer
from textual.content import Content
from textual.widgets import Static

from tfdash.textsafe import visible

MAX_LINES = 6000  # generated CUDA can be long; past this the view says how much it left out


class CodeView(ScrollableContainer, can_focus=True):
    DEFAULT_CSS = """
    CodeView > Static { width: auto; min-width: 1fr; }
    """

    def __init__(self, *, id: str | None = None) -> None:
        super().__init__(id=id)
        self._code: str | None = None
        self._lexer = "python"
        self._message = ""

    def compose(self):
        yield Static(id=f"{self.id}-body" if self.id else None)

    def on_mount(self) -> None:
        self.app.theme_changed_signal.subscribe(self, lambda _t: self._render_code())

    def show_message(self, text: str) -> None:
        self._code, self._message = None, text
        self._render_code()

    def show_code(self, code: str, lexer: str) -> None:
        self._code, self._lexer, self._message = code, lexer, ""
        self._render_code()

    @property
    def text(self) -> str:
        return self._code if self._code is not None else self._message

    def _render_code(self) -> None:
        if not self.is_mounted:
            return
        body = self.query_one(Static)
        if self._code is None:
            body.update(Content.styled(visible(self._message), "italic $text-muted"))
            return
        lines = self._code.splitlines()
        code = "\n".join(lines[:MAX_LINES])
        if len(lines) > MAX_LINES:
            code += f"\n// … {len(lines) - MAX_LINES:,} more lines (export the kernel to see them all)"
        dark = self.app.current_theme.dark
        bg = self.app.theme_variables.get("surface")
        style = "github-dark" if dark else "default"
        if self.app.theme == "tfdash-contrast":
            style = "native"
        body.update(Syntax(code, self._lexer, theme=style, line_numbers=True, background_color=bg,
                           word_wrap=False, indent_guides=False))
        self.scroll_home(animate=False)
