"""Plugin discovery: the built-ins, the out-of-tree test plugin, broken plugins, panels, the CLI."""

from __future__ import annotations

import inspect
import os
import sys
from importlib.metadata import distributions
from pathlib import Path
from typing import Any

import pytest

from judge_service.contracts import Aggregator, Detector, Judge
from judge_service.core.errors import UnknownAggregator, UnknownJudge
from judge_service.core.registry import GROUPS, PluginError, PluginInfo, Registry
from judge_service.judging.panels import build_panel
from tests.helpers import run_cli, service_env

BUILTIN_DIST = "judge-service"
TEST_DIST = "js-test-plugin"
PROTOCOLS: dict[str, type] = {"judges": Judge, "detectors": Detector, "aggregators": Aggregator}
# Options a built-in cannot be built without. A new built-in with required options goes here.
REQUIRED_OPTIONS: dict[tuple[str, str], dict[str, Any]] = {
    ("judges", "regex_match"): {"pattern": "x"},
    ("judges", "llm"): {"model": "openai/gpt-4.1-mini"},
}
BROKEN = ["broken_import", "not_a_judge"]


def describe() -> dict[tuple[str, str], PluginInfo]:
    return {(info.kind, info.name): info for info in Registry().describe()}


def builtins() -> list[tuple[str, str]]:
    return sorted(key for key, info in describe().items() if info.distribution == BUILTIN_DIST)


def test_builtin_groups_are_populated() -> None:
    found = builtins()
    names = {kind: {n for k, n in found if k == kind} for kind in GROUPS}
    assert {"reference_match", "numeric_match", "regex_match"} <= names["judges"]
    assert {"mean", "median", "min", "majority", "trimmed_mean"} <= names["aggregators"]


@pytest.mark.parametrize("kind", list(GROUPS))
def test_every_builtin_entry_point_loads_and_satisfies_its_protocol(kind: str) -> None:
    """The meta-test: every built-in of every group loads, builds and fits its Protocol."""
    registry = Registry()
    infos = describe()
    checked = 0
    for key in builtins():
        if key[0] != kind:
            continue
        name = key[1]
        assert infos[key].error is None, infos[key].error
        cls = registry.load(kind, name)  # type: ignore[arg-type]
        assert inspect.isclass(cls), f"{kind} {name!r} is not a class"
        instance = registry.create(kind, name, **REQUIRED_OPTIONS.get(key, {}))  # type: ignore[arg-type]
        assert isinstance(instance, PROTOCOLS[kind]), f"{kind} {name!r} fails its protocol"
        assert isinstance(instance.name, str) and instance.name
        if isinstance(getattr(cls, "name", None), str):
            assert cls.name == name, f"{kind} {name!r} calls itself {cls.name!r}"
        if kind == "judges":
            assert inspect.iscoroutinefunction(instance.score)
        checked += 1
    for listed in builtins():
        assert listed[0] in GROUPS
    assert checked == sum(1 for k, _ in builtins() if k == kind)


def test_builtins_come_from_the_service_distribution_with_a_version() -> None:
    infos = describe()
    for name in ("reference_match", "numeric_match", "regex_match"):
        info = infos[("judges", name)]
        assert info.distribution == BUILTIN_DIST
        assert info.version not in ("", "?")
        assert info.target.startswith("judge_service_plugins.")


def test_out_of_tree_plugin_is_discovered_with_its_distribution() -> None:
    registry = Registry()
    assert "slow_constant" in registry.names("judges")
    info = describe()[("judges", "slow_constant")]
    assert info.distribution == TEST_DIST
    assert info.version == "0.0.1"
    assert info.error is None
    assert info.target == "js_test_plugin.judges:SlowConstantJudge"
    judge = registry.create("judges", "slow_constant", score=0.25, delay_s=0.0)
    assert isinstance(judge, Judge)
    aggregator = registry.create("aggregators", "first")
    assert isinstance(aggregator, Aggregator)
    assert describe()[("aggregators", "first")].distribution == TEST_DIST


def test_the_test_plugin_stays_out_of_the_environment(
    out_of_tree_plugin: Path, tmp_path: Path
) -> None:
    """It is installed for the session only, in a temporary folder: a user's own
    `judge-service plugins` (no such folder on its path) lists no test plugin, none failed."""
    found = [Path(d.locate_file("")).resolve() for d in distributions(name=TEST_DIST)]
    assert found == [out_of_tree_plugin.resolve()], (
        f"{TEST_DIST} is installed in {found}: a leftover of an older test run "
        "(`bash scripts/setup.sh all` removes it)"
    )
    assert not out_of_tree_plugin.resolve().is_relative_to(Path(sys.prefix).resolve())
    env = service_env()
    paths = env.get("PYTHONPATH", "").split(os.pathsep)
    assert str(out_of_tree_plugin) in paths  # the session's child processes see it
    env["PYTHONPATH"] = os.pathsep.join(p for p in paths if p != str(out_of_tree_plugin))
    out = run_cli("plugins", env=env, cwd=tmp_path)
    assert "reference_match" in out
    assert TEST_DIST not in out and "slow_constant" not in out
    assert "failed" not in out, out


@pytest.mark.parametrize("name", BROKEN)
def test_broken_plugins_are_reported_by_name(name: str) -> None:
    info = describe()[("judges", name)]
    assert info.distribution == TEST_DIST
    assert info.error is not None
    assert name in info.error
    with pytest.raises(PluginError, match=name):
        Registry().load("judges", name)
    with pytest.raises(PluginError, match=name):
        Registry().create("judges", name)


