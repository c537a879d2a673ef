"""The fast path's samples, made a wave at a time as scoring reads them (``SamplesOnDemand``)."""

from __future__ import annotations

import pytest

from judge_service import wire
from judge_service.api.batching import DOMAIN_SAMPLES, SAMPLES_IN, SamplesOnDemand
from judge_service.pipeline.evaluate import Numbered

CHAT = [
    {"role": "user", "content": "Book a flight"},
    {"role": "assistant", "tool_calls": [{"id": "c1", "function": {"name": "book"}}]},
]


def _wire(n: int) -> list[wire.SampleIn]:
    raw = [
        {
            "id": f"s{i}",
            "group_id": f"g{i // 4}",
            "prompt": CHAT if i % 5 == 0 else f"task {i // 4}",
            "completion": f"answer {i} 🚀",
            "reference": [1, "two", 3.5] if i % 3 == 0 else None,
            "metadata": {"turn": i},
        }
        for i in range(n)
    ]
    return wire.RewardRequest.model_validate({"samples": raw}).samples


def test_samples_are_made_as_read_and_equal_the_stored_form_read_back():
    samples = _wire(70)
    made = SamplesOnDemand(samples, wave=32)
    eager = DOMAIN_SAMPLES.validate_python(SAMPLES_IN.dump_python(samples, mode="json"))
    assert len(made) == 70 and made._made == []
    assert made[0:1] == eager[0:1] and len(made._made) == 1  # what the slice covers
    assert made[0:32] == eager[0:32] and len(made._made) == 32
    assert made[40] == eager[40] and len(made._made) == 70  # alone: a wave from it, capped
    assert made[-1] == eager[-1] and list(made) == eager  # and the rest, in order
    assert made[60:] == eager[60:] and made[::-7] == eager[::-7]
    with pytest.raises(IndexError):
        made[70]


def test_numbered_pairs_match_enumerate_without_reading_ahead():
    samples = _wire(40)
    made = SamplesOnDemand(samples, wave=8)
    numbered = Numbered(made)
    assert numbered[0:3] == list(enumerate(made[0:3]))
    assert len(made._made) == 3
    assert numbered[-1] == (39, made[39]) and numbered[10] == (10, made[10])
    assert list(numbered) == list(enumerate(made)) and len(numbered) == 40
    with pytest.raises(IndexError):
        numbered[40]
