"""ECHO: the policy also learns to predict its environment, from the tokens of its own episodes.

ECHO (Environment Cross-entropy Hybrid Objective) adds, beside GRPO's policy gradient on the
agent's tokens, the mean token cross-entropy of the environment's tokens in the same rollouts::

    L = GRPO(action tokens) + echo_coef * CE(environment tokens)

Why: RL refines skills but takes in little dense knowledge of the world (what a tool answers,
how a user replies); the environment's tokens are already in the rollout, and their
log-probabilities come out of the same forward pass, so the extra signal costs almost nothing.

Here every completion token gets exactly one label:

- ``action``: the model generated it (TRL's ``tool_mask`` is 1): policy gradient only;
- ``world``: a tool answer's words, answered from the traces (paths a-d, or a rejected call);
- ``user``: the simulated user's reply (the ``reply_to_user`` tool's answer);
- ``simulated``: a tool answer that only a model could give (path e): a simulator's guess,
  left out of the cross-entropy unless asked for, so the policy does not learn it as a fact;
- ``ignored``: the chat template's own tokens around the answers, the adapter's words (the
  "conversation has ended" note), TRL's tool errors, and padding.

The labels are found from text, not guessed from token ids: the environment records which
characters of each tool answer are whose (:class:`Said`), and the template's rendering of the
tool turn, tokenized with offsets, says which characters each token covers. A token lies
inside one answer part or it is ``ignored``. The tensor code here imports torch only when
called.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

IGNORED, ACTION, WORLD, USER, SIMULATED = "ignored", "action", "world", "user", "simulated"
#: Every label, its index its code in a label tensor.
LABELS = (IGNORED, ACTION, WORLD, USER, SIMULATED)
CODE = {label: code for code, label in enumerate(LABELS)}
#: The labels ECHO may learn from, by the names ``echo_on`` takes.
ENVIRONMENT = (WORLD, USER, SIMULATED)
#: How the parts of one tool answer are joined (the adapter's ``_text``).
SEPARATOR = "\n\n"

#: ``(text, label)`` of a part of what a tool method returned.
Part = tuple[str, str]
#: The suffix tokens' character spans in a rendering of the tool turn, or ``None``.
OffsetsOf = Callable[[list[dict[str, Any]], list[int]], "tuple[str, list[tuple[int, int]]] | None"]


@dataclass(frozen=True)
class Piece:
    """Characters ``[start, end)`` of a tool answer, and whose they are."""

    start: int
    end: int
    label: str


@dataclass(frozen=True)
class Said:
    """What an environment's tool method returned, and whose each part of it is."""

    text: str
    pieces: tuple[Piece, ...] = field(default=())


def label_of(source: Mapping[str, Any] | None, role: Any = None) -> str:
    """The token label of a message from its service source (``episodes.wire.MessageSource``);
    without one (an older service), from its role."""
    kind = source.get("source") if isinstance(source, Mapping) else None
    if kind is None:
        kind = {"tool": "world", "user": "user"}.get(str(role))
    if kind == "world":
        simulated = isinstance(source, Mapping) and source.get("path") == "model_needed"
        return SIMULATED if simulated else WORLD
    return USER if kind == "user" else IGNORED


def said(parts: Iterable[Part]) -> Said:
    """The text the adapter returns (the parts' texts joined by :data:`SEPARATOR`, empty ones
    left out) and the pieces of it each part is."""
    text, pieces = "", []
    for words, label in parts:
        if not words:
            continue
        if text:
            text += SEPARATOR
        pieces.append(Piece(len(text), len(text) + len(words), label))
        text += words
    return Said(text, tuple(p for p in pieces if p.label != IGNORED))


def runs(tool_mask: Sequence[int]) -> list[tuple[int, int]]:
    """``[start, end)`` of each run of zeros in a rollout's ``tool_mask``: one tool turn each."""
    found, start = [], None
    for index, value in enumerate([*tool_mask, 1]):
        if not value and start is None:
            start = index
        elif value and start is not None:
            found.append((start, index))
            start = None
    return found


def tool_turns(messages: Sequence[Mapping[str, Any]]) -> list[list[dict[str, Any]]]:
    """The completion's tool messages, grouped by the assistant message that called them."""
    turns: list[list[dict[str, Any]]] = []
    previous = None
    for message in messages:
        role = message.get("role")
        if role == "tool":
            if previous != "tool":
                turns.append([])
            turns[-1].append(dict(message))
        previous = role
    return turns


def matched(messages: Sequence[Mapping[str, Any]], records: Sequence[Said]) -> list[Said | None]:
    """Each tool message's record, in order: the next record whose text it is. A message no
    record gave (TRL's own error for a call that never reached the environment) has none."""
    found: list[Said | None] = []
    cursor = 0
    for message in messages:
        content = message.get("content")
        if cursor < len(records) and content == records[cursor].text:
            found.append(records[cursor])
            cursor += 1
        else:
            found.append(None)
    return found


