"""Hostile and broken config files: config.json of a checkpoint, and the dashboard's own config.

Unsupported values are refused with one line naming the key, the value and what is accepted
(never ignored, never a traceback, never a hang); the dashboard's config is never rewritten when
it did not parse, and a bad keymap is reported in a toast naming the ids.
"""

from __future__ import annotations

import asyncio
import json
import time

import pytest
from conftest import assert_one_line_error, run_tfdash
from fixtures.appkit import SNAPSHOT, isolated_config, sync  # noqa: F401  (fixture)
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from test_config import HF4, HF5, write

from tfdash.engine.config import load_config
from tfdash.errors import ConfigError


@pytest.mark.parametrize("base,change,needles", [
    (HF5, {"rope_parameters": {"rope_type": "yarn", "rope_theta": 1e6, "factor": 4.0}}, ["yarn", "default"]),
    (HF5, {"rope_parameters": [1, 2]}, ["rope_parameters must be an object"]),
    (HF5, {"rope_scaling": {"type": "dynamic", "factor": 2.0}}, ["rope_scaling", "dynamic"]),
    (HF4, {"rope_scaling": ["linear"]}, ["rope_scaling must be an object"]),
    (HF4, {"rope_theta": 0}, ["rope_theta=0", "> 0"]),
    (HF4, {"rope_theta": -1e6}, ["rope_theta=-1000000.0"]),
    (HF5, {"rope_parameters": {"rope_type": "default", "rope_theta": -5}}, ["rope_theta=-5"]),
    (HF4, {"rms_norm_eps": -1e-6}, ["rms_norm_eps=-1e-06", ">= 0"]),
    (HF4, {"rms_norm_eps": float("nan")}, ["NaN"]),
    (HF4, {"tie_word_embeddings": "false"}, ["tie_word_embeddings must be true or false", "'false'"]),
    (HF4, {"attention_bias": "no"}, ["attention_bias must be true or false"]),
    (HF4, {"eos_token_id": "151645"}, ["eos_token_id", "'151645'"]),
    (HF4, {"eos_token_id": [151645, "x"]}, ["eos_token_id"]),
    (HF4, {"num_hidden_layers": 10_000_000}, ["num_hidden_layers=10000000", "out of range"]),
    (HF4, {"hidden_size": 2 ** 40}, ["hidden_size", "out of range"]),
    (HF4, {"vocab_size": "151936"}, ["vocab_size must be an integer"]),
    (HF4, {"torch_dtype": "int8"}, ["dtype 'int8'", "bfloat16"]),
    (HF4, {"architectures": "Qwen3ForCausalLM"}, ["architectures must be a list"]),
])
def test_unsupported_values_are_refused_by_name(tmp_path, base, change, needles):
    with pytest.raises(ConfigError) as e:
        load_config(write(tmp_path, {**base, **change}))
    msg = str(e.value)
    assert "\n" not in msg
    for n in needles:
        assert n in msg, (n, msg)


@pytest.mark.parametrize("text,needle", [
    ('{"hidden_size": ' + "9" * 5000 + "}", "cannot read JSON"),
    ("[" * 100_000 + "]" * 100_000, "cannot read JSON"),
    ('{"rope_theta": NaN}', "NaN is not a JSON number"),
    ('{"rms_norm_eps": Infinity}', "Infinity is not a JSON number"),
])
def test_unreadable_json_is_one_line(tmp_path, text, needle):
    d = tmp_path / "c"
    d.mkdir()
    (d / "config.json").write_text(text)
    with pytest.raises(ConfigError) as e:
        load_config(d)
    assert needle in str(e.value) and "\n" not in str(e.value)


def test_through_the_cli_a_huge_layer_count_is_one_line_and_quick(tmp_path):
    d = write(tmp_path, {**HF4, "num_hidden_layers": 10_000_000})
    r = run_tfdash("--headless", "--ckpt", str(d), "--device", "cpu", timeout=60)
    assert r.rc == 2 and r.wall_s < 30
    assert_one_line_error(r.stderr, "num_hidden_layers=10000000")


@pytest.mark.parametrize("args,needle", [
    (["--seed", str(10 ** 23)], "--seed"),
    (["--seed", "-1"], "--seed"),
])
def test_cli_numbers_out_of_range_are_one_line(args, needle):
    r = run_tfdash("--headless", "--model", "qwen3-tiny", "--device", "cpu", "--max-new-tokens", "2", *args)
    assert r.rc == 2 and "Traceback" not in r.stderr and needle in r.stderr, r.stderr


def test_a_cache_too_large_for_memory_is_one_line_before_allocating(tmp_path):
    d = write(tmp_path, {**HF4, "max_position_embeddings": 1 << 24})
    from tfdash.engine.memory import check_fits
    from tfdash.engine.limits import default_capacity
    from tfdash.errors import TfdashError

    cfg = load_config(d)
    with pytest.raises(TfdashError) as e:
        check_fits(cfg, default_capacity(cfg, (1 << 24) - 64), "bfloat16", "cpu", available=8 << 30)
    assert "GiB" in str(e.value) and "KV cache" in str(e.value)


