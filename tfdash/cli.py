"""The `tfdash` command.

    tfdash [--ckpt DIR | --model PRESET] [...]        the live dashboard
    tfdash --headless [...]                           stream the continuation, then tok/s
    tfdash open [SNAPSHOT.json]                       a saved profile snapshot (else the newest kept run), read-only
    tfdash analyze [...]                              the static cost of one decode step
    tfdash bench [...]                                tilelang engine vs its peers, A/B in one process
    tfdash diff A.json B.json [...]                   two snapshots compared launch by launch
    tfdash counters (--launch ROLE | --all) [...]     Nsight Compute's counters per launch

Errors a user can act on print one line (`tfdash: error: ...`) on stderr and exit 2; never a traceback.
With stderr closed (`2>&-`), unread or on a full disk, such lines (and every note) are lost, never written
into stdout's data, the run goes on, and the exit status still says what happened.
Ctrl+C, SIGTERM and SIGHUP stop a run cleanly (what was measured is reported and written) and
exit 128 + the signal. Untrusted text (the prompt, tokens, paths) is printed with its control
characters made visible. Where stdout's encoding is not UTF-8, a character it cannot encode is
printed as a backslash escape (`\\u0394`), as Python's stderr already does. The options the commands
share (the model's, the generation's) and their types are tfdash.options'.
"""

from __future__ import annotations

import argparse
import errno
import os
import sys

from tfdash import __version__
from tfdash.argparsing import Parser, a_file
from tfdash.errors import TfdashError, UsageError, as_usage
from tfdash.options import add_run_args
from tfdash.signals import exit_code, finishing, stop_signals
from tfdash.signals import name as signal_name
from tfdash.termenc import dashboard_refusal, escaped, tolerant_output
from tfdash.textsafe import KEEP_LAYOUT, visible

SUBCOMMANDS = ("open", "analyze", "bench", "diff", "counters")


def run_parser() -> argparse.ArgumentParser:
    p = Parser(
        prog="tfdash",
        description="A terminal dashboard for batch-1 LLM decode: live tokens, per-kernel time against a "
                    "static cost model, the memory roofline and NVML bandwidth.",
        epilog="Other commands: tfdash open [SNAPSHOT.json] | tfdash analyze ... | tfdash bench ... | "
               "tfdash diff A.json B.json | tfdash counters ... "
               "(each takes --help).",
    )
    p.add_argument("--version", action="version", version=f"tfdash {__version__}")
    p.add_argument("--headless", action="store_true", help="no dashboard: print the continuation and a summary")
    p.add_argument("--profile", action="store_true", help="headless: time each kernel (every step where continuous "
                   "timing runs, else a window of steps: TFDASH_TIMING)")
    p.add_argument("--export", metavar="DIR", type=a_file,
                   help="headless: write snapshot JSON, Chrome trace and CSV here")
    p.add_argument("--ab", metavar="VARIANT", help="headless: A/B a plan variant against the running plan on the "
                   "generation (a `tfdash bench` variant: tilelang-unfused on any engine; tilelang-lateres or a "
                   "GEMV spec such as down:seg=2 on the tilelang engine, on CUDA)")
    p.add_argument("--save", metavar="PATH", type=a_file,
                   help="write the final profile snapshot here (the dashboard: on quit)")
    add_run_args(p)
    p.unknown_hint = _command_goes_first
    return p


def _command_goes_first(unknown: list[str]) -> str:
    """`tfdash --threads 1 analyze`: the command after an option was only "unrecognized"."""
    cmd = next((a for a in unknown if a in SUBCOMMANDS), None)
    return f" (a command goes first: tfdash {cmd} [its options])" if cmd else ""


def _describe(eng) -> str:
    src = "random weights, " + eng.tokenizer.label if eng.random_weights else eng.source
    n = getattr(eng, "threads", None)
    threads = f" · {n} thread{'s' if n != 1 else ''} ({eng.threads_why})" if n else ""
    return (f"tfdash {__version__} · {eng.config.name} · {src} · {eng.backend} on {eng.device} "
            f"{eng.plan.dtype}{threads} · {len(eng.plan)} launches/step")


