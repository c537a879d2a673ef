"""Settings: JS_ environment, URL mapping, defaults, and nothing built at import."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path, PurePosixPath

import pytest
from pydantic import ValidationError

import judge_service.core.settings as settings_module
from judge_service.core.settings import Settings, get_settings


@pytest.fixture
def clean_env(monkeypatch: pytest.MonkeyPatch) -> pytest.MonkeyPatch:
    """No JS_ variable from the outer environment leaks into a test."""
    for key in list(os.environ):
        if key.upper().startswith("JS_"):
            monkeypatch.delenv(key)
    return monkeypatch


def test_reads_js_prefixed_environment(clean_env: pytest.MonkeyPatch) -> None:
    clean_env.setenv("JS_MAX_BODY_MB", "8")
    clean_env.setenv("JS_BROKER_URL", "redis://127.0.0.1:6379/3")
    clean_env.setenv("JS_DEFAULT_AGGREGATOR", "median")
    clean_env.setenv("JS_SAMPLE_CONCURRENCY", "7")
    settings = get_settings()
    assert settings.max_body_mb == 8
    assert settings.max_body_bytes == 8 * 1024 * 1024
    assert settings.broker_url == "redis://127.0.0.1:6379/3"
    assert settings.embedded is False
    assert settings.default_aggregator == "median"
    assert settings.sample_concurrency == 7


def test_unprefixed_names_are_ignored(clean_env: pytest.MonkeyPatch) -> None:
    clean_env.setenv("MAX_BODY_MB", "1")
    clean_env.setenv("DATABASE_URL", "postgresql://elsewhere/db")
    settings = get_settings()
    assert settings.max_body_mb == 32
    assert "elsewhere" not in settings.database_url


def test_environment_is_read_when_built_not_before(clean_env: pytest.MonkeyPatch) -> None:
    clean_env.setenv("JS_MAX_BODY_MB", "4")
    first = get_settings()
    clean_env.setenv("JS_MAX_BODY_MB", "5")
    second = get_settings()
    assert (first.max_body_mb, second.max_body_mb) == (4, 5)


def test_keyword_overrides_win_over_environment(clean_env: pytest.MonkeyPatch) -> None:
    clean_env.setenv("JS_MAX_BODY_MB", "4")
    assert get_settings(max_body_mb=9).max_body_mb == 9


def test_bad_value_in_environment_is_an_error(clean_env: pytest.MonkeyPatch) -> None:
    clean_env.setenv("JS_MAX_BODY_MB", "lots")
    with pytest.raises(ValidationError):
        get_settings()
    clean_env.setenv("JS_MAX_BODY_MB", "0")
    with pytest.raises(ValidationError):
        get_settings()


@pytest.mark.parametrize(
    ("given", "expected"),
    [
        ("postgresql://u:p@db:5432/js", "postgresql+psycopg://u:p@db:5432/js"),
        ("postgres://u:p@db:5432/js", "postgresql+psycopg://u:p@db:5432/js"),
        ("postgresql+psycopg://u@db/js", "postgresql+psycopg://u@db/js"),
        ("sqlite:////tmp/x.db", "sqlite:////tmp/x.db"),
    ],
)
def test_postgres_urls_map_to_psycopg3(
    clean_env: pytest.MonkeyPatch, given: str, expected: str
) -> None:
    clean_env.setenv("JS_DATABASE_URL", given)
    assert get_settings().database_url == expected
    assert get_settings(database_url=given).database_url == expected


def test_defaults(clean_env: pytest.MonkeyPatch) -> None:
    settings = get_settings()
    assert settings.max_body_mb == 32
    assert settings.max_body_bytes == 32 * 1024 * 1024
    assert settings.broker_url is None
    assert settings.embedded is True
    assert settings.default_timeout_s == 120


def test_default_database_is_a_sqlite_file_in_the_user_data_directory(
    clean_env: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    """Not the working directory: every command finds the same database from anywhere."""
    clean_env.setenv("XDG_DATA_HOME", str(tmp_path / "data"))
    url = get_settings().database_url
    assert url == f"sqlite:///{tmp_path / 'data' / 'judge-service' / 'judge_service.db'}"
    assert PurePosixPath(url.removeprefix("sqlite:///")).is_absolute()
    assert not (tmp_path / "data").exists(), "building the settings created a folder"
    clean_env.setenv("JS_DATABASE_URL", "sqlite:////elsewhere/mine.db")
    assert get_settings().database_url == "sqlite:////elsewhere/mine.db"


def test_empty_broker_url_means_embedded(clean_env: pytest.MonkeyPatch) -> None:
    clean_env.setenv("JS_BROKER_URL", "")
    assert get_settings().embedded is True


def test_no_settings_instance_at_module_level() -> None:
    instances = [
        name for name, value in vars(settings_module).items() if isinstance(value, Settings)
    ]
    assert instances == [], f"settings built at import: {instances}"


@pytest.mark.parametrize(
    "module",
    [
        "judge_service.core.settings",
        "judge_service.cli",
        "judge_service.core.api.app",
        "judge_service.core.worker.celery_app",
        "judge_service.scoring.evaluate",
    ],
)
def test_importing_reads_no_settings(module: str, tmp_path: Path) -> None:
    """With broken JS_ values in the environment, importing still works (nothing read yet)."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("JS_")}
    env.update(JS_MAX_BODY_MB="not-a-number", JS_SAMPLE_CONCURRENCY="-5")
    code = (
        f"import {module}\n"
        "from judge_service.core.settings import get_settings\n"
        "try:\n"
        "    get_settings()\n"
        "except Exception:\n"
        "    print('refused when built')\n"
    )
    done = subprocess.run(
        [sys.executable, "-c", code],
        env=env,
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    assert "refused when built" in done.stdout
    assert not (tmp_path / "judge_service.db").exists(), "importing created a database"


def test_default_judges_take_a_json_list_of_spec_objects(monkeypatch):
    from judge_service.core.settings import get_settings

    spec = '[{"name": "hosted_vllm/q", "api_base": "http://gpu:8000/v1"}, "reference_match"]'
    monkeypatch.setenv("JS_DEFAULT_JUDGES", spec)
    assert get_settings().default_judge_specs() == [
        {"name": "hosted_vllm/q", "api_base": "http://gpu:8000/v1"},
        "reference_match",
    ]
    monkeypatch.setenv("JS_DEFAULT_JUDGES", "reference_match, openai/x")
    assert get_settings().default_judge_specs() == ["reference_match", "openai/x"]


def test_the_default_panel_is_the_default_judges_else_the_local_judge() -> None:
    from judge_service.judging.local_model import LOCAL_JUDGE_NAME
    from judge_service.judging.panels import default_panel

    assert default_panel(get_settings(default_judges=None)) == [LOCAL_JUDGE_NAME]
    assert default_panel(get_settings(default_judges=" , ")) == [LOCAL_JUDGE_NAME]
    chosen = get_settings(default_judges="reference_match, openai/x")
    assert default_panel(chosen) == ["reference_match", "openai/x"]