# -- fuzz: config.json --------------------------------------------------------------------------

json_values = st.recursive(
    st.none() | st.booleans() | st.integers(-2**70, 2**70) | st.floats() | st.text(max_size=10),
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=8), inner, max_size=3),
    max_leaves=8)
KEYS = sorted(set(HF4) | set(HF5))


@pytest.mark.serial  # each example within 1 s
@settings(max_examples=200, deadline=1000, suppress_health_check=[HealthCheck.too_slow,
                                                                   HealthCheck.function_scoped_fixture])
@given(st.sampled_from([HF4, HF5]), st.dictionaries(st.sampled_from(KEYS), json_values, min_size=1, max_size=4))
def test_fuzzed_config_json_is_a_config_or_one_line(tmp_path_factory, base, change):
    d = write(tmp_path_factory.mktemp("fz"), {**base, **change})
    t0 = time.monotonic()
    try:
        cfg = load_config(d)
    except ConfigError as e:
        assert str(e) and "\n" not in str(e)
    else:
        assert cfg.rope_theta > 0 and cfg.rms_norm_eps >= 0 and isinstance(cfg.tie_word_embeddings, bool)
        assert all(isinstance(i, int) for i in cfg.eos_token_ids)
        assert cfg.num_layers <= 1024
    assert time.monotonic() - t0 < 1


# -- the dashboard's config file ------------------------------------------------------------------

def _app(**kw):
    """The app on the recorded snapshot, with every toast it raises recorded in `app.toasts`."""
    from tfdash.app.main import snapshot_app

    app = snapshot_app(SNAPSHOT, tilelang_source=lambda fam: "#\n", **kw)
    app.toasts = []
    notify = app.notify

    def record(message, **kw):
        app.toasts.append(str(message))
        notify(message, **kw)

    app.notify = record
    return app


@sync
async def test_an_unparsable_config_is_never_rewritten(isolated_config):
    path = isolated_config / "config.json"
    broken = '{"keymap": {"pause": "p"}, "export_dir": "~/profiles", "theme": "tfdash-light",,}'
    path.write_text(broken)
    app = _app()
    async with app.run_test(size=(160, 48)) as pilot:
        await pilot.pause()
        themes = [t for t in app.available_themes if t != app.theme]
        app.theme = themes[0]
        await pilot.pause()
    toasts = app.toasts
    assert path.read_text() == broken
    assert any("not rewritten" in t and str(path) in t for t in toasts), toasts



@sync
async def test_a_keymap_entry_that_is_not_a_string_loses_only_itself_and_a_save_keeps_it(isolated_config):
    """{"profile": 5} beside good remaps refused the whole keymap ("keymap must map binding ids to
    keys", naming no entry), and choosing a theme then wrote the file without the keymap or a
    refused export_dir. The entry is named, the other remaps are bound, and a save keeps both."""
    path = isolated_config / "config.json"
    written = {"keymap": {"pause": "P", "profile": 5}, "export_dir": 7}
    path.write_text(json.dumps(written))
    app = _app()
    async with app.run_test(size=(160, 48)) as pilot:
        await pilot.pause()
        await pilot.press("P")  # pause, remapped: a snapshot has nothing to pause
        await pilot.pause()
        app.theme = next(t for t in app.available_themes if t != app.theme)
        await pilot.pause()
    toasts = " | ".join(app.toasts)
    assert "profile: 5 is not a key" in toasts and "nothing to pause" in toasts, toasts
    assert json.loads(path.read_text()) == {**written, "theme": app.theme}


@sync
async def test_keymap_problems_are_reported_by_id(isolated_config):
    (isolated_config / "config.json").write_text(json.dumps(
        {"keymap": {"pause": "", "rerun": "not a key!", "profile": "e", "export.csv": "f5"}}))
    app = _app()
    async with app.run_test(size=(160, 48)) as pilot:
        await pilot.pause()
    toasts = " | ".join(app.toasts)
    assert "pause" in toasts and "empty" in toasts
    assert "rerun" in toasts and "not a key!" in toasts
    assert "profile" in toasts and "export.snapshot" in toasts  # both on e
    assert "export.csv" not in toasts.replace("export.csv:", "")  # f5 is fine


@sync
async def test_a_keymap_holding_an_escape_sequence_is_not_bound(isolated_config):
    import re

    (isolated_config / "config.json").write_text(json.dumps({"keymap": {"pause": "\x1b]0;PWNED\x07", "help": "h"}}))
    app = _app()
    async with app.run_test(size=(160, 48)) as pilot:
        await pilot.pause()
        await pilot.press("h")  # the valid remap works
        await pilot.pause()
        svg = app.export_screenshot()
    assert not re.search("[\x00-\x08\x0b-\x1f\x7f-\x9f]", svg)
    assert "keys" in svg  # the help screen is open
    assert any("pause" in t and "not a key" in t for t in app.toasts), app.toasts