def test_broken_import_error_says_what_failed() -> None:
    error = describe()[("judges", "broken_import")].error or ""
    assert "missing_module" in error


def test_not_a_judge_error_names_the_missing_method() -> None:
    error = describe()[("judges", "not_a_judge")].error or ""
    assert "score" in error


def test_a_broken_plugin_does_not_stop_the_others() -> None:
    registry = Registry()
    for name in BROKEN:
        with pytest.raises(PluginError):
            registry.load("judges", name)
    # Same registry, after the failures: everything else still loads.
    for name in ("slow_constant", "always_fails", "reference_match", "regex_match"):
        assert registry.load("judges", name) is not None
    assert registry.load("aggregators", "mean") is not None
    infos = registry.describe()
    ok = {i.name for i in infos if i.error is None}
    assert {"slow_constant", "reference_match", "mean", "first"} <= ok
    assert not set(BROKEN) & ok


def test_a_failed_load_is_remembered() -> None:
    registry = Registry()
    with pytest.raises(PluginError) as first:
        registry.load("judges", "broken_import")
    with pytest.raises(PluginError) as second:
        registry.load("judges", "broken_import")
    assert str(first.value) == str(second.value)


def test_unknown_plugin_name() -> None:
    with pytest.raises(PluginError, match="no_such_judge"):
        Registry().load("judges", "no_such_judge")
    assert "no_such_judge" not in Registry().names("judges")


def test_bad_options_are_a_plugin_error() -> None:
    with pytest.raises(PluginError):
        Registry().create("judges", "reference_match", not_an_option=True)


# --- the CLI -----------------------------------------------------------------------------


def test_plugins_cli_lists_builtins_test_plugin_and_failures(tmp_path: Path) -> None:
    out = run_cli("plugins", env=service_env(), cwd=tmp_path)
    assert "\x1b[" not in out  # not a terminal: no colour codes
    lines = out.splitlines()

    def row(name: str) -> str:
        found = [line for line in lines if f" {name} " in line]
        assert found, f"{name!r} is not listed:\n{out}"
        return found[0]

    for name in ("reference_match", "numeric_match", "regex_match", "mean", "trimmed_mean"):
        assert BUILTIN_DIST in row(name)
        assert "ok" in row(name).split()
        assert "failed" not in row(name)
    for name in ("slow_constant", "first"):
        assert TEST_DIST in row(name)
        assert "failed" not in row(name)
    for name in BROKEN:
        assert "failed" in row(name)
        assert TEST_DIST in row(name)


# --- panels ------------------------------------------------------------------------------


def test_build_panel_with_an_unknown_judge_names_it() -> None:
    with pytest.raises(UnknownJudge) as caught:
        build_panel(
            [{"name": "reference_match", "weight": 1.0}, {"name": "no_such_judge", "weight": 1.0}],
            registry=Registry(),
            aggregator="mean",
        )
    assert "no_such_judge" in caught.value.message
    assert caught.value.status_code == 422
    assert caught.value.detail["judge"] == "no_such_judge"
    assert caught.value.detail["field"] == "judges.1"
    assert caught.value.detail["known"] == sorted(
        {*Registry().names("judges"), "local/smollm2-135m"}
    )


@pytest.mark.parametrize("name", BROKEN)
def test_build_panel_with_a_broken_judge_is_unknown_judge(name: str) -> None:
    with pytest.raises(UnknownJudge, match=name):
        build_panel([{"name": name, "weight": 1.0}], registry=Registry(), aggregator="mean")


def test_build_panel_with_bad_judge_options_is_unknown_judge() -> None:
    with pytest.raises(UnknownJudge, match="regex_match"):
        build_panel(
            [{"name": "regex_match", "weight": 1.0, "pattern": "("}],
            registry=Registry(),
            aggregator="mean",
        )


def test_build_panel_with_an_unknown_aggregator() -> None:
    with pytest.raises(UnknownAggregator, match="no_such_aggregator"):
        build_panel(
            [{"name": "reference_match", "weight": 1.0}],
            registry=Registry(),
            aggregator="no_such_aggregator",
        )


def test_build_panel_members_keep_names_weights_and_options() -> None:
    built = build_panel(
        [
            {"name": "reference_match", "weight": 2.0},
            {"name": "slow_constant", "weight": 0.5, "score": 0.1, "delay_s": 0.0},
        ],
        registry=Registry(),
        aggregator="median",
    )
    assert [(m.name, m.weight) for m in built.members] == [
        ("reference_match", 2.0),
        ("slow_constant", 0.5),
    ]
    assert built.members[1].judge.value == 0.1  # type: ignore[attr-defined]
    assert built.aggregator.name == "median"
    assert built.quorum == 1


def test_model_string_spec() -> None:
    """A spec containing '/' is a litellm model string for the ``llm`` judge plugin."""
    model = "openai/gpt-4.1-mini"
    registry = Registry()
    if "llm" not in registry.names("judges"):
        with pytest.raises(UnknownJudge) as caught:
            build_panel([{"name": model, "weight": 1.0}], registry=registry, aggregator="mean")
        assert model in caught.value.message
        assert caught.value.status_code == 422
    else:
        built = build_panel([{"name": model, "weight": 1.0}], registry=registry, aggregator="mean")
        assert len(built.members) == 1
        member = built.members[0]
        assert member.name == model
        assert member.weight == 1.0
        assert isinstance(member.judge, Judge)
        assert model in member.judge.name
