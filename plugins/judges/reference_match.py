"""``reference_match``: 1 when the normalised final answer equals the reference."""

from __future__ import annotations

from judge_service_plugins.judges.answers import final_answer, last_number, normalise

from judge_service.contracts import JudgeContext
from judge_service.domain import JudgeScore, Sample, SampleNotScorable


def references(sample: Sample) -> list[str]:
    """The accepted answers of a sample; raises when it has none."""
    if sample.reference is None or sample.reference == "" or sample.reference == []:
        raise SampleNotScorable("sample has no `reference` to compare against")
    values = sample.reference if isinstance(sample.reference, list) else [sample.reference]
    return [str(value) for value in values]


class ReferenceMatchJudge:
    """Exact match after normalisation; numbers compare by value ("3.0" equals "3")."""

    name = "reference_match"

    def __init__(self, *, extract: bool = True) -> None:
        self.extract = extract

    async def score(self, sample: Sample, context: JudgeContext) -> JudgeScore:
        answer_text = sample.answer_text()
        answer = final_answer(answer_text) if self.extract else answer_text
        normal = normalise(answer)
        for reference in references(sample):
            if normal == normalise(reference) or _same_number(answer, reference):
                return JudgeScore(score=1.0, rationale=f"final answer {answer!r} matches")
        return JudgeScore(score=0.0, rationale=f"final answer {answer!r} does not match")


def _same_number(answer: str, reference: str) -> bool:
    ref = last_number(reference)
    if ref is None:
        return False
    stripped = answer.strip().rstrip(".").replace(",", "")
    try:
        return float(stripped) == ref
    except ValueError:
        return False
