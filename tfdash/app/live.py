"""Where the app's data comes from: one `Source` protocol, a live and a recorded implementation.

    SnapshotSource   `tfdash open FILE`: one ProfileSnapshot, read-only
    LiveSource       a Session built by a factory and run in a Textual thread worker

The app holds a `Source` and never asks which one: a recorded source starts nothing, never
runs, and answers a profile or marginal request with why not. The live adapter is the whole
contract between the app and the engine side:

    make_session(status) -> Session       called in the worker thread (building an engine can
                                          take minutes the first time: tilelang compiles);
                                          `status(text)` reports progress lines
    session.run(on_event, stop)           blocking, in the worker
    session.snapshot()                    taken by the app, at most 20 times a second
    session.request_profile(steps)        from the app's thread
    session.marginal(what, cancel=)       in a second thread worker (drill-down)
    session.ab(variant, progress, cancel)  in a thread worker (the A/B screen)

`on_event` runs on the engine's thread, so it does almost nothing: it notes the kind of event
and posts one `SessionNews` if none is outstanding. The app acknowledges it, takes a snapshot and
renders; news that arrives meanwhile collapses into the next message.
"""

from __future__ import annotations

import threading
from pathlib import Path
from typing import Callable, Protocol

from tfdash.app.bindings import key_name
from tfdash.app.messages import EngineStatus, RunEnded, SessionNews
from tfdash.errors import TfdashError
from tfdash.profiling.snapshot import ProfileSnapshot


class Source(Protocol):
    """What the app reads. `live`: it can run (pause, profile and measure do something)."""

    live: bool
    running: bool
    paused: bool
    generation_over: bool  # running, but its generation has ended: nothing left to pause or profile
    ending: str  # while generation_over, what the run still does before it ends ("" otherwise)
    run_id: int
    worker: object
    path: Path | None

    def start(self, app) -> None: ...
    def stop(self, quitting: bool = False) -> None: ...
    def pause(self, paused: bool) -> None: ...
    def request_profile(self, steps: int = 32) -> bool: ...
    def marginal(self, what: str, cancel=None) -> dict: ...  # blocking: call it from a thread worker
    def ab(self, what: str, progress=None, cancel=None, **sizes) -> dict: ...  # blocking, likewise
    def snapshot(self) -> ProfileSnapshot | None: ...
    def take_news(self) -> frozenset[str]: ...
    def add_counters(self, counters: dict) -> None: ...  # launch index -> Counters, into the snapshots


class SnapshotSource:
    """A saved snapshot: read-only, never running."""

    live = False
    running = False
    paused = False
    generation_over = False
    ending = ""
    run_id = 0
    worker = None

    def __init__(self, snapshot: ProfileSnapshot, path: Path | None = None):
        self.recorded, self.path = snapshot, path

    def start(self, app) -> None:
        pass

    def stop(self, quitting: bool = False) -> None:
        pass

    def pause(self, paused: bool) -> None:
        pass

    def request_profile(self, steps: int = 32) -> bool:
        return False

    def marginal(self, what: str, cancel=None) -> dict:
        return {"what": what, "unavailable": "a saved snapshot has no live session to measure"}

    def ab(self, what: str, progress=None, cancel=None, **sizes) -> dict:
        return {"what": what, "unavailable": "a saved snapshot has no live session to A/B"}

    def snapshot(self) -> ProfileSnapshot:
        return self.recorded

    def add_counters(self, counters: dict) -> None:
        """The recorded snapshot with these counters on its rows (saved by an export, not in place)."""
        from dataclasses import replace

        from tfdash.profiling.counters import with_counters

        self.recorded = replace(self.recorded, kernels=with_counters(self.recorded.kernels, counters))

    def take_news(self) -> frozenset[str]:
        return frozenset()


def event_kind(event) -> str:
    """The Session's name for an event ("tokens", "profile", "nvml", "status", ...)."""
    return str(getattr(event, "kind", None) or type(event).__name__.lower())


class BuildAbandoned(Exception):
    """Raised in the worker, through its status lines, to end an engine build a quit abandoned."""


