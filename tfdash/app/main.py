"""Entry points: `tfdash [...]` (live) and `tfdash open [SNAPSHOT.json]` (read-only), and the
factories the tests build the app from.

    live_app(make_session, ...)        the dashboard on any session factory
    session_factory(args)              the CLI's: load_engine once, a new Session per (re-)run
    snapshot_app(path_or_snapshot)     a saved snapshot (with baseline=: against another)
"""

from __future__ import annotations

import argparse
import inspect
import os
import sys
from pathlib import Path
from typing import Callable

from tfdash.app.live import LiveSource, SnapshotSource
from tfdash.argparsing import Parser, a_file
from tfdash.defaults import DASHBOARD_MAX_NEW
from tfdash.errors import TfdashError
from tfdash.options import snapshot_path
from tfdash.profiling.snapshot import ProfileSnapshot
from tfdash.stats import tokens
from tfdash.termenc import dashboard_refusal, escaped
from tfdash.textsafe import visible

# New tokens before the CPU dashboard's own profile window: past the first steps, which the thread
# pool's start makes slow, and early enough that a 2048-token run shows its numbers within a second.
AUTO_WINDOW_AT = 64


def live_app(make_session: Callable, **kw):
    from tfdash.app.app import TfdashApp

    return TfdashApp(LiveSource(make_session), **kw)


def snapshot_app(snapshot: ProfileSnapshot | str | Path, baseline: ProfileSnapshot | str | Path | None = None,
                 **kw):
    """The dashboard on a saved snapshot; with `baseline`, the kernel table, drill-down and
    roofline also show that snapshot's numbers and the Δ against them (same shape and dtype)."""
    from tfdash.app.app import TfdashApp

    snapshot, path = _load(snapshot)
    if baseline is not None:
        from tfdash.app.baseline import Baseline, check_comparable

        base, base_path = _load(baseline)
        from tfdash.profiling.export import snapshot_label, snapshot_labels

        base_label = snapshot_label(base_path) if base_path else "baseline"
        label = snapshot_label(path) if path else "the snapshot"
        if base_path and path:  # two snapshot-h200.json: each with the folder that tells them apart
            base_label, label = snapshot_labels(base_path, path)
        check_comparable(base, snapshot, base_label, label)
        kw["baseline"] = Baseline(base, base_label, base_path)
    return TfdashApp(SnapshotSource(snapshot, path), **kw)


def _load(snapshot: ProfileSnapshot | str | Path) -> tuple[ProfileSnapshot, Path | None]:
    if isinstance(snapshot, ProfileSnapshot):
        return snapshot, None
    from tfdash.profiling.export import load_snapshot

    return load_snapshot(Path(snapshot)), Path(snapshot)


