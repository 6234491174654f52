"""The footer, showing only keys that fit whole.

Textual's Footer lays every shown binding out in one row and clips it at the right edge, so a
narrow terminal shows half a key (`r Re-ru`). This one keeps the bindings in their order (the
focused widget's, then the screen's, then the app's: the most local first) and stops before the
first that would not fit, keeping room for quit and help wherever they come, and for pause and
the dashboard's `v` where they are offered (below): pause is the key a running decode needs most,
and `v`, offered only where a pane has stepped aside, is the way to that pane. The command palette
key keeps its place at the right.

A key can answer yet not be offered: where its action's node says `offers(action)` is False (the
run's keys on a saved snapshot, `m` where there is no marginal cost to measure) the footer leaves
it out, and the key, pressed anyway, only says why it does nothing. Textual's `check_action`
cannot do this: what it hides, it also unbinds. Where the node's `footer_label(action)` gives a
word, the key is offered under it rather than its binding's (esc is "Cancel" while an A/B runs and
"Close" otherwise), so the footer names what the key does now.

A key moved by the config's keymap keeps its binding's place: Textual re-adds a remapped binding
after its node's others, which put it last on the footer, the first key a narrow terminal leaves
out (`b` moved to `B` vanished at 120 columns while ^t Theme stayed).
"""

from __future__ import annotations

from rich.cells import cell_len
from textual import events
from textual.widgets import Footer
from textual.widgets._footer import FooterKey


# on the footer whatever else is left out, in their own place among the keys
KEPT = ("quit", "help", "pause", "panes")


def not_offered(screen) -> set[str]:
    """The actions of `screen`'s active bindings whose node does not offer them now."""
    out = set()
    for node, binding, *_ in screen.active_bindings.values():
        offers = getattr(node, "offers", None)
        if offers is not None and not offers(binding.action):
            out.add(binding.action)
    return out


def labels(screen) -> dict[str, str]:
    """The actions of `screen`'s active bindings whose node names them otherwise now (`footer_label`)."""
    out = {}
    for node, binding, *_ in screen.active_bindings.values():
        label = getattr(node, "footer_label", None)
        word = label(binding.action) if label is not None else None
        if word:
            out[binding.action] = word
    return out


def places(screen) -> dict[tuple[str, str], float]:
    """Each active binding's place on the footer, by its action and keys: its place in
    `active_bindings`, but a binding the keymap moved goes just after the shown one declared before
    it in its node (else just before the one after it), where it would be unmoved."""
    moved = getattr(screen.app, "_keymap", None) or {}
    active = list(screen.active_bindings.values())
    at = {(node, b.id): i for i, (node, b, *_) in enumerate(active)
          if b.id and b.show and b.id not in moved}
    out: dict[tuple[str, str], float] = {}
    for i, (node, binding, *_) in enumerate(active):
        place = float(i)
        if binding.id in moved:
            merged = getattr(node, "_merge_bindings", None)  # Textual's own: where a later one lacks it, its order
            ids = [b.id for bs in merged().key_to_bindings.values() for b in bs] if merged is not None else []
            k = ids.index(binding.id) if binding.id in ids else -1
            before = [at[node, j] for j in ids[:k] if (node, j) in at] if k >= 0 else []
            after = [at[node, j] for j in ids[k + 1:] if (node, j) in at] if k >= 0 else []
            place = before[-1] + 0.5 if before else after[0] - 0.5 if after else place
        out.setdefault((binding.action, binding.key), place)
    return out


def key_width(key: FooterKey) -> int:
    """Cells a compact FooterKey takes, with the space after it."""
    return cell_len(key.key_display) + (1 + cell_len(key.description) if key.description else 0) + 1


class FitFooter(Footer):
    def __init__(self, **kw) -> None:
        kw.setdefault("compact", True)
        super().__init__(**kw)
        self._width = 0

    def compose(self):
        hidden = not_offered(self.screen)
        keys = [k for k in super().compose() if getattr(k, "action", None) not in hidden]
        place = places(self.screen)
        keys.sort(key=lambda k: place.get((getattr(k, "action", None), getattr(k, "key", None)), len(place)))
        words = labels(self.screen)
        for k in keys:
            if getattr(k, "action", None) in words:
                k.description = words[k.action]  # before it is mounted, measured or drawn
        palette = [k for k in keys if k.has_class("-command-palette")]
        shown = [k for k in keys if k.action in KEPT and k not in palette]
        room = self.size.width - sum(key_width(k) + 1 for k in palette)  # its "▏"
        room -= sum(key_width(k) for k in shown)
        for k in keys:
            if k in palette or k in shown:
                continue
            w = key_width(k)
            if w > room:
                break
            room -= w
            shown.append(k)
        yield from (k for k in keys if k in shown)
        yield from palette

    def on_resize(self, event: events.Resize) -> None:
        if event.size.width != self._width:
            self._width = event.size.width
            self.call_after_refresh(self.recompose)
