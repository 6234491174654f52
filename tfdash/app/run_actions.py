"""The run's keys (TfdashApp mixes them in; ids in bindings.APP): pause, re-run, profile a
window, and quit. Quitting mid-run (q, Ctrl+C, SIGINT, SIGTERM or SIGHUP) stops the engine after the
steps in flight, waits for its worker, and exits with the final snapshot, written to --save's
path when there is one (any folder made for it is named in the line printed after the screen
closes, as the CLI's outputs name theirs); without --save, or where it failed, the run is kept in a
folder of the cache, as the run `r` starts over is (tfdash.app.kept). Once a quit has begun only the
quit keys act. On a saved snapshot the keys that need an engine say it is read-only.

A live A/B and a drill-down's marginal step the same engine: quitting and re-running first
cancel them after their window or round in progress and wait for them (`stop_measuring`), so
neither runs on beside the teardown or the next run nor loses what it measured (its result so far
goes into the run's snapshot).
"""

from __future__ import annotations

import asyncio
import signal

from tfdash.app import exports
from tfdash.app.bindings import key_name, profile_hint
from tfdash.app.compare import AB_STOP_TIMEOUT_S, all_set
from tfdash.errors import TfdashError
from tfdash.profiling.export_files import recorded_run
from tfdash.profiling.files import missing_folders_of_file
from tfdash.profiling.snapshot import ProfileSnapshot

PROFILE_STEPS = 32
STOP_TIMEOUT_S = 15.0  # how long quit waits for the engine to finish the steps in flight


