"""The user's dashboard settings: a keymap and a theme, in one small JSON file.

    $TFDASH_CONFIG_DIR/config.json           when set (tests point it at a temporary directory)
    $XDG_CONFIG_HOME/tfdash/config.json      otherwise, when XDG_CONFIG_HOME is set (and absolute)
    ~/.config/tfdash/config.json             otherwise

    {"theme": "tfdash-light", "keymap": {"pause": "P", "export.svg": "f12"}, "export_dir": "~/profiles"}

A missing file is the defaults; an unreadable one is the defaults plus one warning line (the app
shows it as a toast) -- a broken config never stops the dashboard, and is never rewritten (the
user's keymap and export_dir are in it): saving is refused with a line that names the file.
Saving rewrites a good file atomically and keeps keys it does not know. `keymap_problems` names
every remapped id whose key is empty, not a key, or taken by another binding in the same scope;
`applied_keymap` is what gets bound: such a remap is left out and its binding keeps its own key, so
a clash never takes a key (`q`: quit) away from the binding that had it.
"""

from __future__ import annotations

import functools
import json
import os
from dataclasses import dataclass, field
from pathlib import Path

from tfdash.cache import expand_home, xdg_home
from tfdash.errors import TfdashError
from tfdash.pathstat import stat_or_none

FILENAME = "config.json"


def config_dir() -> Path:
    if os.environ.get("TFDASH_CONFIG_DIR"):
        return Path(expand_home(os.environ["TFDASH_CONFIG_DIR"], "TFDASH_CONFIG_DIR"))
    return xdg_home("XDG_CONFIG_HOME", ".config") / "tfdash"  # a relative one ignored, as the XDG spec says


def config_path() -> Path:
    return config_dir() / FILENAME


@dataclass
class Config:
    theme: str | None = None
    keymap: dict[str, str] = field(default_factory=dict)
    export_dir: str | None = None
    path: Path = field(default_factory=config_path)
    warning: str | None = None  # why the file was ignored, if it was
    parsed: bool = True  # False when the file exists but did not parse: it is never rewritten
    extra: dict = field(default_factory=dict)  # keys we do not know, kept on save

    def to_dict(self) -> dict:
        """What a save writes: a keymap or export_dir that was refused in part or whole stays in
        `extra` as the user wrote it (the app changes only the theme), so saving loses none of it."""
        out = dict(self.extra)
        if self.theme:
            out["theme"] = self.theme
        if self.keymap:
            out.setdefault("keymap", dict(self.keymap))
        if self.export_dir:
            out.setdefault("export_dir", self.export_dir)
        return out


def load_config(path: Path | None = None) -> Config:
    path = Path(path) if path is not None else config_path()
    try:  # Path.exists raised PermissionError where a folder on the way cannot be searched (chmod 000)
        if stat_or_none(path, follow=False) is None:
            return Config(path=path)
    except OSError as e:  # there may be a config there: its keymap is not lost unsaid, nor rewritten
        return Config(path=path, parsed=False, warning=f"{path}: ignored, cannot read ({e.strerror or e})")
    try:
        raw = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, json.JSONDecodeError) as e:
        return Config(path=path, parsed=False, warning=f"{path}: ignored, not readable JSON ({e})")
    except (ValueError, RecursionError) as e:  # a 5000-digit integer, nesting past the recursion limit
        return Config(path=path, parsed=False, warning=f"{path}: ignored, not readable JSON "
                      f"({type(e).__name__})")
    if not isinstance(raw, dict):
        return Config(path=path, parsed=False, warning=f"{path}: ignored, expected a JSON object")
    problems = []
    theme = raw.pop("theme", None)
    if theme is not None and not isinstance(theme, str):
        problems.append("theme must be a string")
        theme = None
    keymap = raw.pop("keymap", {}) or {}
    if not isinstance(keymap, dict):
        problems.append('keymap must map binding ids to keys, e.g. {"pause": "P"}')
        raw["keymap"], keymap = keymap, {}  # kept as written: a save rewrites it unchanged
    not_keys = [bid for bid, key in keymap.items() if not isinstance(key, str)]
    if not_keys:  # the other remaps are still bound
        problems.append("keymap: " + ", ".join(f"{bid}: {json.dumps(keymap[bid])[:40]}" for bid in not_keys)
                        + ' is not a key in quotes, e.g. {"pause": "P"}')
        raw["keymap"], keymap = keymap, {bid: key for bid, key in keymap.items() if bid not in not_keys}
    export_dir = raw.pop("export_dir", None)
    if export_dir is not None and not isinstance(export_dir, str):
        problems.append("export_dir must be a string")
        raw["export_dir"], export_dir = export_dir, None
    warning = f"{path}: " + "; ".join(problems) if problems else None
    return Config(theme=theme, keymap=dict(keymap), export_dir=export_dir, path=path, warning=warning, extra=raw)


