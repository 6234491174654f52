"""The drill-down's code tabs: the current launch's tilelang source (its kernel family's file)
and its generated CUDA, compiled for sm_90a in a thread worker on demand and kept per kernel and
dims. A note says when the source shown is not what the snapshot ran (drill_model.source_note);
anything that stops the compile (no tilelang, no nvcc) is the pane's one line.
"""

from __future__ import annotations

import threading
import time

from textual import work

from tfdash.app import drill_model
from tfdash.app.widgets.code import CodeView


class CodeTabs:
    """Mixed into DrillScreen: the tilelang and CUDA tabs of the current launch, and their caches."""

    _tl_cache: dict[str, str]  # family -> its tilelang source
    _cuda_cache: dict[tuple, str]  # (family, kernel, dims) -> the CUDA, or "unavailable: why"
    _cuda_compiling: dict[tuple, float] | None = None  # (family, kernel, dims) -> when its compile started
    _cuda_timer = None  # ticks the compiling line's seconds while a compile runs

    def _current_launch(self):
        plan = self.plan
        return plan.launches[self.current] if plan is not None else None

    def _current_family(self) -> str:
        snap = self.app.snapshot
        for k in snap.kernels if snap is not None else ():
            if k.index == self.current:
                return k.family
        return self.row.families[0] if self.row.families else ""

    def _load_source(self) -> None:
        fam = self._current_family()
        view = self.query_one("#tilelang-code", CodeView)
        if fam not in self._tl_cache:
            source_fn = getattr(self.app, "tilelang_source", None) or drill_model.tilelang_source
            try:
                self._tl_cache[fam] = source_fn(fam)
            except Exception as e:  # noqa: BLE001 - shown in the pane
                self._tl_cache[fam] = f"# unavailable: {type(e).__name__}: {e}"
        note = self._source_note()
        view.show_code((f"# {note}\n" if note else "") + self._tl_cache[fam], "python")

    def _source_note(self) -> str | None:
        return drill_model.source_note(self.app.snapshot, self.app.source.live)

    def _cuda_key(self, launch) -> tuple:
        return (launch.family, launch.kernel, tuple(sorted((k, str(v)) for k, v in launch.dims.items())))

    def _load_cuda(self) -> None:
        launch = self._current_launch()
        view = self.query_one("#cuda-code", CodeView)
        if launch is None:
            view.show_message("unavailable: the snapshot's model does not rebuild its step plan")
            return
        key = self._cuda_key(launch)
        if key in self._cuda_cache:
            text = self._cuda_cache[key]
            if text.startswith("unavailable:"):
                view.show_message(text)
            else:
                note = self._source_note()
                view.show_code((f"// {note}\n" if note else "") + text, "cuda")
            return
        # its time counts from the first ask; the worker it replaces (exclusive) may never start
        self._cuda_compiling = {key: (self._cuda_compiling or {}).get(key, time.monotonic())}
        self._show_compiling(launch, key)
        self._compile(launch, key)
        if self._cuda_timer is None:  # a first compile on a busy host takes tens of seconds: its time is shown
            self._cuda_timer = self.set_interval(1.0, self._tick_compiling)

    def _show_compiling(self, launch, key) -> None:
        took = time.monotonic() - self._cuda_compiling[key]
        so_far = f"{took:.0f} s so far" if took >= 1 else "a few seconds"
        self.query_one("#cuda-code", CodeView).show_message(
            f"compiling {launch.kernel} for sm_90a with tilelang… ({so_far})")

    def _tick_compiling(self) -> None:
        launch = self._current_launch()
        key = self._cuda_key(launch) if launch is not None else None
        if key in (self._cuda_compiling or {}):
            self._show_compiling(launch, key)

    def on_unmount(self) -> None:
        self._cuda_gone.set()  # the screen closed (q, or the app quits): its compiles' children end

    @property
    def _cuda_gone(self) -> threading.Event:
        if "_cuda_stop" not in self.__dict__:
            self._cuda_stop = threading.Event()
        return self._cuda_stop

    @work(thread=True, group="cuda", exclusive=True, exit_on_error=False)
    def _compile(self, launch, key) -> None:
        injected = getattr(self.app, "cuda_source", None)  # the tests' stand-in takes the launch alone
        try:
            text = injected(launch) if injected else drill_model.cuda_source(launch, self._cuda_gone)
            if not text:
                text = "unavailable: tilelang returned no source"
        except BaseException as e:  # noqa: BLE001 - a missing tilelang or nvcc is a message, not a crash
            first = str(e).splitlines()[0] if str(e) else ""
            why = first if type(e) is RuntimeError and first else f"{type(e).__name__}: {first}".rstrip(": ")
            text = f"unavailable: {why}"
        self.app.call_from_thread(self._cuda_done, key, text)

    def _cuda_done(self, key, text: str) -> None:
        self._cuda_cache[key] = text
        (self._cuda_compiling or {}).pop(key, None)
        if not self._cuda_compiling and self._cuda_timer is not None:  # nothing left compiling: the clock stops
            self._cuda_timer.stop()
            self._cuda_timer = None
        launch = self._current_launch()
        if launch is not None and self._cuda_key(launch) == key:
            self._load_cuda()
