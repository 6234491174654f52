"""TFDASH_TEST_SHARD (tests/conftest.py): n pytest processes on one GPU machine take disjoint
contiguous slices of the selected tests that together are all of them."""

import os
import subprocess
import sys

import pytest

from conftest import REPO


def collected(shard=None):
    env = {k: v for k, v in os.environ.items() if k != "TFDASH_TEST_SHARD"}
    if shard:
        env["TFDASH_TEST_SHARD"] = shard
    out = subprocess.run([sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "--collect-only",
                          "tests/test_config.py"], cwd=REPO, env=env, capture_output=True, text=True)
    return out.returncode, [line for line in out.stdout.splitlines() if "::" in line], out.stdout + out.stderr


def test_three_shards_split_the_tests_in_order():
    rc, whole, _ = collected()
    assert rc == 0 and len(whole) >= 3
    parts = [collected(f"{i}/3")[1] for i in range(3)]
    assert all(parts), "every shard has tests"
    assert sum(parts, []) == whole  # disjoint, contiguous, in collection order, nothing lost


@pytest.mark.parametrize("bad", ["3/3", "1/0"])
def test_a_bad_shard_is_one_usage_error(bad):
    rc, _, text = collected(bad)
    assert rc != 0
    assert "TFDASH_TEST_SHARD" in text and "Traceback" not in text
