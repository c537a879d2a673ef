"""docs/plugins.md's example judge plugin, run as the guide says: installed with pip (into a
temporary folder on ``PYTHONPATH``, never the project's .venv), listed by ``judge-service
plugins`` with its ability, and used by ``judge-service score`` pointwise and relative."""

from __future__ import annotations

import json
import os
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.helpers import pip_install_to, run_cli, service_env

EXAMPLE = Path(__file__).resolve().parents[2] / "docs" / "examples" / "judge_plugin"
KEYWORDS = ["refund", "receipt", "30 days"]
SAMPLES = [
    {"id": "a", "group_id": "g", "prompt": "How do I get my money back?",
     "completion": "Ask for a refund within 30 days."},
    {"id": "b", "group_id": "g", "prompt": "How do I get my money back?",
     "completion": "Ask for a refund."},
]  # fmt: skip


@pytest.fixture(scope="module")
def example_site(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Path]:
    site = tmp_path_factory.mktemp("example-plugin") / "site"
    pip_install_to(EXAMPLE, site)
    yield site


@pytest.fixture
def env(example_site: Path, tmp_path: Path) -> dict[str, str]:
    paths = [str(example_site), os.environ.get("PYTHONPATH", "")]
    return service_env(
        PYTHONPATH=os.pathsep.join(filter(None, paths)),
        JS_DATABASE_URL=f"sqlite:///{tmp_path / 'example.db'}",
    )


def test_the_example_is_listed_with_its_ability(env: dict[str, str], tmp_path: Path) -> None:
    out = run_cli("plugins", env=env, cwd=tmp_path)
    (row,) = [line for line in out.splitlines() if " keywords " in line]
    assert "js-example-judge 0.1.0" in row
    assert "js_example_judge:KeywordJudge" in row
    assert "group_scorer" in row
    assert "ok" in row.split() and "failed" not in row


def score(env: dict[str, str], cwd: Path, **options: object) -> dict[str, dict]:
    infile, outfile = cwd / "in.jsonl", cwd / "out.jsonl"
    infile.write_text("".join(json.dumps(s) + "\n" for s in SAMPLES), encoding="utf-8")
    spec = json.dumps({"name": "keywords", "keywords": KEYWORDS, **options})
    run_cli("score", str(infile), "--out", str(outfile), "--judge", spec, "--no-audit",
            env=env, cwd=cwd)  # fmt: skip
    results = [json.loads(line) for line in outfile.read_text(encoding="utf-8").splitlines()]
    return {r["id"]: r for r in results}


def test_the_example_scores_samples_through_the_cli(env: dict[str, str], tmp_path: Path) -> None:
    results = score(env, tmp_path)
    assert results["a"]["valid"] is True
    assert results["a"]["reward"] == pytest.approx(2 / 3)  # refund, 30 days
    assert results["b"]["reward"] == pytest.approx(1 / 3)  # refund
    assert results["a"]["judges"][0]["judge"] == "keywords"
    assert "mentions 2 of 3" in results["a"]["judges"][0]["rationale"]


def test_the_example_scores_a_group_relative_to_its_best(
    env: dict[str, str], tmp_path: Path
) -> None:
    """Declared ``GroupScorer`` and ``relative``: the group goes to ``score_group``."""
    results = score(env, tmp_path, relative=True)
    assert results["a"]["reward"] == pytest.approx(1.0)  # the group's best
    assert results["b"]["reward"] == pytest.approx(0.5)  # half of the best
    assert "the group's best" in results["b"]["judges"][0]["rationale"]
