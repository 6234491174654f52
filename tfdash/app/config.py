"""The user's dashboard settings: a keymap and a theme, in one small JSON file.

    $TFDASH_CONFIG_DIR/config.json           when set (tests point it at a temporary directory)
    $XDG_CONFIG_HOME/tfdash/config.json      otherwise, when XDG_CONFIG_HOME is set
    ~/.config/tfdash/config.json             otherwise

    {"theme": "tfdash-light", "keymap": {"pause": "p", "export.svg": "f12"}, "export_dir": "~/profiles"}

A missing file is the defaults; an unreadable one is the defaults plus one warning line (the app
shows it as a toast) -- a broken config never stops the dashboard. Saving rewrites the file
atomically and keeps keys it does not know.
"""

from __future__ import annotations

import json
import os
from dataclasses import dataclass, field
from pathlib import Path

from tfdash.errors import TfdashError

FILENAME = "config.json"


def config_dir() -> Path:
    if os.environ.get("TFDASH_CONFIG_DIR"):
        return Path(os.environ["TFDASH_CONFIG_DIR"]).expanduser()
    base = os.environ.get("XDG_CONFIG_HOME") or str(Path.home() / ".config")
    return Path(base).expanduser() / "tfdash"


def config_path() -> Path:
    return config_dir() / FILENAME


@dataclass
class Config:
    theme: str | None = None
    keymap: dict[str, str] = field(default_factory=dict)
    export_dir: str | None = None
    path: Path = field(default_factory=config_path)
    warning: str | None = None  # why the file was ignored, if it was
    extra: dict = field(default_factory=dict)  # keys we do not know, kept on save

    def to_dict(self) -> dict:
        out = dict(self.extra)
        if self.theme:
            out["theme"] = self.theme
        if self.keymap:
            out["keymap"] = dict(self.keymap)
        if self.export_dir:
            out["export_dir"] = self.export_dir
        return out


def load_config(path: Path | None = None) -> Config:
    path = Path(path) if path is not None else config_path()
    if not path.exists():
        return Config(path=path)
    try:
        raw = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, json.JSONDecodeError) as e:
        return Config(path=path, warning=f"{path}: ignored, not readable JSON ({e})")
    if not isinstance(raw, dict):
        return Config(path=path, warning=f"{path}: ignored, expected a JSON object")
    problems = []
    theme = raw.pop("theme", None)
    if theme is not None and not isinstance(theme, str):
        problems.append("theme must be a string")
        theme = None
    keymap = raw.pop("keymap", {}) or {}
    if not (isinstance(keymap, dict) and all(isinstance(k, str) and isinstance(v, str) for k, v in keymap.items())):
        problems.append('keymap must map binding ids to keys, e.g. {"pause": "p"}')
        keymap = {}
    export_dir = raw.pop("export_dir", None)
    if export_dir is not None and not isinstance(export_dir, str):
        problems.append("export_dir must be a string")
        export_dir = None
    warning = f"{path}: " + "; ".join(problems) if problems else None
    return Config(theme=theme, keymap=dict(keymap), export_dir=export_dir, path=path, warning=warning, extra=raw)


def save_config(cfg: Config) -> Path:
    """Write the config atomically. Raises TfdashError with one line when it cannot."""
    from tfdash.profiling.files import write_json_atomic

    try:
        return write_json_atomic(cfg.path, cfg.to_dict())
    except TfdashError:
        raise
    except OSError as e:  # pragma: no cover - write_json_atomic already turns these into TfdashError
        raise TfdashError(f"cannot write {cfg.path}: {e}") from None
