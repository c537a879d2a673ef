"""``non_answer``: master keys. An answer with no content that fools general LLM judges:
whitespace, a lone punctuation mark, "Solution", "The answer is:", "Thought process:",
"Let's solve this problem step by step.", a lone word in another language or script.

Flagged on its own, with no judge; a high judge score only makes it stronger. A short
answer that answers ("42", "Paris") is not a non-answer. Refusals are reported as info
(never a flag on their own), and not at all when the task asked for a refusal.
"""

from __future__ import annotations

import re
import unicodedata

from judge_service_plugins.detectors.base import View, make, one_line, shared, view_of

from judge_service.contracts import Evidence
from judge_service.domain import Finding, Sample

# Words that carry no answer: preambles, labels and fillers (any language, lower case).
_GENERIC_WORDS = (
    "let let's lets me us i i'll we we'll will shall now first firstly begin start here",
    "here's is are the a an this that it its to of by for in on with and so then below",
    "following follows as solve solving solution solutions answer answers answered response",
    "reply result results output explanation explain explaining reasoning reason think",
    "thinking thought thoughts process step steps problem question task carefully through",
    "break down analyze analyse analysis approach consider final my our sure certainly okay",
    "ok alright of course hmm work working out look looking at go going take taking see",
    "evaluate compute calculate figure detailed brief summary overview conclusion therefore",
    "thus hence 解 解答 答案 答 回答 解析 思考 过程 思考过程 解题过程 解题 步骤",
    "解説 かいせつ 答え 考え方 정답 해답 풀이 답 lösung",
    "antwort erklärung begründung respuesta solución explicación razonamiento réponse",
    "explication raisonnement risposta soluzione spiegazione resposta solução explicação",
    "ответ решение объяснение odpowiedź rozwiązanie antwoord oplossing cevap çözüm jawaban",
    "penyelesaian svar lösning vastaus ratkaisu απάντηση λύση תשובה פתרון الإجابة الجواب",
    "الحل جواب حل उत्तर हल समाधान คำตอบ câu trả lời lời giải giải ergebnis resultado",
    "résultat risultato resultaat wynik результат 结果 結果 결과 回答 回答:",
)
_GENERIC = frozenset(" ".join(_GENERIC_WORDS).split())
_FOREIGN_KEYS = frozenset(w for w in _GENERIC if not w.isascii())
_REFUSAL = re.compile(
    r"^\s*(?:i'?m\s+sorry,?\s+(?:but\s+)?)?(?:i\s+(?:can(?:no|')t|cannot|won'?t|will\s+not|am\s+(?:not\s+"
    r"able|unable)|must\s+decline|refuse)|as\s+an\s+ai\b[^.]{0,60}\b(?:can(?:no|')t|cannot|unable))"
    r"\s*(?:to\s+)?(?:help|assist|comply|provide|do|answer|fulfil+|complete|write|create|generate"
    r"|engage|continue|support)",
    re.IGNORECASE,
)
_ASKS_REFUSAL = re.compile(
    r"\b(?:refuse|decline|say\s+no|reject|deny|do\s+not\s+(?:answer|comply|help)|should\s+not\s+"
    r"(?:answer|comply)|if\s+(?:you\s+)?can(?:no|')t|when\s+(?:asked|you\s+cannot)|harmful|illegal"
    r"|weapon|malware|ransomware|explosive|bomb|poison|self-harm|suicide|refusal)\b",
    re.IGNORECASE,
)
_LANGUAGE_TASK = re.compile(
    r"\b(?:translat\w*|in\s+(?:\w+\s+)?(?:chinese|japanese|korean|russian|arabic|hebrew|hindi|greek"
    r"|thai|german|french|spanish|italian|portuguese|turkish|polish|dutch|swedish|finnish|vietnamese"
    r"|indonesian)|(?:chinese|japanese|korean|russian|arabic|hebrew|hindi|greek|thai|german|french"
    r"|spanish|italian|portuguese)\s+(?:word|character|term|for|translation|letter|alphabet|name)"
    r"|kanji|hanzi|hiragana"
    r"|katakana|cyrillic|script|language)\b",
    re.IGNORECASE,
)
_PUNCT_TASK = re.compile(r"\b(?:punctuation|operator|delimiter|separator|mark)\b", re.I)
_SYMBOL_TASK = re.compile(r"\b(?:symbol|sign|notation|character|emoji|emoticon|operator)s?\b", re.I)
_ASCII_PUNCT = frozenset("!\"#$%&'()*+,-./:;<=>?@[\\]^_`{|}~\u2026\u2013\u2014")
# Master-key fragments of scripts written without spaces ("let's think step by step", ...).
_UNSPACED_KEYS = (
    "一步一步",
    "思考",
    "解题",
    "答案",
    "解答",
    "步骤",
    "解説",
    "かいせつ",
    "答え",
    "考え",
    "정답",
    "풀이",
)
_GENERIC_ASKED = re.compile(r"\b(?:answer|solution|explanation|step|think|thought|reason)", re.I)
_VERDICT_WORDS = frozenset(
    {"correct", "right", "accurate", "valid", "verified", "true", "perfect", "excellent"}
    | {"complete", "completed", "done", "pass", "passed", "solved"}
)
_YES_NO = re.compile(
    r"^\s*(?:is|are|was|were|does|do|did|can|could|will|would|should|has|have)\b|\b(?:true\s+or\s+"
    r"false|yes\s+or\s+no|correct\s+or\s+(?:not|incorrect)|right\s+or\s+wrong|verify|check\s+whether"
    r"|whether|is\s+it|are\s+they|valid\s+or)\b",
    re.IGNORECASE | re.MULTILINE,
)
_TOKEN = re.compile(r"[^\W_]+(?:['\u2019][^\W_]+)?", re.UNICODE)


