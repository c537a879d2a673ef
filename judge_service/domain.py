"""Domain objects the pipeline works on: samples, rubrics, verdicts, findings, outcomes.

Pure pydantic, importing nothing of the package but the wire contract: an
``Outcome`` is the wire's ``SampleResult`` with the judges' and the audit's full
records, so the two can never drift apart. Prompts and completions arrive already
validated by the wire layer, so here they are plain text or a list of OpenAI-style
message dicts.
"""

from __future__ import annotations

import json
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field

from judge_service.wire import FailureKind, PenaltyName, SampleResult

Chat = list[dict[str, Any]]
Severity = Literal["info", "low", "medium", "high"]
#: How much a finding of each severity weighs in ``hack_score`` (times its confidence).
SEVERITY_WEIGHT: dict[str, float] = {"info": 0.0, "low": 0.35, "medium": 0.7, "high": 1.0}
#: The sample metadata key that holds an ended episode's verdict: only the episode path
#: (``judge_service.episodes.web_reward``) sets it, the ``world_end_state`` judge reads it.
WORLD_VERDICT = "world_verdict"
#: What backs a finding. ``code``: the submitted code does it (from its AST); ``tool``: a tool
#: call did it or a tool's output contradicts a claim; ``output``: the answer text itself is the
#: act (keyword stuffing, text aimed at the judge); ``narration``: only what the agent said;
#: ``model``: an LLM monitor's verdict. None (older plugins) counts as an act.
Basis = Literal["code", "tool", "output", "narration", "model"]
#: Findings on these bases may change a reward; the others only send the rollout to review.
ACT_BASES: frozenset[str | None] = frozenset({"code", "tool", "output", None})


def _part_text(content: Any) -> str:
    """Text of a message ``content``: a string, or a list of ``{"type": "text"}`` parts."""
    if content is None:
        return ""
    if isinstance(content, str):
        return content
    return "".join(str(part.get("text", "")) for part in content if isinstance(part, dict))


class SampleNotScorable(ValueError):
    """Raised by a judge when the sample lacks what it needs (a reference, say).

    The pipeline masks such a sample as ``bad_sample`` rather than ``judge_failed``:
    the fault is in the data, not in the judge.
    """


class Sample(BaseModel):
    """One rollout to score."""

    model_config = ConfigDict(frozen=True)

    id: str
    group_id: str | None = None
    prompt: str | Chat
    completion: str | Chat
    reference: Any = None
    context: list[str] | None = None
    metadata: dict[str, Any] = Field(default_factory=dict)

    def prompt_text(self) -> str:
        """The task as text: the prompt string, or the last user message of a chat."""
        if isinstance(self.prompt, str):
            return self.prompt
        users = [m for m in self.prompt if m.get("role") == "user"]
        return _part_text((users or self.prompt or [{}])[-1].get("content"))

    def answer_text(self) -> str:
        """The final answer: the completion string, or the last assistant message's text."""
        if isinstance(self.completion, str):
            return self.completion
        for message in reversed(self.completion):
            if message.get("role") == "assistant" and _part_text(message.get("content")).strip():
                return _part_text(message.get("content"))
        return ""

    def transcript(self) -> str:
        """The whole completion as readable text, tool calls and tool results included."""
        if isinstance(self.completion, str):
            return self.completion
        lines = []
        for message in self.completion:
            role = message.get("role", "?")
            text = _part_text(message.get("content"))
            if text:
                lines.append(f"[{role}] {text}")
            for call in message.get("tool_calls") or []:
                function = call.get("function", {})
                arguments = function.get("arguments", "")
                if not isinstance(arguments, str):
                    arguments = json.dumps(arguments, ensure_ascii=False)
                lines.append(f"[{role} -> tool {function.get('name', '?')}] {arguments}")
        return "\n".join(lines)

    def is_blank(self) -> bool:
        """True when there is nothing to judge (empty or whitespace-only completion)."""
        if isinstance(self.completion, str):
            return not self.completion.strip()
        return not any(
            _part_text(m.get("content")).strip() or m.get("tool_calls") for m in self.completion
        )


class Criterion(BaseModel):
    """A yes/no rubric item. A negative weight marks a pitfall."""

    id: str
    text: str
    weight: float = 1.0
    tags: list[str] = Field(default_factory=list)


class Rubric(BaseModel):
    name: str
    version: int = 1
    description: str = ""
    criteria: list[Criterion] = Field(default_factory=list)
    prompts: dict[str, str] = Field(default_factory=dict)
    #: The rubric's penalty policy for flagged samples (a request's own wins over it).
    penalty: PenaltyName | None = None

    @property
    def ref(self) -> str:
        return f"{self.name}@{self.version}"


