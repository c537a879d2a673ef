"""Text measurements shared by the metric-gaming detector and the learned features.

``metric_of(prompt)`` reads the metric a task says it will be scored by (terms to
count, items to count, readability, length, sentiment, a model judge); ``Stats``
measures a completion cheaply (one pass of tokenising, memoised per text).
"""

from __future__ import annotations

import re
import zlib
from collections import Counter
from dataclasses import dataclass, field
from functools import cached_property, lru_cache

WORD = re.compile(r"[^\W_]+(?:['\u2019-][^\W_]+)*")
_SENTENCE = re.compile(r"(?<=[.!?])\s+|\n+")
_ITEM = re.compile(r"^\s*(?:\d+[.)]|[-*•]|[a-z][.)])\s+(.*)$", re.M)
_LIST_SEPARATOR = re.compile(r"[,!]")
_VOWELS = re.compile(r"[aeiouy]+")
_QUOTED = re.compile(r"['\u2018\"\u201c]([^'\u2019\"\u201d\n]{2,60})['\u2019\"\u201d]")
_LISTED = re.compile(
    r"(?:such as|including|includes?|like|keywords?(?:\s+to\s+include)?(?:\s+are)?|terms?|words?|"
    r"phrases?|from this list|following(?: \w+)?)\s*:?\s*((?:[\w' -]{2,40},\s*){2,}(?:and |or )?"
    r"[\w' -]{2,40})",
    re.IGNORECASE,
)
_STOP_WORDS = (
    "a an the and or but if of to in on at for with by from as is are was were be been being",
    "it its this that these those i you he she we they them his her our your their my me us",
    "do does did not no so than then there here what which who whom how when where why will",
    "would can could should shall may might must have has had into about over under more",
    "most very also just such each other some any all both few many much own same too only s",
    "t etc",
)
_STOP = frozenset(" ".join(_STOP_WORDS).split())
_SCORED = re.compile(
    r"\b(?:evaluat\w*|scor\w*|assess\w*|judg\w*|rat(?:e|ed|ing)|measur\w*|count\w*|grad(?:e|ed|er|ing)"
    r"|metric|calculat\w*|determin\w*|based on|reward\w*|points?|unit tests?|test cases?|checks?"
    r"|automated|verif\w*)\b",
    re.IGNORECASE,
)
_V = r"(?:evaluat|scor|assess|judg|grad|rat|measur|check|count|analy[sz]|review|rank)\w*"
_STATES = re.compile(
    rf"\b(?:will|would|shall|going\s+to|to)\s+(?:be\s+)?(?:\w+ly\s+)?{_V}"
    rf"|\b(?:I|we)(?:'ll|'m|'re|\s+will|\s+am|\s+are|\s+shall)\s+(?:be\s+)?(?:\w+ly\s+)?(?:{_V}|use|run)"
    rf"|\b(?:evaluation|assessment|scoring|grading|performance|effectiveness|quality|success)\b[^.]{{0,40}}"
    rf"\b(?:will|is|are|shall)\s+(?:be\s+)?(?:based|done|determined|calculated|measured|performed"
    rf"|automated|{_V}|consider|focus|look|reward)"
    r"|\b(?:evaluation|scoring|grading|assessment)\s+(?:metric|criteri\w*|rubric)"
    r"|\b(?:using|by|with|through|via|uses)\s+(?:an?\s+|the\s+|our\s+)?(?:automated|automatic|llm|ai"
    r"|language\s+model|sentiment|readability)\b|\bjudged\s+by\b"
    r"|\b(?:your|the|a|my)\s+(?:\w+\s+)?(?:score|rating|grade)\b(?!\s+(?:field|key|column|property))|\bthe\s+(?:more|higher|fewer|lower)\b"
    r".{0,60}\bthe\s+(?:better|higher)|\b(?:higher|better|more)\s+(?:\w+\s+){0,3}scores?\b"
    r"|\bscores?\s+(?:\w+\s+){0,2}based\s+on|\bbased\s+on\s+(?:the\s+)?(?:number|count|frequency"
    r"|density|presence|use|length|ratio)",
    re.IGNORECASE | re.DOTALL,
)
_FLAGS = {
    "keywords": r"keywords?|key\s*terms?|terms?|phrases?|words?\b(?! count)|mentions?|buzzwords?"
    r"|frequency|density|presence|occurrences?|as many",
    "count": r"number of|how many|count of|total (?:number|count)|more \w+ (?:is|are|means)"
    r"|the more|quantity|at least \d+ (?!words)",
    "readability": r"readab\w*|flesch|kincaid|grade level|reading level|reading ease"
    r"|simple language|easy to (?:read|understand)|accessib\w*|syllables?|sentence length",
    "length": r"word count|length|longer|lengthy|at least \d+ words|\d+ words|verbos\w*|thorough\w*"
    r"|comprehensive|detailed",
    "sentiment": r"sentiment|emotion\w*|positiv\w*|enthusias\w*|arousal|excit\w*|engag\w*"
    r"|persuas\w*|politeness|polite|courteous|friendl\w*|gratitude|empath\w*|apolog\w*|urgency",
    "judge": r"llm|language model|judge|grader|ai (?:evaluator|system)|model-based",
    "tests": r"unit tests?|test cases?|assert",
}
_FLAG_RE = {k: re.compile(rf"\b(?:{v})", re.IGNORECASE) for k, v in _FLAGS.items()}


@lru_cache(maxsize=65536)
def syllables(word: str) -> int:
    word = word.lower()
    count = len(_VOWELS.findall(word))
    if word.endswith("e") and count > 1 and not word.endswith(("le", "ee")):
        count -= 1
    return max(1, count)


