"""``numeric_match``: 1 when the last number of the final answer is within tolerance."""

from __future__ import annotations

import math

from judge_service_plugins.judges.answers import final_answer, last_number
from judge_service_plugins.judges.reference_match import references

from judge_service.contracts import JudgeContext
from judge_service.domain import JudgeScore, Sample, SampleNotScorable


class NumericMatchJudge:
    """Passes when ``|answer - reference| <= max(abs_tol, rel_tol * |reference|)``."""

    name = "numeric_match"

    def __init__(self, *, abs_tol: float = 1e-6, rel_tol: float = 0.0) -> None:
        if abs_tol < 0 or rel_tol < 0:
            raise ValueError("abs_tol and rel_tol must be >= 0")
        self.abs_tol = float(abs_tol)
        self.rel_tol = float(rel_tol)

    async def score(self, sample: Sample, context: JudgeContext) -> JudgeScore:
        answer = last_number(final_answer(sample.answer_text()))
        if answer is None:
            return JudgeScore(score=0.0, rationale="no number in the final answer")
        for reference in references(sample):
            expected = last_number(reference)
            if expected is None:
                raise SampleNotScorable(f"reference {reference!r} is not a number")
            if math.isclose(answer, expected, rel_tol=self.rel_tol, abs_tol=self.abs_tol):
                return JudgeScore(
                    score=1.0, rationale=f"{answer} is within tolerance of {expected}"
                )
        return JudgeScore(score=0.0, rationale=f"{answer} is not within tolerance")
