"""`tfdash --headless --profile [--export DIR] [--ab VARIANT]`: the continuation, then the report.

The run is one Session: the text streams to stdout as it is generated; with --profile every step
is timed where continuous timing runs (SETTINGS.timing; CUDA graphs, CUPTI through a C ring), else a
window of steps is profiled around the middle of the generation (CUPTI in graph replays on CUDA,
host timing on CPU), never over its first, cold step, and, if the generation ended before it ran,
once right after it at the ctx where it stopped (none where the generation ran no step: a window
would time the kernels' first run; the report says so). The dashboard's own window is placed so
too. With --ab the plan variant is A/B'd against the running plan on the generation (tfdash.profiling.ab), from a second thread as soon as the first tokens arrive; if the
generation ends first, right after it from where it stopped; either way a line on stderr per window,
and Session.ab's timeout ends it. The report prints tok/s, the
roofline line, NVML's bandwidth, the files written with --export (and any folder made for them),
and ends with the top kernels by measured time beside their predicted time and gap.

Ctrl+C, SIGTERM and SIGHUP stop the run and the report is still written (a second signal waits
for it); the exit code is then 128 + the signal. An A/B in progress, during the generation or after
it, stops after its window in progress (it runs on a thread of its own, with a cancel event), and
the report ends with what it measured, marked incomplete.
"""

from __future__ import annotations

import os
import sys
import threading
from pathlib import Path

from tfdash.errors import TfdashError
from tfdash.stats import step_ms, summary
from tfdash.profiling.probe import ceiling_note
from tfdash.profiling.session import Session, Status, TokenBatch
from tfdash.profiling.session_requests import warmed, window_after, window_steps
from tfdash.profiling.snapshot import KernelRow, ProfileSnapshot
from tfdash.signals import exit_code, finishing, stop_signals
from tfdash.signals import name as signal_name
from tfdash.termenc import escaped
from tfdash.textsafe import KEEP_LAYOUT, visible

TOP = 10


class Streams:
    """The text to stdout and the notes to stderr. Where both reach one place (a terminal, or one file
    both are redirected to), a note that comes mid-line (the A/B's progress while tokens stream)
    first ends the text's line, so it is not spliced into a word.
    A stdout that fails mid-run (its reader gone: `| head`; a full disk) is kept in `lost` and sent
    to /dev/null: the run, its --export and its --save go on to the end, and the error is raised
    after them (`raise_lost`), where a write that failed on the decode's thread had logged a
    traceback for each batch of tokens, and the report's first line had ended the run unsaved."""

    def __init__(self, out, err):
        self.out, self.err = out, err
        self.mid = False  # the text's last line is unterminated
        self.lost: OSError | None = None
        try:
            self.shared = os.path.samestat(os.fstat(out.fileno()), os.fstat(err.fileno()))
        except (OSError, ValueError, AttributeError):  # a stream without a file (a test's StringIO)
            self.shared = False

    def text(self, s: str) -> None:
        if s:
            self._out(lambda: self.out.write(s))
            self.mid = not s.endswith("\n")

    def flush(self) -> None:
        self._out(self.out.flush)

    write = text  # a file to print() to: the report's lines take the same care as the tokens

    def _out(self, write) -> None:
        if self.lost is not None:
            return
        try:
            write()
        except OSError as e:
            self.lost = e
            try:  # what is buffered, and the report's lines after it, go nowhere rather than fail again
                os.dup2(os.open(os.devnull, os.O_WRONLY), self.out.fileno())
            except (OSError, ValueError, AttributeError):  # a stream without a file (a test's StringIO)
                pass

    def raise_lost(self) -> None:
        if self.lost is not None:
            raise self.lost

    def note(self, line: str) -> None:
        if self.mid and self.shared:
            self.text("\n")
        self.flush()
        print(line, file=self.err, flush=True)




def summary_line(snap: ProfileSnapshot) -> str:
    """The run's one-line summary (stats.summary), with the wall time profiling paused the decode
    where it profiled (a window, or a marginal measured in the dashboard): a run that profiled
    nothing (--save or --export alone, a saved snapshot without a window) has no pauses to report."""
    p50, p99 = step_ms(snap.step_ns)
    pauses = f"; profiling pauses {snap.paused_ns / 1e6:.1f} ms" if snap.profile_windows or snap.paused_ns else ""
    return summary(snap.tok_per_s, snap.new_tokens, snap.wall_ns, snap.held_ns, snap.ttft_ns, snap.decode_tok_per_s,
                   p50, p99, snap.prompt_tokens, snap.prefill_positions, snap.prefill_ns) + pauses


