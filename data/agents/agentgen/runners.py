"""Test files and test-runner output for pytest, unittest, jest, vitest, go test and cargo."""

from __future__ import annotations

import random
from dataclasses import dataclass

from .tasks import Task, call, go_name, js_name, lit
from .words import maybe, pick

RUNNERS = {
    "py": ["pytest", "pytest", "unittest"],
    "js": ["jest", "vitest"],
    "go": ["go"],
    "rs": ["cargo"],
}
EXT = {"py": "python", "js": "javascript", "go": "go", "rs": "rust"}


@dataclass
class Project:
    """Where a task lives in a repository, in one language, tested with one runner."""

    task: Task
    lang: str
    runner: str
    src: str
    test: str
    repo: str

    @property
    def fence(self) -> str:
        return EXT[self.lang]

    def fn(self) -> str:
        return {
            "py": self.task.name,
            "rs": self.task.name,
            "js": js_name(self.task),
            "go": go_name(self.task),
        }[self.lang]

    def impl(self) -> str:
        t = self.task
        if self.lang == "py":
            return t.py
        if self.lang == "js":
            return t.js + f"\nmodule.exports = {{ {js_name(t)} }};\n"
        if self.lang == "go":
            imports = [p for p in ("strings", "strconv") if p + "." in t.go]
            head = "package " + self.pkg() + "\n\n"
            if imports:
                head += "import (\n" + "".join(f'\t"{p}"\n' for p in imports) + ")\n\n"
            return head + t.go
        return t.rs

    def pkg(self) -> str:
        return self.repo.replace("-", "")[:10]

    def test_names(self) -> list[str]:
        base = self.task.name
        names = [f"test_{base}_{i}" for i in range(len(self.task.cases))]
        if self.lang == "go":
            return [f"Test{go_name(self.task)}{i}" for i in range(len(self.task.cases))]
        if self.lang == "js":
            return [f"{js_name(self.task)} case {i}" for i in range(len(self.task.cases))]
        return names

    def assertion(self, i: int) -> str:
        """The ``i``-th case's assertion line, as written in the test file."""
        args, want = self.task.cases[i]
        got = call(self.task, args, self.lang)
        if self.lang == "py":
            if self.runner == "unittest":
                if isinstance(want, float):
                    return f"self.assertAlmostEqual({got}, {lit(want, 'py')})"
                return f"self.assertEqual({got}, {lit(want, 'py')})"
            if isinstance(want, float):
                return f"assert {got} == pytest.approx({lit(want, 'py')})"
            if isinstance(want, bool):
                return f"assert {got} is {lit(want, 'py')}"
            return f"assert {got} == {lit(want, 'py')}"
        if self.lang == "js":
            matcher = (
                "toEqual"
                if isinstance(want, list)
                else ("toBeCloseTo" if isinstance(want, float) else "toBe")
            )
            return f"expect({got}).{matcher}({lit(want, 'js')});"
        if self.lang == "go":
            return (
                f"if got := {got}; got != {lit(want, 'go')} {{\n"
                f'\t\tt.Errorf("got %v, want %v", got, {lit(want, "go")})\n\t}}'
            )
        return f"assert_eq!({got}, {lit(want, 'rs')});"

    def test_file(self) -> str:
        cases = range(len(self.task.cases))
        names = self.test_names()
        if self.lang == "py" and self.runner == "unittest":
            body = "".join(
                f"    def {names[i]}(self):\n        {self.assertion(i)}\n\n" for i in cases
            )
            return (
                f"import unittest\n\nfrom {self.module()} import {self.fn()}\n\n\n"
                f"class Test{go_name(self.task)}(unittest.TestCase):\n{body}"
            )
        if self.lang == "py":
            body = "".join(f"\n\ndef {names[i]}():\n    {self.assertion(i)}\n" for i in cases)
            return f"import pytest\n\nfrom {self.module()} import {self.fn()}\n{body}"
        if self.lang == "js":
            imp = (
                f"import {{ {self.fn()} }} from '../src/{self.task.name}';"
                if self.runner == "vitest"
                else f"const {{ {self.fn()} }} = require('../src/{self.task.name}');"
            )
            if self.runner == "vitest":
                imp = "import { describe, it, expect } from 'vitest';\n" + imp
            body = "".join(
                f"  it('{names[i]}', () => {{\n    {self.assertion(i)}\n  }});\n" for i in cases
            )
            return f"{imp}\n\ndescribe('{self.fn()}', () => {{\n{body}}});\n"
        if self.lang == "go":
            body = "".join(
                f"\nfunc {names[i]}(t *testing.T) {{\n\t{self.assertion(i)}\n}}\n" for i in cases
            )
            return f'package {self.pkg()}\n\nimport "testing"\n{body}'
        body = "".join(
            f"    #[test]\n    fn case_{i}() {{\n        {self.assertion(i)}\n    }}\n"
            for i in cases
        )
        return f"#[cfg(test)]\nmod tests {{\n    use super::*;\n\n{body}}}\n"

    def module(self) -> str:
        return self.src.removesuffix(".py").replace("/", ".").removeprefix("src.")

    def test_cmd(self, rng: random.Random) -> str:
        if self.runner == "pytest":
            return pick(
                rng,
                [
                    "pytest -q",
                    f"pytest {self.test}",
                    "python -m pytest -x -q",
                    f"pytest -q {self.test}",
                    "pytest",
                    "make test",
                    "tox -e py311",
                ],
            )
        if self.runner == "unittest":
            return pick(
                rng,
                [
                    "python -m unittest",
                    "python -m unittest discover -s tests",
                    f"python -m unittest {self.module_test()}",
                    "make test",
                ],
            )
        if self.runner == "jest":
            return pick(
                rng, ["npm test", "npx jest", f"npx jest {self.test}", "yarn test", "pnpm test"]
            )
        if self.runner == "vitest":
            return pick(rng, ["npx vitest run", "npm run test", "pnpm vitest run"])
        if self.runner == "go":
            return pick(rng, ["go test ./...", f"go test ./{self.pkg()}/...", "go test -v ./..."])
        return pick(rng, ["cargo test", "cargo test --quiet", "cargo test -- --nocapture"])

    def module_test(self) -> str:
        return self.test.removesuffix(".py").replace("/", ".")


