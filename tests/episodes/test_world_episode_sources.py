"""Whose words each message of an episode is (:mod:`judge_service.episodes.sources`), on the
lending library's world: the world's answers with their paths, a simulator's answer (path e)
marked as such, the traced user's turns and a model user's, the agent's actions. The HTTP
answers carry the same (``tests/episodes/test_world_episodes_api.py``)."""

from __future__ import annotations

from judge_service.episodes.episode import act, script_for, start
from judge_service.episodes.sources import sources_of
from judge_service.episodes.user import GivenUser
from judge_service.world.model import Call
from judge_service.world.simulate import GivenAnswers, call_key
from tests.episodes.test_world_episode import _call, _calls, _policy, _say, library  # noqa: F401

RATE = {"isbn": "978-3", "stars": 2}  # no rule fits it: only a model answers (path e)


def test_each_message_says_whose_words_it_is(library) -> None:  # noqa: F811
    world, traces, tasks = library
    script = script_for(tasks["borrow"], traces, seed=0)
    episode, _ = start(world, script)
    for action in _policy(traces["borrow-1"])[:-1]:
        episode, observation = act(world, script, episode, action)
    unanswered = _calls(_call("rate_book", **RATE))
    episode, _ = act(world, script, episode, unanswered)
    simulator = GivenAnswers({call_key(Call(name="rate_book", arguments=RATE)): "Rated 2."})
    episode, observation = act(world, script, episode, unanswered, simulator=simulator)
    assert observation[0]["content"] == "Rated 2."

    sources = sources_of(episode.messages, episode.answers)
    assert len(sources) == len(episode.messages)
    paths = {a["message"]: a["path"] for a in episode.answers}
    whose = {"system": "system", "assistant": "agent", "tool": "world", "user": "user"}
    for index, (message, source) in enumerate(zip(episode.messages, sources, strict=True)):
        assert source["source"] == whose[message["role"]], (index, source)
        assert source["path"] == paths.get(index), (index, source)
        assert source["by"] == ("replay" if message["role"] == "user" else None)
    *learned, needed, simulated = [s for s in sources if s["source"] == "world"]
    assert learned and {s["path"] for s in learned} <= {"read", "transition", "function", "replay"}
    assert not any(s["simulated"] for s in learned)
    # path (e): the error saying nothing answers it is not a model's; the model's answer is
    assert (needed["path"], needed["simulated"]) == ("model_needed", False)
    assert (simulated["path"], simulated["simulated"]) == ("model_needed", True)


def test_a_model_users_turns_are_the_models_and_its_opening_the_traced_one(library) -> None:  # noqa: F811
    world, traces, tasks = library
    script = script_for(tasks["borrow"], traces, seed=0)
    episode, _ = start(world, script)
    episode, _ = act(world, script, episode, _say("Which book?"), user=GivenUser("Dune.", False))
    sources = sources_of(episode.messages, episode.answers, model_user=True)
    users = [s["by"] for s in sources if s["source"] == "user"]
    assert users == ["replay", "model"]
    assert [s["by"] for s in sources_of(episode.messages, [])].count("replay") == 2