def run_headless(args, note: str | None = None) -> int:
    """The run without the dashboard. `note` (why a run asked for no --headless runs so) is said once
    the run starts, after every check of its arguments and files and the engine's load: a mistake
    is then the one line on stderr, as on a terminal."""
    from tfdash.engine import load_engine

    from tfdash.defaults import AB_MAX_NEW, HEADLESS_MAX_NEW

    max_new = args.max_new_tokens or (AB_MAX_NEW if getattr(args, "ab", None) else HEADLESS_MAX_NEW)
    from tfdash.run_checks import check_engine_args

    check_engine_args(args, max_new)  # said as the parser says its own mistakes, before any weight is loaded
    from tfdash.profiling.files import check_not_in_ckpt, check_writable_dir, check_writable_file

    if getattr(args, "export", None):
        from tfdash.profiling.export_files import check_export_folder

        check_writable_dir(args.export, "--export", temp_beside=True)  # export_all: a temporary folder beside it
        check_export_folder(args.export)
    if getattr(args, "save", None):  # headless too: the final snapshot, as the dashboard writes it on quit
        check_writable_file(args.save, "--save")
        check_not_in_ckpt(args.save, "--save", args.ckpt)
        from tfdash.profiling.export_files import check_save_beside_export

        check_save_beside_export(args.save, getattr(args, "export", None))  # neither its folder nor one of its files
    variant = None
    if getattr(args, "ab", None) is not None:  # a typo in the variant is one line now, not after the generation
        from tfdash.profiling.ab import check_variant, resolve

        with as_usage("tfdash"):  # said as the parser says its own mistakes, as bench says --gemv's
            variant = resolve(args.ab)
        check_variant(variant, args)  # past its weight's shape, or refused by a torch engine: before any weight
    from tfdash.engine.loading import BUILDING, LoadingBar

    with LoadingBar() as loading:  # a large model's weights take a minute or more; in a pipe, a slow phase a line
        loading.status(BUILDING)
        eng = load_engine(ckpt=args.ckpt, model=args.model, device=args.device, dtype=args.dtype,
                          backend=args.backend, prompt=args.prompt, max_new_tokens=max_new, seed=args.seed,
                          threads=getattr(args, "threads", None), loading=loading, status=loading.status)
    if variant is not None:  # the tilelang engine's refusal (the plan running), or its torch-graph fallback's
        from tfdash.profiling.variants import refusal

        rt = eng.runtime
        why = refusal(variant, rt.backend, dict(rt.plan.meta.get("options") or {}), getattr(rt, "pdl", None),
                      rt.device.type)
        if why:
            raise TfdashError(f"--ab {why.line}")
        from tfdash.profiling.ab import check_cache, variant_plan

        variant_plan(rt.plan, variant)  # a GEMV setting past its weight's shape: one line now, not after it
        check_cache(variant.name, rt.plan)  # and windows past the cache
    out = sys.stdout
    if note:
        print(f"tfdash: {note}", file=sys.stderr)
    print(visible(_describe(eng)), file=sys.stderr)
    from tfdash.engine import fallback_note

    note = eng.fallback or fallback_note(eng.device, eng.backend, args.backend)
    if note:
        print(f"tfdash: {visible(note)}", file=sys.stderr)
    from tfdash.engine.threads import oversubscribed

    crowded = oversubscribed(eng.threads, eng.threads_why)
    if crowded:
        print(f"tfdash: warning: {crowded}", file=sys.stderr)
    if any(getattr(args, k, None) for k in ("profile", "export", "ab", "save")):
        from tfdash.profiling.headless import profile_run

        return profile_run(eng, args, max_new)
    gen = eng.generate(args.prompt, max_new, ignore_eos=args.ignore_eos)
    out.write(escaped(visible(args.prompt, KEEP_LAYOUT), out))  # data: escapes, not tfdash's ASCII symbols
    out.flush()
    interrupted = None
    try:
        with stop_signals():  # SIGTERM and SIGHUP stop the run as Ctrl+C does
            for ev in gen:
                if ev.text:
                    out.write(escaped(visible(ev.text, KEEP_LAYOUT), out))
                    out.flush()
    except KeyboardInterrupt as e:
        interrupted = e
        gen.cancel()
        print(f"\ntfdash: interrupted ({signal_name(e)}); the summary covers what was generated", file=sys.stderr)
    with finishing("the summary"):
        out.write("\n")
        print(gen.stats.summary(), file=out)
        out.flush()
    return exit_code(interrupted) if interrupted is not None else 0


def run_dashboard(args) -> int:
    from tfdash.app.main import run_app

    return run_app(args)


def _stderr_closed_to_devnull() -> None:
    """Started with stderr closed (`2>&-`), Python has no sys.stderr, and print(file=sys.stderr) and
    argparse's usage then write to stdout, into its data. Point sys.stderr and descriptor 2 (which a
    later open() would otherwise take, and C libraries write to) at /dev/null: the lines are lost,
    never mixed into stdout, and the exit status still says what happened."""
    if sys.stderr is not None:
        return
    try:
        os.fstat(2)
    except OSError:
        fd = os.open(os.devnull, os.O_WRONLY)
        if fd != 2:
            os.dup2(fd, 2)
            os.close(fd)
    sys.stderr = open(os.devnull, "w", encoding="utf-8")


def _say(line: str) -> None:
    """An error line on stderr; a stderr that cannot take it (a closed pipe) loses it quietly."""
    try:
        print(line, file=sys.stderr, flush=True)
    except (OSError, ValueError):
        pass


