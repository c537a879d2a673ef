"""Which traced user turn answers the agent's message: by what it asks, not by turn order.

A replayed user that says its traced turns in order answers the wrong question as soon as an
agent asks in another order than the traced one did: a name and zip to "why do you want to
return it?", or "yes, please proceed" to a proposal never made, and it ends the conversation
by count while the agent is still working. A policy could learn to farm that consent. So the
agent's last message is read for what it does (:func:`act_of`):

- it **proposes** an action and asks for a decision: the user gives a traced decision (a
  turn that opens with a yes or a no), the one given to the proposal most like this one. A
  proposal that also asks for something (a request, or a question that proposes nothing)
  whose words label a fact the user has not given yet gets that fact first: nothing is
  agreed to before the agent has what it asked for;
- it **asks** for something, or says it is **working** on it: the user gives the traced turn
  that answered the most similar question (unused turns first, in trace order on a tie), and
  never a decision. A turn whose facts (a word with a digit, an e-mail address) are labelled
  by words the message holds ("my zip code is 46236" to "your name and zip code") counts
  more: a question is matched to the fact it asks for, not only to the words around it. A
  question that the closing turn answers best, once the user has no request left and
  nothing unsaid that relates to it, ends it with that turn only when it offers more help
  and asks for nothing else ("anything else?"), as the question the traced user closed on
  did: "Which order should I cancel?" never ends it, however like the traced agent's last
  words. A closing turn that holds a fact ("Thanks, that's all; my e-mail is ada@x.org")
  answers a question like any other turn, without ending;
- it **reports** (no question, no work announced): the user goes on with its next unused
  request (a traced turn that followed a report, not a question), else with what else it has
  not said yet, in trace order; with nothing left, it says its closing turn and ends, as the
  traced user did once its goal was met or refused (a closing turn that opens with a yes ends
  it without words: nothing was proposed to agree to).

The user never ends while the agent asks, proposes or works. The rules read English phrasing
only (questions, proposals, agreement); none names a tool, a field or an id of any domain.
"""

from __future__ import annotations

import functools
from collections import Counter
from collections.abc import Mapping, Sequence

from judge_service.episodes.agent_acts import (
    READ_CHARS,
    act_of,
    asks_too,
    beside_yes,
    consents,
    is_decision,
    only_offers,
    spoken,
)
from judge_service.episodes.user_facts import FACT, fact_labels, requested_words
from judge_service.episodes.user_turns import closest, similarities


def unused(turns: Sequence[str], given: Sequence[str]) -> list[bool]:
    """For each traced turn, whether the episode has not said it yet (said turns are matched
    by their text, or by what a yes said beside it, each saying used once, earliest turn
    first)."""
    left = Counter(given)
    flags = []
    for turn in turns:
        said = next((t for t in (turn, beside_yes(turn)) if t and left[t] > 0), None)
        if said is not None:
            left[said] -= 1
        flags.append(said is None)
    return flags


#: How much more like the question a said turn must be to be said again before an unsaid one.
FRESH_BONUS = 0.15


def _weight(index: int, scores: list[float], fresh: list[bool]) -> float:
    """How well turn ``index`` answers: its likeness to the question, a turn not yet said
    counting ``FRESH_BONUS`` more (an agent that asks again gets the same answer again)."""
    return scores[index] + FRESH_BONUS * fresh[index]


def _best(candidates: list[int], scores: list[float], fresh: list[bool]) -> int | None:
    """The candidate of the highest :func:`_weight`; the earliest on a tie."""
    if not candidates:
        return None
    return min(candidates, key=lambda i: (-_weight(i, scores, fresh), i))


#: How much more a turn counts, at most, when the words labelling its facts are the agent's
#: (the share of its labels the message holds, times this).
LABEL_BONUS = 0.3


def _say(turns: Sequence[str], chosen: int | None) -> tuple[str, bool]:
    """The chosen turn, not ending; the opening restated when none fits."""
    return (turns[chosen] if chosen is not None else turns[0]), False


