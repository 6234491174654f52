"""A config file's export_dir that cannot be written is said when the dashboard opens, not when the
first export of a long run fails; --export-dir, which the CLI checks itself, takes its place."""

import json

from fixtures.appkit import SNAPSHOT, LiveStandIn, isolated_config, sync  # noqa: F401  (fixture)

from tfdash.app.app import TfdashApp
from tfdash.app.main import snapshot_app


def config_warnings(app) -> list[str]:
    return [n.message for n in app._notifications if n.title == "config" and "export_dir" in n.message]


@sync
async def test_an_unwritable_export_dir_is_said_at_start(isolated_config, tmp_path):
    blocker = tmp_path / "a-file"
    blocker.write_text("x")
    (isolated_config / "config.json").write_text(json.dumps({"export_dir": str(blocker / "profiles")}))
    app = snapshot_app(SNAPSHOT)
    async with app.run_test(size=(120, 40)) as pilot:
        await pilot.pause()
        [line] = config_warnings(app)
        assert str(isolated_config / "config.json") in line and str(blocker) in line
        assert line.endswith("exports will fail until it is fixed (or pass --export-dir)")
    app = snapshot_app(SNAPSHOT, export_dir=tmp_path / "given")
    async with app.run_test(size=(120, 40)) as pilot:
        await pilot.pause()
        assert config_warnings(app) == []


@sync
async def test_a_live_run_is_told_to_fix_the_config_file_not_to_pass_export_dir(isolated_config):
    """Live `tfdash` has no --export-dir (only `tfdash open` does), yet the toast advised passing it."""
    config = isolated_config / "config.json"
    config.write_text(json.dumps({"export_dir": "/proc/nope"}))
    app = TfdashApp(LiveStandIn())
    async with app.run_test(size=(120, 40)) as pilot:
        await pilot.pause()
        [line] = config_warnings(app)
    assert line.startswith(f"export_dir in {config}: /proc/nope: cannot write there")
    assert line.endswith(f"; exports will fail until it is fixed in {config}") and "--export-dir" not in line


@sync
async def test_a_writable_export_dir_says_nothing(isolated_config, tmp_path):
    (isolated_config / "config.json").write_text(json.dumps({"export_dir": str(tmp_path / "new" / "profiles")}))
    app = snapshot_app(SNAPSHOT)
    async with app.run_test(size=(120, 40)) as pilot:
        await pilot.pause()
        assert config_warnings(app) == []
        assert not (tmp_path / "new").exists()  # checked, not made, until an export


@sync
async def test_an_export_dir_of_a_user_with_no_home_is_one_line_not_a_traceback(isolated_config):
    """`"export_dir": "~nouser/x"`: Path.expanduser raised RuntimeError at start (the check) and at e (an
    export) and b (the picker lists the export folder), each a traceback that ended the dashboard."""
    from textual.notifications import Notify

    from tfdash.app.screens.picker import PickerScreen

    config = isolated_config / "config.json"
    config.write_text(json.dumps({"export_dir": "~tfdash-no-such-user/profiles"}))
    messages = []
    app = snapshot_app(SNAPSHOT)
    async with app.run_test(size=(120, 40), message_hook=messages.append) as pilot:
        await pilot.pause()
        await pilot.press("e")
        await pilot.pause()
        await pilot.press("b")
        await pilot.pause()
        assert isinstance(app.screen, PickerScreen)
    toasts = [m.notification for m in messages if isinstance(m, Notify)]
    said = f"export_dir in {config}: ~tfdash-no-such-user/profiles: there is no user 'tfdash-no-such-user'"
    [start] = [n for n in toasts if n.title == "config" and "export_dir" in n.message]
    assert start.message.startswith(said) and start.message.endswith("until it is fixed (or pass --export-dir)")
    [export] = [n for n in toasts if n.title == "export snapshot"]
    assert export.severity == "error" and "\n" not in export.message
    assert export.message.startswith(said) and export.message.endswith(f"(fix export_dir in {config})")
