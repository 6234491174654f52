"""The A/B box's intro (screens/ab.py): how the two sides take turns, and when. During the
generation they take turns on it and its stream goes on; once it has ended they take turns after
it, from where it stopped (Session.ab records the same words in the result's "during", which the
verdict's second line gives), and no stream goes on. On a saved snapshot the intro says when the
A/B it shows ran."""

from __future__ import annotations

from textual.content import Content

from tfdash.profiling.session_ab import AFTER_GENERATION as AFTER  # Session.ab's "during" once it ended


def turns_after(app, result: dict | None) -> bool:
    """Whether the turns come after the generation: on a live run, whether it has ended (an A/B
    started now runs after it); on a saved snapshot, whether the A/B shown ran after it."""
    source = app.source
    if source.live:
        return app.state in ("done", "stopped", "error") or source.generation_over
    return str((result or {}).get("during", "")) == AFTER


def intro(after: bool) -> Content:
    """The intro's words, the turns on the generation or `after` it (the sizes are tfdash.profiling.ab's)."""
    from tfdash.profiling.ab import PROFILE_STEPS, STEPS, WINDOWS

    return Content.assemble(
        (f"The running plan (A) and the variant (B) take turns {AFTER if after else 'on this generation'}: ",
         "$text-muted"),
        (f"{WINDOWS} windows of {STEPS} steps a side, A B A B…", "bold"),
        (f", then a {PROFILE_STEPS}-step profile window each. The variant shares the weights, the KV cache "
         f"and the position{'' if after else ', so the stream goes on'}; both sides' next tokens are "
         "compared at every turn.", "$text-muted"))