def make_session(engine, prompt: str, max_new_tokens: int, **kw):
    """A Session over `engine`, passing only the options this Session accepts. On the CPU, where
    only profile windows time the kernels, the session takes one itself early in the run (unless `p`
    came first), so the first run shows measured numbers without a key."""
    from tfdash.profiling.session import Session

    from tfdash.settings import SETTINGS

    if not engine.runtime.cuda:
        kw.setdefault("auto_window_at", min(AUTO_WINDOW_AT, max(1, max_new_tokens // 4)))
    kw.setdefault("prepare_profiler", True)  # the dashboard profiles: pay CUPTI's start before decoding
    kw.setdefault("timing", SETTINGS.timing)  # every step timed where CUPTI works (auto)
    kw.setdefault("continuous_steps", SETTINGS.continuous_steps)
    params = inspect.signature(Session).parameters
    return Session(engine, prompt, max_new_tokens, **{k: v for k, v in kw.items() if k in params})


def session_factory(args, max_new_tokens: int) -> Callable:
    """Build the engine once (in the worker, on the first run), then a new Session per run."""
    engine = None

    def make(status: Callable[[str], None]):
        nonlocal engine
        if engine is None:
            from tfdash.engine import load_engine
            from tfdash.engine.loading import BUILDING, compile_line, loading_status

            def progress(done, total, name, seconds):
                status(compile_line(done, total, name, seconds))

            status(BUILDING)
            engine = load_engine(ckpt=args.ckpt, model=args.model, device=args.device, dtype=args.dtype,
                                 backend=args.backend, prompt=args.prompt, max_new_tokens=max_new_tokens,
                                 seed=args.seed, progress=progress, threads=getattr(args, "threads", None),
                                 ui=True, loading=loading_status(status), status=status)
            from tfdash.engine import fallback_note

            from tfdash.engine.threads import oversubscribed

            note = engine.fallback or fallback_note(engine.device, engine.backend, args.backend)
            for line in (note, oversubscribed(engine.threads, engine.threads_why)):
                if line:
                    status(f"warning: {line}")
        return make_session(engine, args.prompt, max_new_tokens, ignore_eos=bool(getattr(args, "ignore_eos", False)))

    return make


def preflight(args, max_new_tokens: int):
    """The checks that need no weights (the config, the tokenizer file, an option a checkpoint makes
    moot such as --seed, the device, the lengths), before the screen opens: a mistake is one line on
    the terminal, as headless says it, not an error pane. The engine chosen (its device, dtype and
    backend)."""
    from tfdash.run_checks import check_engine_args

    choice, capacity = check_engine_args(args, max_new_tokens)  # its mistakes said as the parser's own
    from tfdash.engine import plan_for
    from tfdash.engine.head_plan import derived_bytes
    from tfdash.engine.memory import check_fits

    made = derived_bytes(plan_for(choice.config, choice.dtype, capacity, choice.backend))  # the int8 head's copy
    check_fits(choice.config, capacity, choice.dtype, choice.device, derived=made)
    if getattr(args, "save", None):  # checked before the run, so nothing measured is lost to it
        from tfdash.profiling.files import check_not_in_ckpt, check_writable_file

        check_writable_file(args.save, "--save")
        check_not_in_ckpt(args.save, "--save", args.ckpt)
        from tfdash.profiling.export_files import check_not_an_exports_snapshot

        check_not_an_exports_snapshot(args.save)  # an export's trace and CSV would be left beside another run
    return choice


def run_app(args) -> int:
    max_new = getattr(args, "max_new_tokens", None) or DASHBOARD_MAX_NEW
    choice = preflight(args, max_new)
    if str(choice.device) == "cuda":  # the session's worker starts the profiler: kineto wants this thread first
        from tfdash.profiling.kernel_map import profiler_on_this_thread

        profiler_on_this_thread()
    from tfdash.app.kept import runs_dir
    from tfdash.app.stderr_guard import native_stderr_to
    from tfdash.profiling.probe import cache_dir

    # Native libraries' stderr (kineto, tilelang's log) goes to a file, not over the dashboard.
    with native_stderr_to(cache_dir() / "dashboard-stderr.log") as guarded:
        app = live_app(session_factory(args, max_new), max_new_tokens=max_new,
                       save_path=getattr(args, "save", None), keep_dir=runs_dir())
        with app_signals(app):
            app.run()
    for line in app.unseen_toasts():  # raised while the terminal was too small to show them
        print(f"tfdash: {line}", file=sys.stderr)
    if guarded.lines:
        print(library_note(guarded.lines, guarded.path))
    line = final_line(app)
    if line:
        print(line)
    if app.keep_error:
        print(f"tfdash: the final snapshot was {visible(app.keep_error)}", file=sys.stderr)  # names the cache folder
    return exit_status(app)


def library_note(lines: int, path) -> str:
    """Where the native libraries' lines written during the dashboard went (`native_stderr_to`)."""
    said = "1 line" if lines == 1 else f"{lines} lines"
    return f"tfdash: {said} of library output during the run {'is' if lines == 1 else 'are'} in {visible(str(path))}"


def final_line(app) -> str | None:
    """The line printed after the screen closes: what the run made, and where --save wrote it (and
    any folder made for it, so a typo in a folder's name is seen) or where the dashboard kept it;
    None without a final snapshot."""
    from tfdash.profiling.files import created_note

    snap = app.final_snapshot
    if snap is None:
        return None
    gone = f" (replacing the snapshot of {app.save_replaced})" if getattr(app, "save_replaced", None) else ""
    saved = f"; snapshot saved to {visible(str(app.saved) + created_note(app.save_made) + gone)}" if app.saved else ""
    if getattr(app, "kept", None):  # the baseline key as the user's keymap binds it
        from tfdash.app.bindings import key_name

        b = key_name(app, "baseline")
        saved = f"; snapshot kept as {visible(str(app.kept))} (tfdash open it; {b} in a run lists it)"
    return f"tfdash: {tokens(snap.new_tokens, 'new ')}, {snap.tok_per_s:.1f} tok/s over the run{saved}"


def app_signals(app):
    """SIGINT (`kill -INT`: the dashboard's own Ctrl+C is a key), SIGTERM and SIGHUP quit the app
    as `q` does, and its exit status says which (the handler runs on the app's own thread, so a
    short thread hands the request over). One before the app's loop runs, when there is nothing to
    hand it to, is noted on the app, which quits once ready (both on this thread: neither misses
    the other); one after it is said in the exit status."""
    import signal
    import threading

    from tfdash.signals import STOP_SIGNALS, stop_signals

    def handler(signum: int) -> None:
        if not app.is_running:
            app.signal_while_stopped(signum)
            return
        threading.Thread(target=_hand_over, args=(app, signum), daemon=True).start()

    return stop_signals(handler, (signal.SIGINT, *STOP_SIGNALS))


def _hand_over(app, signum: int) -> None:
    try:
        app.call_from_thread(app.quit_on_signal, signum)
    except RuntimeError:  # the app is not running (yet, or any more)
        pass


def exit_status(app) -> int:
    """The app's own exit code: a crash is non-zero (Textual has printed its traceback above), a
    failed --save is 1, a signal (Ctrl+C's SIGINT too) is 128 + its number, said in a line after
    the screen is closed, as headless says it (one while the engine was built measured nothing)."""
    import sys

    from tfdash.signals import exit_code
    from tfdash.signals import name as signal_name

    if app.return_code:
        print(f"tfdash: the dashboard stopped with an error (exit {app.return_code}); its traceback is "
              f"printed above", file=sys.stderr)
        return app.return_code
    if getattr(app, "save_error", None):
        print(f"tfdash: error: the final snapshot was not saved: {visible(app.save_error)}", file=sys.stderr)
        return 1
    signum = getattr(app, "interrupted_by", None)
    if signum is not None:
        kept = "; what was measured is kept" if app.source.live and app.final_snapshot is not None else ""
        print(f"tfdash: interrupted ({signal_name(signum)}){kept}", file=sys.stderr)
        return exit_code(signum)
    return 0


def open_parser() -> argparse.ArgumentParser:
    p = Parser(prog="tfdash open",
               description="Open a saved profile snapshot in the dashboard, read-only.")
    p.add_argument("snapshot", metavar="SNAPSHOT.json", type=snapshot_path, nargs="?",
                   help="a snapshot written by the dashboard (e) or `tfdash --headless --export DIR` "
                   "(default: the newest run the dashboard kept, in its cache's runs/)")
    p.add_argument("--baseline", metavar="A.json", type=snapshot_path,
                   help="another snapshot of the same shape and dtype: the "
                   "kernel table gains Δ columns against it, the drill-down and roofline show both")
    p.add_argument("--export-dir", metavar="DIR", type=a_file,
                   help="where exports from this view go (default: the current "
                   "directory, or export_dir in the config file)")
    return p


def newest_kept() -> Path:
    """`tfdash open` without a file: the newest run the dashboard kept (tfdash.app.kept), said on
    stderr; none kept is one line naming where they would be."""
    from tfdash.app.kept import kept_runs, runs_dir

    runs = kept_runs(runs_dir())
    if not runs:  # the export key as the user's config.json binds it
        from tfdash.app.bindings import config_key_names

        e = config_key_names("export.snapshot")["export.snapshot"]
        raise TfdashError(f"no snapshot named, and no kept run in {visible(str(runs_dir()))} (the dashboard keeps "
                          f"one when it quits without --save; {e} exports one)")
    print(f"tfdash: opening the newest kept run, {visible(str(runs[0]))}", file=sys.stderr)
    return runs[0]


def open_main(argv: list[str]) -> int:
    from tfdash.profiling.export import check_snapshot_file

    args = open_parser().parse_args(argv)
    path = check_snapshot_file(args.snapshot if args.snapshot is not None else newest_kept())
    if args.baseline is not None:
        check_snapshot_file(args.baseline, "--baseline ")
    if args.export_dir is not None:  # said before the summary or the dashboard, as every output folder is
        from tfdash.profiling.files import check_writable_dir

        check_writable_dir(args.export_dir, "--export-dir")
    from tfdash.app.kept import runs_dir

    # load (and refuse) both files before anything is printed: a bad file is its one error line;
    # keep_dir: b lists the runs the dashboard kept (an open snapshot keeps nothing itself)
    app = snapshot_app(path, baseline=args.baseline, export_dir=args.export_dir, keep_dir=runs_dir())
    why = None if os.environ.get("TFDASH_FORCE_TUI") else \
        "stdout is not a terminal" if not sys.stdout.isatty() else \
        "TERM=dumb cannot draw the dashboard" if os.environ.get("TERM") == "dumb" else None  # as the run falls back
    if why:
        print(f"tfdash: {why}; printing a summary of the snapshot", file=sys.stderr)
        summary = snapshot_summary(_load(path)[0], path, lambda text: escaped(text, sys.stdout))
        sys.stdout.write(visible(summary, keep="\n"))
        if args.baseline is not None:
            from tfdash.profiling.diff_cli import main as diff_main

            print(f"\nagainst the baseline {args.baseline} (as `tfdash diff` prints it):", flush=True)
            diff_main([str(args.baseline), str(path)])
        return 0
    refusal = dashboard_refusal("pipe it through cat for a text summary")
    if refusal:
        raise TfdashError(refusal)
    with app_signals(app):
        app.run()
    return exit_status(app)


def snapshot_summary(snap: ProfileSnapshot, path: Path, data=str) -> str:
    """`tfdash open` without a terminal: what the dashboard's panes would say, as text. `data`
    spells the file's own text (its path, the host, the model) for stdout: termenc.escaped there,
    so a Δ in a folder's name is an escape, not tfdash's ASCII "d" (a path that does not exist)."""
    from tfdash.app.screens.main import describe_run
    from tfdash.profiling.headless import roofline_lines, summary_line, top_kernels
    from tfdash.profiling.snapshot import kernel_list_note

    out = [f"snapshot {data(str(path))}: {describe_run(snap, data)}",
           f"recorded {data(str(snap.meta.started_at))} on {data(str(snap.meta.host))}",
           summary_line(snap)]
    out += [n for n in (kernel_list_note(snap),) if n]  # a file cut short: the top kernels are not the step's
    if snap.roofline is not None:
        out += roofline_lines(snap)
    out += top_kernels(snap)
    for result in snap.ab:  # an A/B the run recorded: its table, as the headless report printed it
        from tfdash.profiling.ab_table import table

        try:
            out += table(result)
        except (KeyError, TypeError, ValueError, AttributeError):  # another version's form of it
            out.append(f"A/B {str(result.get('what', '?')) if isinstance(result, dict) else '?'}: recorded in a form "
                       "this version does not read")
    return "\n".join(out) + "\n"
