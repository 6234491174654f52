"""How the screens fit a terminal: size classes, a one-line summary for panes that do not fit,
label-value pairs wrapped only between pairs, and the one line that stands for any screen in a
terminal below the minimum size.

    size_classes(w, h)      "-narrow" below NARROW_W columns, "-short" below SHORT_H rows
    summary_rows(line, w)   the rows the line for the hidden panes takes, wrapped at w columns
    pane_summary(snap, ...) a line (wrapped between items) for the panes that are hidden
    wrap_pairs(pairs, w)    a Content whose lines break between pairs, never inside one
    fill_whole(table, ...)  a table with the columns that fit its width whole, dropped by priority
    FitsBeforeDraw          mixed into a Screen: its widgets fitted to the sizes a layout gave them,
                            before the frame it laid out is drawn
    fit_min_size(screen, s) below MIN_W×MIN_H, one line over the whole screen: the size needed, the quit key
    MinSizeGuard            mixed into the App: every screen it shows is fitted so, dialogs included,
                            and below the minimum only the quit keys act
"""

from __future__ import annotations

from dataclasses import dataclass

from rich.cells import cell_len
from rich.text import Text
from textual import events
from textual.content import Content
from textual.binding import Binding
from textual.geometry import Size
from textual.screen import Screen
from textual.widgets import DataTable, Static

from tfdash.app.model import fmt_gbps, fmt_ns, fmt_num
from tfdash.profiling.probe import over_ceiling
from tfdash.profiling.snapshot import ProfileSnapshot

NARROW_W = 116  # below this the three top panes (30 + 38 + 47 columns) do not fit side by side
ROOFLINE_W = 47  # the roofline pane's width beside the others (app.tcss)
SHORT_H = 32  # below this the top row gives up its charts' room to the kernel table (and the roofline steps aside)
TOP_MIN_H = 14  # the top row's least height at full height: the throughput pane's numbers, legend and chart
BOTTOM_MIN_H = 10  # the rows the kernel table keeps under a roofline pane given every row it needs
NVML_MIN_H = 8  # the NVML pane's six lines of numbers and its border (no chart): fewer, and `v` shows it as its line
MIN_W, MIN_H = 80, 24  # the smallest terminal the dashboard and the drill-down are laid out for


def size_classes(width: int, height: int) -> dict[str, bool]:
    return {"-narrow": width < NARROW_W, "-short": height < SHORT_H}


def _last(snap: ProfileSnapshot, name: str) -> float | None:
    for s in snap.nvml:
        if s.name == name:
            vals = [v for v in s.values if v is not None]
            return vals[-1] if vals else None
    return None


def nvml_summary(snap: ProfileSnapshot) -> list[list[tuple[str, str]]]:
    """Each summary is a list of items (lists of styled parts): a line breaks between items."""
    why = snap.unavailable.get("nvml")
    if why and not snap.nvml:
        return [[("NVML unavailable: ", "bold $text-warning"), (why, "italic $text-muted")]]
    return [[("NVML ", "$text-muted"), (fmt_gbps(_last(snap, "dram_gbps")), "bold $text-primary"),
             ("  ", ""), (fmt_num(_last(snap, "power_w"), 0, " W"), "bold")]]


# What a hint says once the live run is over where a re-run has no step either: a run of one new
# token takes it from the prompt (--max-new-tokens 1), and so does each re-run of it
NO_STEP = "a run of 2+ new tokens has a step to "
NO_STEP_TO_PROFILE = NO_STEP + "profile"
# ... and where the one token was end-of-text with room for more: the re-run decodes the same prompt
# greedily, so it ends at the same token, before any step
EOS_AGAIN = "a re-run ends at end-of-text too: --ignore-eos"


