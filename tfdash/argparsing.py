"""The command line's parser: argparse with each error as one line, and help that keeps names whole.

argparse answers a bad argument with its whole usage block and then the error; every other error of
tfdash is one line, so a bad --max-new-tokens is one line too, naming where the help is. Its help
wraps at hyphens, splitting names such as `tilelang-graph` across lines; here it wraps at spaces only.
"""

from __future__ import annotations

import argparse
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
        self.exit(2, f"{self.prog}: error: {message} (see {self.prog} --help)\n")
