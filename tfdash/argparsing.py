"""The command line's parser: argparse with each error as one line.

argparse answers a bad argument with its whole usage block and then the error; every other error of
tfdash is one line, so a bad --max-new-tokens is one line too, naming where the help is.
"""

from __future__ import annotations

import argparse


class Parser(argparse.ArgumentParser):
    def error(self, message: str):
        self.exit(2, f"{self.prog}: error: {message} (see {self.prog} --help)\n")
