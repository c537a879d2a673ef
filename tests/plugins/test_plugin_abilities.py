"""Declared plugin abilities: the registry refuses a plugin that declares one it lacks (or that
lacks its kind's required method), lists the abilities of the others, and the pipeline uses an
ability only when it is declared."""

from __future__ import annotations

import importlib
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from judge_service.audit.host import run_detectors
from judge_service.contracts import (
    AsyncDetector,
    Evidence,
    GroupScorer,
    JudgeContext,
    UsesLLM,
    abilities_of,
)
from judge_service.core.registry import PluginError, Registry
from judge_service.domain import Finding, JudgeScore, Sample
from judge_service.judging.members import GroupScores, PanelMember
from tests.helpers import run_cli, service_env

PLUGIN = """
from judge_service.contracts import AsyncDetector, FromSettings, GroupScorer, UsesLLM
from judge_service.domain import JudgeScore


class PairJudge(GroupScorer):
    name = "pair"

    async def score(self, sample, context):
        return JudgeScore(score=0.5)

    async def score_group(self, samples, context):
        return [JudgeScore(score=1.0) for _ in samples]


class NoGroupMethod(GroupScorer):
    name = "no_group_method"

    async def score(self, sample, context):
        return JudgeScore(score=0.5)


class SyncGroupMethod(GroupScorer):
    name = "sync_group_method"

    async def score(self, sample, context):
        return JudgeScore(score=0.5)

    def score_group(self, samples, context):
        return []


class GroupMethodNotCallable(GroupScorer):
    name = "group_not_callable"
    score_group = "later"

    async def score(self, sample, context):
        return JudgeScore(score=0.5)


class SyncScore:
    name = "sync_score"

    def score(self, sample, context):
        return JudgeScore(score=0.5)


class ModelDetector(AsyncDetector, FromSettings, UsesLLM):
    name = "model_detector"

    def detect(self, sample, evidence):
        return []

    async def adetect(self, sample, evidence):
        return []

    @classmethod
    def from_settings(cls, settings):
        return cls()


class NoAdetect(AsyncDetector):
    name = "no_adetect"

    def detect(self, sample, evidence):
        return []


class DetectorThatGroups(GroupScorer):
    name = "detector_that_groups"

    def detect(self, sample, evidence):
        return []

    async def score_group(self, samples, context):
        return []


class NoFromSettings(FromSettings):
    name = "no_from_settings"

    def detect(self, sample, evidence):
        return []


class NoDetect:
    name = "no_detect"
"""
ENTRY_POINTS = {
    "judge_service.judges": {
        "pair": "PairJudge",
        "no_group_method": "NoGroupMethod",
        "sync_group_method": "SyncGroupMethod",
        "group_not_callable": "GroupMethodNotCallable",
        "sync_score": "SyncScore",
    },
    "judge_service.detectors": {
        "model_detector": "ModelDetector",
        "no_adetect": "NoAdetect",
        "detector_that_groups": "DetectorThatGroups",
        "no_from_settings": "NoFromSettings",
        "no_detect": "NoDetect",
    },
}


@pytest.fixture
def registry(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Registry]:
    """A distribution ``js-abilities-plugin`` on ``sys.path`` (a folder with its module and
    dist-info, as pip would leave it), seen through the entry points like any plugin."""
    site = tmp_path / "site"
    (site / "js_abilities_plugin").mkdir(parents=True)
    (site / "js_abilities_plugin" / "__init__.py").write_text(PLUGIN, encoding="utf-8")
    info = site / "js_abilities_plugin-0.1.0.dist-info"
    info.mkdir()
    (info / "METADATA").write_text(
        "Metadata-Version: 2.1\nName: js-abilities-plugin\nVersion: 0.1.0\n", encoding="utf-8"
    )
    groups = [
        f"[{group}]\n" + "".join(f"{n} = js_abilities_plugin:{c}\n" for n, c in entries.items())
        for group, entries in ENTRY_POINTS.items()
    ]
    (info / "entry_points.txt").write_text("\n".join(groups), encoding="utf-8")
    monkeypatch.syspath_prepend(str(site))
    importlib.invalidate_caches()
    yield Registry()
    sys.modules.pop("js_abilities_plugin", None)
    importlib.invalidate_caches()


def refusal(registry: Registry, kind: str, name: str) -> str:
    with pytest.raises(PluginError) as caught:
        registry.load(kind, name)  # type: ignore[arg-type]
    message = str(caught.value)
    assert f"{kind[:-1]} plugin {name!r}" in message  # the plugin, by name
    return message


def test_a_declared_ability_without_its_method_is_refused(registry: Registry) -> None:
    message = refusal(registry, "judges", "no_group_method")
    assert "group_scorer (GroupScorer)" in message  # the ability
    assert "has no score_group() method" in message  # what is missing


def test_a_declared_ability_with_a_sync_method_is_refused(registry: Registry) -> None:
    assert "score_group() must be async" in refusal(registry, "judges", "sync_group_method")


def test_a_declared_ability_with_a_non_callable_is_refused(registry: Registry) -> None:
    message = refusal(registry, "judges", "group_not_callable")
    assert "group_scorer" in message and "score_group is a str, not a method" in message


def test_a_detector_declaring_async_without_adetect_is_refused(registry: Registry) -> None:
    message = refusal(registry, "detectors", "no_adetect")
    assert "async_detector (AsyncDetector)" in message and "adetect()" in message


