"""The agent-trajectory corpus in data/agents/: rebuilt byte for byte by its generator, big and
varied enough, in the API's sample format, and disjoint from the held-out agent examples."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections import Counter, defaultdict
from pathlib import Path
from typing import Any

import pytest

from judge_service.wire import SampleIn
from tests.helpers import load_script

ROOT = Path(__file__).resolve().parents[2]
CORPUS = ROOT / "data" / "agents" / "agent_trajectories.jsonl"
GENERATOR = ROOT / "data" / "agents" / "generate.py"
EXAMPLES = ROOT / "tests" / "data" / "agent_examples.jsonl"


def load_generator() -> Any:
    return load_script(GENERATOR, "agent_corpus_generate")


@pytest.fixture(scope="module")
def rows() -> list[dict[str, Any]]:
    return [json.loads(line) for line in CORPUS.read_text(encoding="utf-8").splitlines()]


def test_committed_file_is_the_generators_output() -> None:
    generator = load_generator()
    assert CORPUS.read_text(encoding="utf-8") == generator.dumps(generator.build())


@pytest.mark.parametrize("hash_seed", ["1", "2"])
def test_generator_output_does_not_depend_on_hash_randomisation(hash_seed: str) -> None:
    """String hashing changes between processes; set order must not reach the output."""
    env = {**os.environ, "PYTHONHASHSEED": hash_seed}
    done = subprocess.run(
        [sys.executable, str(GENERATOR), "--check"],
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == 0, done.stdout + done.stderr


def test_size_kinds_and_balance(rows: list[dict[str, Any]]) -> None:
    assert len(rows) >= 800
    hack_kinds = {r["kind"] for r in rows if r["label"] == 1}
    assert len(hack_kinds) >= 12
    assert all(not k.startswith("clean:") for k in hack_kinds)
    assert all(r["kind"].startswith("clean:") for r in rows if r["label"] == 0)
    assert sum(r["label"] == 0 for r in rows) / len(rows) >= 0.4
    assert set(Counter(r["label"] for r in rows)) == {0, 1}


def test_every_row_is_a_valid_api_sample_with_unique_id(rows: list[dict[str, Any]]) -> None:
    for row in rows:
        sample = {k: v for k, v in row.items() if k not in ("label", "kind")}
        SampleIn.model_validate(sample)
    assert len({r["id"] for r in rows}) == len(rows)


def test_groups_pair_a_hack_with_a_look_alike(rows: list[dict[str, Any]]) -> None:
    labels: dict[str, set[int]] = defaultdict(set)
    for row in rows:
        labels[row["group_id"]].add(row["label"])
    assert all(v == {0, 1} for v in labels.values())


def test_trajectories_have_tool_calls_and_results(rows: list[dict[str, Any]]) -> None:
    with_calls = 0
    for row in rows:
        assert isinstance(row["completion"], list)
        calls = {c["id"] for m in row["completion"] for c in m.get("tool_calls") or []}
        results = {m["tool_call_id"] for m in row["completion"] if m["role"] == "tool"}
        assert results <= calls  # every tool result answers a call in the same trajectory
        for m in row["completion"]:
            for c in m.get("tool_calls") or []:
                json.loads(c["function"]["arguments"])
        with_calls += bool(calls)
    assert with_calls / len(rows) > 0.8


def test_held_out_examples_are_not_in_the_corpus(rows: list[dict[str, Any]]) -> None:
    examples = [json.loads(line) for line in EXAMPLES.read_text(encoding="utf-8").splitlines()]
    completions = {json.dumps(r["completion"], sort_keys=True) for r in rows}
    prompts = {json.dumps(r["prompt"], sort_keys=True) for r in rows}
    for example in examples:
        assert json.dumps(example["completion"], sort_keys=True) not in completions
        assert json.dumps(example["prompt"], sort_keys=True) not in prompts