def roofline_lines(snap: ProfileSnapshot) -> list[str]:
    r = snap.roofline
    if r is None:
        return [f"roofline: unavailable ({snap.unavailable.get('roofline', '?')})"]
    t = snap.timing
    head = []
    if t is not None and t.method == "continuous":
        head = [f"kernel timing: continuous ({t.source}), {t.steps_measured} steps measured, {t.steps_dropped} "
                f"lost; p50/p90 over the last {t.range_steps}; host {t.host_ns_per_step / 1e3:.1f} us/step"]
    elif t is not None and t.note:
        head = [f"kernel timing: windows ({t.note})"]
    ds = f", {r.pct_datasheet:.1f}% of the {r.datasheet_gbps:.0f} GB/s datasheet" if r.datasheet_gbps else ""
    # a step past its ceiling: the probe read low (the cache file named only where it holds the figure)
    low = ceiling_note(r.pct_ceiling, r.ceiling_source, r.ceiling_gbps)
    if r.timing == "direct":  # host timing: the rest of the step is the host's between launches, not device idle
        step_line = f"step {r.measured_step_ns / 1e3:.1f} us"
        if r.gap_ns >= 0:
            step_line += (f" = sum of kernels {r.kernel_sum_ns / 1e3:.1f} us + {r.gap_ns / 1e3:.1f} us on the host "
                          f"between launches (direct timing: Python, and waits for the GIL while other threads run; "
                          f"not device idle)")
        else:  # medians: the kernels' can sum past the step's
            step_line += (f", sum of kernels {r.kernel_sum_ns / 1e3:.1f} us (direct timing: each a median over the "
                          f"window, so they can sum past the step's)")
    else:
        step_line = (f"step = sum of kernels {r.kernel_sum_ns / 1e3:.1f} us + gap {r.gap_ns / 1e3:.1f} us "
                     f"(launch ramp, bubbles)")
    out = head + [
           f"roofline @ ctx {r.ctx_len} over {_steps(r.steps)} ({r.timing}): {r.bytes_per_step / 1e6:.2f} MB/step, "
           f"step {r.measured_step_ns / 1e3:.1f} us measured vs {r.predicted_step_ns / 1e3:.1f} us ideal; "
           f"{r.achieved_gbps:.1f} GB/s = {r.pct_ceiling:.1f}% of the {r.ceiling_gbps:.1f} GB/s measured "
           f"ceiling{ds}",
           *([f"warning: {low}"] if low else []),
           step_line]
    if r.nvml_gbps is not None:
        out.append(f"NVML DRAM {r.nvml_gbps:.1f} GB/s over the window (x{r.nvml_ratio:.2f} of the "
                   f"predicted {r.achieved_gbps:.1f} GB/s; {r.nvml_source})")
    else:
        out.append(f"NVML: unavailable ({r.nvml_source or snap.unavailable.get('nvml', '?')})")
    return out


def _steps(n: int) -> str:
    """`1 step`, `10 steps`: a one-token run profiles one step."""
    return f"{n} step{'' if n == 1 else 's'}"


def top_kernels(snap: ProfileSnapshot, n: int = TOP, said: str = "") -> list[str]:
    """The n kernels with the most time; `said`: a reason already printed (the roofline's), not repeated."""
    measured = [k for k in snap.kernels if k.measured_p50_ns is not None]
    if not measured:
        rows = sorted(snap.kernels, key=lambda k: -k.predicted_ns)[:n]
        why = snap.unavailable.get("kernels", "?")
        head = f"top {len(rows)} kernels by predicted time (not measured: {'the reason above' if why == said else why})"
    else:
        rows = sorted(measured, key=lambda k: -(k.measured_p50_ns or 0))[:n]
        head = f"top {len(rows)} kernels by measured time (p50 over {_steps(rows[0].samples)})"
    out = [head, f"{'#':>3} {'launch':<18} {'kernel':<26} {'meas us':>9} {'pred us':>9} {'gap x':>7} "
                 f"{'% step':>7}"]
    for k in rows:
        out.append(_row(k))
    return out


def _row(k: KernelRow) -> str:
    meas = f"{k.measured_p50_ns / 1e3:9.2f}" if k.measured_p50_ns is not None else f"{'-':>9}"
    gap = f"{k.gap:7.2f}" if k.gap is not None else f"{'-':>7}"
    share = f"{100 * k.share:7.1f}" if k.share is not None else f"{'-':>7}"
    return f"{k.index:>3} {visible(k.role[:18]):<18} {visible(k.kernel[:26]):<26} {meas} {k.predicted_ns / 1e3:9.2f} {gap} {share}"


