"""Build ``agent_trajectories.jsonl``: labelled agent trajectories for the hack detectors.

    python data/agents/generate.py            # rewrite the corpus next to this file
    python data/agents/generate.py --check    # exit 1 if the committed file differs

Deterministic: the same seed gives the same bytes. Each group is one hack and one clean
look-alike drawn on the same scene; every row has its own random generator seeded from
(seed, kind, group index, role), so adding a kind does not change the rows of the others.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import random
import sys
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

from agentgen import write_or_check  # noqa: E402
from agentgen.kinds import REGISTRY, Scene, load_all  # noqa: E402

SEED = 14
GROUPS_PER_WEIGHT = 24
EXTRA_CLEAN = 0.3  # share of groups that get a second, different look-alike
REFUSES = "clean:refuses:"  # refusal twins: added to a share of groups (Kind.refusals), not rotated
OUT = HERE / "agent_trajectories.jsonl"


def _hash(*parts: object) -> str:
    return hashlib.sha256(":".join(map(str, parts)).encode()).hexdigest()[:12]


def _row(kind: str, scene: Scene, seed: int, index: int, group: str) -> dict[str, Any]:
    scene.kind = kind
    prompt, completion = REGISTRY[kind].fn(scene)
    return {
        "id": "traj-" + _hash(seed, kind, index, "row"),
        "group_id": group,
        "prompt": prompt,
        "completion": completion,
        "metadata": {"corpus": "agent_trajectories", "version": 1},
        "label": REGISTRY[kind].label,
        "kind": kind,
    }


def build(seed: int = SEED, groups_per_weight: int = GROUPS_PER_WEIGHT) -> list[dict[str, Any]]:
    """Every row of the corpus, in a seeded shuffled order."""
    load_all()
    hacks = sorted(k for k, v in REGISTRY.items() if v.label == 1)
    rows: list[dict[str, Any]] = []
    for kind in hacks:
        twins = sorted(
            k for k, v in REGISTRY.items() if kind in v.twin_of and not k.startswith(REFUSES)
        )
        refusals = sorted(k for k, v in REGISTRY.items() if kind in v.twin_of and k not in twins)
        if not twins:
            raise SystemExit(f"hack kind {kind!r} has no clean look-alike")
        for i in range(round(groups_per_weight * REGISTRY[kind].weight)):
            group = "grp-" + _hash(seed, kind, i, "group")
            grng = random.Random(f"{seed}:{kind}:{i}:scene")
            scene_seed = grng.random()
            chosen = [twins[i % len(twins)]]
            pick_rng = random.Random(f"{seed}:{kind}:{i}:extra")
            if len(twins) > 1 and pick_rng.random() < EXTRA_CLEAN:
                chosen.append(twins[(i + 1) % len(twins)])
            refuse_rng = random.Random(f"{seed}:{kind}:{i}:refuse")
            for name in refusals:
                if refuse_rng.random() < REGISTRY[kind].refusals:
                    chosen.append(name)
            for role, name in [("hack", kind)] + [(f"clean{j}", c) for j, c in enumerate(chosen)]:
                scene = Scene.draw(
                    random.Random(scene_seed),
                    random.Random(f"{seed}:{kind}:{i}:{role}"),
                    REGISTRY[kind].langs,
                )
                rows.append(_row(name, scene, seed, f"{kind}:{i}:{role}", group))
    random.Random(seed).shuffle(rows)
    return rows


def dumps(rows: list[dict[str, Any]]) -> str:
    return "".join(json.dumps(r, ensure_ascii=False, separators=(", ", ": ")) + "\n" for r in rows)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--seed", type=int, default=SEED)
    parser.add_argument("--out", type=Path, default=OUT)
    parser.add_argument("--check", action="store_true", help="compare with --out, write nothing")
    args = parser.parse_args(argv)
    return write_or_check(dumps(build(args.seed)), args.out, check=args.check)


if __name__ == "__main__":
    raise SystemExit(main())
