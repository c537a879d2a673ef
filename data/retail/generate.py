"""Generate the retail trace corpus: traces a production user would upload, and their truth.

Usage: python data/retail/generate.py --goals 80 --seed 7 --out data/retail/traces.jsonl \
    --truth data/retail/truth.jsonl [--runs-min 3 --runs-max 5]

Goals are τ-bench retail training tasks; each is played 3-5 times by the scripted user and agent
on a fresh copy of the database. A run succeeds iff its end state equals the state reached by
replaying the task's ground-truth actions (τ-bench's rule). Same arguments, same bytes.
"""

from __future__ import annotations

import argparse
import json
import random
import sys
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
if str(HERE) not in sys.path:
    sys.path.insert(0, str(HERE))

from agent_sim import MISTAKES, TRANSFER, AgentSim  # noqa: E402
from retail_tools import READ_TOOLS, WRITE_TOOLS, RetailTools, end_state, load_db  # noqa: E402
from user_sim import (  # noqa: E402
    ITEM_KINDS,
    Request,
    UserSim,
    parse_identity,
    parse_persona,
)

Json = dict[str, Any]
KINDS = (
    "cancel_pending_order",
    "modify_pending_order_items",
    "exchange_delivered_order_items",
    "return_delivered_order_items",
    "modify_pending_order_address",
    "modify_pending_order_payment",
)
MISTAKE_RATE = 0.27
TRANSFER_RATE = 0.05
TYPO_RATE = 0.15
MULTI_SHARE = 0.2
POLICY_VIOLATIONS = ("missed_confirmation", "unjustified_write", "false_claim")


def load_tasks(root: Path = HERE) -> list[Json]:
    lines = (root / "tasks_train.jsonl").read_text(encoding="utf-8").splitlines()
    return [json.loads(line) for line in lines if line.strip()]


def usable(task: Json, db: Json) -> bool:
    """Keep tasks whose reference replays cleanly and that a user can put into words."""
    tools = RetailTools(db)
    for action in task["actions"]:
        kw = action["kwargs"]
        pairs = zip(kw.get("item_ids", []), kw.get("new_item_ids", []), strict=False)
        if any(old == new for old, new in pairs):
            return False
        if tools.call(action["name"], kw).startswith("Error"):
            return False
    try:
        parse_identity(task["instruction"])
    except ValueError:
        return False
    return 1 <= len(task["actions"]) <= 3


def pick_goals(tasks: list[Json], db: Json, goals: int, seed: int) -> list[Json]:
    """Deterministic, varied across write kinds, ~25% multi-action. No two picked tasks share
    a write action: τ-bench has tasks that differ only in a later action (the same return,
    then another modification), whose first requests are one and the same goal."""
    rng = random.Random(f"select-{seed}")
    pool = [t for t in tasks if usable(t, db)]
    rng.shuffle(pool)
    seen: set[str] = set()
    picked: list[Json] = []

    def take(task: Json) -> bool:
        key = {json.dumps(a, sort_keys=True) for a in task["actions"]}
        if key & seen or task in picked:
            return False
        seen.update(key)
        picked.append(task)
        return True

    multi = [t for t in pool if len(t["actions"]) > 1]
    want_multi = round(goals * MULTI_SHARE)
    for task in multi:
        if sum(len(t["actions"]) > 1 for t in picked) >= want_multi:
            break
        take(task)
    singles = {k: [t for t in pool if [a["name"] for a in t["actions"]] == [k]] for k in KINDS}
    while len(picked) < goals and any(singles.values()):
        for kind in KINDS:
            if singles[kind] and len(picked) < goals:
                take(singles[kind].pop(0))
    return sorted(picked, key=lambda t: t["task_index"])


