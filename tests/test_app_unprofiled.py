"""A run with no profile window, as the dashboard shows it: live, every place that says so names
the key that profiles one (p); a saved snapshot cannot profile (p there only says it is
read-only), so the same places say the snapshot kept none and name no key. The snapshot is the
one `tfdash --headless --save` writes without --profile."""

from __future__ import annotations

from dataclasses import replace

import pytest
from fixtures.appkit import LiveStandIn, build_snapshot, isolated_config, sync  # noqa: F401  (fixture)
from test_first_hour_app import screen_text

from tfdash.app.app import TfdashApp
from tfdash.app.main import snapshot_app


def unprofiled():
    """The recorded snapshot before any window: no roofline, no measured kernel, no spans."""
    snap = build_snapshot()
    kernels = tuple(replace(k, measured_p50_ns=None, measured_p90_ns=None, share=None, samples=0)
                    for k in snap.kernels)
    return replace(snap, roofline=None, kernels=kernels, timeline=(),
                   unavailable={**snap.unavailable, "kernels": "no profile window yet"})


NAMES_P = ("p profiles", "press p", "· p ")
NO_STEP_TO_PROFILE = "a run of 2+ new tokens has a step to profile"  # after a one-token run


@pytest.mark.parametrize("size", [(80, 24), (160, 48)])
@sync
async def test_a_saved_snapshot_without_a_window_names_no_key_that_cannot_profile(isolated_config, size):
    app = snapshot_app(unprofiled())
    async with app.run_test(size=size) as pilot:
        await pilot.pause()
        text = screen_text(app)
        await pilot.press("p")  # what p does here: a toast says the snapshot is read-only
        await pilot.pause()
        toast = screen_text(app)
    assert "read-only" in toast, toast
    assert not [s for s in NAMES_P if s in text], text
    assert "this snapshot kept no profile window" in text, text  # the Σ line under the table
    if size == (80, 24):  # the roofline is one line under the header
        assert "roofline not profiled in this snapshot" in text, text
    else:  # the roofline pane's note (wrapped in the pane)
        assert "this snapshot kept" in text and "--headless --profile records one" in text, text


@pytest.mark.parametrize("size", [(80, 24), (160, 48)])
@sync
async def test_a_live_run_without_a_window_names_p(isolated_config, size):
    app = TfdashApp(LiveStandIn(unprofiled()), theme="tfdash-dark")
    async with app.run_test(size=size) as pilot:
        await pilot.pause()
        text = screen_text(app)
    assert "press p to profile a window" in text, text
    assert ("roofline not profiled yet · p profiles" if size == (80, 24) else "· press p to profile") in text, text


@pytest.mark.parametrize("size", [(80, 24), (160, 48)])
@sync
async def test_a_live_run_over_without_a_window_says_r_comes_before_p(isolated_config, size):
    """A generation that ended before its first window (stopped, or at the end of its text): p has
    no step left to time (pressed, its toast says r re-runs), so every place that named p alone
    names r first."""
    from tfdash.app.messages import RunEnded

    source = LiveStandIn(unprofiled())
    app = TfdashApp(source, theme="tfdash-dark")
    async with app.run_test(size=size) as pilot:
        await pilot.pause()
        app.post_message(RunEnded(source.run_id))  # the generation reached its last token
        for _ in range(3):
            await pilot.pause()
        text = screen_text(app)
        await pilot.press("T")
        await pilot.pause()
        timeline = screen_text(app)
        await pilot.press("escape", "p")
        await pilot.pause()
        toast = screen_text(app)
    assert "r re-runs, then p profiles" in toast, toast
    assert not [s for s in ("press p", "· p ") if s in text], text
    assert "measured — r re-runs, then p profiles" in text, text  # the Σ line under the table
    if size == (80, 24):  # the roofline is one line under the header
        assert "roofline not profiled yet · r re-runs, then p profiles" in text, text
    else:  # the roofline pane's note
        assert "· r re-runs, then p" in text, text
    assert "not profiled yet · r re-runs, then p profiles" in timeline, timeline


