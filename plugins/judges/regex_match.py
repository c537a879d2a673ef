"""``regex_match``: 1 when the answer matches a pattern (option ``pattern``, required)."""

from __future__ import annotations

import re
from typing import Literal

from judge_service.contracts import JudgeContext
from judge_service.domain import JudgeScore, Sample


class RegexMatchJudge:
    """Searches (or fully matches) the final answer or the whole transcript."""

    name = "regex_match"

    def __init__(
        self,
        *,
        pattern: str,
        mode: Literal["search", "fullmatch"] = "search",
        target: Literal["answer", "transcript"] = "answer",
        ignore_case: bool = False,
    ) -> None:
        if mode not in ("search", "fullmatch") or target not in ("answer", "transcript"):
            raise ValueError("mode must be search|fullmatch and target answer|transcript")
        try:
            self.regex = re.compile(pattern, re.IGNORECASE if ignore_case else 0)
        except re.error as exc:
            raise ValueError(f"invalid pattern: {exc}") from exc
        self.mode = mode
        self.target = target

    async def score(self, sample: Sample, context: JudgeContext) -> JudgeScore:
        text = sample.answer_text() if self.target == "answer" else sample.transcript()
        text = text.strip() if self.mode == "fullmatch" else text
        match = getattr(self.regex, self.mode)(text)
        verdict = "matches" if match else "does not match"
        return JudgeScore(score=1.0 if match else 0.0, rationale=f"{self.target} {verdict}")
