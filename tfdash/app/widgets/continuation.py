"""The continuation pane: the prompt, then the generated text streaming in.

The pane keeps its own bounded tail of the text (`MAX_CHARS`), appending only the tokens whose
index it has not shown yet, and draws the last lines that fit -- so a refresh costs the same at
token 20,000 as at token 20, and never reflows the screen's layout.
"""

from __future__ import annotations

from textual.content import Content
from textual.widget import Widget

from tfdash.profiling.snapshot import ProfileSnapshot
from tfdash.textsafe import KEEP_LAYOUT, visible_content

MAX_CHARS = 8_000  # the tail kept; older text is in the snapshot and its exports


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
        self._running = False
        self._note = ""
        self._lines: Content | None = None  # the tail, wrapped for the current size
        self._lines_key = None

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
        changed = note != self._note or running != self._running
        self._note, self._running = note, running
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
        if self._running:
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