class RunActions:
    """Pause, re-run, profile and quit on TfdashApp."""

    async def run_action(self, action, default_namespace=None, namespaces=None) -> bool:
        """Every binding's action (and the palette's) comes here. Once a quit has begun (the engine
        stopping, --save being written) all but quit are taken and dropped (a second q says the stop
        is under way): a key typed just after `q` (b, ?, a, T) reached its binding after the quit
        began and pushed its screen onto an app already exiting, a traceback and exit status 1."""
        name = action if isinstance(action, str) else action[1]
        if self.quitting and name.split("(")[0].rsplit(".", 1)[-1] not in ("quit", "interrupt"):
            return True
        return await super().run_action(action, default_namespace, namespaces)

    def _live_only(self, what: str) -> bool:
        if self.source.live:
            return True
        self.notify(f"a saved snapshot is read-only: nothing to {what}", severity="warning", timeout=3)
        return False

    def action_pause(self) -> None:
        if not self._live_only("pause"):
            return
        if not self.running:
            self.notify(f"no run in progress to pause ({profile_hint(self).rerun_text('pause')})",
                        severity="warning", timeout=3)
            return
        if self.source.generation_over:  # no step left to hold: a hold would time the run's end (source.ending)
            self.notify(f"the generation is over: {self.source.ending or 'the run is ending'}; nothing to pause",
                        severity="warning", timeout=4)
            return
        paused = not self.source.paused
        self.source.pause(paused)
        if self.state in ("running", "paused"):
            self.state = "paused" if paused else "running"
        self.notify("paused: the engine holds at its next step" if paused else "resumed", timeout=2)

    async def action_rerun(self) -> None:
        if not self._live_only("re-run"):
            return
        await self.stop_measuring()  # they step this run's engine: they end (and are kept with the run) first
        if self.running:
            self._rerun = True
            self.state = "stopping"
            self.source.stop()
        else:
            self.keep_before_rerun()
            self._start_run()
        self.notify("re-running the generation", timeout=2)

    def action_profile(self) -> None:
        if not self._live_only("profile"):
            return
        if self.source.generation_over:  # a window asked for now would end with the session, untaken
            self.notify(f"the generation is over: {self.source.ending or 'the run is ending'}", severity="warning",
                        timeout=4)
            return
        if self.source.request_profile(PROFILE_STEPS):
            if self.source.paused:  # the window times steps: none is taken while the engine holds
                self.notify(f"profiling {PROFILE_STEPS} steps once the run resumes ({key_name(self, 'pause')})",
                            timeout=3)
            else:
                self.notify(f"profiling the next {PROFILE_STEPS} steps…", timeout=2)
        elif self.running and getattr(self.source, "session", None) is None:  # its engine is still being built
            self.notify(f"the engine is still being built: {key_name(self, 'profile')} once the run starts",
                        severity="warning", timeout=3)
        elif self.running:  # the session refused it: two wait already
            self.notify("two profile windows are waiting already: this one is not added", severity="warning",
                        timeout=3)
        elif self.state in ("done", "stopped", "error"):  # a window needs steps to time: a run
            self.notify(f"the run is over: {profile_hint(self).after_run_text()}", severity="warning", timeout=3)
        else:
            self.notify(f"no run in progress to profile ({profile_hint(self).rerun_text('profile')})",
                        severity="warning", timeout=3)

    async def action_quit(self) -> None:
        if self.quitting:  # a second q or Ctrl+C: the first one finishes its stop and --save
            self.notify("stopping the engine and writing what was measured first…", timeout=3)
            return
        self.quitting = True
        snap = await self.stop_engine()
        if snap is not None and self.save_path is not None:
            try:
                made = missing_folders_of_file(self.save_path)  # asked before the write makes them
                gone = recorded_run(self.save_path)  # and the run it replaces
                exports.write("snapshot", snap, self.save_path)
                self.saved, self.save_made, self.save_replaced = self.save_path, made, gone  # said after the screen
            except (TfdashError, OSError) as e:
                self.save_error = str(e)  # the CLI says so after the screen closes, and exits 1
                self.notify(str(e), severity="error")
        if self.save_path is None or self.save_error:  # nothing measured is lost to a q (kept.py)
            self.kept = self.keep_run(snap)
        self.exit(snap)

    async def action_interrupt(self) -> None:
        """Ctrl+C (a key here, the terminal being raw): quit as `q` does, and exit as a command
        interrupted in a shell does (130, as headless's Ctrl+C), as a signal does (quit_on_signal)."""
        if self.interrupted_by is None:
            self.interrupted_by = signal.SIGINT
        await self.action_quit()

    def quit_on_signal(self, signum: int) -> None:
        """SIGINT, SIGTERM or SIGHUP: quit as `q` does -- stop the engine, keep what was measured,
        write --save. Called on the app's thread (the CLI's handler hands it over). One before the first
        frame is noted, and on_ready quits for it: quitting then ended the screen mid-mount (NoMatches)."""
        if self.interrupted_by is None:
            self.interrupted_by = signum
            if self.drawn:
                self.call_later(self.action_quit)

    def signal_while_stopped(self, signum: int) -> None:
        """SIGINT, SIGTERM or SIGHUP while the app's loop is not running, on the main thread (the CLI's
        handler): nothing to hand over to, so it is noted; before the loop, on_ready quits for it as
        quit_on_signal would, and either way the exit status says it."""
        if self.interrupted_by is None:
            self.interrupted_by = signum

    async def stop_measuring(self, timeout: float = AB_STOP_TIMEOUT_S) -> bool:
        """Cancel a live A/B (compare.py `stop_ab`) and the drill-downs' marginals after their
        window or round in progress, and wait for their workers (at most `timeout` s each kind): a
        round is milliseconds on a GPU, capturing its two graphs longer. True once none runs."""
        from tfdash.app.screens.drill import DrillScreen

        marginals = [e for s in self.screen_stack if isinstance(s, DrillScreen) for e in s.cancel_marginal()]
        ab = await self.stop_ab(timeout)
        return await all_set(marginals, timeout) and ab

    async def stop_engine(self) -> ProfileSnapshot | None:
        """Cancel a live A/B and a marginal and wait for them (`stop_measuring`), stop the run after
        the steps in flight, wait for the worker; the final snapshot."""
        await self.stop_measuring()
        source = self.source
        if source.running:
            self._stopping = True
            self.state = "stopping"
            source.stop(quitting=True)  # an engine still being built is abandoned, not waited for
            worker = source.worker
            if worker is not None:
                try:
                    await asyncio.wait_for(worker.wait(), STOP_TIMEOUT_S)
                except Exception:  # noqa: BLE001 - a failed or slow worker: keep what we have
                    pass
        snap = source.snapshot() or self.snapshot
        self.final_snapshot = snap
        return snap