def suffix_labels(
    rendered: str,
    offsets: Sequence[tuple[int, int]],
    messages: Sequence[Mapping[str, Any]],
    records: Sequence[Said | None],
) -> list[str]:
    """The labels of one tool turn's tokens: ``offsets`` are their character spans in
    ``rendered``, the template's text of ``messages``. A token inside a piece of an answer
    gets the piece's label; any other (the template's, or one that straddles) is ignored."""
    spans: list[tuple[int, int, str]] = []
    cursor = min((start for start, _ in offsets), default=0)
    for message, record in zip(messages, records, strict=True):
        content = message.get("content")
        at = rendered.find(content, cursor) if isinstance(content, str) and content else -1
        if at < 0:
            continue
        cursor = at + len(content)
        if record is not None:
            spans.extend((at + p.start, at + p.end, p.label) for p in record.pieces)
    labels = []
    for start, end in offsets:
        inside = [label for a, b, label in spans if a <= start < end <= b]
        labels.append(inside[0] if inside else IGNORED)
    return labels


def offsets_in(tokenizer: Any, rendered: str, ids: Sequence[int]) -> list[tuple[int, int]] | None:
    """The character spans of ``ids`` where they occur last in ``rendered`` tokenized (with
    offsets, as a fast tokenizer gives them); ``None`` when they do not occur there."""
    encoded = tokenizer(rendered, add_special_tokens=False, return_offsets_mapping=True)
    every, wanted, size = list(encoded["input_ids"]), list(ids), len(ids)
    for start in range(len(every) - size, -1, -1):
        if every[start : start + size] == wanted:
            return [(int(a), int(b)) for a, b in encoded["offset_mapping"][start : start + size]]
    return None


def rollout_labels(
    completion_ids: Sequence[int],
    tool_mask: Sequence[int] | None,
    messages: Sequence[Mapping[str, Any]],
    records: Sequence[Said],
    offsets_of: OffsetsOf,
) -> list[str]:
    """One label per completion token of a rollout (module docstring). ``messages``: the
    completion as TRL parsed it; ``records``: what the rollout's environment returned, in
    order; ``offsets_of(tool messages, their ids)``: the rendering and the ids' spans in it.
    A tool turn whose tokens cannot be matched to its text is ignored whole."""
    if tool_mask is None:
        return [ACTION] * len(completion_ids)
    labels = [ACTION if value else IGNORED for value in tool_mask]
    turns, spans = tool_turns(messages), runs(tool_mask)
    if len(turns) != len(spans):
        return labels
    given = iter(matched([m for turn in turns for m in turn], records))
    for (start, end), turn in zip(spans, turns, strict=True):
        records_of_turn = [next(given) for _ in turn]
        found = offsets_of(turn, list(completion_ids[start:end]))
        if found is not None:
            rendered, offsets = found
            labels[start:end] = suffix_labels(rendered, offsets, turn, records_of_turn)
    return labels


def codes(labels: Sequence[Sequence[str]], width: int) -> Any:
    """Rollouts' labels as a ``(rollouts, width)`` long tensor of :data:`CODE`, padded with
    ``ignored``."""
    import torch

    table = torch.full((len(labels), width), CODE[IGNORED], dtype=torch.long)
    for row, rollout in enumerate(labels):
        if rollout:
            values = [CODE[label] for label in rollout[:width]]
            table[row, : len(values)] = torch.tensor(values, dtype=torch.long)
    return table


def masks(label_codes: Any, valid: Any) -> dict[str, Any]:
    """One 0/1 float mask per label, of the tokens that are ``valid`` (the completion mask):
    disjoint, and their sum is ``valid``."""
    return {label: ((label_codes == code) & valid.bool()).float() for label, code in CODE.items()}


def cross_entropy(
    per_token_logps: Any, label_codes: Any, valid: Any, echo_on: Sequence[str]
) -> tuple[Any, dict[str, tuple[float, int]]]:
    """The mean token cross-entropy (nats) of the environment tokens ``echo_on`` labels,
    with its gradient (0 when there are none), and per environment label its mean and count."""
    on = set(echo_on)
    unknown = on - set(ENVIRONMENT)
    if unknown:
        raise ValueError(f"echo_on takes {ENVIRONMENT}, not {sorted(unknown)}")
    by_label = masks(label_codes, valid)
    stats: dict[str, tuple[float, int]] = {}
    for label in ENVIRONMENT:
        mask, count = by_label[label], int(by_label[label].sum().item())
        mean = float((-(per_token_logps.detach() * mask).sum() / max(count, 1)).item())
        stats[label] = (mean, count)
    chosen = sum((by_label[label] for label in on), start=per_token_logps.new_zeros(()))
    total = chosen.sum() if on else per_token_logps.new_zeros(())
    loss = -(per_token_logps * chosen).sum() / total.clamp(min=1.0)
    return loss, stats