@pytest.mark.parametrize("size", [(80, 24), (160, 48)])
@sync
async def test_a_one_token_run_over_says_which_run_has_a_step_to_profile(isolated_config, size):
    """`--max-new-tokens 1`: the token came from the prompt and a re-run's would too, so "r re-runs,
    then p profiles" could never work. Every place that said it (the roofline, the Σ line, the
    timeline, p's toast) says which run has a step instead, and names neither key; so does space's
    toast, which said "r re-runs" though the re-run has no step to pause either."""
    source = LiveStandIn(unprofiled())
    app = TfdashApp(source, theme="tfdash-dark", max_new_tokens=1)
    text, timeline, said = await ended_screens(app, source, size)  # the generation reached its one token
    assert said == ["no run in progress to pause (a run of 2+ new tokens has a step to pause)",
                    f"the run is over: {NO_STEP_TO_PROFILE}"], said  # neither says r re-runs
    assert "re-runs, then" not in text + timeline, text + timeline
    assert f"measured — {NO_STEP_TO_PROFILE}" in text, text  # the Σ line under the table
    if size == (80, 24):  # the roofline is one line under the header
        assert f"roofline not profiled yet · {NO_STEP_TO_PROFILE}" in text, text
    else:  # the roofline pane's note, wrapped in the pane
        assert "· a run of 2+ new" in text, text
    assert f"not profiled yet · {NO_STEP_TO_PROFILE}" in timeline, timeline
    assert f"no profiled step: {NO_STEP_TO_PROFILE}" in timeline, timeline  # the view's own line


@pytest.mark.parametrize("size", [(80, 24), (160, 48)])
@sync
async def test_a_run_ended_at_end_of_text_after_one_token_says_a_rerun_would_too(isolated_config, size):
    """Room for 8 new tokens, and the first was end-of-text: the run ended there, with no step. A
    re-run decodes the same prompt greedily and ends at the same token, so "r re-runs, then p
    profiles" could not work there either; every place that said it says so, and what runs on."""
    from tfdash.app.layout import EOS_AGAIN

    snap = unprofiled()  # a checkpoint's: random weights decode past end-of-text
    source = LiveStandIn(replace(snap, new_tokens=1, meta=replace(snap.meta, checkpoint="/models/qwen3-1.7b")))
    app = TfdashApp(source, theme="tfdash-dark", max_new_tokens=8)
    text, timeline, said = await ended_screens(app, source, size)  # the generation ended at its end-of-text
    assert said == [f"no run in progress to pause ({EOS_AGAIN})", f"the run is over: {EOS_AGAIN}"], said
    assert "re-runs, then" not in text + timeline, text + timeline
    assert f"measured — {EOS_AGAIN}" in text, text  # the Σ line under the table
    if size == (80, 24):  # the roofline is one line under the header
        assert f"roofline not profiled yet · {EOS_AGAIN}" in text, text
    else:  # the roofline pane's note, wrapped in the pane
        assert "· a re-run ends" in text, text
    assert f"no profiled step: {EOS_AGAIN}" in timeline, timeline  # the view's own line


async def ended_screens(app, source, size) -> tuple[str, str, list[str]]:
    """Once the run has ended: the dashboard's text, the timeline's (T), and what space and p then said."""
    from tfdash.app.messages import RunEnded

    said: list[str] = []
    async with app.run_test(size=size) as pilot:
        await pilot.pause()
        app.post_message(RunEnded(source.run_id))
        for _ in range(3):
            await pilot.pause()
        text = screen_text(app)
        await pilot.press("T")
        await pilot.pause()
        timeline = screen_text(app)
        await pilot.press("escape")
        await pilot.pause()
        notify = app.notify
        app.notify = lambda message, **kw: (said.append(str(message)), notify(message, **kw))
        await pilot.press("space", "p")
        await pilot.pause()
    return text, timeline, said
