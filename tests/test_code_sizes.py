"""The package's shape stays readable: no file in tfdash/ over 400 lines, no class over 250, and
the Session (threads, locks, requests; its parts live beside it) under 200. Counted statically
with ast, so a class grown past its bound names itself here before a reviewer has to."""

import ast
from pathlib import Path

import tfdash

ROOT = Path(tfdash.__file__).parent
MAX_FILE, MAX_CLASS, MAX_SESSION = 400, 250, 200


def _sources():
    return sorted(f for f in ROOT.rglob("*.py") if "__pycache__" not in f.parts)


def _classes(f: Path):
    for node in ast.walk(ast.parse(f.read_text(encoding="utf-8"), str(f))):
        if isinstance(node, ast.ClassDef):
            yield node.name, node.end_lineno - node.lineno + 1


def test_no_file_over_400_lines():
    long = {str(f.relative_to(ROOT)): n for f in _sources()
            if (n := len(f.read_text(encoding="utf-8").splitlines())) > MAX_FILE}
    assert long == {}


def test_no_class_over_250_lines_and_the_session_under_200():
    sizes = {f"{f.relative_to(ROOT)}:{name}": n for f in _sources() for name, n in _classes(f)}
    assert len(sizes) > 50  # the walk found the package's classes
    assert {k: n for k, n in sizes.items() if n > MAX_CLASS} == {}
    assert sizes["profiling/session.py:Session"] < MAX_SESSION