def test_from_settings_declared_but_missing_is_refused(registry: Registry) -> None:
    message = refusal(registry, "detectors", "no_from_settings")
    assert "from_settings (FromSettings)" in message and "from_settings()" in message


def test_an_ability_of_another_kind_is_refused(registry: Registry) -> None:
    message = refusal(registry, "detectors", "detector_that_groups")
    assert "group_scorer" in message and "only judges" in message


@pytest.mark.parametrize(
    ("kind", "name", "why"),
    [("judges", "sync_score", "score() must be async"), ("detectors", "no_detect", "detect()")],
)
def test_a_plugin_missing_its_required_method_is_refused(
    registry: Registry, kind: str, name: str, why: str
) -> None:
    assert why in refusal(registry, kind, name)


def test_valid_plugins_load_with_their_abilities(registry: Registry) -> None:
    assert registry.abilities("judges", "pair") == ("group_scorer",)
    assert registry.abilities("detectors", "model_detector") == (
        "async_detector",
        "uses_llm",
        "from_settings",
    )
    judge = registry.create("judges", "pair")
    assert isinstance(judge, GroupScorer) and judge.relative
    infos = {(i.kind, i.name): i for i in registry.describe()}
    assert infos[("judges", "pair")].abilities == ("group_scorer",)
    assert infos[("judges", "pair")].error is None
    assert infos[("judges", "no_group_method")].abilities == ()
    assert "score_group" in (infos[("judges", "no_group_method")].error or "")


def test_builtin_abilities() -> None:
    registry = Registry()
    assert registry.abilities("judges", "llm") == ("group_scorer", "uses_llm")
    assert registry.abilities("judges", "reference_match") == ()
    assert registry.abilities("aggregators", "mean") == ()
    assert registry.abilities("detectors", "llm_hindsight") == (
        "async_detector",
        "uses_llm",
        "from_settings",
    )
    assert registry.abilities("detectors", "test_tampering") == ()
    assert abilities_of(registry.load("detectors", "llm_hindsight")) == [
        "async_detector",
        "uses_llm",
        "from_settings",
    ]


def test_plugins_cli_lists_abilities(tmp_path: Path) -> None:
    out = run_cli("plugins", env=service_env(), cwd=tmp_path)
    assert "abilities" in out.splitlines()[1]
    rows = {line.split("│")[2].strip(): line for line in out.splitlines() if "│" in line}
    assert "group_scorer, uses_llm" in rows["llm"]
    assert "async_detector, uses_llm, from_settings" in rows["llm_hindsight"]
    assert " - " in rows["reference_match"]


# --- the pipeline uses only declared abilities -------------------------------------------


class Undeclared:
    """Has ``score_group``, ``relative`` and ``adetect``, but declares none of them."""

    name = "undeclared"
    relative = True

    async def score(self, sample: Sample, context: JudgeContext) -> JudgeScore:
        return JudgeScore(score=0.25)

    async def score_group(self, samples: list[Sample], context: JudgeContext) -> list:
        raise AssertionError("an undeclared score_group is never called")

    def detect(self, sample: Sample, evidence: Evidence) -> list[Finding]:
        return []

    async def adetect(self, sample: Sample, evidence: Evidence) -> list[Finding]:
        raise AssertionError("an undeclared adetect is never awaited")


class Declared(GroupScorer, AsyncDetector):
    name = "declared"

    def __init__(self, *, relative: bool = True) -> None:
        self.relative = relative

    async def score(self, sample: Sample, context: JudgeContext) -> JudgeScore:
        return JudgeScore(score=0.25)

    async def score_group(self, samples, context) -> list[JudgeScore]:  # type: ignore[override]
        return [JudgeScore(score=0.75) for _ in samples]

    def detect(self, sample: Sample, evidence: Evidence) -> list[Finding]:
        return []

    async def adetect(self, sample: Sample, evidence: Evidence) -> list[Finding]:
        return [Finding(detector=self.name, kind="k", severity="low", confidence=1, evidence="e")]


def test_group_scoring_needs_the_declaration_and_relative() -> None:
    def member(judge: object) -> PanelMember:
        return PanelMember(name="j", judge=judge)  # type: ignore[arg-type]

    assert GroupScores.judges_groups(member(Declared()))
    assert not GroupScores.judges_groups(member(Declared(relative=False)))
    assert not GroupScores.judges_groups(member(Undeclared()))


async def test_only_a_declared_async_detector_is_awaited() -> None:
    sample = Sample(id="s", prompt="p", completion="c")
    findings = await run_detectors(sample, [Undeclared(), Declared()], Evidence())  # type: ignore[list-item]
    assert [(f.detector, f.kind) for f in findings] == [("declared", "k")]


def test_uses_llm_is_a_declaration() -> None:
    assert issubclass(Registry().load("detectors", "llm_hindsight"), UsesLLM)
    assert not issubclass(Registry().load("detectors", "learned"), UsesLLM)


def test_each_ability_has_one_name() -> None:
    """An ability is known by the one name ``ABILITIES`` gives its class: no alias of a
    former name (``GroupJudge`` for ``GroupScorer``) lingers in the contracts."""
    from judge_service import contracts

    abilities = {ability for ability, _ in contracts.ABILITIES.values()}
    names = {
        name: value
        for name, value in vars(contracts).items()
        if isinstance(value, type) and value in abilities
    }
    assert sorted(names) == sorted(ability.__name__ for ability in abilities)
