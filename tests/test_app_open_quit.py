"""Quitting `tfdash open X.json` (a saved snapshot, read-only) is at once: q with no A/B ever opened
imports neither the A/B machinery nor the engine nor torch (seconds of imports that every quit
waited for). A fresh interpreter opens the fixture's snapshot, presses q, and reports sys.modules."""

import json
import os
import subprocess
import sys
from pathlib import Path

TESTS = Path(__file__).resolve().parent
HEAVY = ("torch", "tfdash.engine", "tfdash.profiling.session_ab", "tfdash.app.screens.ab")

PROBE = r"""
import asyncio, json, sys
sys.path.insert(0, {tests!r})
from fixtures.appkit import SNAPSHOT
from tfdash.app.main import snapshot_app

HEAVY = {heavy!r}

def heavy():
    return [h for h in HEAVY if h in sys.modules]

app = snapshot_app(SNAPSHOT)
report = {{}}

async def go():
    async with app.run_test(size=(160, 48)) as pilot:
        await pilot.pause()
        report["before_q"] = heavy()
        await pilot.press("q")
        await pilot.pause()
        report["running"] = app.is_running

asyncio.run(go())
report["after_q"] = heavy()
report["new_tokens"] = app.return_value.new_tokens if app.return_value is not None else None
print("REPORT " + json.dumps(report))
"""


def test_quitting_an_opened_snapshot_imports_no_engine(tmp_path):
    env = {"TFDASH_CONFIG_DIR": str(tmp_path / "cfg"), "TFDASH_CACHE_DIR": str(tmp_path / "cache")}
    p = subprocess.run([sys.executable, "-c", PROBE.format(tests=str(TESTS), heavy=HEAVY)], capture_output=True,
                       text=True, timeout=120, env={**os.environ, **env}, cwd=tmp_path)
    assert p.returncode == 0, p.stderr[-3000:]
    report = json.loads(next(ln for ln in p.stdout.splitlines() if ln.startswith("REPORT "))[len("REPORT "):])
    assert report["before_q"] == [] and not report["running"]
    assert report["new_tokens"] is not None  # the app quit with its snapshot
    assert report["after_q"] == [], f"q imported {report['after_q']}"
