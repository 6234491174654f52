"""Untrusted text made safe to show: control characters become visible placeholders.

Strings from a checkpoint, a tokenizer, a snapshot, a config file or the command line can hold
terminal escape sequences (OSC 52 writes the clipboard, OSC 0 renames the window, CSI clears the
screen). `visible()` maps every C0 and C1 control character, DEL, and the Unicode controls that
reorder or hide text (bidi overrides and isolates, line and paragraph separators) to one visible
character each, so an escape sequence is shown as text and never acted on:

    visible("\\x1b]52;c;Y3VybA==\\x07")  ->  "␛]52;c;Y3VybA==␇"

The mapping is one character to one character, so spans (styles) over the original string stay
valid over the result. Tab and newline are kept where the caller asks (`keep`): a decoded token
that is legitimately a tab or a newline stays as it is. This module imports nothing of the UI:
the headless report uses it too.
"""

from __future__ import annotations

import re

KEEP_NONE = ""
KEEP_LAYOUT = "\t\n"  # a continuation's own tabs and line breaks

C1_PLACEHOLDER = "\u2370"  # ⍰: C1 controls and format controls have no Control Pictures glyph
_FORMAT = "\u061c\u200e\u200f\u202a\u202b\u202c\u202d\u202e\u2028\u2029\u2066\u2067\u2068\u2069\ufeff"
_UNSAFE = re.compile("[\x00-\x1f\x7f-\x9f" + _FORMAT + "]")


def _placeholder(ch: str) -> str:
    code = ord(ch)
    if code < 0x20:
        return chr(0x2400 + code)  # ␀ … ␟ (␛ for ESC)
    if code == 0x7F:
        return "\u2421"  # ␡
    return C1_PLACEHOLDER


def visible(text: str, keep: str = KEEP_NONE) -> str:
    """`text` with every control character replaced by a visible placeholder (same length)."""
    if not isinstance(text, str):
        text = str(text)
    if not _UNSAFE.search(text):
        return text
    return _UNSAFE.sub(lambda m: m.group(0) if m.group(0) in keep else _placeholder(m.group(0)), text)


def has_control(text: str, keep: str = KEEP_NONE) -> bool:
    """True when `text` holds a character that `visible` would replace."""
    return any(ch not in keep for ch in _UNSAFE.findall(text))


def visible_content(content, keep: str = KEEP_NONE):
    """A Textual `Content` (or anything with `.plain`, `.spans` and that constructor) with its
    text made visible; the spans stay where they were, since `visible` keeps the length."""
    plain = content.plain
    if not has_control(plain, keep):
        return content
    return type(content)(visible(plain, keep), spans=list(content.spans), strip_control_codes=False)
