"""The chaos suite (issue 17, build point 8): faults under load on a real service.

Private Redis and PostgreSQL on spare ports (never the shared ones), the fake judge at 200 ms a
call, real ``judge-service serve`` and ``judge-service worker`` processes. Each scenario
asserts that every sample ends scored exactly once, none masked (the judges are up
throughout), nothing lost or duplicated, and every batch done within 60 s of the last fault.
The figures are printed in the run's summary (``tests/conftest.py``) and by
``python -m bench.chaos``.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests import chaos_support as chaos


@pytest.fixture(scope="module", autouse=True)
def figures_in_tmp(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The figures go to a file under pytest's temp folder, never a shared one in /tmp. Left
    set after the module: the run's summary (``tests/conftest.py``) names the file."""
    chaos.FIGURES_PATH = tmp_path_factory.mktemp("chaos-figures") / "js-chaos.jsonl"
    return chaos.FIGURES_PATH


def test_the_figures_are_appended_under_pytests_temp_folder(
    figures_in_tmp: Path, tmp_path_factory: pytest.TempPathFactory, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("JS_CHAOS_FIGURES", raising=False)
    monkeypatch.setattr(chaos, "FIGURES", [])  # no made-up scenario in the run's summary
    assert chaos.figures_file() == figures_in_tmp
    assert figures_in_tmp.is_relative_to(tmp_path_factory.getbasetemp())
    before = figures_in_tmp.read_text().splitlines() if figures_in_tmp.exists() else []
    chaos.record(chaos.Figures(scenario="planted"))
    chaos.record(chaos.Figures(scenario="planted again"))
    lines = figures_in_tmp.read_text().splitlines()[len(before) :]
    assert [json.loads(line)["scenario"] for line in lines] == ["planted", "planted again"]


@pytest.fixture(scope="module")
def service() -> Iterator[chaos.Service]:
    """One service for the module's scenarios (each brings it back to full strength)."""
    with chaos.rig() as rig:
        made = chaos.Service(rig)
        try:
            yield made
        finally:
            made.close()


def assert_clean(figures: chaos.Figures, *, kills: int = 0, restarts: int = 0) -> None:
    assert "stopped early" not in figures.notes, figures
    assert figures.kills == kills and figures.restarts == restarts, figures
    assert figures.samples > 0 and figures.scored == figures.samples, figures
    assert (figures.lost, figures.duplicated, figures.masked) == (0, 0, 0), figures
    assert figures.settle_s is not None and figures.settle_s <= chaos.SETTLE_LIMIT_S, figures
    assert figures.notes.get("workers that crashed or exited", []) == [], figures


def test_workers_survive_a_redis_restart_with_a_batch_in_flight(service: chaos.Service):
    """The 'hostname' crash: the worker stays up, finishes what it holds, takes new work."""
    figures = chaos.redis_restart_with_a_batch_in_flight(service)
    assert_clean(figures, restarts=1)
    scored_when_back = figures.notes["held batch scored when redis was back"]
    assert scored_when_back is not None and 0 < scored_when_back < 4 * chaos.SAMPLES, figures
    assert figures.notes["held batch done after (s)"] is not None, figures


def test_ten_worker_kills_and_a_redis_restart_lose_nothing(service: chaos.Service):
    """20 batches of 64, 10 SIGKILLs each landing mid-batch, ``SHUTDOWN NOSAVE`` halfway."""
    figures = chaos.worker_kills_and_redis_restart(service)
    assert_clean(figures, kills=chaos.KILLS, restarts=1)
    assert all(n >= 1 for n in figures.notes["batches being scored at each kill"]), figures


def test_postgres_stopped_and_started_under_a_running_service(service: chaos.Service):
    figures = chaos.postgres_restart(service)
    assert_clean(figures, restarts=1)
    assert figures.notes["api alive"] is True, figures
    codes = figures.notes["codes while down"]
    assert codes == {"readyz": [503], "post": [503], "get": [503]}, figures


def test_api_killed_and_restarted_while_trainers_wait(service: chaos.Service):
    figures = chaos.api_restart(service)
    assert_clean(figures, kills=2, restarts=2)
    assert figures.notes["trainer errors"] == [], figures
    assert figures.notes["answers missing or wrong"] == [], figures