def answer(
    turns: Sequence[str],
    exchanges: Sequence[Mapping[str, str]],
    given: Sequence[str],
    asked: str,
    *,
    ends: bool,
) -> tuple[str, bool]:
    """The traced turn that answers ``asked`` (the agent's last text), and whether it ends the
    conversation. ``turns[0]`` is the opening (said already); ``ends``: the last turn ended
    the traced conversation; ``given``: the user's turns said so far (module docstring)."""
    asked = spoken(asked)
    if len(turns) < 2:  # the opening was all the traced user said
        act = act_of(asked)
        if act == "reports" and ends:
            return "", True
        return (turns[0] if turns else ""), False
    closing = len(turns) - 1 if ends else None
    # the opening is a fact like the others once said (an agent may ask for what it held)
    middle = [i for i in range(len(turns)) if i != closing]
    fresh = unused(turns, given)
    documents = [
        f"{exchanges[i].get('asked', '')} {turns[i]}" if i < len(exchanges) else turns[i]
        for i in range(len(turns))
    ]
    scores = similarities(documents, asked[-READ_CHARS:])
    wanted = requested_words(asked, READ_CHARS)
    labels = [fact_labels(turn) for turn in turns] if wanted else []
    if wanted:
        scores = [
            score + LABEL_BONUS * len(mine & wanted) / (1 + len(mine))
            for score, mine in zip(scores, labels, strict=True)
        ]
    act = act_of(asked)
    decisions = [i for i in middle if is_decision(turns[i])]
    facts = [i for i in middle if i not in decisions]
    fresh_requests = [i for i in facts if fresh[i] and _initiated(exchanges, i)]
    if act == "proposes" and wanted and asks_too(asked):
        # a proposal that also asks for facts the user has not given ("your name and zip,
        # then I'll summarise for your confirmation") gets the facts first: nothing can be
        # agreed to before they are known
        labelled = [i for i in facts if fresh[i] and labels[i] & wanted]
        if labelled:
            return _say(turns, _best(labelled, scores, fresh))
    if act == "proposes":
        chosen = _best(decisions, scores, fresh)
        return _say(turns, chosen if chosen is not None else _best(facts, scores, fresh))
    if act in ("asks", "works"):
        if act == "asks" and closing is not None and not fresh_requests:
            # a question the closing turn answers best ("anything else?"): nothing the user
            # has left relates to it more, so it ends as the traced user did
            best = max((_weight(i, scores, fresh) for i in facts), default=0.0)
            related = any(fresh[i] and scores[i] > 0.0 for i in facts)
            # (never a closing yes said as silence: the user does not leave while asked)
            silent = consents(turns[closing])
            if (
                scores[closing] > 0.0
                and scores[closing] >= best
                and not related
                and not silent
                and _answers_offer(exchanges, len(turns), closing, asked)
            ):
                return _closing(turns[closing])
        asides = {i: rest for i in decisions if (rest := beside_yes(turns[i]))}
        pool = [*facts, *asides]
        if closing is not None and FACT.search(turns[closing]) and not is_decision(turns[closing]):
            pool.append(closing)  # its facts answer; said to a question, it does not end
        chosen = _best(pool, scores, fresh)
        if chosen in asides:
            return asides[chosen], False
        return _say(turns, chosen)
    if fresh_requests:
        return turns[fresh_requests[0]], False
    fresh_facts = [i for i in facts if fresh[i]]
    if fresh_facts:  # what the traced user still had to say: the agent may need it yet
        return turns[fresh_facts[0]], False
    if closing is not None:
        return _closing(turns[closing])
    return _say(turns, _best(facts, scores, fresh))


def _answers_offer(
    exchanges: Sequence[Mapping[str, str]], count: int, closing: int, asked: str
) -> bool:
    """Whether ``asked`` is the question the traced closing turn answered: it offers more help
    and asks for nothing else (:func:`only_offers`), and of the traced agent's messages it is
    most like the one the closing turn answered. "Which order should I cancel?" shares words
    with "Your order is cancelled. Anything else?", but it still asks for something."""
    if not only_offers(asked):
        return False
    traced = [e.get("asked", "") for e in exchanges[:count]]
    return closing < len(traced) and closest(traced, asked[-READ_CHARS:]) == closing


def _closing(turn: str) -> tuple[str, bool]:
    """The closing turn, ending; without its words when they agree to what nothing
    proposed here ("Yes, please submit it" after a report): the user leaves, consenting to
    nothing."""
    return ("" if consents(turn) else turn), True


#: :func:`act_of` of the traced agent's words, read once per process: they are the same at
#: every step of every episode of a task, and a step would read them all again.
_traced_act = functools.lru_cache(maxsize=4096)(act_of)


def _initiated(exchanges: Sequence[Mapping[str, str]], index: int) -> bool:
    """Whether the traced user said turn ``index`` of its own accord: after a report, not
    in answer to a question or a proposal."""
    return index < len(exchanges) and _traced_act(exchanges[index].get("asked", "")) == "reports"
