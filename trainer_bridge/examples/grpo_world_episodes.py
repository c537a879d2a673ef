"""GRPO with TRL on a world's episodes: multi-turn rollouts, the reward of each episode.

Each rollout plays one episode of the world (``trainer_bridge.trl_episodes``): the model calls
the world's tools and talks with the simulated user (the ``reply_to_user`` tool) until it
answers without a tool call, which ends the episode; its reward is the end state against the
task's reference, through the service's reward path, as a sample of ``--run-id``.

GPU node (vLLM generation, server or colocate mode)::

    # a world built from forge trace jobs: judge-service world build JOB_ID
    # terminal 1, on the GPU node that generates (server mode):
    trl vllm-serve --model Qwen/Qwen3-0.6B
    # terminal 2:
    python trainer_bridge/examples/grpo_world_episodes.py --model Qwen/Qwen3-0.6B \
        --service-url http://judge-host:8000 --api-key $KEY --world-id $WORLD \
        --run-id world-grpo-1 --vllm-mode server

    # colocate mode (vLLM inside the training processes), one node, 8 GPUs:
    accelerate launch --num_processes 8 trainer_bridge/examples/grpo_world_episodes.py \
        --model ... --service-url ... --api-key ... --world-id ... --vllm-mode colocate

The model's chat template must support tool calling (Qwen2.5/3, Llama 3.1/3.2, ...). Every
rank opens its own episodes; raise ``JS_EPISODES_OPEN_PER_KEY`` on the service above the
rollouts in flight. Afterwards ``GET /v1/runs/{run_id}/tasks`` gives each task's tier.

CPU smoke mode (what the tests run): ``--smoke`` builds the tiny offline Llama of
``grpo_trl_vllm.py`` with a tool-calling chat template, exposes the world's few smallest tools
(the byte-level prompt stays short), trains 2 steps without vLLM against the world's
episodes, and prints one JSON line: steps, episodes played, their rewards.
"""

from __future__ import annotations

import argparse
import json
import math
from typing import Any

from trainer_bridge.trl_episodes import WorldEpisodes

#: Tools the smoke run exposes: the world's smallest schemas, so the prompt stays short.
SMOKE_TOOLS = 3


def smoke_model() -> tuple[Any, Any]:
    """The tiny offline Llama with Qwen 2.5's chat template (TRL knows how to parse its tool
    calls) and room for the byte-level prompt the tool schemas make."""
    from trl.chat_template_utils import qwen2_5_chat_template

    from trainer_bridge.examples.grpo_trl_vllm import tiny_model_and_tokenizer

    model, tokenizer = tiny_model_and_tokenizer()
    tokenizer.chat_template = qwen2_5_chat_template
    model.config.max_position_embeddings = 8192  # rotary positions: any length works
    return model, tokenizer


def episodes_for(args: argparse.Namespace) -> WorldEpisodes:
    task_ids = [t for t in (args.task_ids or "").split(",") if t] or None
    tool_names = [t for t in (args.tools or "").split(",") if t] or None
    options = {"api_key": args.api_key, "run_id": args.run_id, "max_turns": args.max_turns}
    episodes = WorldEpisodes.from_service(
        args.service_url, args.world_id, task_ids=task_ids, tool_names=tool_names, **options
    )
    if not episodes.tasks:
        raise SystemExit(f"world {args.world_id!r} has no trace task with a reference end state")
    if args.smoke and tool_names is None:
        smallest = sorted(episodes.tools, key=lambda schema: len(json.dumps(schema)))
        episodes.close()
        episodes = WorldEpisodes(
            args.service_url,
            args.world_id,
            smallest[:SMOKE_TOOLS],
            tasks=episodes.tasks,
            **options,
        )
    return episodes


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--service-url", required=True)
    parser.add_argument("--api-key")
    parser.add_argument("--world-id", required=True)
    parser.add_argument("--task-ids", help="comma-separated (default: the world's trace tasks)")
    parser.add_argument("--tools", help="comma-separated tool names to expose (default: all)")
    parser.add_argument("--seeds", type=int, default=1, help="users per task (seeds 0..n-1)")
    parser.add_argument("--max-turns", type=int, default=30)
    parser.add_argument("--run-id", default="grpo-world")
    parser.add_argument("--model", help="model name or path (GPU mode)")
    parser.add_argument("--smoke", action="store_true", help="tiny CPU run, no vLLM")
    parser.add_argument("--steps", type=int, default=2)
    parser.add_argument("--vllm-mode", choices=["server", "colocate"], default="server")
    parser.add_argument("--vllm-server-host", default="0.0.0.0")
    parser.add_argument("--no-vllm", action="store_true", help="generate with transformers")
    parser.add_argument("--output-dir", default="grpo-world-output")
    args = parser.parse_args(argv)

    from trl import GRPOConfig, GRPOTrainer

    episodes = episodes_for(args)
    use_vllm = not (args.smoke or args.no_vllm)
    config = GRPOConfig(
        output_dir=args.output_dir,
        max_steps=args.steps,
        per_device_train_batch_size=4,
        num_generations=4,
        max_completion_length=16 if args.smoke else 2048,
        max_tool_calling_iterations=None if not args.smoke else 2,
        learning_rate=1e-4,
        logging_steps=1,
        save_strategy="no",
        report_to=[],
        use_cpu=args.smoke,
        bf16=False,
        use_vllm=use_vllm,
        vllm_mode=args.vllm_mode,
        vllm_server_host=args.vllm_server_host,
        shuffle_dataset=not args.smoke,
    )
    if args.smoke:
        model, tokenizer = smoke_model()
    else:
        from transformers import AutoModelForCausalLM, AutoTokenizer

        model = AutoModelForCausalLM.from_pretrained(args.model)
        tokenizer = AutoTokenizer.from_pretrained(args.model)
    trainer = GRPOTrainer(
        model=model,
        args=config,
        train_dataset=episodes.dataset(range(args.seeds)),
        processing_class=tokenizer,
        **episodes.trainer_kwargs(),
    )
    trainer.train()
    played = episodes.played
    rewards = [p["reward"] for p in played]
    print(
        json.dumps(
            {
                "steps": trainer.state.global_step,
                "episodes": len(played),
                "episode_ids": [p["episode_id"] for p in played],
                "steps_of_episodes": [p["step"] for p in played],
                "rewards": rewards,
                "masked": sum(1 for r in rewards if r is None),
                "valid_rewards_finite": all(math.isfinite(r) for r in rewards if r is not None),
                "tools": sorted(t["function"]["name"] for t in episodes.tools),
            }
        )
    )
    episodes.close()


if __name__ == "__main__":
    main()
