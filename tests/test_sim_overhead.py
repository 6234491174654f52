"""scripts/sim_dashboard_overhead.py, the CPU model of what the dashboard costs a GPU-bound
engine: its simulated device paces the steps, and its simulated kernel records feed continuous
timing under the real app."""

from __future__ import annotations

import json

import pytest
from fixtures.appkit import isolated_config  # noqa: F401  (a fixture)
from fixtures.scripts import load_script


@pytest.fixture(scope="module")
def sim():
    return load_script("sim_dashboard_overhead")


def test_the_simulated_device_paces_the_steps_and_its_records_are_measured(sim, tmp_path, isolated_config):
    out = tmp_path / "sim.json"
    assert sim.main(["--step-us", "2000", "--tokens", "200", "--rounds", "1", "--continuous",
                     "--json", str(out)]) == 0
    r = json.loads(out.read_text())
    for arm in ("headless", "dashboard"):
        [tok_s] = r[arm]
        assert tok_s <= r["ideal_tok_s"] * 1.01  # never faster than the simulated device
        [d] = r["details"][arm]
        assert d["step_p50_ms"] >= 1.95  # the device's step, as the ring times it (a host behind adds to it)
        assert d["timing_host_us_per_step"] > 0  # continuous timing mapped the simulated records
    assert r["headless"][0] > 0.5 * r["ideal_tok_s"]
    assert r["continuous"] and r["releases"] == 1 and r["switch_interval_s"] == pytest.approx(1e-4)
    from tfdash.engine import decode

    assert (decode.SWITCH_S, decode.CPU_SWITCH_S) == (1e-4, 5e-4)  # the simulation put them back
