"""``reference_match``: 1 when the final answer is the reference, or states it plainly.

The rule, in order; each reference of a sample is tried, and any that passes scores 1.0:

1. **Extract the final answer**: the last ``\\boxed{X}``, else ``#### X``, else the text
   after "the answer is" / "final answer:" / "answer:" on the last line that has one, else
   the last line.
2. **Same answer**: the extracted answer equals the reference once case, punctuation,
   markup, articles and number formats are normalised ("**42**", "42.", "42.0" and "1,234"
   equal ``42``, ``42``, ``42`` and ``1234``; "The Eiffel Tower" equals ``eiffel tower``).
3. **Stated in a short answer**: the *focus* is the extracted answer when it has at most
   12 words, else its last sentence. The focus passes when it equals the reference, or
   states it as its one answer (:func:`mentions.states`): the reference appears exactly once,
   as whole words ("42" is not in "1425"); the focus offers no alternative ("or", "either",
   "vs"); it does not deny the reference ("not Paris"); no other clause names a competing
   candidate (a bare phrase no longer than the reference, as in "Paris, Lyon, Nice", or any
   other number against a numeric reference); and no number or capitalised word is written
   right next to it ("Paris Hilton", "41 42").
4. **One bold answer**: in a longer answer, its only ``**X**`` span, when that equals the
   reference and the answer offers no alternative.

So "The capital of France is Paris." scores 1.0 for ``Paris``, and "Paris, Lyon or Nice",
"Either Paris or Lyon", "Paris, maybe Lyon" or a long paragraph that mentions Paris among
other cities score 0.0. ``extract=False`` reads the whole answer text as the final answer.
"""

from __future__ import annotations

from judge_service_plugins.judges.answers import (
    bold_answer,
    final_answer,
    last_number,
    last_sentence,
)
from judge_service_plugins.judges.mentions import (
    MAX_WORDS,
    offers_alternative,
    same,
    states,
    tokens,
    words,
)

from judge_service.contracts import JudgeContext
from judge_service.domain import JudgeScore, Sample, SampleNotScorable


def references(sample: Sample) -> list[str]:
    """The accepted answers of a sample; raises when it has none."""
    if sample.reference is None or sample.reference == "" or sample.reference == []:
        raise SampleNotScorable("sample has no `reference` to compare against")
    values = sample.reference if isinstance(sample.reference, list) else [sample.reference]
    return [str(value) for value in values]


class ReferenceMatchJudge:
    """The final answer equals the reference after normalisation, or a short final answer
    states it once with no competing candidate (the whole rule is in the module docstring)."""

    name = "reference_match"

    def __init__(self, *, extract: bool = True) -> None:
        self.extract = extract

    async def score(self, sample: Sample, context: JudgeContext) -> JudgeScore:
        text = sample.answer_text()
        answer = final_answer(text) if self.extract else text.strip()
        verdict = "is not the reference"
        for reference in references(sample):
            matched, verdict = _judge(answer, reference)
            if matched:
                return JudgeScore(score=1.0, rationale=f"final answer {answer!r}: {verdict}")
        return JudgeScore(score=0.0, rationale=f"final answer {answer!r}: {verdict}")


def _judge(answer: str, reference: str) -> tuple[bool, str]:
    """Whether ``answer`` gives ``reference`` (steps 2 to 4 of the rule), and why."""
    wanted = tokens(reference)
    if not wanted:
        return False, "the reference has no words"
    answer_tokens = tokens(answer)
    if same(answer_tokens, wanted) or _same_number(answer, reference):
        return True, "matches"
    long = words(answer_tokens) > MAX_WORDS
    focus = tokens(last_sentence(answer)) if long else answer_tokens
    if long and same(focus, wanted):
        return True, "its last sentence matches"
    stated, why = states(focus, wanted)
    if stated:
        return True, why
    bold = bold_answer(answer) if long else None
    if bold is not None and same(tokens(bold), wanted) and not offers_alternative(answer_tokens):
        return True, "its bold answer matches"
    return False, why


def _same_number(answer: str, reference: str) -> bool:
    """Both are one number of the same value ("1e6" and "1000000")."""
    ref = last_number(reference)
    if ref is None:
        return False
    stripped = answer.strip().strip("*").rstrip(".").replace(",", "")
    try:
        return float(stripped) == ref
    except ValueError:
        return False
