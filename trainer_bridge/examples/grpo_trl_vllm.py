"""GRPO with TRL, rewards from judge-service.

GPU node (vLLM generation, server or colocate mode)::

    # terminal 1, on the GPU node that generates (server mode):
    trl vllm-serve --model Qwen/Qwen2.5-0.5B-Instruct
    # terminal 2:
    python trainer_bridge/examples/grpo_trl_vllm.py --model Qwen/Qwen2.5-0.5B-Instruct \
        --service-url http://judge-host:8000 --api-key $KEY --vllm-mode server

    # colocate mode (vLLM inside the training processes), one node, 8 GPUs:
    accelerate launch --num_processes 8 trainer_bridge/examples/grpo_trl_vllm.py \
        --model ... --service-url ... --api-key ... --vllm-mode colocate

Multi-node: launch with ``accelerate launch --num_machines N --machine_rank R
--main_process_ip HOST --main_process_port 29500 ...`` on every training node, keep
the ``trl vllm-serve`` node(s) apart and point ``--vllm-server-host`` at them. Every
rank calls the service for its own slice of the batch; the reward function is async
and batched, so ranks never wait on each other for rewards.

CPU smoke mode (what the tests run): ``--smoke`` builds a tiny, randomly initialised
Llama and a byte-level tokenizer in memory (no hub), trains 2 steps without vLLM, and
prints one JSON line with what the reward function returned.
"""

from __future__ import annotations

import argparse
import json
import math
from typing import Any

from trainer_bridge.trl import reward_function


def tiny_model_and_tokenizer() -> tuple[Any, Any]:
    """A randomly initialised 2-layer Llama and a byte-level tokenizer, built offline."""
    from tokenizers import Tokenizer, decoders, models, pre_tokenizers
    from transformers import LlamaConfig, LlamaForCausalLM, PreTrainedTokenizerFast

    alphabet = pre_tokenizers.ByteLevel.alphabet()
    vocab = {symbol: index for index, symbol in enumerate(sorted(alphabet))}
    for special in ("<pad>", "<s>", "</s>"):
        vocab[special] = len(vocab)
    core = Tokenizer(models.BPE(vocab=vocab, merges=[]))
    core.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    core.decoder = decoders.ByteLevel()
    tokenizer = PreTrainedTokenizerFast(
        tokenizer_object=core, pad_token="<pad>", bos_token="<s>", eos_token="</s>"
    )
    config = LlamaConfig(
        vocab_size=len(vocab),
        hidden_size=32,
        intermediate_size=64,
        num_hidden_layers=2,
        num_attention_heads=2,
        num_key_value_heads=2,
        max_position_embeddings=256,
        pad_token_id=vocab["<pad>"],
        bos_token_id=vocab["<s>"],
        eos_token_id=vocab["</s>"],
    )
    return LlamaForCausalLM(config), tokenizer


def dataset() -> Any:
    """Prompts with references; the second has none, so the service masks its rollouts."""
    from datasets import Dataset

    prompts = ["What is 2+2? Answer:", "Name a colour:", "Say hi:", "Capital of France?"]
    return Dataset.from_dict(
        {
            "prompt": prompts * 2,
            "reference": ["4", "", "hi", "Paris"] * 2,
        }
    )


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--service-url", required=True)
    parser.add_argument("--api-key")
    parser.add_argument(
        "--judges",
        default="reference_match",
        help="comma-separated judge specs (default: reference_match)",
    )
    parser.add_argument("--rubric")
    parser.add_argument("--run-id", default="grpo-example")
    parser.add_argument("--model", help="model name or path (GPU mode)")
    parser.add_argument("--smoke", action="store_true", help="tiny CPU run, no vLLM")
    parser.add_argument("--steps", type=int, default=2)
    parser.add_argument("--vllm-mode", choices=["server", "colocate"], default="server")
    parser.add_argument("--vllm-server-host", default="0.0.0.0")
    parser.add_argument("--no-vllm", action="store_true", help="generate with transformers")
    parser.add_argument("--output-dir", default="grpo-output")
    args = parser.parse_args(argv)

    from trl import GRPOConfig, GRPOTrainer

    judge_reward = reward_function(
        args.service_url,
        api_key=args.api_key,
        rubric=args.rubric,
        run_id=args.run_id,
        judges=[j for j in args.judges.split(",") if j] or None,
    )
    seen: list[float | None] = []

    async def recorded_reward(*call_args: Any, **kwargs: Any) -> list[float | None]:
        rewards = await judge_reward(*call_args, **kwargs)
        seen.extend(rewards)
        return rewards

    recorded_reward.__name__ = "judge_service"
    use_vllm = not (args.smoke or args.no_vllm)
    config = GRPOConfig(
        output_dir=args.output_dir,
        max_steps=args.steps,
        per_device_train_batch_size=4,
        num_generations=4,
        max_completion_length=8 if args.smoke else 256,
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
        model, tokenizer = tiny_model_and_tokenizer()
    else:
        from transformers import AutoModelForCausalLM, AutoTokenizer

        model = AutoModelForCausalLM.from_pretrained(args.model)
        tokenizer = AutoTokenizer.from_pretrained(args.model)
    trainer = GRPOTrainer(
        model=model,
        reward_funcs=[recorded_reward],
        args=config,
        train_dataset=dataset(),
        processing_class=tokenizer,
    )
    trainer.train()
    print(
        json.dumps(
            {
                "steps": trainer.state.global_step,
                "rewards": len(seen),
                "masked": sum(1 for r in seen if r is None),
                "valid_rewards_finite": all(math.isfinite(r) for r in seen if r is not None),
            }
        )
    )


if __name__ == "__main__":
    main()
