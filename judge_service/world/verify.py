"""Did a trajectory reach its task's end state? An LLM-free verdict from the world's state.

A trajectory's tool calls are answered in order by the world from the task's initial state,
the state carried through. The final state is then compared with the task's reference end
state in the forge's form (:mod:`judge_service.forge.end_states`): states, not call lists,
so runs that reach the same state through other calls or another order agree.

- ``type=id``: the entity, field by field (:mod:`judge_service.world.state_diff`). The forge
  and the world may key one object differently (the forge wants an id-named field), so the
  candidates are the world keys of the objects the trajectory's answers showed under that
  forge key, and the key itself; the closest one is compared. None: ``missing``.
- ``new:<tool>:<n>``: an entity the trajectory created (a key its start lacks), matched by
  its state without its fresh id.
- ``write:<tool>``: a blind write; the canonical arguments of the trajectory's successful
  calls of that tool whose id arguments name no reference entity, sorted, must be the same.
- An entity that a successful write was about (its answer showed it, else its id arguments
  name it), not in the reference, and changed from its start: ``unrequested``. Entities a
  write changes beside the one it is about (a refund reaching the customer's balance) are
  left out, as the forge leaves them out of the reference.

Beside a proposed reference, a task may name *even* candidates (``also``): end states that
traced runs reached whose evidence weighed as much as the reference's, so the forge marked
none of those runs failed. A trajectory that misses the reference but reaches one of them
is reached too, and its verdict names the runs it matched (``matched``): the forge could not
tell which was right, and a verdict that failed either would fail a run the forge did not.

A recorded trajectory (:func:`verify`) is replayed by :mod:`judge_service.world.trajectory`:
the entities only its answers show join its start, and where the world and the recording
disagree about a write, the recording says what the backend did. A write answered by
``model_needed`` (one whose recorded answer shows no entity, or an episode's) leaves its
effect unknown: the verdict is undetermined
(``reward`` None) unless it already fails for a reason that write cannot change: an
``unrequested`` change, or a difference in an entity that no such write names (only when
every such write names some entity: one that names none could have changed anything).
"""

from __future__ import annotations

from collections.abc import Collection, Mapping, Sequence
from typing import Any

from pydantic import BaseModel, Field

from judge_service.world.state_diff import changes, clock_fields, reference_diff
from judge_service.world.trajectory import is_write, replay, seeded
from judge_service.world.world import World

State = Mapping[str, Any]


class Verdict(BaseModel):
    """``reward`` 1.0 reached, 0.0 not, None undetermined (or no reference). ``diff``:
    ``{"entity", "field" (dotted, "" for the whole entity), "want", "got", "why"}``, ``why``
    one of ``missing`` (entity or field absent), ``differs``, ``unrequested``."""

    reward: float | None
    reached: bool | None
    diff: list[dict[str, Any]] = Field(default_factory=list)
    touched: list[str] = Field(default_factory=list)
    undetermined: list[str] = Field(default_factory=list)
    #: The reference was proposed by the forge, not agreed by runs nor chosen by a reviewer:
    #: the reward holds until a reviewer confirms or changes it.
    provisional: bool = False
    #: The runs whose end state (an even candidate, not the reference) it reached; empty when
    #: it reached the reference or did not reach any.
    matched: list[str] = Field(default_factory=list)


def end_state_verdict(
    world: World,
    start: State,
    final: State,
    touched: Collection[str],
    reference: Mapping[str, Any] | None,
    calls: Sequence[Mapping[str, Any]] = (),
    also: Sequence[Mapping[str, Any]] = (),
) -> Verdict:
    """The verdict on ``final`` (see the module docstring). ``touched``: the keys the
    trajectory's successful writes changed; ``calls``: its :func:`call_record` s (for key
    aliases, blind writes, what each write was about, and the writes answered by
    ``model_needed``; without them every touched key counts as one a write was about);
    ``also``: the even candidates, ``{"end_state", "traces"}``."""
    touched = list(dict.fromkeys(touched))
    calls = [{**c, "write": c.get("write", is_write(world, str(c.get("tool"))))} for c in calls]
    verdict = _against(world, start, final, touched, reference, calls)
    if verdict.reward != 0.0:
        return verdict
    for candidate in also:
        other = _against(world, start, final, touched, candidate.get("end_state"), calls)
        if other.reward == 1.0:
            return other.model_copy(update={"matched": list(candidate.get("traces") or [])})
    return verdict


def _against(
    world: World,
    start: State,
    final: State,
    touched: list[str],
    reference: Mapping[str, Any] | None,
    calls: Sequence[Mapping[str, Any]],
) -> Verdict:
    """The verdict on ``final`` against one reference end state; ``touched`` without
    repeats, and each of ``calls`` with its ``write`` flag (:func:`end_state_verdict`)."""
    pending = [c for c in calls if c["write"] and c.get("path") == "model_needed"]
    undetermined = list(dict.fromkeys(str(c.get("tool")) for c in pending))
    if reference is None:
        return Verdict(reward=None, reached=None, touched=touched, undetermined=undetermined)
    ignore = clock_fields(world)
    diff, matched = reference_diff(reference, start, final, calls, ignore)
    ok = [c for c in calls if c["write"] and not c.get("error") and c.get("path") != "model_needed"]
    blind = {k.split(":", 1)[1] for k in reference if k.startswith("write:")}
    about = {k for c in ok if c.get("tool") not in blind for k in c.get("about") or []}
    if not calls or any("about" not in c for c in ok):
        about = set(touched)
    for key in touched:
        mine = key in reference or key in matched.values()
        if key in about and not mine and key in final:
            diff += changes(key, start.get(key), final[key], ignore)
    reward: float | None = 0.0 if diff else 1.0
    if pending and not _fails_anyway(diff, pending, matched):
        reward = None
    reached = None if reward is None else reward == 1.0
    return Verdict(
        reward=reward, reached=reached, diff=diff, touched=touched, undetermined=undetermined
    )


def _fails_anyway(
    diff: Sequence[Mapping[str, Any]],
    pending: Sequence[Mapping[str, Any]],
    matched: Mapping[str, str],
) -> bool:
    """Whether a difference stands whatever the unknown writes did (module docstring)."""
    if any(d["why"] == "unrequested" for d in diff):
        return True
    if any(not c.get("about") for c in pending):
        return False
    named = {k for c in pending for k in c["about"]}
    entities = {matched.get(d["entity"], d["entity"]) for d in diff}
    return any("=" in k and not k.startswith("new:") and k not in named for k in entities)


def verify(
    world: World,
    start: State,
    messages: Sequence[Mapping[str, Any]],
    reference: Any,
    also: Sequence[Mapping[str, Any]] = (),
) -> tuple[Verdict, list[dict[str, Any]]]:
    """Replay a recorded trajectory's tool calls (OpenAI format) from ``start`` (with the
    entities only its answers show, :func:`seeded`) and judge its end state against
    ``reference`` (or an even candidate in ``also``); per call ``{"tool", "path", "error"}``."""
    start = seeded(world, start, messages)
    final, records = replay(world, start, messages)
    touched = [k for r in records for k in r["changed"]]
    verdict = end_state_verdict(world, start, final, touched, reference, records, also)
    return verdict, [{k: r[k] for k in ("tool", "path", "error")} for r in records]
