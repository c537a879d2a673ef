"""``judge-service`` commands run inside the test process, for tests that check what a command
does (its files, its results) rather than the process itself: the command's code is the same
as in a child process, without paying again for its imports (``score`` spends ~5 s importing).

Tests of what a user sees of the process (exit status, printed output, no traceback) run the
real ``judge-service`` executable instead (``tests.helpers.run_cli``).
"""

from __future__ import annotations

import contextlib
import os
from collections.abc import Iterator
from pathlib import Path

from click.testing import CliRunner, Result
from typer.main import get_command


@contextlib.contextmanager
def working_directory(path: Path) -> Iterator[None]:
    before = Path.cwd()
    os.chdir(path)
    try:
        yield
    finally:
        os.chdir(before)


def invoke(*args: str, env: dict[str, str], cwd: Path) -> Result:
    """``judge-service ARGS`` run in this process, in ``cwd``, with ``env`` as the whole
    environment while it runs (as a child started with ``env`` would have it: a variable of
    this process that ``env`` lacks, such as a ``JS_*`` that ``service_env`` left out, is
    unset meanwhile). Exceptions are kept on the result, as ``CliRunner`` does."""
    from judge_service.cli import app

    changes: dict[str, str | None] = {name: None for name in os.environ if name not in env}
    changes.update({name: value for name, value in env.items() if os.environ.get(name) != value})
    with working_directory(cwd):
        return CliRunner().invoke(get_command(app), list(args), env=changes)


def run_in_process(*args: str, env: dict[str, str], cwd: Path) -> str:
    """``invoke``'s stdout; fails the test, with the command's error, unless it exits 0."""
    result = invoke(*args, env=env, cwd=cwd)
    if result.exception is not None and not isinstance(result.exception, SystemExit):
        raise AssertionError(f"judge-service {' '.join(args)} raised") from result.exception
    assert result.exit_code == 0, f"judge-service {' '.join(args)} failed:\n{result.stderr}"
    return result.stdout