def save_config(cfg: Config) -> Path:
    """Write the config atomically. Raises TfdashError with one line when it cannot, or when the
    file on disk did not parse (rewriting it would drop what the user wrote there)."""
    from tfdash.profiling.files import write_json_atomic

    if not cfg.parsed:
        raise TfdashError(f"{cfg.path} was not read (see its warning), so it is not rewritten; fix or remove it "
                          "to save settings")

    try:
        return write_json_atomic(cfg.path, cfg.to_dict())
    except TfdashError:
        raise
    except OSError as e:  # pragma: no cover - write_json_atomic already turns these into TfdashError
        raise TfdashError(f"cannot write {cfg.path}: {e}") from None


MODIFIERS = ("ctrl", "shift", "alt", "meta", "super", "hyper")


def is_key(key: str) -> bool:
    """A key Textual can bind: a printable character, or a key name (f5, escape, question_mark),
    with any modifiers (ctrl+shift+up)."""
    import unicodedata

    from textual.keys import Keys

    *mods, base = key.split("+") if key != "+" else ["+"]
    if any(m not in MODIFIERS for m in mods) or not base:
        return False
    if len(base) == 1:
        return base.isprintable() and not base.isspace()
    if base in {k.value for k in Keys} or base in ("space", "enter", "tab", "escape", "backspace"):
        return True
    from textual.keys import REPLACED_KEYS

    try:
        unicodedata.lookup(REPLACED_KEYS.get(base, base).replace("_", " ").upper())
        return True
    except KeyError:
        return False


def valid_keymap(keymap: dict[str, str]) -> dict[str, str]:
    """The entries whose keys are all real keys (the others are reported, and not bound)."""
    return {bid: key for bid, key in keymap.items()
            if key.strip() and all(k.strip() and is_key(k.strip()) for k in key.split(","))}


def _normal(key: str) -> str:
    """A key as Textual binds it: "?" is bound as question_mark, so a remap to "?" takes help's key."""
    from textual.binding import Binding, BindingsMap

    return next(iter(BindingsMap([Binding(key, "")]).key_to_bindings), key)


TEXTUAL = "textual."  # the ids of the keys Textual binds itself (bindings.TEXTUAL_APP ...): no keymap moves them
# those a focused widget binds (bindings.table_keys, bindings.input_keys): a priority binding answers first
FOCUSED = (TEXTUAL + "table.", TEXTUAL + "input.")
TYPED = "printable"  # the key of the one binding that stands for every key a focused Input types


@functools.cache
def _characters() -> dict[str, str]:
    """The printable ASCII characters by the name Textual binds them as ("plus": "+"); Textual's
    key_to_character knows only some ("question_mark", not "plus")."""
    return {_normal(c): c for c in map(chr, range(33, 127)) if c != ","} | {"space": " ", "comma": ","}


def typed(key: str) -> bool:
    """Whether a focused Input types `key` (a character, with no modifier but shift's capital): there
    a priority binding on it answers first, whatever the Input would have typed."""
    from textual.keys import key_to_character

    name = _normal(key)
    character = _characters().get(name) or key_to_character(name)
    return character is not None and character.isprintable()