@dataclass(frozen=True)
class ProfileKeys:
    """What the hints that lead to a profile window name: the re-run and profile keys as the user's
    keymap binds them, and whether a re-run has a decode step for a window to time (bindings.
    profile_hint builds it from the app). The one source of the advice once a run is over, so the
    roofline, the kernel table, the timeline and p's toast say the same. `no_step`: what to run
    instead where a re-run would have no step either ("" where it has one)."""
    rerun: str = "r"
    profile: str = "p"
    no_step: str = ""

    def after_run(self, what: str = " profiles") -> list[tuple[str, str]]:
        """Once the live run is over p has no step left to time: r re-runs, then p profiles (`what`
        follows p); where the re-run would have no step either, which run has one, naming no key."""
        if self.no_step:
            return [(self.no_step, "italic $text-muted")]
        return [(self.rerun, "bold $accent"), (" re-runs, then ", "$text-muted"),
                (self.profile, "bold $accent"), (what, "$text-muted")]

    def after_run_text(self, what: str = " profiles") -> str:
        return "".join(text for text, _ in self.after_run(what))

    def rerun_text(self, verb: str) -> str:
        """What follows "no run in progress to `verb`": r re-runs; where a re-run would have no step
        either, no_step's advice (after a one-token run, a run with a step to `verb`)."""
        if self.no_step == NO_STEP_TO_PROFILE:
            return NO_STEP + verb
        return self.no_step or f"{self.rerun} re-runs"


def profile_keys(ended: bool, keys: ProfileKeys) -> list[tuple[str, str]]:
    """The keys that take a profile window, as `keys` names them: p while the run goes on; once it
    is over, p has no step left to time, so ProfileKeys.after_run's advice."""
    if ended:
        return keys.after_run()
    return [(keys.profile, "bold $accent"), (" profiles", "$text-muted")]


def roofline_summary(snap: ProfileSnapshot, live: bool = True, ended: bool = False, *,
                     keys: ProfileKeys) -> list[list[tuple[str, str]]]:
    """`live`: p can profile a window; a saved snapshot cannot, so it names no key. `ended`: the
    live run is over; `keys`: what the keys are named (profile_keys)."""
    r = snap.roofline
    if r is None and not live:
        return [[("roofline ", "$text-muted"), ("not profiled in this snapshot", "italic $text-muted")]]
    if r is None:
        return [[("roofline ", "$text-muted"), ("not profiled yet", "italic $text-muted"), (" · ", "$text-muted"),
                 *profile_keys(ended, keys)]]
    over = over_ceiling(r.pct_ceiling)  # marked as diff and bench mark it (a colour alone is lost to NO_COLOR)
    share = "bold $text-warning" if over else "bold $text-primary"
    line = [("roofline ", "$text-muted"), (fmt_ns(r.measured_step_ns), "bold $text-primary"), ("/step  ", "$text-muted"),
            (fmt_num(r.pct_ceiling, 1, " %") + ("!" if over else ""), share), (" of ceiling", "$text-muted")]
    return [line, [("v", "bold $accent"), (" says why", "$text-muted")]] if over else [line]  # the pane does


def throughput_summary(snap: ProfileSnapshot) -> list[list[tuple[str, str]]]:
    return [[("throughput ", "$text-muted"), (fmt_num(snap.tok_per_s if snap.wall_ns else None), "bold $text-primary"),
             (" tok/s over the run  ", "$text-muted"), (f"{snap.new_tokens:,}", "bold"), (" tokens", "$text-muted")]]


SUMMARIES = {"roofline": roofline_summary, "nvml": nvml_summary, "throughput": throughput_summary}


def pane_summary(snap: ProfileSnapshot | None, panes: tuple[str, ...], width: int = 10_000,
                 live: bool = True, ended: bool = False, *, keys: ProfileKeys) -> Content:
    """A line for the panes that are hidden (`v` swaps which are), wrapped between items to `width`.
    `live`, `ended`, `keys`: the run can be profiled, whether it is over, and the keys' names
    (roofline_summary's)."""
    if snap is None or not panes:
        return Content("")
    groups: list[list[tuple[str, str]]] = []
    joins: list[tuple[str, str]] = []
    for name in panes:
        items = roofline_summary(snap, live, ended, keys=keys) if name == "roofline" else SUMMARIES[name](snap)
        for i, item in enumerate(items):
            # An item wider than the line (NVML's reason) puts its last part, whole, on a line of its own.
            wide = len(item) > 1 and sum(len(t) for t, _ in item) > width
            split = [item[:-1], item[-1:]] if wide else [item]
            groups += split
            joins += [("  │  ", "$text-muted") if i == 0 else ("  ", "")] + [("", "")] * (len(split) - 1)
    return wrap_pairs(groups, width, joins=joins)


def summary_rows(line: Content, width: int) -> int:
    """The rows `line` (pane_summary's) takes on the screen at `width` columns: none when empty. A
    part wider than the line (a long reason NVML is unavailable) wraps, and each row it wraps to counts."""
    return len(line.wrap(max(1, width))) if line.plain else 0


