"""TRL's ``GRPOTrainer`` with ECHO: GRPO's loss plus the environment tokens' cross-entropy.

Why a subclass: ``GRPOTrainer`` has no hook for a second loss term, and the term should reuse
the policy's forward pass, not run another. Three of its steps are extended, nothing replaced:

- ``_generate``: after TRL's tool loop, each completion token is labelled ``action``,
  ``world``, ``user``, ``simulated`` or ``ignored`` (:func:`trainer_bridge.echo.
  rollout_labels`), from what each rollout's environment recorded it returned
  (``EpisodeEnvironment.said``) and the chat template's rendering of each tool turn;
- ``_generate_and_score_completions``: the labels go into the batch (``echo_labels``), so
  TRL's shuffling and splitting into micro-batches carry them with their rows;
- ``_compute_loss``: the per-token log-probabilities that GRPO's loss computed are kept, and
  ``echo_coef`` times the mean cross-entropy of the ``echo_on`` tokens is added, scaled for
  gradient accumulation as TRL scales its own terms.

GRPO's loss already leaves the environment's tokens out (TRL's ``tool_mask``), and the
cross-entropy counts only them: action tokens get the policy gradient alone, environment
tokens the cross-entropy alone. The log-probabilities are those of TRL's fused head, at the
trainer's ``temperature`` (1.0 by default, where this is the plain cross-entropy).

Logged each step, per environment label: ``echo/ce_<label>`` (nats per token) and
``echo/tokens_<label>``; also ``echo/tokens_action`` and ``echo/tokens_ignored``. They are
logged with ``echo_coef`` 0 too, so a run without ECHO shows what it would have learned from.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from trl import GRPOTrainer

from trainer_bridge import echo


class EchoGRPOTrainer(GRPOTrainer):
    """``GRPOTrainer(..., echo_coef=λ, echo_on=("world",))``; every other argument is TRL's.
    ``echo_on`` names environment labels: ``world``, ``user``, ``simulated`` (path e)."""

    def __init__(
        self,
        *args: Any,
        echo_coef: float = 0.0,
        echo_on: Sequence[str] = (echo.WORLD,),
        **kwargs: Any,
    ) -> None:
        unknown = set(echo_on) - set(echo.ENVIRONMENT)
        if unknown or echo_coef < 0:
            raise ValueError(
                f"echo_coef must be >= 0 and echo_on within {echo.ENVIRONMENT}: "
                f"got {echo_coef}, {sorted(unknown)}"
            )
        super().__init__(*args, **kwargs)
        if getattr(self.args, "use_liger_kernel", False):
            raise ValueError("ECHO needs TRL's own loss: use_liger_kernel computes another")
        self.echo_coef = float(echo_coef)
        self.echo_on = tuple(echo_on)
        self._echo_labels: list[list[str]] = []
        self._echo_logps: Any = None
        self._echo_capture = False

    def _echo_offsets(
        self, messages: list[dict[str, Any]], ids: list[int]
    ) -> tuple[str, list[tuple[int, int]]] | None:
        """The tool turn rendered as TRL renders it for its suffix ids, and the spans of
        ``ids`` in it (``None`` when they are not found there)."""
        call = {"type": "function", "function": {"name": messages[0].get("name"), "arguments": {}}}
        head = [
            {"role": "user", "content": "dummy"},
            {"role": "assistant", "content": "", "tool_calls": [call]},
        ]
        rendered = self.processing_class.apply_chat_template(
            head + messages,
            add_generation_prompt=True,
            tokenize=False,
            chat_template=self.chat_template,
            **self.chat_template_kwargs,
        )
        offsets = echo.offsets_in(self._tokenizer, rendered, ids)
        return None if offsets is None else (rendered, offsets)

    def _generate(self, prompts: list[Any]) -> Any:
        generated = super()._generate(prompts)
        _, completion_ids, tool_mask, completions = generated[:4]
        environments = self.environments or [None] * len(completion_ids)
        self._echo_labels = [
            echo.rollout_labels(
                ids,
                None if tool_mask is None else tool_mask[row],
                completion if isinstance(completion, list) else [],
                getattr(environment, "said", []),
                self._echo_offsets,
            )
            for row, (ids, completion, environment) in enumerate(
                zip(completion_ids, completions, environments, strict=True)
            )
        ]
        return generated

    def _generate_and_score_completions(self, inputs: list[dict[str, Any]]) -> dict[str, Any]:
        output = super()._generate_and_score_completions(inputs)
        completion_ids = output["completion_ids"]
        labels, self._echo_labels = self._echo_labels, []
        codes = echo.codes(labels, completion_ids.size(1))
        output["echo_labels"] = codes.to(completion_ids.device)
        return output

    def _get_per_token_logps_and_entropies(self, *args: Any, **kwargs: Any) -> Any:
        found = super()._get_per_token_logps_and_entropies(*args, **kwargs)
        if self._echo_capture and self._echo_logps is None:
            self._echo_logps = found[0]  # the policy's, in the loss's own forward pass
        return found

    def _compute_loss(self, model: Any, inputs: dict[str, Any]) -> Any:
        self._echo_capture, self._echo_logps = True, None
        try:
            loss = super()._compute_loss(model, inputs)
        finally:
            self._echo_capture = False
        logps, self._echo_logps = self._echo_logps, None
        labels = inputs.get("echo_labels")
        if logps is None or labels is None:
            return loss
        valid = inputs["completion_mask"]
        cross_entropy, stats = echo.cross_entropy(logps, labels, valid, self.echo_on)
        mode = "train" if self.model.training else "eval"
        metrics = self._metrics[mode]
        for label, (mean, count) in stats.items():
            metrics[f"echo/tokens_{label}"].append(float(count))
            if count:
                metrics[f"echo/ce_{label}"].append(mean)
        counted = echo.masks(labels, valid)
        for label in (echo.ACTION, echo.IGNORED):
            metrics[f"echo/tokens_{label}"].append(float(counted[label].sum().item()))
        if not self.echo_coef:
            return loss
        accumulation = self.current_gradient_accumulation_steps if mode == "train" else 1.0
        return loss + self.echo_coef * cross_entropy / accumulation
