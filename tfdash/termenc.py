"""The output streams' encoding: what tfdash prints when the terminal's encoding is not UTF-8.

tfdash's text uses characters outside ASCII and Latin-1 (Δ, ·, …, µ, Σ, box drawing, bars). Under a
locale such as en_US.ISO-8859-1, `LC_ALL=C PYTHONUTF8=0` or `PYTHONIOENCODING=latin-1`, Python's
stdout encodes strictly, so one such character is a UnicodeEncodeError after the work is done and
the report (a diff, an A/B's verdict) is lost. `tolerant_output` gives stdout a rule once, at the
CLI's entry, so no print needs its own fallback: tfdash's own symbols (ASCII_FOR: µ, Δ, ×, −, —)
as ASCII, one character for one so a table's columns stay in line ("µs" -> "us"), and any other
character as a backslash escape. stderr keeps Python's rule for it, escapes (its lines carry
paths), but for the build's lines, tfdash's words alone, which `ours` spells as stdout does. Text
that is data, not tfdash's words (the prompt and its continuation, paths, names read from files),
goes through `escaped` first: a prompt's Δ is not tfdash's Δ.

The dashboard cannot be helped that way: every border, bar and glyph would be drawn as `?`, a screen
with nothing on it worth reading. `dashboard_refusal` says so, before the screen opens.
"""

from __future__ import annotations

import codecs
import os
import sys

FAILING = ("strict", "surrogateescape")  # error handlers that raise on a character the codec lacks
ASCII_HANDLER = "tfdash-ascii"  # the error handler stdout gets where it cannot encode every character

# tfdash's own symbols where the stream cannot encode them: one ASCII character for one where the
# symbol may sit in a padded column (a unit, a Δ header, an em dash for "none", a diff label's
# "gemv_a → gemv_b"), so widths hold; the longer ones (the last four) appear only in running text
ASCII_FOR = {"µ": "u", "μ": "u", "Δ": "d", "×": "x", "−": "-", "–": "-", "—": "-", "÷": "/", "·": ".",
             "’": "'", "→": ">", "≈": "~", "±": "+-", "…": "...", "≤": "<=", "≥": ">="}


def _ascii_for(err: UnicodeError) -> tuple[str, int]:
    """The codec error handler: ASCII_FOR's spelling of each character the codec lacks, else its
    backslash escape (as `backslashreplace` writes it)."""
    if not isinstance(err, UnicodeEncodeError):
        raise err
    bad = err.object[err.start:err.end]
    return "".join(ASCII_FOR.get(c) or c.encode("ascii", "backslashreplace").decode("ascii") for c in bad), err.end


codecs.register_error(ASCII_HANDLER, _ascii_for)


def encoding_name(stream) -> str | None:
    """The stream's codec under its canonical name (`utf-8`, `iso8859-1`, `ascii`); None when the
    stream names none or one Python does not know."""
    enc = getattr(stream, "encoding", None)
    if not enc:
        return None
    try:
        return codecs.lookup(enc).name
    except LookupError:
        return None


def writes_unicode(stream) -> bool:
    """True when the stream can encode every character: a UTF codec (or one tfdash cannot read,
    which it leaves alone)."""
    name = encoding_name(stream)
    return name is None or name.startswith("utf")


def tolerant_output() -> None:
    """stdout and stderr, where their encoding cannot take every character and their error handler
    fails on one (`strict`; `surrogateescape`, which Python picks for the C locale, passes only the
    bytes of undecodable file names), write it otherwise: stdout tfdash's symbols as ASCII (ASCII_FOR)
    and any other as a backslash escape, stderr every one as an escape. A handler that never fails,
    chosen with PYTHONIOENCODING (`latin-1:replace`, say), is kept."""
    for stream, rule in ((sys.stdout, ASCII_HANDLER), (sys.stderr, "backslashreplace")):
        if stream is None or writes_unicode(stream) or getattr(stream, "errors", None) not in FAILING:
            continue
        try:
            stream.reconfigure(errors=rule)
        except (AttributeError, ValueError, OSError):  # not a TextIOWrapper, or already closed
            pass


def escaped(text: str, stream) -> str:
    """`text` as `stream` can write it, each character it cannot encode as a backslash escape: for
    text that is data (a prompt, its continuation), which stdout's rule would otherwise spell in
    ASCII as if it were tfdash's own symbol."""
    name = encoding_name(stream)
    if name is None or name.startswith("utf"):
        return text
    return text.encode(name, "backslashreplace").decode(name)


def ours(text: str, stream) -> str:
    """`text`, tfdash's own words, as `stream` can write it: its symbols as ASCII (ASCII_FOR, "…" as
    "..."), as stdout writes them. For stderr's lines that hold no user data (the build's phases and
    progress): stderr escapes every character it lacks, since its other lines carry paths."""
    name = encoding_name(stream)
    if name is None or name.startswith("utf"):
        return text
    return text.encode(name, ASCII_HANDLER).decode(name)


def dashboard_refusal(instead: str) -> str | None:
    """Why the dashboard would be unreadable here (stdout does not encode UTF-8; the stream Textual
    draws on, stderr, takes the same encoding from the locale or PYTHONIOENCODING), as one error
    line naming the fix and ending in `instead` (what to run rather); None when it can draw."""
    if sys.stdout is None or writes_unicode(sys.stdout):
        return None
    forced = os.environ.get("PYTHONIOENCODING", "").partition(":")[0]
    fix = "unset PYTHONIOENCODING" if forced else "set LC_ALL=C.UTF-8"  # LC_ALL: LANG loses to a set LC_*
    return f"the terminal's encoding is {sys.stdout.encoding}; the dashboard draws in UTF-8: {fix} (or {instead})"