class CallUsage(BaseModel):
    """What scoring cost: model calls, cache hits, tokens, dollars. Frozen, so one
    zero instance (``NO_USAGE``) is every default: no new object per verdict."""

    model_config = ConfigDict(frozen=True, allow_inf_nan=False)

    judge_calls: int = 0
    cache_hits: int = 0
    prompt_tokens: int = 0
    completion_tokens: int = 0
    cost_usd: float = 0.0

    def __add__(self, other: CallUsage) -> CallUsage:
        return CallUsage(
            judge_calls=self.judge_calls + other.judge_calls,
            cache_hits=self.cache_hits + other.cache_hits,
            prompt_tokens=self.prompt_tokens + other.prompt_tokens,
            completion_tokens=self.completion_tokens + other.completion_tokens,
            cost_usd=self.cost_usd + other.cost_usd,
        )


NO_USAGE = CallUsage()


def total_usage(verdicts: list[Verdict]) -> CallUsage:
    """What the verdicts cost together (one verdict: its own usage, no new object; a
    panel: one new object, not one per verdict added)."""
    if len(verdicts) == 1:
        return verdicts[0].usage
    usages = [v.usage for v in verdicts if v.usage is not NO_USAGE]
    if len(usages) <= 1:
        return usages[0] if usages else NO_USAGE
    return CallUsage(
        judge_calls=sum(u.judge_calls for u in usages),
        cache_hits=sum(u.cache_hits for u in usages),
        prompt_tokens=sum(u.prompt_tokens for u in usages),
        completion_tokens=sum(u.completion_tokens for u in usages),
        cost_usd=sum(u.cost_usd for u in usages),
    )


class JudgeScore(BaseModel):
    """What a judge plugin returns for one sample. NaN and infinity are refused here,
    where judges' numbers enter: JSON (the answer, a result's components) holds neither."""

    model_config = ConfigDict(allow_inf_nan=False)

    score: float = Field(ge=0.0, le=1.0)
    rationale: str = ""
    components: dict[str, float] = Field(default_factory=dict)
    usage: CallUsage = NO_USAGE


class Verdict(BaseModel):
    """One judge's say on one sample, failure included: a failure is data, not a crash."""

    judge: str
    weight: float = 1.0
    score: float | None = None
    rationale: str | None = None
    error: str | None = None
    timed_out: bool = False
    not_scorable: bool = False
    components: dict[str, float] = Field(default_factory=dict)
    usage: CallUsage = NO_USAGE

    @property
    def ok(self) -> bool:
        return self.error is None and self.score is not None


class Finding(BaseModel):
    """One piece of audit evidence.

    ``fact`` points at what backs it (``src/x.py:12``, ``message 4 tool call 1 `bash```);
    ``narration`` quotes what the agent said that supports or contradicts it. ``covers``
    names detectors whose findings this one's confidence already includes (the audit model
    reads them as features), so their findings do not enter ``hack_score`` a second time.
    """

    detector: str
    kind: str
    severity: Severity
    confidence: float = Field(ge=0.0, le=1.0)
    evidence: str
    basis: Basis | None = None
    fact: str | None = None
    narration: str | None = None
    covers: list[str] = Field(default_factory=list)

    @property
    def is_act(self) -> bool:
        """Whether a code or tool fact (or the answer text itself) backs this finding."""
        return self.basis in ACT_BASES


class Outcome(SampleResult):
    """The scored result of one sample, as stored and as answered: the wire's
    ``SampleResult`` with each judge's and each finding's full record, and the calls' cost.
    ``wire.SampleResult.model_validate(outcome.model_dump())`` is its answer form."""

    judges: list[Verdict] = Field(default_factory=list)  # type: ignore[assignment]
    findings: list[Finding] = Field(default_factory=list)  # type: ignore[assignment]
    usage: CallUsage = NO_USAGE

    @classmethod
    def masked(
        cls, sample_id: str, kind: FailureKind, reason: str, judges: list[Verdict] | None = None
    ) -> Outcome:
        """A sample whose reward could not be computed: ``reward`` is None, never 0."""
        verdicts = judges or []
        usage = total_usage(verdicts)
        return cls(
            id=sample_id,
            reward=None,
            valid=False,
            failure_kind=kind,
            failure_reason=reason,
            judges=verdicts,
            usage=usage,
        )
