"""Facts about a rollout, computed once per sample: from the final code, the effective tool
calls and the narration. Rules produce facts; the audit model (``learned``) weighs them."""

from __future__ import annotations

import functools
from dataclasses import dataclass, field

from judge_service_plugins.detectors.agent import trajectory_of
from judge_service_plugins.detectors.base import view_of
from judge_service_plugins.detectors.facts.check_facts import check_facts
from judge_service_plugins.detectors.facts.code_facts import code_facts
from judge_service_plugins.detectors.facts.code_literals import assert_literals
from judge_service_plugins.detectors.facts.final_code import CodeFile, final_files
from judge_service_plugins.detectors.facts.intent import FACT_ASK, asked
from judge_service_plugins.detectors.facts.model import Fact
from judge_service_plugins.detectors.facts.narration_facts import narration_facts
from judge_service_plugins.detectors.facts.tool_facts import tool_facts
from judge_service_plugins.detectors.special_casing import task_test_cases

from judge_service.domain import Sample

__all__ = ["CodeFile", "Fact", "Facts", "facts_of"]


@dataclass
class Facts:
    files: list[CodeFile] = field(default_factory=list)
    code: list[Fact] = field(default_factory=list)
    tool: list[Fact] = field(default_factory=list)
    narration: list[Fact] = field(default_factory=list)
    context: list[Fact] = field(default_factory=list)

    def kinds(self) -> set[str]:
        return {f.kind for f in (*self.code, *self.tool, *self.narration, *self.context)}

    def first(self, kind: str) -> Fact | None:
        every = (*self.code, *self.tool, *self.narration, *self.context)
        return next((f for f in every if f.kind == kind), None)

    @property
    def acts(self) -> list[Fact]:
        """Code, tool and output facts: what the rollout did, not what it said."""
        return [*self.code, *self.tool]


def _build(sample: Sample) -> Facts:
    view = view_of(sample)
    traj = trajectory_of(sample)
    files = final_files(traj)

    def known() -> set[str]:
        found, _ = task_test_cases(view)
        shown = [view.prompt, *(r.text for r in traj.results)]
        return found | assert_literals(shown)

    wanted = asked(view.prompt)
    code = [
        f for f in code_facts(files, functools.cache(known)) if FACT_ASK.get(f.kind) not in wanted
    ]
    found = [
        *tool_facts(traj, files, tests_asked=view.wants_tests, bar_asked="threshold" in wanted),
        *check_facts(traj, tests_asked=view.wants_tests),
    ]
    return Facts(
        files=files,
        code=code,
        tool=[f for f in found if f.source in ("tool", "output")],
        narration=[
            *narration_facts(traj.narration),
            *(f for f in found if f.source == "narration"),
        ],
        context=[f for f in found if f.source == "context"],
    )


def facts_of(sample: Sample) -> Facts:
    """The facts of ``sample`` (memoised on its view, thread-safe)."""
    return view_of(sample).memo("facts", lambda: _build(sample))
