"""The headless core never imports the UI (harlequin's contract, nvitop's api/ vs tui/).

`tfdash.engine`, `tfdash.kernels` and `tfdash.profiling` — every module under them, found by
walking the packages — import in a fresh interpreter without `textual` entering sys.modules; a
headless run does not load it either. A static pass over the same sources finds no import of
textual or of tfdash.app anywhere, not even inside a function.
"""

import ast
import json
import subprocess
import sys
from pathlib import Path

import tfdash

CORE = ("tfdash.engine", "tfdash.kernels", "tfdash.profiling")
UI = ("textual", "textual_plotext", "plotext", "tfdash.app")

PROBE = r"""
import importlib, json, pkgutil, sys

UI = {ui!r}

def ui_loaded():
    return sorted(m for m in sys.modules if any(m == u or m.startswith(u + ".") for u in UI))

report = {{"modules": [], "culprit": None, "tilelang_at_import": None}}
import tfdash.engine, tfdash.kernels, tfdash.profiling, tfdash.cli, tfdash.errors
report["tilelang_at_import"] = "tilelang" in sys.modules
for pkg_name in {core!r}:
    pkg = importlib.import_module(pkg_name)
    for info in pkgutil.walk_packages(pkg.__path__, pkg_name + "."):
        importlib.import_module(info.name)
        report["modules"].append(info.name)
        if ui_loaded() and report["culprit"] is None:
            report["culprit"] = info.name
report["ui_after_imports"] = ui_loaded()

from tfdash.cli import main
rc = main(["--headless", "--device", "cpu", "--max-new-tokens", "2", "--prompt", "hello"])
report["headless_rc"] = rc
report["ui_after_headless"] = ui_loaded()
print("REPORT " + json.dumps(report))
"""


def test_core_imports_without_textual():
    code = PROBE.format(ui=UI, core=CORE)
    p = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=180)
    assert p.returncode == 0, p.stderr[-3000:]
    line = next(ln for ln in p.stdout.splitlines() if ln.startswith("REPORT "))
    report = json.loads(line[len("REPORT "):])
    assert report["culprit"] is None, f"{report['culprit']} imports the UI"
    assert report["ui_after_imports"] == []
    assert report["headless_rc"] == 0
    assert report["ui_after_headless"] == []
    # The walk really covered the packages, subpackages and all.
    mods = set(report["modules"])
    for must in ("tfdash.engine.config", "tfdash.engine.checkpoint", "tfdash.engine.decode",
                 "tfdash.engine.runtime", "tfdash.kernels.gemv", "tfdash.kernels.attention",
                 "tfdash.profiling.analyze", "tfdash.profiling.targets"):
        assert must in mods, must
    assert mods == set(_core_modules_on_disk())
    # Kernel factories import tilelang when called, never at import (CPU machines without nvcc).
    assert report["tilelang_at_import"] is False


def _core_modules_on_disk():
    root = Path(tfdash.__file__).parent
    for pkg in CORE:
        base = root / pkg.split(".", 1)[1]
        for f in base.rglob("*.py"):
            if "__pycache__" in f.parts:
                continue
            rel = f.relative_to(root.parent).with_suffix("")
            parts = rel.parts[:-1] if rel.name == "__init__" else rel.parts
            if parts != tuple(pkg.split(".")):
                yield ".".join(parts)


def test_no_ui_import_anywhere_in_the_core_source():
    """Static: a lazy `import textual` inside a function would dodge the runtime check."""
    root = Path(tfdash.__file__).parent
    offenders = []
    for pkg in CORE:
        for f in sorted((root / pkg.split(".", 1)[1]).rglob("*.py")):
            tree = ast.parse(f.read_text(encoding="utf-8"), str(f))
            for node in ast.walk(tree):
                names = []
                if isinstance(node, ast.Import):
                    names = [a.name for a in node.names]
                elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
                    names = [node.module]
                for n in names:
                    if any(n == u or n.startswith(u + ".") for u in UI):
                        offenders.append(f"{f.relative_to(root)}:{node.lineno} imports {n}")
    assert offenders == []
