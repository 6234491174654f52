"""The continuation pane: the prompt, then the generated text streaming in.

The pane keeps its own bounded tail of the text (`MAX_CHARS`), appending only the tokens whose
index it has not shown yet, and draws the last lines that fit -- so a refresh costs the same at
token 20,000 as at token 20, and never reflows the screen's layout. Its bottom border names where
the weights came from, fitted to the pane's width (fit_source).
"""

from __future__ import annotations

from rich.cells import cell_len
from textual.content import Content
from textual.widget import Widget

from tfdash.profiling.snapshot import ProfileSnapshot
from tfdash.textsafe import KEEP_LAYOUT, visible, visible_content

MAX_CHARS = 8_000  # the tail kept; older text is in the snapshot and its exports
# Random weights in words, longest first: the longest that fits the border is shown. The pane is
# 35 columns at 120 (29 of them for the subtitle), 42 at 80 where roofline and NVML are hidden.
RANDOM_SOURCE = ("random weights · stand-in vocabulary", "random weights, made-up vocab", "random weights")
BORDER_CELLS = 6  # "╰─ " and " ─╯" around a subtitle


def fit_source(checkpoint: str, width: int) -> str:
    """Where the weights came from, in `width` cells: random weights in the longest words that fit;
    a checkpoint's path whole, else its end after "…", from a "/" where one fits (its last part is
    the model's name). Not laid out yet (`width` <= 0): the whole."""
    if checkpoint == "random":
        return next((f for f in RANDOM_SOURCE if cell_len(f) <= width or width <= 0), RANDOM_SOURCE[-1])
    path = visible(checkpoint)
    if width <= 1 or cell_len(path) <= width:
        return path
    tail = path
    while tail and cell_len(tail) > width - 1:
        tail = tail[1:]
    cut = tail.find("/")
    return "…" + (tail[cut:] if 0 <= cut < len(tail) - 1 else tail)


class Continuation(Widget, can_focus=False):
    DEFAULT_CSS = """
    Continuation { height: 1fr; }
    """

    def __init__(self, *, id: str | None = None) -> None:
        super().__init__(id=id)
        self._prompt = ""
        self._text = ""
        self._trimmed = False
        self._last_index = -1
        self._streaming = False  # the cursor; not `_running`, which is Textual's message pump's own
        self._note = ""
        self._lines: Content | None = None  # the tail, wrapped for the current size
        self._lines_key = None
        self._source = ""  # the snapshot's checkpoint ("random" for random weights)
        self._fitted_w = -1  # the pane's width the subtitle was last fitted to

    @property
    def text(self) -> str:
        """The generated text on screen (a bounded tail of the run's)."""
        return self._text

    def reset(self) -> None:
        self._text, self._trimmed, self._last_index = "", False, -1
        self._changed()

    def _changed(self) -> None:
        self._lines = None
        self.refresh()

    def show(self, snap: ProfileSnapshot | None, running: bool = False, note: str = "") -> None:
        changed = note != self._note or running != self._streaming
        self._note, self._streaming = note, running
        if snap is not None:
            toks = snap.tokens
            if toks and toks[-1].index < self._last_index:
                self.reset()  # a new run
            i = len(toks)
            while i > 0 and toks[i - 1].index > self._last_index:
                i -= 1
            if i < len(toks):
                if self._last_index < 0 and toks[i].index > 0:
                    self._trimmed = True  # the snapshot kept only the latest tokens
                self._text += "".join(t.text for t in toks[i:])
                self._last_index = toks[-1].index
                if len(self._text) > MAX_CHARS:
                    cut = self._text.find(" ", len(self._text) - MAX_CHARS)
                    self._text = self._text[cut if cut >= 0 else len(self._text) - MAX_CHARS:]
                    self._trimmed = True
                changed = True
            if snap.meta.prompt != self._prompt:
                self._prompt, changed = snap.meta.prompt, True
        elif self._prompt or self._text:
            self._prompt, changed = "", True
            self._text, self._trimmed, self._last_index = "", False, -1
        if changed:
            self._changed()

    def set_source(self, checkpoint: str) -> None:
        """The bottom border's subtitle: where the weights came from, fitted to the pane."""
        if checkpoint != self._source:
            self._source = checkpoint
            self._fit_source()

    def fit_size(self) -> None:
        """The subtitle for the width a layout gave the pane, called in that layout (the dashboard's
        fit_laid_out, layout.FitsBeforeDraw) so that its frame draws it fitted: fitted on Resize, after
        that frame, it read "stand-in vo…" for a frame. Only where the width changed: it runs at every layout."""
        if self.outer_size.width != self._fitted_w:
            self._fit_source()

    def on_resize(self) -> None:
        self.fit_size()

    def _fit_source(self) -> None:
        self._fitted_w = self.outer_size.width
        if not self._source:
            return
        label = fit_source(self._source, self._fitted_w - BORDER_CELLS)
        if (self.border_subtitle or "") != Content(label).markup:  # setting it repaints the pane
            self.border_subtitle = Content(label)  # a path is text, never markup

    def _content(self, budget: int) -> Content:
        if not self._prompt and not self._text:
            return Content.styled(self._note or "waiting for the engine…", "italic $text-muted")
        parts = []
        text = self._text
        head = not self._trimmed and len(self._prompt) + len(text) <= budget
        if head:
            parts.append((self._prompt, "bold $text-primary"))
        else:
            parts.append(("… ", "$text-muted"))
            text = text[-budget:]
            cut = text.find(" ")
            text = text[cut:] if 0 <= cut < 40 else text
        parts.append((text, ""))
        if self._streaming:
            parts.append(("▌", "$accent"))
        if self._note:
            parts.append((f"\n\n{self._note}", "italic $text-muted"))
        return Content.assemble(*parts)

    def render(self) -> Content:
        # The tail that fits: wrap only the last few screens of text, keep the last lines. The
        # widget's size is fixed by the layout, so an update never reflows the screen.
        width, height = self.size
        key = (width, height)
        if self._lines is None or key != self._lines_key:
            # Tokens that are a tab or a newline stay; every other control character is shown.
            content = visible_content(self._content(budget=max(200, width * height * 2)), KEEP_LAYOUT)
            wrapped = content.wrap(max(1, width)) if width else []
            self._lines = Content("\n").join(wrapped[-height:] if height else [])
            self._lines_key = key
        return self._lines
