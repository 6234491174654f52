"""The command line's parser: argparse with each error as one line, and help that keeps names whole.

argparse answers a bad argument with its whole usage block and then the error; every other error of
tfdash is one line, so a bad --max-new-tokens is one line too, naming where the help is. Its help
wraps at hyphens, splitting names such as `tilelang-graph` across lines; here it wraps at spaces only.
argparse says a missing argument before an unknown one (`tfdash open -x`: "SNAPSHOT.json is
required"); here the unknown option, the likelier mistake, is named first. argparse drops an error
writing --help or --version and exits 0, so `tfdash --help > /dev/full` said nothing; here the error
reaches the command line, which says that stdout could not be written and exits 2.
"""

from __future__ import annotations

import argparse
import os
import re
import sys
import textwrap


class _Help(argparse.HelpFormatter):
    def _split_lines(self, text, width):
        return textwrap.wrap(self._whitespace_matcher.sub(" ", text).strip(), width, break_on_hyphens=False)

    def _fill_text(self, text, width, indent):
        return textwrap.fill(self._whitespace_matcher.sub(" ", text).strip(), width, initial_indent=indent,
                             subsequent_indent=indent, break_on_hyphens=False)


class Parser(argparse.ArgumentParser):
    def __init__(self, *args, **kw):
        kw.setdefault("formatter_class", _Help)
        super().__init__(*args, **kw)

    def error(self, message: str):
        if getattr(self, "_probing", False):
            raise _ProbeFailed
        # argparse's own "invalid int value: 'abc'" in tfdash's words, as its own types say it (--max-new-tokens)
        message = re.sub(r"invalid int value: (.*)$", r"\1 is not an integer", message)
        message = re.sub(r"invalid float value: (.*)$", r"\1 is not a number", message)
        self.exit(2, f"{self.prog}: error: {message} (see {self.prog} --help)\n")

    def _print_message(self, message, file=None):
        """argparse's print, less its `except OSError: pass` where the text is stdout's (help, --version):
        flushed here, a full disk's error is raised inside the command's handling (cli._run), not lost."""
        if not message or file is None or file is not sys.stdout:
            return super()._print_message(message, file)
        file.write(message)
        file.flush()

    def print_help(self, file=None):
        if getattr(self, "_probing", False):  # --help met by _unknown's parse, where nothing is required:
            raise _ProbeFailed  # the real parse prints it, its required choices shown as required
        super().print_help(file)

    def parse_args(self, args=None, namespace=None):
        args = sys.argv[1:] if args is None else list(args)
        unknown = self._unknown(args)
        if unknown:
            self.error(f"unrecognized arguments: {' '.join(unknown)}{self.unknown_hint(unknown)}")
        return super().parse_args(args, namespace)

    def unknown_hint(self, unknown: list[str]) -> str:
        """What to add after the unknown arguments (the run's parser: that a command goes first)."""
        return ""

    def _unknown(self, args: list[str]) -> list[str]:
        """What argparse would leave unrecognized, found by a parse that requires nothing; any other
        error is left to the real parse, which says it as before."""
        required = [a for a in (*self._actions, *self._mutually_exclusive_groups) if a.required]
        for a in required:
            a.required = False
        self._probing = True
        try:
            return self.parse_known_args(args)[1]
        except _ProbeFailed:
            return []
        finally:
            self._probing = False
            for a in required:
                a.required = True


def named(value: str) -> str:
    """The type of a path tfdash writes (--save, --export, --export-dir, an OUT file): an empty one
    (`--save "$OUT"` with OUT unset) read as none given, and the run's snapshot went unwritten, unsaid."""
    if not value.strip():
        raise argparse.ArgumentTypeError(f"{value!r} is empty: give a path")
    return home_known(value)


def home_known(value: str) -> str:
    """`value`, where a leading `~user` names a home (`--save "~nobody/x"`: Path.expanduser's RuntimeError,
    a traceback, where the path was used); otherwise the parser's one line."""
    from tfdash.cache import expand_home
    from tfdash.errors import TfdashError

    try:
        expand_home(value)
    except TfdashError as e:
        raise argparse.ArgumentTypeError(str(e)) from None
    return value


def user_path(v: str) -> str:
    """The type of a file or folder tfdash reads (--ckpt, a snapshot, --baseline, --target): a leading
    `~` is the home, as the files it writes read it. `--save=~/run.json` (the shell leaves a ~ after
    `=`) wrote ~/run.json, and `open --baseline=~/run.json` then said "no such snapshot file"."""
    return os.path.expanduser(home_known(v))


def ckpt_dir(v: str) -> str:
    """--ckpt's type in every command: `user_path`, and an empty one said by the command's parser
    (Path('') is the current folder, which said ". has no config.json")."""
    if not v.strip():
        raise argparse.ArgumentTypeError(f"{v!r} is empty: give a checkpoint directory")
    return user_path(v)


def a_file(value: str) -> str:
    """The type of a path that only a file or folder can be (--save, --export, --export-dir): named,
    and not `-`, which a report's OUT takes as stdout and which here made a file called `-`."""
    if named(value) == "-":
        raise argparse.ArgumentTypeError("'-' is no file here (a report's --json - is stdout): give a path")
    return value


def prompt_text(value: str) -> str:
    """The type of --prompt: text the tokenizer can take. Python decodes an argument it cannot read
    in the locale's encoding (`LC_ALL=C PYTHONUTF8=0`: ASCII) into lone surrogates, which no
    tokenizer encodes (a traceback from the stand-in, an opaque line from tokenizer.json). The
    argument's bytes are read as UTF-8 instead; bytes that are not UTF-8 either are the parser's line."""
    if not any("\udc80" <= c <= "\udcff" for c in value):
        return value
    raw = os.fsencode(value)  # the bytes as they came, surrogates turned back into them
    try:
        return raw.decode("utf-8")
    except UnicodeDecodeError as e:
        raise argparse.ArgumentTypeError(f"byte 0x{raw[e.start]:02x} at offset {e.start} is not UTF-8: "
                                         "give the prompt as UTF-8 text") from None


class _ProbeFailed(Exception):
    """An error met by Parser._unknown's parse, to be said by the real one."""
