"""``keywords``: the share of required keywords that the final answer mentions.

An example judge plugin (docs/plugins.md). It declares one optional ability,
``GroupScorer``: with ``relative=True`` a GRPO group is scored in one call, each answer
against the best of its group.
"""

from __future__ import annotations

import re
from collections.abc import Sequence

from judge_service.contracts import GroupScorer, JudgeContext
from judge_service.domain import JudgeScore, Sample


class KeywordJudge(GroupScorer):
    """Scores ``found / len(keywords)``, matching whole words and ignoring case."""

    name = "keywords"

    def __init__(self, *, keywords: list[str], relative: bool = False) -> None:
        if not keywords:
            raise ValueError("keywords must name at least one keyword")
        self.keywords = list(keywords)
        self.relative = relative
        self.patterns = [re.compile(rf"\b{re.escape(k)}\b", re.IGNORECASE) for k in keywords]

    def _found(self, sample: Sample) -> list[str]:
        text = sample.answer_text()
        return [k for k, p in zip(self.keywords, self.patterns, strict=True) if p.search(text)]

    async def score(self, sample: Sample, context: JudgeContext) -> JudgeScore:
        found = self._found(sample)
        return JudgeScore(
            score=len(found) / len(self.keywords),
            rationale=f"mentions {len(found)} of {len(self.keywords)}: {', '.join(found) or '-'}",
        )

    async def score_group(
        self, samples: Sequence[Sample], context: JudgeContext
    ) -> list[JudgeScore]:
        shares = [len(self._found(s)) / len(self.keywords) for s in samples]
        best = max(shares)
        return [
            JudgeScore(
                score=share / best if best else 0.0,
                rationale=f"mentions {share:.0%} of the keywords; the group's best {best:.0%}",
            )
            for share in shares
        ]