def profile_run(eng, args, max_new: int) -> int:
    """Run, profile, report; export with --export DIR. Returns the exit code."""
    out, err = sys.stdout, sys.stderr
    streams = Streams(out, err)
    profile = bool(getattr(args, "profile", False))
    steps = window_steps(max_new)
    from tfdash.settings import SETTINGS

    session = Session(eng, args.prompt, max_new, ignore_eos=getattr(args, "ignore_eos", False),
                      prepare_profiler=profile, timing=SETTINGS.timing if profile else "windows",
                      continuous_steps=SETTINGS.continuous_steps)
    at = max(1, (max_new - steps) // 2)
    asked = [False]
    wrote_prompt = [False]
    variant, ab_results, ab_cancel = getattr(args, "ab", None), [], threading.Event()
    if variant and str(eng.device) == "cuda":  # the A/B's windows start the profiler in its thread
        from tfdash.profiling.kernel_map import profiler_on_this_thread

        profiler_on_this_thread()
    ab_ended: list[threading.Event] = []  # one an A/B started, set once it has returned

    said: set[str] = set()  # the build's lines, said once: the A/B after the generation builds again

    def say(p) -> None:  # a line per window, during the generation or after it
        if p.phase == "building" and p.line in said:
            return
        said.add(p.line)
        streams.note(f"tfdash: {visible(p.line)}")

    def start_ab() -> threading.Event:
        def work():
            try:
                ab_results.append(session.ab(variant, progress=say, cancel=ab_cancel))
            finally:
                ended.set()

        ended = threading.Event()
        ab_ended.append(ended)
        threading.Thread(target=work, daemon=True).start()
        return ended

    def wait_ab() -> None:
        # An Event, not Thread.join: on Python 3.11 a signal that interrupts join() marks the thread
        # stopped while it still runs, and the join after the signal would return at once
        for ended in ab_ended:
            ended.wait()

    def on_event(m) -> None:
        if isinstance(m, TokenBatch):
            if not wrote_prompt[0]:  # the prompt goes out with the first tokens, after any set-up line
                wrote_prompt[0] = True
                streams.text(escaped(visible(args.prompt, KEEP_LAYOUT), streams.out))  # data: escapes
            for t in m.tokens:
                if t.text:
                    streams.text(escaped(visible(t.text, KEEP_LAYOUT), streams.out))
            streams.flush()
            if variant and not ab_ended:
                start_ab()
            windows = session.timing_method != "continuous"  # continuous timing needs none
            if profile and windows and not asked[0] and m.new_tokens >= at and warmed(session):
                asked[0] = session.request_profile(steps)
        elif isinstance(m, Status) and m.text:
            streams.note(f"tfdash: {visible(m.text)}")

    interrupted = None
    try:
        with stop_signals():  # SIGTERM and SIGHUP stop the run as Ctrl+C does
            session.run(on_event)
            wait_ab()
            if variant and (not ab_results or "unavailable" in ab_results[-1]):  # the generation ended first:
                ab_results.clear()  # after it, from where it stopped (waited on here, so a signal can cancel it)
                start_ab().wait()
    except KeyboardInterrupt as e:  # Ctrl+C, or Interrupted by SIGTERM/SIGHUP
        interrupted = e
        ab_cancel.set()
        session.stop()
        ab = "the A/B stops after its window in progress; " if not all(e.is_set() for e in ab_ended) else ""
        print(f"\ntfdash: interrupted ({signal_name(e)}); {ab}reporting what was measured", file=err)
    with finishing():  # a second signal waits for the report and the files
        wait_ab()
        report(session, args, profile, steps, streams)
        if variant and ab_results:
            from tfdash.profiling.ab_table import table

            for line in table(ab_results[-1]):
                print(visible(line), file=streams)
        streams.flush()
    if interrupted is None:
        streams.raise_lost()  # after the files: main says it (a pipe's reader gone: quietly)
    return exit_code(interrupted) if interrupted is not None else 0


def report(session: Session, args, profile: bool, steps: int, out) -> None:
    """The summary, the roofline, the files written with --export, the top kernels."""
    out.write("\n")
    if profile and session.snapshot().profile_windows == 0 and session.timing_method != "continuous":
        window_after(session, steps)  # none where the generation ran no step: the snapshot says why
    snap = session.snapshot()
    print(summary_line(snap), file=out)
    if profile:
        for line in roofline_lines(snap):
            print(visible(line), file=out)
    from tfdash.profiling.export import export_all, write_snapshot
    from tfdash.profiling.export_files import EXPORT_SNAPSHOT, recorded_run
    from tfdash.profiling.files import created_note, missing_folders, missing_folders_of_file

    failed = None  # the report still ends with the top kernels; then the first error, non-zero
    if getattr(args, "export", None):
        try:
            new = missing_folders(args.export)  # asked before the export makes them
            gone = recorded_run(Path(args.export).expanduser() / EXPORT_SNAPSHOT)  # and what it replaces
            paths = export_all(snap, args.export)
            print(visible("wrote " + ", ".join(str(p) for p in paths.values()) + created_note(new)
                          + (f" (replacing the export of {gone})" if gone else "")), file=out)
        except TfdashError as e:
            failed = e
    if getattr(args, "save", None):  # written even where the export failed: the run is in it
        try:
            save = Path(args.save).expanduser()
            new, gone = missing_folders_of_file(save), recorded_run(save)
            print(visible(f"wrote {write_snapshot(snap, save)}{created_note(new)}"
                          + (f" (replacing the snapshot of {gone})" if gone else "")), file=out)
        except TfdashError as e:
            failed = failed or e
    if profile:
        for line in top_kernels(snap, said=snap.unavailable.get("roofline", "") if snap.roofline is None else ""):
            print(visible(line), file=out)
    out.flush()
    if failed is not None:
        raise failed