def wrap_pairs(pairs: list[list[tuple[str, str]]], width: int, sep: str = "  ",
               joins: list[tuple[str, str]] | None = None) -> Content:
    """Join groups of styled parts with `sep` (or `joins[i]`, a styled part, before group i),
    starting a new line before a group that would not fit on the current one."""
    lines: list[list[tuple[str, str]]] = [[]]
    used = 0
    for i, group in enumerate(pairs):
        join = joins[i] if joins else (sep, "")
        n = sum(len(text) for text, _ in group)
        if lines[-1] and used + len(join[0]) + n > width:
            lines.append([])
            used = 0
        if lines[-1]:
            lines[-1].append(join)
            used += len(join[0])
        lines[-1].extend(group)
        used += n
    return Content("\n").join(Content.assemble(*line) for line in lines)


def cell_widths(columns: tuple, rows: list[list[Text]]) -> dict[str, int]:
    """Each column's widest cell or header, in cells."""
    return {key: max([cell_len(str(label))] + [r[i].cell_len for r in rows]) for i, (key, label) in enumerate(columns)}


def fit_whole(width: int, columns: tuple, rows: list[list[Text]], priority: tuple[str, ...],
              scrollbar: int = 1) -> set[str]:
    """The columns whose widest cell (or header), with padding, fit `width` less a scrollbar."""
    if width <= 0:
        return set()  # not laid out yet: FitsBeforeDraw fills it before it is first drawn
    need = {key: w + 2 for key, w in cell_widths(columns, rows).items()}
    keep = [k for k in priority if k in need]
    while len(keep) > 1 and sum(need[k] for k in keep) > width - scrollbar:
        keep.pop()
    return set(keep)


def fill_whole(t: DataTable, columns: tuple, rows: list[list[Text]], keys: list, priority: tuple[str, ...],
               scrollbar: int = 1) -> None:
    """Fill `t` with the columns (key, header) that fit its width whole (fit_whole). Each is
    given its width: a DataTable measures new columns only when idle, and until then draws them
    at their headers' widths ("othe" for a file name). Before its first layout (no width) it is
    left empty, rather than filled with every column: its virtual size, measured when idle, would
    give the first frame a horizontal scrollbar."""
    keep = fit_whole(t.size.width, columns, rows, priority, scrollbar)
    widths = cell_widths(columns, rows)
    t.clear(columns=True)
    if not keep:
        return
    for key, label in columns:
        if key in keep:
            t.add_column(label, key=key, width=widths[key])
    for k, cells in zip(keys, rows):
        t.add_row(*(c for (key, _), c in zip(columns, cells) if key in keep), key=k)


class FitsBeforeDraw:
    """Mixed into a Screen whose widgets choose what they show for their size (a table's columns
    that fit whole): the screen's `fit_laid_out()` runs once a layout has given every widget its size, before the
    frame it laid out is drawn. Textual posts Resize only after drawing that frame, so a widget
    fitted on Resize (or after the refresh that follows) was drawn once unfitted -- every column at
    first, headers cut mid-word, a stray scrollbar -- for a second or two on a loaded host.

    The screen is the root of its compositor's layout: its size is updated last in the pass, after
    every widget's (Textual's `_size_updated`, called in layer order, the root at the bottom).
    `fit_laid_out` runs at every layout, so it compares the sizes it fitted to before doing work.
    That hook is Textual's private one, so its arguments pass through as they come, and the screen's
    Resize fits it too: a Textual that stopped calling the hook would only bring back the late fit."""

    def _size_updated(self, *args, **kwargs):
        resized = super()._size_updated(*args, **kwargs)
        if self.is_attached:
            self.fit_laid_out()
        return resized

    def on_resize(self) -> None:  # Textual calls each class's handler, the screen's own too
        self.call_after_refresh(self.fit_laid_out)


def too_small(size: Size) -> bool:
    return size.width < MIN_W or size.height < MIN_H


