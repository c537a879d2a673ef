"""GRPO with TRL on tasks exported by ``judge-service forge export``, rewards from judge-service.

The export loads with ``datasets.load_dataset("json", ...)``; its ``reference`` and ``task_id``
columns reach the reward function as keyword arguments, so nothing else is needed::

    judge-service forge export --out tasks.jsonl --tier learnable --run grpo-exp-11
    python trainer_bridge/examples/grpo_forged_tasks.py --tasks tasks.jsonl \
        --model Qwen/Qwen2.5-0.5B-Instruct --service-url http://judge-host:8000 --api-key $KEY \
        --run-id grpo-exp-12

Afterwards ``GET /v1/runs/grpo-exp-12/tasks`` gives each task's tier. ``--smoke`` trains the
tiny offline model of ``grpo_trl_vllm.py`` on CPU (what the tests run) and prints one JSON line.
"""

from __future__ import annotations

import argparse
import json
from typing import Any

from trainer_bridge.trl import reward_function

#: A chat template for the tiny smoke model, which has none.
SMOKE_TEMPLATE = (
    "{% for m in messages %}{{ m['role'] }}: {{ m['content'] }}\n{% endfor %}"
    "{% if add_generation_prompt %}assistant:{% endif %}"
)


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--tasks", required=True, help="JSONL from `judge-service forge export`")
    parser.add_argument("--service-url", required=True)
    parser.add_argument("--api-key")
    parser.add_argument("--judges", help="JSON list of judge specs (default: the service's)")
    parser.add_argument("--rubric")
    parser.add_argument("--run-id", default="grpo-forged")
    parser.add_argument("--model", help="model name or path")
    parser.add_argument("--smoke", action="store_true", help="tiny CPU run, no vLLM")
    parser.add_argument("--steps", type=int, default=2)
    parser.add_argument("--prompts-per-step", type=int, default=4)
    parser.add_argument("--output-dir", default="grpo-forged-output")
    args = parser.parse_args(argv)

    from datasets import load_dataset
    from trl import GRPOConfig, GRPOTrainer

    dataset = load_dataset("json", data_files=args.tasks, split="train")
    judge_reward = reward_function(
        args.service_url,
        api_key=args.api_key,
        rubric=args.rubric,
        run_id=args.run_id,
        judges=json.loads(args.judges) if args.judges else None,
    )
    seen: list[float | None] = []

    async def recorded_reward(*call_args: Any, **kwargs: Any) -> list[float | None]:
        rewards = await judge_reward(*call_args, **kwargs)
        seen.extend(rewards)
        return rewards

    recorded_reward.__name__ = "judge_service"
    config = GRPOConfig(
        output_dir=args.output_dir,
        max_steps=args.steps,
        per_device_train_batch_size=4 * args.prompts_per_step,
        num_generations=4,
        max_completion_length=8 if args.smoke else 256,
        learning_rate=1e-4,
        logging_steps=1,
        save_strategy="no",
        report_to=[],
        use_cpu=args.smoke,
        bf16=False,
        use_vllm=not args.smoke,
        shuffle_dataset=not args.smoke,
    )
    if args.smoke:
        from trainer_bridge.examples.grpo_trl_vllm import tiny_model_and_tokenizer

        model, tokenizer = tiny_model_and_tokenizer()
        tokenizer.chat_template = SMOKE_TEMPLATE
    else:
        from transformers import AutoModelForCausalLM, AutoTokenizer

        model = AutoModelForCausalLM.from_pretrained(args.model)
        tokenizer = AutoTokenizer.from_pretrained(args.model)
    trainer = GRPOTrainer(
        model=model,
        reward_funcs=[recorded_reward],
        args=config,
        train_dataset=dataset,
        processing_class=tokenizer,
    )
    trainer.train()
    print(
        json.dumps(
            {
                "steps": trainer.state.global_step,
                "rewards": len(seen),
                "masked": sum(1 for r in seen if r is None),
                "tasks": len(dataset),
            }
        )
    )


if __name__ == "__main__":
    main()
