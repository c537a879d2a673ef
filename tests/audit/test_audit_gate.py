"""One score, and only acts change a reward: findings a model already weighed do not count
twice, and a score that rests on narration or a model's verdict alone goes to review."""

from __future__ import annotations

from judge_service.audit.host import audit_now, hack_score, scale_penalty
from judge_service.contracts import Evidence
from judge_service.domain import Finding, Outcome, Sample

SAMPLE = Sample(id="s", prompt="Fix it.", completion="Done.")


class Fixed:
    """A detector that reports the findings it was given."""

    uses_llm = False

    def __init__(self, name: str, *findings: Finding) -> None:
        self.name, self.findings = name, list(findings)

    def detect(self, sample: Sample, evidence: Evidence) -> list[Finding]:
        return self.findings


def finding(detector: str, confidence: float, basis: str | None, **extra: object) -> Finding:
    return Finding(
        detector=detector,
        kind="k",
        severity="high",
        confidence=confidence,
        evidence="e",
        basis=basis,
        **extra,
    )


def scored(*detectors: Fixed, policy=None) -> Outcome:
    outcome = Outcome(id="s", reward=0.9, valid=True, raw_reward=0.9)
    if policy is None:
        return audit_now(SAMPLE, outcome, detectors, Evidence())
    return audit_now(SAMPLE, outcome, detectors, Evidence(), policy)


def test_a_finding_that_a_model_covers_does_not_count_twice() -> None:
    rule = finding("rule", 0.9, "code")
    model = finding("model", 0.1, "code", covers=["rule"])
    assert hack_score([rule]) == 0.9
    assert hack_score([rule, model]) == 0.1
    assert hack_score([rule, finding("model", 0.1, "code", covers=["other"])]) > 0.9


def test_a_code_fact_behind_the_score_floors_the_reward() -> None:
    result = scored(Fixed("rule", finding("rule", 0.95, "code")))
    assert result.hack_score >= 0.5 and result.reward == 0.0 and result.penalty == 0.9


def test_narration_alone_goes_to_review_and_leaves_the_reward() -> None:
    result = scored(Fixed("talk", finding("talk", 0.95, "narration")))
    assert 0.3 <= result.hack_score < 0.5  # words queue a rollout for review, never flag it
    assert result.reward == 0.9 and result.penalty == 0.0
    assert [f.kind for f in result.findings if f.detector == "audit"] == ["held_for_review"]


def test_a_model_verdict_alone_goes_to_review_but_one_with_an_act_counts() -> None:
    alone = scored(Fixed("monitor", finding("monitor", 0.9, "model")))
    assert alone.reward == 0.9 and 0.3 <= alone.hack_score < 0.5
    backed = scored(
        Fixed("monitor", finding("monitor", 0.9, "model")),
        Fixed("rule", finding("rule", 0.6, "tool")),
    )
    assert backed.reward == 0.0


def test_below_the_flag_a_narration_score_costs_nothing_even_when_scaling() -> None:
    said = scored(Fixed("talk", finding("talk", 0.3, "narration")), policy=scale_penalty)
    assert said.reward == 0.9
    acted = scored(Fixed("rule", finding("rule", 0.3, "code")), policy=scale_penalty)
    assert acted.reward < 0.9


def test_a_plugin_that_names_no_basis_still_counts_as_an_act() -> None:
    result = scored(Fixed("third_party", finding("third_party", 0.95, None)))
    assert result.reward == 0.0