def main(argv: list[str] | None = None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    _stderr_closed_to_devnull()
    if sys.stdout is None:  # started with stdout closed (`>&-`): say so before any work
        _say("tfdash: error: stdout is closed; redirect it to a file or /dev/null")
        return 2
    tolerant_output()  # a terminal that is not UTF-8: µ, Δ, × as ASCII, others as escapes, never a crash
    from tfdash.omp_env import set_aside

    set_aside()  # before torch loads libgomp: OMP_NUM_THREADS=abc is said once, by tfdash (engine/threads.py)
    from tfdash.stderr_notes import losing_stderr

    with losing_stderr():  # `2>/dev/full`: the notes are lost, the run and its stdout go on
        return _run(argv)


def _run(argv: list[str]) -> int:
    try:
        with stop_signals():  # SIGTERM/SIGHUP anywhere: the same clean stop as Ctrl+C
            return _dispatch(argv)
    except UsageError as e:  # as the parser says its own: the command and its help
        _say(f"{e.prog}: error: {visible(str(e))} (see {e.prog} --help)")
        return 2
    except TfdashError as e:
        _say(f"tfdash: error: {visible(str(e))}")
        return 2
    except BrokenPipeError:  # the reader went away (`| head`): stop quietly, as a tool killed by SIGPIPE does
        for f in (sys.stdout, sys.stderr):  # stdout's reader or stderr's
            try:
                f.flush()
            except (OSError, ValueError):  # this one: /dev/null under it, so the exit's flush cannot fail again
                os.dup2(os.open(os.devnull, os.O_WRONLY), f.fileno())
        return 128 + 13
    except KeyboardInterrupt as e:
        _say(f"tfdash: interrupted ({signal_name(e)})")
        return exit_code(e)
    except OSError as e:  # `> out.txt` on a full disk: the report could not be printed
        if e.errno not in (errno.ENOSPC, errno.EDQUOT, errno.EFBIG) or sys.stdout is None:
            raise
        _stdout_failed(e)
        return 2


def _stdout_failed(e: OSError) -> None:
    """Say that stdout could not be written: a disk full or over quota is a write's error alone, and
    every file tfdash writes by name (--json, --save, --export) says its own failure, naming the file.
    It was stdout's: stderr is a LosingStderr here (tfdash.stderr_notes), which loses a line it cannot
    write rather than raise, so `2> log` on a full disk ends no run. The line goes to stderr (lost where
    stderr is full too) and stdout's descriptor to /dev/null, so that the exit's flush of what is left
    does not fail again ("Exception ignored"); only a stderr closed or whose reader has gone refuses
    the line, and stdout is then left as it is."""
    try:
        print(f"tfdash: error: cannot write to stdout ({e.strerror or e})", file=sys.stderr, flush=True)
    except (OSError, ValueError):
        return
    try:
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
    except (OSError, ValueError):
        pass


def _dispatch(argv: list[str]) -> int:
    from tfdash.settings import env_warnings

    for line in env_warnings():  # a removed knob or a mistyped TFDASH_ name is worth a line, never silence
        _say(f"tfdash: warning: {visible(line)}")
    if argv and argv[0] in SUBCOMMANDS:
        cmd = argv.pop(0)
        if cmd == "analyze":
            from tfdash.profiling.analyze_cli import main as analyze_main

            return analyze_main(argv)
        if cmd == "diff":
            from tfdash.profiling.diff_cli import main as diff_main

            return diff_main(argv)
        if cmd == "counters":
            from tfdash.profiling.counters_cli import main as counters_main

            return counters_main(argv)
        if cmd == "bench":
            from tfdash.profiling.bench import main as bench_main

            return bench_main(argv)
        from tfdash.app.main import open_main

        return open_main(argv)
    if argv and not argv[0].startswith("-"):  # the run takes no positional: a word here is a command mistyped
        raise UsageError(f"no command {argv[0]!r} (the commands: {', '.join(SUBCOMMANDS)})")
    args = run_parser().parse_args(argv)
    from tfdash.settings import SETTINGS

    SETTINGS.values()  # every knob read now, as bench does: a bad one (even one only CUDA reads) is one line
    if args.headless:
        return run_headless(args)
    if not os.environ.get("TFDASH_FORCE_TUI"):
        if not sys.stdout.isatty():
            return run_headless(args, "stdout is not a terminal; running --headless")
        if os.environ.get("TERM") == "dumb":  # an editor's shell buffer: escape codes would be garbage there
            return run_headless(args, "TERM=dumb cannot draw the dashboard; running --headless")
    headless_only = [f"--{k}" for k in ("profile", "export", "ab") if getattr(args, k)]
    if headless_only:  # never silently dropped: the dashboard does these with its keys, as config.json binds them
        from tfdash.app.bindings import config_key_names

        k = config_key_names("profile", "export.snapshot", "ab")
        raise UsageError(f"{', '.join(headless_only)}: with --headless only (the dashboard: {k['profile']} profiles, "
                         f"{k['export.snapshot']} exports, {k['ab']} A/Bs, --save PATH writes the snapshot on quit)")
    refusal = dashboard_refusal("run --headless")
    if refusal:  # a screen of `?` says nothing; this line says why and what to do
        raise TfdashError(refusal)
    return run_dashboard(args)


if __name__ == "__main__":
    raise SystemExit(main())