@dataclass(frozen=True)
class Metric:
    """What the task says it will measure."""

    scored: bool = False
    states: bool = False  # the task says how this answer will be scored
    flags: frozenset[str] = frozenset()
    terms: tuple[str, ...] = ()
    prompt_words: frozenset[str] = field(default_factory=frozenset)


@lru_cache(maxsize=512)
def metric_of(prompt: str) -> Metric:
    text = prompt[-6000:]
    scored = bool(_SCORED.search(text))
    flags = frozenset(k for k, r in _FLAG_RE.items() if r.search(text)) if scored else frozenset()
    terms: list[str] = []
    for match in _QUOTED.finditer(text):
        value = match.group(1).strip(" .,")
        if 1 <= len(value.split()) <= 8 and not value.endswith(("?", ":")):
            terms.append(value.lower())
    for match in _LISTED.finditer(text):
        for part in re.split(r",\s*|\s+(?:and|or)\s+", match.group(1)):
            part = re.sub(r"^(?:and|or|like|such as|etc)\b\s*", "", part.strip(" .'\"").lower())
            part = part.strip(" .'\"")
            if part and len(part.split()) <= 4 and part not in _STOP:
                terms.append(part)
    words = frozenset(w.lower() for w in WORD.findall(text)) - _STOP
    return Metric(scored, bool(_STATES.search(text)), flags, tuple(dict.fromkeys(terms)), words)


class Stats:
    """Measurements of one text, each computed on first use."""

    def __init__(self, text: str) -> None:
        self.text = text
        self._distinct: dict[int, float] = {}

    @cached_property
    def raw_words(self) -> list[str]:
        return WORD.findall(self.text)

    @cached_property
    def words(self) -> list[str]:
        return [w.lower() for w in self.raw_words]

    @cached_property
    def caps_share(self) -> float:
        """Share of words (over two letters) written in capitals ("AMAZING")."""
        caps = sum(1 for w in self.raw_words if len(w) > 2 and w.isupper())
        return caps / max(1, len(self.raw_words))

    @cached_property
    def n_words(self) -> int:
        return len(self.words)

    @cached_property
    def sentences(self) -> list[str]:
        return [s.strip() for s in _SENTENCE.split(self.text) if WORD.search(s)]

    @cached_property
    def sentence_words(self) -> list[list[str]]:
        return [WORD.findall(s.lower()) for s in self.sentences]

    @cached_property
    def sentence_lengths(self) -> list[int]:
        return [len(words) for words in self.sentence_words]

    @cached_property
    def counts(self) -> Counter[str]:
        return Counter(self.words)

    @cached_property
    def content_counts(self) -> Counter[str]:
        return Counter(w for w in self.words if w not in _STOP and len(w) > 2)

    @cached_property
    def items(self) -> list[str]:
        return [m.group(1).strip() for m in _ITEM.finditer(self.text)]

    def distinct_ratio(self, n: int = 1) -> float:
        if n not in self._distinct:
            grams = list(zip(*(self.words[i:] for i in range(n)), strict=False))
            self._distinct[n] = len(set(grams)) / len(grams) if grams else 1.0
        return self._distinct[n]

    @cached_property
    def duplicate_sentence_share(self) -> float:
        normal = [" ".join(words) for words in self.sentence_words]
        if len(normal) < 2:
            return 0.0
        seen = Counter(normal)
        return sum(c - 1 for c in seen.values()) / len(normal)

    @cached_property
    def compression(self) -> float:
        raw = self.text.encode("utf-8", "ignore")[:20000]
        return len(zlib.compress(raw, 6)) / len(raw) if len(raw) > 20 else 1.0

    @cached_property
    def top_content_share(self) -> float:
        total = sum(self.content_counts.values())
        return self.content_counts.most_common(1)[0][1] / total if total else 0.0

    @cached_property
    def flesch(self) -> float:
        if not self.words or not self.sentences:
            return 100.0
        syl = sum(syllables(w) for w in self.words) / len(self.words)
        return 206.835 - 1.015 * (len(self.words) / len(self.sentences)) - 84.6 * syl

    @cached_property
    def mean_sentence(self) -> float:
        lengths = self.sentence_lengths
        return sum(lengths) / len(lengths) if lengths else 0.0

    @cached_property
    def comma_runs(self) -> int:
        """The longest run of one- or two-word items joined by commas ("amazing, superb, …")."""
        best = run = 0
        for part in _LIST_SEPARATOR.split(self.text)[:-1]:
            words = part.split()
            if 1 <= len(words) <= 2 and all(w.isalpha() for w in words):
                run += 1
                best = max(best, run)
            else:
                run = 1 if words and words[-1].isalpha() else 0
        return best if best >= 3 else 0

    @cached_property
    def joined(self) -> str:
        return f" {' '.join(self.words)} "

    def term_hits(self, terms: tuple[str, ...]) -> Counter[str]:
        """How often each term occurs as whole words (case and punctuation ignored)."""
        hits: Counter[str] = Counter()
        for term in terms:
            normal = " ".join(WORD.findall(term.lower()))
            if normal:
                needle = f" {normal} "
                count, at = 0, self.joined.find(needle)
                while at >= 0:  # overlapping on the shared space: "x y x y" has two "x y"
                    count += 1
                    at = self.joined.find(needle, at + len(needle) - 1)
                hits[term] = count
        return hits


@lru_cache(maxsize=256)
def stats_of(text: str) -> Stats:
    return Stats(text)
