"""The test helpers that make the suite quicker: the cached install of the test plugin and
waiting on a condition instead of sleeping."""

from __future__ import annotations

import asyncio
import time
from pathlib import Path

from tests.helpers import (
    TEST_PLUGIN,
    cached_pip_install,
    source_digest,
    wait_until,
    wait_until_async,
)


def package(root: Path) -> Path:
    (root / "pkg").mkdir(parents=True)
    (root / "pyproject.toml").write_text("[project]\nname = 'pkg'\n", encoding="utf-8")
    (root / "pkg" / "__init__.py").write_text("X = 1\n", encoding="utf-8")
    return root


def test_the_digest_follows_the_source_and_not_what_a_build_leaves(tmp_path: Path) -> None:
    source = package(tmp_path / "source")
    first = source_digest(source)
    (source / "build" / "lib").mkdir(parents=True)
    (source / "build" / "lib" / "x.py").write_text("built", encoding="utf-8")
    (source / "pkg.egg-info").mkdir()
    (source / "pkg.egg-info" / "PKG-INFO").write_text("info", encoding="utf-8")
    (source / "pkg" / "__pycache__").mkdir()
    (source / "pkg" / "__pycache__" / "__init__.pyc").write_bytes(b"\0")
    assert source_digest(source) == first
    (source / "pkg" / "__init__.py").write_text("X = 2\n", encoding="utf-8")
    changed = source_digest(source)
    assert changed != first
    (source / "pkg" / "__init__.py").rename(source / "pkg" / "other.py")
    assert source_digest(source) not in (first, changed)


def test_an_install_of_the_same_source_is_reused(tmp_path: Path) -> None:
    """A folder already at the source's digest is the install: pip does not run again (an
    empty folder stands in for it here, so a new install would be seen)."""
    cache = tmp_path / "cache"
    kept = cache / source_digest(TEST_PLUGIN)
    kept.mkdir(parents=True)
    assert cached_pip_install(TEST_PLUGIN, cache) == kept
    assert list(kept.iterdir()) == []


def test_the_session_plugin_is_installed_from_the_current_source(
    out_of_tree_plugin: Path,
) -> None:
    assert out_of_tree_plugin.name == source_digest(TEST_PLUGIN)
    installed = out_of_tree_plugin / "js_test_plugin" / "judges.py"
    assert installed.read_bytes() == (TEST_PLUGIN / "js_test_plugin" / "judges.py").read_bytes()
    assert list(out_of_tree_plugin.glob("js_test_plugin-*.dist-info/RECORD"))


def test_wait_until_returns_the_first_true_answer() -> None:
    answers = iter([0, "", "ready", "later"])
    assert wait_until(lambda: next(answers), timeout=5, interval=0.001) == "ready"
    assert next(answers) == "later"


def test_wait_until_gives_the_last_false_answer_at_the_timeout() -> None:
    started = time.monotonic()
    assert wait_until(lambda: [], timeout=0.2, interval=0.01) == []
    assert 0.2 <= time.monotonic() - started < 2


def test_wait_until_async_lets_the_loop_run_meanwhile() -> None:
    async def main() -> bool:
        done = asyncio.Event()
        asyncio.get_running_loop().call_later(0.05, done.set)
        return await wait_until_async(done.is_set, timeout=5)

    assert asyncio.run(main()) is True