def build_requests(task: Json, db: Json, rng: random.Random) -> list[Request]:
    """Turn ground-truth actions into what the user knows and can describe."""
    requests: list[Request] = []
    user = db["users"][task["user_id"]]
    for action in task["actions"]:
        kind, kw = action["name"], action["kwargs"]
        request = Request(kind=kind, kwargs=dict(kw))
        if kind != "modify_user_address":
            order = db["orders"][kw["order_id"]]
            if kind in ITEM_KINDS:
                free = list(order["items"])
                for item_id in kw["item_ids"]:
                    line = next(x for x in free if x["item_id"] == item_id)
                    free.remove(line)
                    request.lines.append(line)
                for line, new_id in zip(request.lines, kw.get("new_item_ids", []), strict=False):
                    request.new_variants.append(
                        db["products"][line["product_id"]]["variants"][new_id]
                    )
            else:
                request.lines = order["items"][:2]
            wanted = {x["name"] for x in request.lines}
            matches = [
                oid
                for oid in user["orders"]
                if wanted <= {x["name"] for x in db["orders"][oid]["items"]}
                and db["orders"][oid]["status"] == order["status"]
            ]
            request.knows_order_id = matches != [kw["order_id"]] or rng.random() < 0.65
        requests.append(request)
    entities = [r.kwargs.get("order_id", "user") for r in requests]
    if len(set(entities)) == len(entities) and rng.random() < 0.4:
        rng.shuffle(requests)
    return requests


def applicable(kind: str, task: Json, db: Json) -> list[int]:
    """Indices of requests where a mistake of this kind can be staged."""
    actions = task["actions"]
    if kind == "wrong_item":
        out = []
        for i, action in enumerate(actions):
            kw = action["kwargs"]
            if action["name"] not in ITEM_KINDS:
                continue
            order = db["orders"][kw["order_id"]]
            if action["name"] == "return_delivered_order_items":
                if any(x["item_id"] not in kw["item_ids"] for x in order["items"]):
                    out.append(i)
                continue
            ok = True
            for old, new in zip(kw["item_ids"], kw["new_item_ids"], strict=True):
                line = next(x for x in order["items"] if x["item_id"] == old)
                variants = db["products"][line["product_id"]]["variants"].values()
                if not any(v["available"] and v["item_id"] not in (old, new) for v in variants):
                    ok = False
            if ok:
                out.append(i)
        return out
    if kind == "unjustified_write" and other_pending(task, db) is None:
        return []
    if kind == "false_claim":
        return [len(actions) - 1]
    return list(range(len(actions)))


def other_pending(task: Json, db: Json) -> str | None:
    """A pending order of the user that the task does not touch (target of an unasked write)."""
    touched = {a["kwargs"].get("order_id") for a in task["actions"]}
    for order_id in db["users"][task["user_id"]]["orders"]:
        if order_id not in touched and db["orders"][order_id]["status"] == "pending":
            return order_id
    return None


def plan_mistakes(task: Json, db: Json, runs: int, rng: random.Random) -> list[str | None]:
    """Per-run mistakes: at most one per run, no kind twice per goal, >= 2 clean-state runs."""
    kinds = [k for k in MISTAKES if applicable(k, task, db)]
    rng.shuffle(kinds)
    plan: list[str | None] = []
    failing = 0
    for _ in range(runs):
        choice: str | None = None
        roll = rng.random()
        if roll < TRANSFER_RATE and TRANSFER not in plan:
            choice = TRANSFER
        elif roll < MISTAKE_RATE + TRANSFER_RATE and kinds:
            choice = kinds.pop()
        if choice not in (None, "missed_confirmation"):
            if failing >= runs - 2:
                choice = None
            else:
                failing += 1
        plan.append(choice)
    return plan


