"""The Session's per-kernel timing method: continuous timing (tfdash.profiling.continuous)
started before the generation and stopped after it, and the TimingInfo a snapshot carries of it.
"windows" never starts it; "auto" and "continuous" try, and a reason for windows is one status line.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from tfdash.profiling.continuous import start_continuous
from tfdash.profiling.messages import Status
from tfdash.profiling.snapshot import TimingInfo

if TYPE_CHECKING:
    from tfdash.profiling.session import Session

MODES = ("windows", "continuous", "auto")


def start_timing(s: "Session") -> None:
    """Start continuous timing on the session's runtime when its mode asks for it."""
    if s.timing_mode == "windows":
        return
    timing, note = start_continuous(s.runtime, s.timer, s._make_source(s.runtime), s._post, on_change=s._touch,
                                    first_index=s.runtime.first_step(s.prompt_ids), **s._cont_kw)
    with s._lock:
        s.continuous, s.timing_note = timing, note
        s._version += 1
    if s.runtime.cuda or s.timing_mode == "continuous":  # on the CPU "auto" means windows
        s._post(Status(note))  # the reason for windows, or "" to clear the set-up's line


def stop_timing(s: "Session") -> None:
    """Stop continuous timing, if it ran; a failure to stop is kept as its error, never raised."""
    c = s.continuous
    if c is not None:
        try:
            c.stop()
        except Exception as e:  # noqa: BLE001 - the run's end must not fail on it
            c.error = c.error or f"stopping: {type(e).__name__}: {e}"
        s._touch()


def method(continuous) -> str:
    """"continuous" while (or after) continuous timing measured the steps, else "windows"."""
    c = continuous
    return "continuous" if c is not None and c.state in ("running", "paused", "stopped") else "windows"


def timing_info(continuous, note: str, auto_window: bool = False) -> TimingInfo:
    """What the snapshot says of the timing: continuous timing's counts, or windows, why, and
    whether the first window was the session's own (`auto_window`)."""
    c = continuous
    if c is None:
        return TimingInfo("windows", note=note, auto_window=auto_window)
    info = c.info()
    if c.state == "failed":
        return TimingInfo("windows", info.source, f"continuous timing stopped: {c.error}", info.steps_measured,
                          info.steps_dropped, 0, info.records, info.records_ignored, info.host_ns_per_step,
                          info.pauses, info.bucket_steps, info.slow_steps, auto_window=auto_window)
    return info