class LiveSource:
    live = True
    path = None

    def __init__(self, make_session: Callable[[Callable[[str], None]], object]):
        self.make_session = make_session
        self.session = None
        self.worker = None
        self.run_id = 0
        self.running = False
        self.error: str | None = None
        self._app = None
        self._stop = threading.Event()
        self._abandon = threading.Event()
        self._resume = threading.Event()
        self._resume.set()
        self._posted = threading.Event()
        self._kinds: set[str] = set()

    # -- app side ------------------------------------------------------------------------
    def start(self, app) -> None:
        """Start a run (a new Session) in a thread worker."""
        self._app = app
        self.run_id += 1
        self._stop = threading.Event()
        self._abandon = threading.Event()
        self._resume.set()
        self._posted.clear()  # news of the previous run may be unacknowledged
        self._kinds = set()
        self.session = None
        self.running = True
        self.error = None
        run_id, stop, abandon = self.run_id, self._stop, self._abandon
        self.worker = app.run_worker(lambda: self._work(run_id, stop, abandon), thread=True, group="engine",
                                     name=f"engine run {run_id}", exit_on_error=False)

    def stop(self, quitting: bool = False) -> None:
        """Ask the run to end after the steps in flight; what was measured is kept. `quitting`: an
        engine still being built is abandoned at its next status line (a large model's weights
        take a minute to load, which a quit waited out); a re-run's stop lets the build finish,
        since the next run uses that engine."""
        if quitting:
            self._abandon.set()
        self._stop.set()
        self._resume.set()
        session = self.session
        if session is not None:
            try:
                session.stop()
            except Exception:  # noqa: BLE001 - stopping is best effort; the stop event suffices
                pass

    @property
    def paused(self) -> bool:
        return not self._resume.is_set()

    def pause(self, paused: bool) -> None:
        """Hold the decode at its next step boundary (the Session's generation waits there; the
        held time is not run time), or resume it."""
        (self._resume.clear if paused else self._resume.set)()
        session = self.session
        if session is not None:
            session.pause(paused)

    @property
    def generation_over(self) -> bool:
        """The run goes on after its generation has ended (the session's own profile window over
        the steps after it, on the CPU): no step is left to hold, and a window asked for now would
        not be taken. Only a Session has a generation of its own (not a stand-in for one)."""
        from tfdash.profiling.session import Session
        from tfdash.profiling.session_requests import generation_over

        session = self.session
        return self.running and isinstance(session, Session) and generation_over(session)

    @property
    def ending(self) -> str:
        """While generation_over, what the run still does before it ends (session_requests.ending),
        for the keys that no longer act to say; "" otherwise."""
        from tfdash.profiling.session import Session
        from tfdash.profiling.session_requests import ending

        session = self.session
        return ending(session) if self.running and isinstance(session, Session) else ""

    def take_news(self) -> frozenset[str]:
        """Acknowledge the outstanding SessionNews; returns the kinds of event it covered."""
        kinds, self._kinds = frozenset(self._kinds), set()
        self._posted.clear()
        return kinds

    def snapshot(self) -> ProfileSnapshot | None:
        return self.session.snapshot() if self.session is not None else None

    def request_profile(self, steps: int = 32) -> bool:
        """Whether the session takes the window: not where it has ended, nor where two windows wait
        already (they do not pile up)."""
        if self.session is None or not self.running:
            return False
        return bool(self.session.request_profile(steps))

    def add_counters(self, counters: dict) -> None:
        if self.session is not None:
            self.session.add_counters(counters)

    def marginal(self, what: str, cancel=None) -> dict:
        """The marginal in-graph cost of `what` (blocks until measured: call it from a worker); a
        set `cancel` (threading.Event) ends it after the round in progress."""
        session = self.session
        if session is None:
            return {"what": what, "unavailable": self._no_session("drill.marginal", "measure")}
        return dict(session.marginal(what, cancel=cancel))

    def ab(self, what: str, progress=None, cancel=None, **sizes) -> dict:
        """A live A/B of the plan variant `what` (blocks until done: call it from a worker);
        `sizes`: windows, steps, profile_steps (Session.ab's). Its refusals name the app's keys."""
        session, rerun = self.session, key_name(self._app, "rerun")
        if session is None:
            return {"what": what, "unavailable": self._no_session("ab.start", "A/B")}
        return dict(session.ab(what, progress=progress, cancel=cancel, rerun_key=rerun, **sizes))

    def _no_session(self, key: str, verb: str) -> str:
        """Why there is no session to measure on: its engine is still being built (the first run's,
        or r's re-run: `key` once it starts), or the build failed and no run is in progress."""
        if self.running:
            return f"the engine is still being built: {key_name(self._app, key)} once the run starts"
        return f"no run in progress to {verb} ({key_name(self._app, 'rerun')} re-runs)"

    # -- worker side -----------------------------------------------------------------------
    def _status(self, text: str) -> None:
        if self._app is not None:
            self._app.post_message(EngineStatus(text))

    def _building_status(self, abandon: threading.Event) -> Callable[[str], None]:
        """The build's `status`: the line posted, or BuildAbandoned once a quit abandoned it
        (every loaded tensor and compiled kernel says a line, so the build ends within one)."""

        def status(text: str) -> None:
            if abandon.is_set():
                raise BuildAbandoned
            self._status(text)

        return status

    def _work(self, run_id: int, stop: threading.Event, abandon: threading.Event) -> None:
        error = None
        try:
            session = self.make_session(self._building_status(abandon))
            self.session = session
            if stop.is_set():
                return
            session.pause(self.paused)
            self._status("")
            session.run(on_event=self._on_event, stop=stop)
        except BuildAbandoned:
            pass
        except TfdashError as e:
            error = str(e)
        except Exception as e:  # noqa: BLE001 - shown in the app, never a traceback on the screen
            error = f"{type(e).__name__}: {e}"
        finally:
            self.running = False
            if self._app is not None:
                self._app.post_message(RunEnded(run_id, error))

    def _on_event(self, event) -> None:
        kind = event_kind(event)
        if kind == "status":
            self._status(str(getattr(event, "text", "")))
            return
        self._kinds.add(kind)
        if not self._posted.is_set():
            self._posted.set()
            self._app.post_message(SessionNews())