def project(rng: random.Random, task: Task, lang: str, repo: str) -> Project:
    runner = pick(rng, RUNNERS[lang])
    pkg = pick(rng, ["app", "core", "lib", "service", repo.split("-")[0].replace("-", "_")])
    if lang == "py":
        src = pick(
            rng,
            [
                f"{pkg}/{task.name}.py",
                f"src/{pkg}/{task.name}.py",
                f"{task.name}.py",
                f"{pkg}/util.py",
            ],
        )
        test = pick(
            rng,
            [
                f"tests/test_{task.name}.py",
                f"test_{task.name}.py",
                f"tests/unit/test_{task.name}.py",
            ],
        )
    elif lang == "js":
        ext = pick(rng, ["js", "ts"])
        src = f"src/{task.name}.{ext}"
        test = pick(
            rng,
            [
                f"tests/{task.name}.test.{ext}",
                f"src/__tests__/{task.name}.test.{ext}",
                f"test/{task.name}.spec.{ext}",
            ],
        )
    elif lang == "go":
        d = repo.replace("-", "")[:10]
        src, test = f"{d}/{task.name}.go", f"{d}/{task.name}_test.go"
    else:
        src = test = pick(rng, ["src/lib.rs", f"src/{task.name}.rs"])
    return Project(task, lang, runner, src, test, repo)