def fit_min_size(screen: Screen, size: Size, quit_key: str = "q") -> None:
    """Below MIN_W×MIN_H, one line over the whole of `screen` says the size tfdash needs and the key
    that quits (the only one that acts there), rather than panes and dialogs cut mid-number; the screen
    is kept as it was underneath (state, focus, scroll) and comes back whole once the terminal is
    large enough."""
    small = too_small(size)
    found = screen.query("#too-small")
    if small and not found:
        screen.mount(Static(id="too-small"))
        found = screen.query("#too-small")
    screen.set_class(small, "-too-small")
    if small:
        need, hint = f"tfdash needs at least {MIN_W}×{MIN_H} (now {size.width}×{size.height})", f"{quit_key} quits"
        line = f"{need} · {hint}" if cell_len(f"{need} · {hint}") <= size.width else f"{need}\n{hint}"
        found.first(Static).update(Content.styled(line, "bold"))


HELD_TOASTS = 8  # a long stay below the minimum (a profile window's toast every few seconds) holds no pile


class MinSizeGuard:
    """Mixed into the App, so that every screen it shows is covered below MIN_W×MIN_H: tfdash's
    own, its dialogs (help, baseline picker, A/B) and Textual's (the command palette). Each screen
    is fitted when it becomes the current one and all of the stack when the terminal is resized,
    so a screen popped back to after a resize shows the right thing at once.

    Below the minimum the keys, the mouse and pastes do not reach the hidden screen (an Enter would
    open a drill-down no one sees, a typed letter would go into a hidden filter): only the app's
    quit keys act, and they quit whatever screen is on top (q closes the help only when it is seen).
    A toast raised there would cover the line, so it is held and shown once the terminal is large
    enough, in the order raised: the last HELD_TOASTS of them, a note dropped before a warning or
    an error. One already up is hidden under the line (app.tcss)."""

    def _on_mount(self, event: events.Mount) -> None:
        self.screen_change_signal.subscribe(self, self._fit_screen)
        self._fit_screen(self.screen)

    def _quit_keys(self) -> list[str]:
        """The keys the app binds to quit, with the user's keymap applied; the one the footer shows first."""
        found = self._bindings.copy()
        found.apply_keymap(self._keymap)
        quits = [(not b.show, key) for key, bs in found.key_to_bindings.items() for b in bs
                 if b.action in ("quit", "app.quit", "interrupt")]
        return [key for _, key in sorted(quits, key=lambda q: q[0])]  # stable: the app's order otherwise

    def _quit_hint(self) -> str:
        keys = self._quit_keys()
        return self.get_key_display(Binding(keys[0], "")) if keys else "ctrl+c"

    def _fit_screen(self, screen: Screen) -> None:
        fit_min_size(screen, self.size, self._quit_hint())

    def _on_resize(self, event: events.Resize) -> None:
        hint = self._quit_hint()
        for screen in self.screen_stack:
            fit_min_size(screen, event.size, hint)
        held = self.__dict__.pop("_held_toasts", []) if not too_small(event.size) else []
        for message, kwargs in held:  # past the check: self.size is still the old size here
            super().notify(message, **kwargs)

    def unseen_toasts(self) -> list[str]:
        """The toasts still held (the app quit on the size line), as lines to print after it."""
        held = self.__dict__.get("_held_toasts", [])
        return [f"{kw.get('title') or kw.get('severity', 'note')}: {m}" for m, kw in held]

    def notify(self, message: str, **kwargs) -> None:
        if too_small(self.size):
            held = self.__dict__.setdefault("_held_toasts", [])
            held.append((message, kwargs))
            if len(held) > HELD_TOASTS:  # the oldest note goes first, then the oldest of any
                notes = [i for i, (_, kw) in enumerate(held) if kw.get("severity", "information") == "information"]
                del held[notes[0] if notes else 0]
            return
        super().notify(message, **kwargs)

    def _terminal_size(self) -> Size | None:
        """The terminal's size now, from its driver (None where it cannot say)."""
        try:
            width, height = self._driver._get_terminal_size()
        except Exception:  # noqa: BLE001 - no driver, or one that cannot read the size
            return None
        return Size(width, height)

    async def on_event(self, event: events.Event) -> None:
        if isinstance(event, (events.InputEvent, events.Paste)) and not event.is_forwarded and too_small(self.size):
            now = self._terminal_size()
            if now is not None and not too_small(now):
                # The terminal grew back, and a key typed just after came in before the resize did
                # (the signal waits for the main thread, the key's reader thread does not): the
                # resize lands first, and the key acts on the screen it was typed at.
                await self._dispatch_message(events.Resize(now, now))
            else:
                if isinstance(event, events.Key) and event.key in self._quit_keys():
                    await self.run_action("quit")
                return  # below the minimum nothing else reaches the screen under the size line
        await super().on_event(event)
