"""Messages from the engine's worker thread to the app. Small, and coalesced.

The worker never hands the UI a growing buffer: `SessionNews` only says "there is something new";
the app then takes one `Session.snapshot()` (an immutable ProfileSnapshot) and renders from it, at
most 20 times a second. A flood of news collapses into one message in the app's queue
(`can_replace`), and the adapter posts at most one at a time anyway.
"""

from __future__ import annotations

from textual.message import Message


class SessionNews(Message):
    """Something changed in the live session (tokens, a profile window, an NVML sample); which
    kinds of event it covers, LiveSource.take_news() says."""

    def can_replace(self, message: Message) -> bool:
        return isinstance(message, SessionNews)


class EngineStatus(Message):
    """A line about the engine's state: "building engine", "compiling 3/7 gemv_qkv", ..."""

    def __init__(self, text: str) -> None:
        super().__init__()
        self.text = text

    def can_replace(self, message: Message) -> bool:
        # `message` is a newer one: it supersedes this status line, never a warning (a toast).
        return isinstance(message, EngineStatus) and not self.text.startswith("warning: ")


class RunEnded(Message):
    """The session's run returned (finished, stopped, or failed with `error`)."""

    def __init__(self, run_id: int, error: str | None = None) -> None:
        super().__init__()
        self.run_id = run_id
        self.error = error


class MarginalMeasured(Message):
    """A marginal-cost request finished: `result` is the measurement, or {"unavailable": why}."""

    def __init__(self, what: str, result: dict) -> None:
        super().__init__()
        self.what = what
        self.result = result


class ABProgressed(Message):
    """A live A/B moved on (`progress`: a tfdash.profiling.messages.ABProgress); a newer one
    replaces an older one still in the queue."""

    def __init__(self, progress) -> None:
        super().__init__()
        self.progress = progress

    def can_replace(self, message: Message) -> bool:
        return isinstance(message, ABProgressed)


class ABMeasured(Message):
    """A live A/B finished: `result` is tfdash.profiling.ab's summary, or {"unavailable": why}."""

    def __init__(self, what: str, result: dict) -> None:
        super().__init__()
        self.what = what
        self.result = result


class BaselineChosen(Message):
    """The baseline picker set the baseline (`label`: its name as the picker shows it, an export
    folder's `DIR/snapshot.json`) or cleared it (None)."""

    def __init__(self, label: str | None) -> None:
        super().__init__()
        self.label = label