def _clashes(keymap: dict[str, str], scopes: list[list]) -> list[tuple[str, str, str]]:
    """(key, id, id) for each two bindings answering to one key in the same scope once `keymap` is
    applied, where the keymap moved at least one of them. A screen's own priority binding on its focused
    table's key is none: it answers before the table (the drill-down's tabs on ←→ swapped still switch
    tabs). One of a table in several scopes (the app's interrupt) answers on every screen, before every
    screen's tables and bindings, so {"interrupt": "home"} would take home from each table and the
    help's help.top: that one is a clash. In a scope that holds a focused Input's TYPED binding, every
    key the Input types (`typed`) is that binding's too."""
    found: list[tuple[str, str, str]] = []
    shared = {id(table) for tables in scopes for table in tables
              if sum(table is other for others in scopes for other in others) > 1}
    for tables in scopes:
        owner: dict[str, str] = {}
        action = {b.id: b.action for table in tables for b in table if b.id}
        first = {b.id for table in tables if id(table) not in shared for b in table
                 if b.id and b.priority and not b.id.startswith(TEXTUAL)}
        types = next((b.id for table in tables for b in table if b.key == TYPED), None)
        for b in (b for table in tables for b in table if b.id):
            keys = b.key if b.id.startswith(TEXTUAL) else keymap.get(b.id, b.key)
            for k in (k.strip() for k in keys.split(",")):
                others = [owner.setdefault(_normal(k) if k else k, b.id)]
                if types is not None and b.id != types and k and typed(k):
                    others.append(types)
                for other in others:
                    clash = (k, *sorted((other, b.id)))
                    # onto a key Textual binds to the same action (quit on ^q) the remap does what it says
                    same = TEXTUAL in (other[:len(TEXTUAL)], b.id[:len(TEXTUAL)]) and action[other] == b.action
                    # a priority binding answers before a focused widget's key: the remap does what it says
                    before = b.id.startswith(FOCUSED) and other in first or other.startswith(FOCUSED) and b.id in first
                    moved = b.id in keymap or other in keymap
                    if other != b.id and not (same or before) and clash not in found and moved:
                        found.append(clash)
    return found


def applied_keymap(keymap: dict[str, str], scopes: list[list]) -> dict[str, str]:
    """The remaps the app binds: the valid ones (valid_keymap) less each that shares a key with another
    binding in a scope, repeated until none does (leaving one out gives its binding back its own key,
    which may be the key another remap took). Those left out keep their default keys."""
    applied = valid_keymap(keymap)
    while True:
        clashing = {bid for _k, *ids in _clashes(applied, scopes) for bid in ids if bid in applied}
        if not clashing:
            return applied
        applied = {bid: key for bid, key in applied.items() if bid not in clashing}


def keymap_problems(keymap: dict[str, str], scopes: list[list], known: set[str]) -> list[str]:
    """One entry per problem: an unknown id, an empty key, something that is not a key, or two
    bindings answering to one key in the same scope (`scopes`: the binding tables active together),
    saying which remap is left out and the key its binding keeps."""
    problems = []
    unknown = sorted(set(keymap) - known)
    if unknown:
        problems.append(f"no binding with id {', '.join(unknown)}")
    for bid, key in sorted(keymap.items()):
        parts = [k.strip() for k in key.split(",")]
        if not key.strip() or not all(parts):
            problems.append(f"{bid}: empty key")
        else:
            bad = [k for k in parts if not is_key(k)]
            if bad:
                problems.append(f"{bid}: {', '.join(map(repr, bad))} is not a key")
    applied = applied_keymap(keymap, scopes)
    every = [b for tables in scopes for table in tables for b in table if b.id]
    defaults = {b.id: b.key_display or b.key for b in every}
    named = {b.id: b.description for b in every if b.id.startswith(TEXTUAL)}  # "Textual's command palette"
    said = set()  # (key, id) against a table's key, once: a binding of several scopes meets several tables
    for k, a, b in _clashes(valid_keymap(keymap), scopes):
        if a.startswith(FOCUSED) or b.startswith(FOCUSED):
            mine = b if a.startswith(FOCUSED) else a
            if (k, mine) in said:
                continue
            said.add((k, mine))
        kept = [f"{i} stays on {defaults[i]!r}" for i in (a, b) if i in keymap and i not in applied]
        problems.append(f"{named.get(a, a)} and {named.get(b, b)} are both on {k!r}"
                        + (f": {', '.join(kept)}" if kept else ""))
    return problems
