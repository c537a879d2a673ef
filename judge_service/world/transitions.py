"""(b) Writes: which entities a write changes, how, and what it answers.

Each successful traced write is compared with the states seen after it
(:mod:`judge_service.world.observe`). An entity it changed is *bound* to the call: by an
argument holding its id (``order_id=<args.order_id>``), or by a field of the first bound
entity (``user_id=<the order's user_id>``: a refund reaching the customer's balance). Each
binding's changes are learned over every example where the entity was seen after the call,
changed or not (:mod:`judge_service.world.learn_ops`). The answer is the changed entity when
the tool always showed it, else a template of the arguments when one fits every call.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Mapping, Sequence
from typing import Any

from judge_service.traces.entities import canonical
from judge_service.world.learn_ops import Example, learn_ops
from judge_service.world.lookup import Ctx, Index, argument_values
from judge_service.world.model import NEW_ID, Binding, Effect, Transition
from judge_service.world.observe import Step
from judge_service.world.text import as_text, parts_of
from judge_service.world.values import MISSING, get_path

#: Created ids kept as the shape of new ones.
NEW_IDS = 5


def bound_key(binding: Binding, args: Mapping[str, Any], first: Any = MISSING) -> str | None:
    """The entity key a binding names for these arguments (and the first entity's state)."""
    value = args.get(binding.arg, MISSING) if binding.arg else get_path(first, binding.via or [])
    if value is MISSING or isinstance(value, dict | list) or value is None:
        return None
    return f"{binding.entity}={as_text(value)}"


def created_id(step: Step) -> Any:
    """The id of the entity a write created: the first its answer shows, when the state
    before it lacked that entity and no argument holds its id (else ``MISSING``)."""
    if step.call.error or not step.shown:
        return MISSING
    key, state = step.shown[0]
    text = key.split("=", 1)[1]
    if key in step.pre or text in argument_values(step.call.arguments):
        return MISSING
    values = state.values() if isinstance(state, dict) else []
    return next((v for v in values if not isinstance(v, dict | list) and as_text(v) == text), text)


def call_args(step: Step) -> dict[str, Any]:
    """The call's arguments, and the id of the entity it created as :data:`NEW_ID`."""
    made = created_id(step)
    args = dict(step.call.arguments)
    return args if made is MISSING else {**args, NEW_ID: made}


def _arg_bindings(key: str, args: Mapping[str, Any]) -> list[Binding]:
    entity, value = key.split("=", 1)
    names = [n for n, v in args.items() if not isinstance(v, dict | list) and as_text(v) == value]
    names.sort(key=lambda n: n != entity)
    return [Binding(entity=entity, arg=n) for n in names]


def _via_bindings(key: str, first: Any) -> list[Binding]:
    entity, value = key.split("=", 1)
    if not isinstance(first, dict):
        return []
    return [
        Binding(entity=entity, via=[name])
        for name, item in first.items()
        if not isinstance(item, dict | list) and item is not None and as_text(item) == value
    ]


#: A successful traced call and its arguments (:func:`call_args`).
Called = tuple[Step, dict[str, Any]]


def _primary(ok: Sequence[Called]) -> Binding | None:
    """The binding of the entity the answers show (else of the first one changed), by the
    most examples: the entity the call is about."""
    votes: Counter[str] = Counter()
    found: dict[str, Binding] = {}
    for step, args in ok:
        keys = [k for k, _ in step.shown[:1]] or list(step.changed)
        for key in keys[:1]:
            for binding in _arg_bindings(key, args)[:1]:
                votes[binding.model_dump_json()] += 1
                found[binding.model_dump_json()] = binding
    if not votes:
        return None
    return found[votes.most_common(1)[0][0]]


def _others(ok: Sequence[Called], primary: Binding) -> tuple[list[Binding], int]:
    """Bindings for the other entities the writes changed, and how many stayed unbound."""
    found: dict[str, Binding] = {}
    unbound = 0
    for step, args in ok:
        first_key = bound_key(primary, args)
        first = _first(step, first_key)
        for key in step.changed:
            if key == first_key:
                continue
            choices = _arg_bindings(key, args) or _via_bindings(key, first)
            if not choices:
                unbound += 1
            for binding in choices[:1]:
                found.setdefault(binding.model_dump_json(), binding)
    return list(found.values()), unbound


def _first(step: Step, first_key: str | None) -> Any:
    """The first effect's entity, which ``via`` bindings read: as it was before the call,
    or as the call created it."""
    if first_key is None:
        return MISSING
    return step.pre.get(first_key, step.after.get(first_key, MISSING))


def _effect(binding: Binding, primary: Binding, ok: Sequence[Called], index: Index) -> Effect:
    examples, changed, created = [], 0, 0
    for step, args in ok:
        first_key = bound_key(primary, args)
        first = _first(step, first_key)
        key = bound_key(binding, args, first)
        if key is None or key not in step.after:
            continue
        if binding != primary and step.stale(key):
            continue  # an earlier write may have changed it unseen: its change is not this one's
        before = step.pre.get(key, {} if binding.arg == NEW_ID else MISSING)
        if before is MISSING:
            created += 1
            continue
        changed += key in step.changed
        ctx = Ctx(args, before, step.pre, index=index)
        examples.append(Example(before, step.after[key], ctx))
    learned = learn_ops(examples)
    unexplained = learned.unexplained + ([f"creates {binding.entity}"] if created else [])
    return Effect(
        binding=binding,
        ops=learned.ops,
        unexplained=unexplained,
        clock=learned.clock,
        examples=len(examples),
        changed=changed,
        rejected=learned.rejected,
    )


def learn_transition(steps: Sequence[Step]) -> Transition | None:
    """The write's learned effects and answer (``None`` when no call of it succeeded)."""
    ok = [(s, call_args(s)) for s in steps if not s.call.error and s.call.answer is not None]
    primary = _primary(ok)
    if primary is None:
        return None
    others, unbound = _others(ok, primary)
    index = Index()
    effects = [_effect(b, primary, ok, index) for b in [primary, *others]]
    made = [args[NEW_ID] for _, args in ok if NEW_ID in args]
    news = list(dict.fromkeys(made))[:NEW_IDS] if primary.arg == NEW_ID else []
    transition = Transition(effects=effects, unbound=unbound, new_ids=news)
    if all([k for k, _ in s.shown[:1]] == [bound_key(primary, args)] for s, args in ok):
        return transition.model_copy(update={"answer": "entity"})
    texts = {canonical(parts_of(s.call.answer or "", s.call.arguments)) for s, _ in ok}
    if len(texts) == 1:
        first = ok[0][0].call
        parts = parts_of(first.answer or "", first.arguments)
        return transition.model_copy(update={"answer": "template", "template": parts})
    return transition