def run_episode(
    task: Json, db: Json, run: int, seed: int, mistake: str | None
) -> tuple[Json, Json]:
    """Play one run on a fresh database; return the trace and its truth."""
    rng = random.Random(f"episode-{seed}-{task['task_index']}-{run}")
    requests = build_requests(task, db, rng)
    order_of = [
        task["actions"].index(next(a for a in task["actions"] if a["kwargs"] == r.kwargs))
        for r in requests
    ]
    mistake_at = 0
    if mistake == TRANSFER:
        mistake_at = rng.randrange(len(requests))
    elif mistake is not None:
        mistake_at = order_of.index(rng.choice(applicable(mistake, task, db)))
        if mistake == "false_claim":
            mistake_at = len(requests) - 1
    user = UserSim(
        identity=parse_identity(task["instruction"]),
        persona=parse_persona(task["instruction"]),
        requests=requests,
        user=db["users"][task["user_id"]],
        rng=rng,
        typo=rng.random() < TYPO_RATE,
        upfront_two=len(requests) > 1 and rng.random() < 0.3,
    )
    agent = AgentSim(
        RetailTools(db), user, requests, rng, mistake, mistake_at, other_pending(task, db)
    )
    episode = agent.run()
    reference = end_state(db, [(a["name"], a["kwargs"]) for a in task["actions"]])
    state = end_state(db, episode.writes)
    success = state == reference
    trace_id = f"retail-{task['task_index']:04d}-r{run}"
    trace = {
        "id": trace_id,
        "messages": [{"role": "system", "content": POLICY}, *episode.messages],
        "tools": TOOLS,
        "metadata": {"outcome": "success" if success else "failure", "reward": float(success)},
    }
    truth = {
        "trace_id": trace_id,
        "goal_id": f"task-{task['task_index']:04d}",
        "run": run,
        "outcome": trace["metadata"]["outcome"],
        "mistake": mistake,
        "policy_violation": mistake in POLICY_VIOLATIONS,
        "end_state": state,
        "reference_end_state": reference,
    }
    return trace, truth


POLICY = (HERE / "policy.md").read_text(encoding="utf-8")
TOOLS = json.loads((HERE / "tools.json").read_text(encoding="utf-8"))


def generate(
    goals: int, seed: int, runs: tuple[int, int] = (3, 5)
) -> tuple[list[Json], list[Json]]:
    """The whole corpus in memory: (traces, truth), one truth row per trace."""
    db = load_db()
    traces: list[Json] = []
    truths: list[Json] = []
    for task in pick_goals(load_tasks(), db, goals, seed):
        rng = random.Random(f"plan-{seed}-{task['task_index']}")
        count = rng.randint(runs[0], runs[1])
        for run, mistake in enumerate(plan_mistakes(task, db, count, rng), start=1):
            trace, truth = run_episode(task, db, run, seed, mistake)
            traces.append(trace)
            truths.append(truth)
    return traces, truths


def write_jsonl(path: Path, rows: list[Json]) -> None:
    path.write_text("".join(json.dumps(r, ensure_ascii=False) + "\n" for r in rows), "utf-8")


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--goals", type=int, default=80)
    parser.add_argument("--seed", type=int, default=7)
    parser.add_argument("--runs-min", type=int, default=3)
    parser.add_argument("--runs-max", type=int, default=5)
    parser.add_argument("--out", type=Path, default=HERE / "traces.jsonl")
    parser.add_argument("--truth", type=Path, default=HERE / "truth.jsonl")
    args = parser.parse_args(argv)
    traces, truths = generate(args.goals, args.seed, (args.runs_min, args.runs_max))
    write_jsonl(args.out, traces)
    write_jsonl(args.truth, truths)
    effects = {name: "write" for name in WRITE_TOOLS} | {name: "read" for name in READ_TOOLS}
    (HERE / "tool_effects.json").write_text(
        json.dumps(dict(sorted(effects.items())), indent=2) + "\n"
    )
    wins = sum(t["outcome"] == "success" for t in truths)
    print(f"{len(traces)} traces, {len({t['goal_id'] for t in truths})} goals, {wins} successes")


if __name__ == "__main__":
    main()
