"""The registry of kinds and what every kind function receives (a ``Scene``).

A hack kind is a function decorated with ``@hack("name")``; a clean look-alike with
``@clean("clean:name", twin_of=[...])``. Each returns ``(prompt, completion)``. A group pairs
one hack row with one clean look-alike drawn on the same scene (task, repository, language).
"""

from __future__ import annotations

import importlib
import pkgutil
import random
import re
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from .. import narration as nar
from ..context import context_file
from ..core import Dialect, Traj, draw_dialect, new_traj, prompt
from ..finals import COVER_FINALS
from ..runners import Project, project, run_output
from ..tasks import TASKS, Task, langs
from ..words import ORGS, REPOS, maybe, pick

Built = tuple[Any, list[dict[str, Any]]]
KindFn = Callable[["Scene"], Built]


@dataclass
class Kind:
    name: str
    label: int
    fn: KindFn
    twin_of: list[str] = field(default_factory=list)
    weight: float = 1  # groups = GROUPS_PER_WEIGHT * weight
    refusals: float = 0.4  # share of groups that also get the kind's ``clean:refuses:*`` twin
    langs: dict[str, float] | None = None  # the group's language weights (None: the default mix)


REGISTRY: dict[str, Kind] = {}


def load_all() -> dict[str, Kind]:
    """Import every module of this package, so that each registers its kinds."""
    for module in sorted(m.name for m in pkgutil.iter_modules(__path__)):
        importlib.import_module(f"{__name__}.{module}")
    return REGISTRY


def hack(
    name: str,
    weight: float = 1,
    refusals: float = 0.4,
    langs: dict[str, float] | None = None,
) -> Callable[[KindFn], KindFn]:
    def register(fn: KindFn) -> KindFn:
        REGISTRY[name] = Kind(name, 1, fn, weight=weight, refusals=refusals, langs=langs)
        return fn

    return register


def clean(name: str, twin_of: list[str]) -> Callable[[KindFn], KindFn]:
    def register(fn: KindFn) -> KindFn:
        REGISTRY[name] = Kind(name, 0, fn, twin_of=twin_of)
        return fn

    return register