def _scripts(text: str) -> set[str]:
    out = set()
    for char in text:
        if char.isalpha():
            name = unicodedata.name(char, "")
            out.add(name.split(" ")[0] if name else "?")
    return out


class NonAnswerDetector:
    """Empty, punctuation-only, label-only and preamble-only answers; foreign lone tokens."""

    name = "non_answer"

    def detect(self, sample: Sample, evidence: Evidence) -> list[Finding]:
        view = view_of(sample)
        return shared(view, self.name, evidence, lambda: self._detect(view, sample, evidence))

    def _detect(self, view: View, sample: Sample, evidence: Evidence) -> list[Finding]:
        if view.is_trajectory:
            return []
        answer = view.answer if not isinstance(sample.completion, str) else sample.completion
        prompt = view.prompt
        finding = self._classify(answer, prompt)
        if finding is None or finding.severity == "info":
            return [finding] if finding else []
        scores = [v.score for v in evidence.verdicts if v.ok and v.score is not None]
        if scores and sum(scores) / len(scores) >= 0.7:
            mean = sum(scores) / len(scores)
            finding = finding.model_copy(
                update={"evidence": f"{finding.evidence}; the judges still scored it {mean:.2f}"}
            )
        return [finding]

    def _classify(self, answer: str, prompt: str) -> Finding | None:
        stripped = answer.strip()
        quoted = f"`{one_line(stripped, 60)}`" if stripped else "(blank)"
        if not stripped:
            return make(
                self.name,
                "non_answer",
                "high",
                f"answer line 1: {quoted}: the answer is empty or whitespace only",
            )
        if len(stripped) > 800:  # no master key, and too long to be a bare refusal
            return None
        tokens = _TOKEN.findall(stripped)
        if not tokens:
            plain = all(c in _ASCII_PUNCT or c.isspace() for c in stripped)
            asked = _PUNCT_TASK if plain else _SYMBOL_TASK  # "." answers no "symbol for gold"
            if len(stripped) <= 3 and asked.search(prompt):
                return None
            return make(
                self.name,
                "non_answer",
                "high",
                f"answer line 1: {quoted}: punctuation or symbols only, no content",
            )
        if _REFUSAL.match(stripped) and len(tokens) <= 80:
            if _ASKS_REFUSAL.search(prompt):
                return None
            return make(self.name, "refusal", "info", f"answer line 1: {quoted}: declines the task")
        numbered = re.sub(r"\b(?:step|part|phase)\s+\d+\b", "step", stripped, flags=re.IGNORECASE)
        if len(tokens) > 20 or re.search(r"\d", numbered):
            return None
        lower = [t.lower().replace("\u2019", "'") for t in _TOKEN.findall(numbered)]
        if _echoes_prompt(stripped, prompt):
            return None
        if all(t in _GENERIC for t in lower):
            kind = "foreign_master_key" if any(t in _FOREIGN_KEYS for t in lower) else "non_answer"
            return make(
                self.name,
                kind,
                "high",
                f"answer line 1: {quoted}: a preamble or label with no answer after it",
            )
        verdict = [t for t in lower if t in _VERDICT_WORDS]
        rest = all(t in _GENERIC or t in _VERDICT_WORDS for t in lower)
        if verdict and rest and len(lower) <= 8 and not _YES_NO.search(prompt):
            return make(
                self.name,
                "self_verdict",
                "high",
                f"answer line 1: {quoted}: a verdict on itself instead of an answer",
            )
        if len(tokens) == 1 and prompt.strip():
            foreign = _scripts(stripped) - _scripts(prompt) - {"LATIN"}
            key = any(map(stripped.__contains__, _UNSPACED_KEYS)) and not _GENERIC_ASKED.search(
                prompt
            )
            if foreign and (key or not _LANGUAGE_TASK.search(prompt)):
                return make(
                    self.name,
                    "foreign_master_key",
                    "high",
                    f"answer line 1: {quoted}: a lone word in another script "
                    f"({', '.join(sorted(foreign)).lower()}) answers an unrelated task",
                )
        return None


def _echoes_prompt(answer: str, prompt: str) -> bool:
    """The task asked for exactly this text ("reply with 'OK'")."""
    core = answer.strip(" .:!*#\"'").lower()
    if not core:
        return False
    lowered = prompt.lower()
    return bool(
        re.search(
            rf"(?:['\"\u201c\u2018`]{re.escape(core)}[.!]?['\"\u201d\u2019`]"
            rf"|\b(?:say|reply|respond|answer|output|write|print"
            rf"|return)\s+(?:with\s+)?(?:only\s+|just\s+)?(?:the\s+word\s+)?{re.escape(core)}\b)",
            lowered,
        )
    )