def _documented_keymaps() -> list[str]:
    """The keymap examples a user copies: the README's, and the one the help screen shows."""
    import re

    from conftest import REPO

    example = re.compile(r'\{"keymap": \{[^{}]*\}\}')
    readme = example.findall((REPO / "README.md").read_text(encoding="utf-8"))

    async def shown_on_help() -> list[str]:
        app = _app()
        async with app.run_test(size=(160, 48)) as pilot:
            await pilot.pause()
            await pilot.press("question_mark")
            await pilot.pause()
            return example.findall(str(app.screen.query_one("#help-intro").render()))

    shown = asyncio.run(shown_on_help())
    assert readme and shown
    return readme + shown


def test_the_documented_keymap_examples_take_no_key_already_bound(isolated_config):
    """Both examples put pause on p, the profile key: a user who copied one got "pause and profile
    are both on 'p'" and lost profiling."""
    from tfdash.app import bindings
    from tfdash.app.config import keymap_problems

    for text in _documented_keymaps():
        keymap = json.loads(text)["keymap"]
        assert keymap_problems(keymap, bindings.KEYMAP_SCOPES, bindings.all_ids()) == [], text

        async def toasts() -> list[str]:
            (isolated_config / "config.json").write_text(text)
            app = _app()
            async with app.run_test(size=(160, 48)) as pilot:
                await pilot.pause()
            return app.toasts

        assert not [t for t in asyncio.run(toasts()) if "keymap" in t or "config" in t], text


def test_a_run_too_large_for_memory_names_what_would_make_it_fit():
    from tfdash.engine.config import preset
    from tfdash.engine.memory import check_fits, kv_bytes, weight_bytes
    from tfdash.errors import CapacityError

    cfg = preset("qwen3-32b")
    w = weight_bytes(cfg, "float32")

    def refusal(capacity, free, dtype="float32"):
        with pytest.raises(CapacityError) as e:
            check_fits(cfg, capacity, dtype, "cpu", available=free)
        assert "\n" not in str(e.value)
        return str(e.value)

    # the weights alone: a shorter run would not help, a smaller model would, and bfloat16 where the run fits in it
    bf16 = weight_bytes(cfg, "bfloat16") + kv_bytes(cfg, 4096, "bfloat16")
    assert refusal(4096, bf16).endswith("(the weights alone do not fit: a smaller --model or --dtype bfloat16)")
    assert refusal(4096, bf16 - 1).endswith("(the weights alone do not fit: a smaller --model)")
    assert refusal(4096, w // 4, "bfloat16").endswith("(the weights alone do not fit: a smaller --model)")
    # the cache past the least capacity: a shorter run shrinks it
    assert refusal(40960, w + kv_bytes(cfg, 4096, "float32")).endswith("(lower --max-new-tokens or the prompt)")
    # the cache at the least capacity: a shorter run keeps it, so the model is what must change
    assert refusal(4096, w + 1).endswith("(a smaller --model or --dtype bfloat16)")


def test_the_dashboard_refuses_a_run_too_large_for_memory_before_the_screen_opens(monkeypatch):
    from tfdash.app.main import preflight
    from tfdash.cli import run_parser
    from tfdash.engine import memory
    from tfdash.errors import CapacityError

    monkeypatch.setattr(memory, "free_bytes", lambda device: 1 << 20)  # 1 MiB free
    args = run_parser().parse_args(["--model", "qwen3-tiny", "--device", "cpu"])
    with pytest.raises(CapacityError) as e:
        preflight(args, 2048)
    assert "KV cache" in str(e.value) and "1.00 MiB" not in str(e.value) and "GiB free" in str(e.value)


@sync
async def test_a_remapped_key_keeps_its_place_on_the_footer(isolated_config):
    """Textual re-adds a remapped binding after the others, so `b` moved to `B` went last on the
    footer, and at 120 columns was the key left out while ^t Theme stayed: it stays where b was."""
    from test_app_fit import screen_text

    (isolated_config / "config.json").write_text(json.dumps({"keymap": {"baseline": "B"}}))
    app = _app()
    async with app.run_test(size=(120, 40)) as pilot:
        await pilot.pause()
        await pilot.pause()
        footer = screen_text(app).splitlines()[-1]
    assert "B Baseline" in footer, footer
    assert footer.index("? Help") < footer.index("B Baseline") < footer.index("e Snapshot"), footer
    assert not [t for t in app.toasts if "keymap" in t], app.toasts


def test_quit_remapped_onto_textuals_own_quit_key_is_taken():
    """Textual binds ^q to quit itself: quit remapped there does what it says, so it is taken, where
    another binding on ^q (which Textual's quit would shadow) is left out with a word."""
    from tfdash.app import bindings
    from tfdash.app.config import applied_keymap, keymap_problems

    scopes, known = bindings.KEYMAP_SCOPES, bindings.all_ids()
    assert keymap_problems({"quit": "ctrl+q"}, scopes, known) == []
    assert applied_keymap({"quit": "ctrl+q"}, scopes) == {"quit": "ctrl+q"}
    assert keymap_problems({"profile": "ctrl+q"}, scopes, known) == [
        "profile and Textual's quit are both on 'ctrl+q': profile stays on 'p'"]