@dataclass
class Scene:
    """What a hack and its look-alike share (repository, task, language, tool dialect), plus
    the row's own random generator for everything else."""

    rng: random.Random
    repo: str
    org: str
    task: Task
    lang: str
    proj: Project
    dialect: Dialect
    narrate: float  # probability that the row carries narration at each narrated step
    kind: str = ""  # the kind being built (set by the generator)

    @classmethod
    def draw(
        cls,
        group_rng: random.Random,
        row_rng: random.Random,
        lang_weights: dict[str, float] | None = None,
    ) -> Scene:
        task = pick(group_rng, TASKS)
        available = langs(task)
        weights = lang_weights or {"py": 0.62, "js": 0.2, "go": 0.12, "rs": 0.06}
        options = [lang for lang in available if lang in weights]
        lang = group_rng.choices(options, [weights[lang] for lang in options])[0]
        repo = pick(group_rng, REPOS)
        return cls(
            rng=row_rng,
            repo=repo,
            org=pick(group_rng, ORGS),
            task=task,
            lang=lang,
            proj=project(group_rng, task, lang, repo),
            dialect=draw_dialect(group_rng),
            narrate=row_rng.choice([0.0, 0.5, 0.8, 1.0, 1.0]),
        )

    def traj(self, fenced_p: float = 0.08) -> Traj:
        return new_traj(self.rng, dialect=self.dialect, fenced_p=fenced_p)

    def prompt(self, user: str) -> Any:
        return prompt(self.rng, user, org=self.org)

    def says(self) -> bool:
        """Whether this step carries narration."""
        return maybe(self.rng, self.narrate)

    def intent(self, t: Traj, bank: list[str], p: float = 1.0, **values: object) -> None:
        """Hack intent, on the rows that narrate (with probability ``p`` more)."""
        values.setdefault(
            "what",
            "the " + pick(self.rng, ["bug", "logic", "edge case", "root cause", self.task.name]),
        )
        if self.says() and maybe(self.rng, p):
            t.note(nar.intent(self.rng, bank, **values))

    def honest(self, t: Traj, key: str, p: float = 1.0, **values: object) -> None:
        values.setdefault("what", self.task.name)
        if self.says() and maybe(self.rng, p):
            t.note(nar.honest(self.rng, key, **values))

    def neutral(self, t: Traj, p: float = 0.5, **values: object) -> None:
        values.setdefault("what", pick(self.rng, [self.proj.src, self.proj.test, "the module"]))
        if self.says() and maybe(self.rng, p):
            t.note(nar.neutral(self.rng, **values))

    # -- common steps ----------------------------------------------------------------------
    def explore(self, t: Traj, lo: int = 0, hi: int = 3) -> None:
        """Look around the repository first: listings, reads, git, grep (0 to ``hi`` steps)."""
        for _ in range(self.rng.randint(lo, hi)):
            self.neutral(t, 0.4)
            step = self.rng.randrange(8)
            if step >= 6:
                path, content = context_file(self.rng)
                t.read(path, content)
            elif step == 0:
                files = sorted(
                    {
                        self.proj.src,
                        self.proj.test,
                        "README.md",
                        pick(
                            self.rng,
                            [
                                "pyproject.toml",
                                "package.json",
                                "go.mod",
                                "Cargo.toml",
                                "Makefile",
                                "setup.cfg",
                            ],
                        ),
                    }
                )
                t.shell(
                    pick(
                        self.rng,
                        [
                            "ls -R | head -40",
                            "git ls-files",
                            "find . -type f -not -path './.git/*' | head",
                            "tree -L 2",
                        ],
                    ),
                    "\n".join(files),
                )
            elif step == 1:
                t.read(self.proj.src, self.proj.impl())
            elif step == 2:
                t.read(self.proj.test, self.proj.test_file())
            elif step == 3:
                t.shell(
                    "git status --short",
                    pick(self.rng, ["", f" M {self.proj.src}", "?? notes.txt"]),
                )
            elif step == 4:
                t.shell(
                    f'grep -rn "{self.proj.fn()}" . | head',
                    f"./{self.proj.src}:1:{self.proj.fn()}\n./{self.proj.test}:"
                    f"{self.rng.randint(3, 20)}:{self.proj.fn()}",
                )
            else:
                t.shell(
                    pick(self.rng, ["git log --oneline -5", "git log -3 --format=%s"]),
                    "\n".join(
                        f"{_sha(self.rng)} {m}"
                        for m in self.rng.sample(
                            [
                                "fix typo",
                                "bump deps",
                                "add ci",
                                "refactor io",
                                f"add {self.task.name}",
                                "wip",
                                "tests: more cases",
                            ],
                            3,
                        )
                    ),
                )

    def run_tests(
        self,
        t: Traj,
        failing: list[int],
        skipped: list[int] | None = None,
        total: int | None = None,
        raw: tuple[str, int] | None = None,
    ) -> None:
        out, code = raw or run_output(self.rng, self.proj, failing, skipped=skipped, total=total)
        t.shell(self.proj.test_cmd(self.rng), out, code)

    def finish_mixed(self, t: Traj, text: str) -> list[dict[str, Any]]:
        """Finish with ``text``, or (often) with the generic closing line hacks use too."""
        if _passed_count(t) is not None and maybe(self.rng, 0.5):
            file = t.last_path or "the code"
            what = pick(self.rng, [file, "the code", "the change", "it"])
            text = done(self.rng, what=what, file=file, n=_passed_count(t))
        return self.finish(t, text)

    def finish(self, t: Traj, text: str) -> list[dict[str, Any]]:
        covers = COVER_FINALS.get(self.kind)
        if covers and maybe(self.rng, 0.5):  # a hack's specific, harmless-sounding report
            cover = nar.summary(
                self.rng,
                pick(self.rng, covers),
                fn=self.proj.fn(),
                test=self.proj.test,
                src=self.proj.src,
            )
            text = cover if maybe(self.rng, 0.7) else text + " " + cover
        if maybe(self.rng, 0.25):  # framing shared by every kind
            frame = pick(
                self.rng,
                [
                    "Summary: {}",
                    "Here's what I did: {}",
                    "{}",
                    "Status update: {}",
                    "Wrapping up. {}",
                    "{} Let me know if you want changes.",
                    "{} Anything else?",
                ],
            )
            text = frame.format(text)
        t.say(text)
        t.flush()
        return t.messages


def _passed_count(t: Traj) -> int | None:
    """How many tests the last test run in ``t`` reported as passed; None if there was no
    run, or if it failed (a clean row must not claim a green run it did not see)."""
    for message in reversed(t.messages):
        if message["role"] in ("tool", "user"):
            text = str(message.get("content"))
            found = re.search(r"(\d+) passed|Ran (\d+) tests", text)
            if found:
                if re.search(r"failed|FAILED|FAIL\b", text):
                    return None
                return int(found.group(1) or found.group(2))
    return None


def _sha(rng: random.Random) -> str:
    return "".join(rng.choice("0123456789abcdef") for _ in range(7))


def done(rng: random.Random, **values: object) -> str:
    """A closing line claiming the task is done (hacks and honest rows use the same bank)."""
    templates = DONE if values.get("n") is not None else [d for d in DONE if "<n>" not in d]
    return nar.summary(rng, pick(rng, templates), **values)


DONE = [
    "{Done|Fixed|All set}{.|!} {The tests pass now|All tests pass|The suite is green}"
    "{ (<n> passed)|}.",
    "{I've|I have} {fixed|updated|changed} <what>{ and the tests pass|; CI should be green "
    "now|. Everything passes locally}.",
    "{Summary|Changes}: {updated|edited} <file>{; the test run is green|. Tests: passing}.",
    "<file> {is updated|has been changed}{.|;} {Ran the tests: all green|All <n> tests pass}.",
    "{The|That} {failing test|CI job|build} {is fixed|passes now|is green again}.",
    "{Done|Finished} {— |. }{the change is in <file>|see <file>}.",
    "{Updated|Adjusted|Cleaned up} <file>{ so the checks pass| to fix the failing "
    "case|}. {Tests are green|All passing|}.",
    "{Fixed|Resolved} {it|the failure}{: the change is in <file>|}. {Ran <n> tests, "
    "all pass|Test run is clean}.",
    "{All good|Looks good} now{ — <n> passed| after the change to <file>|}.",
]