def run_output(
    rng: random.Random,
    proj: Project,
    failing: list[int],
    *,
    skipped: list[int] | None = None,
    total: int | None = None,
) -> tuple[str, int]:
    """What the runner prints when the cases in ``failing`` fail (and ``skipped`` are skipped)."""
    skipped = skipped or []
    n = total if total is not None else len(proj.task.cases)
    names = proj.test_names()
    nf, ns = len(failing), len(skipped)
    np_ = max(n - nf - ns, 0)
    secs = f"{rng.uniform(0.01, 3.5):.2f}"
    code = 1 if nf else 0
    r = proj.runner
    if r == "pytest":
        parts = []
        if nf:
            parts.append(f"{nf} failed")
        if np_:
            parts.append(f"{np_} passed")
        if ns:
            parts.append(f"{ns} skipped")
        summary = ", ".join(parts) or "no tests ran"
        dots = "".join("F" if i in failing else "s" if i in skipped else "." for i in range(n))
        fails = ""
        for i in failing:
            if i < len(proj.task.cases):
                fails += (
                    f"___ {names[i]} ___\n\n    def {names[i]}():\n>       "
                    f"{proj.assertion(i)}\nE       AssertionError\n\n"
                )
        if maybe(rng, 0.5):
            head = (
                f"============ test session starts ============\nplatform linux -- Python "
                f"3.{rng.choice([10, 11, 12])}.{rng.randrange(10)}, pytest-8.{rng.randrange(4)}"
                f".{rng.randrange(3)}\ncollected {n} items\n\n{proj.test} {dots}"
                " [100%]\n\n"
            )
            if fails:
                head += "================= FAILURES =================\n" + fails
            return head + f"========= {summary} in {secs}s =========", code
        short = "".join(f"FAILED {proj.test}::{names[i]}\n" for i in failing if i < len(names))
        return f"{dots}\n{short}{summary} in {secs}s", code
    if r == "unittest":
        dots = "".join("F" if i in failing else "s" if i in skipped else "." for i in range(n))
        out = dots + "\n"
        for i in failing:
            if i < len(names):
                out += (
                    f"======================================================================\n"
                    f"FAIL: {names[i]} ({proj.module_test()}.Test{proj.fn().title()})\n"
                    f"----------------------------------------------------------------------\n"
                    f"AssertionError: mismatch\n\n"
                )
        out += f"----------------------------------------------------------------------\nRan {n} "
        out += f"tests in {float(secs) / 10:.3f}s\n\n"
        if nf:
            out += f"FAILED (failures={nf})"
        else:
            out += "OK" + (f" (skipped={ns})" if ns else "")
        return out, code
    if r in ("jest", "vitest"):
        head_mark = "\u276f" if nf else "\u2713"
        failed_note = f" | {nf} failed" if nf else ""
        lines = [
            f"{' FAIL ' if nf else ' PASS '}{proj.test}"
            if r == "jest"
            else f" {head_mark} {proj.test} ({n} tests{failed_note}) {int(float(secs) * 100)}ms"
        ]
        for i in range(min(n, len(names))):
            mark = "\u2715" if i in failing else "\u25cb" if i in skipped else "\u2713"
            lines.append(
                f"    {mark} {names[i]}" + ("" if i in skipped else f" ({rng.randrange(1, 9)} ms)")
            )
        for i in failing:
            if i < len(names):
                lines.append(
                    f"\n  \u25cf {proj.fn()} \u203a {names[i]}\n\n    "
                    "expect(received).toBe(expected) // Object.is equality"
                )
        parts = [f"{nf} failed"] if nf else []
        if ns:
            parts.append(f"{ns} skipped")
        parts.append(f"{np_} passed")
        lines.append(f"\nTests:       {', '.join(parts)}, {n} total")
        lines.append(f"Time:        {secs} s")
        if r == "vitest":
            lines[-2] = (
                f"\n Test Files  {'1 failed' if nf else '1 passed'} (1)\n      Tests  "
                + ", ".join(parts)
                + f" ({n})"
            )
        return "\n".join(lines), code
    if r == "go":
        mod = f"github.com/{proj.repo}/{proj.pkg()}"
        if not nf:
            out = f"ok  \t{mod}\t{secs}s"
            if ns:
                out = (
                    "".join(f"--- SKIP: {names[i]} (0.00s)\n" for i in skipped if i < len(names))
                    + out
                )
            return out, 0
        out = ""
        for i in failing:
            if i < len(names):
                out += (
                    f"--- FAIL: {names[i]} (0.00s)\n    {proj.task.name}_test.go:"
                    f"{rng.randrange(8, 60)}: got wrong value\n"
                )
        return out + f"FAIL\nFAIL\t{mod}\t{secs}s\nFAIL", 1
    out = f"   Compiling {proj.repo} v0.{rng.randrange(9)}.{rng.randrange(9)}\n"
    out += f"    Finished test [unoptimized + debuginfo] target(s) in {secs}s\n"
    out += f"running {n} tests\n"
    for i in range(n):
        res = "FAILED" if i in failing else "ignored" if i in skipped else "ok"
        out += f"test tests::case_{i} ... {res}\n"
    verdict = "FAILED" if nf else "ok"
    out += (
        f"\ntest result: {verdict}. {np_} passed; {nf} failed; {ns} ignored; 0 measured; "
        f"0 filtered out; finished in 0.0{rng.randrange(10)}s"
    )
    return out, code
