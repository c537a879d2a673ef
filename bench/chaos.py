"""The chaos suite's scenarios outside pytest, printing their figures (issue 17).

    .venv/bin/python bench/chaos.py                 # every scenario
    .venv/bin/python bench/chaos.py kills redis     # some of them

Private Redis and PostgreSQL on spare ports, the fake judge at 200 ms a call, real
``judge-service serve`` and ``judge-service worker`` processes: the rig of
``tests/chaos_support.py``, which ``tests/service/test_chaos.py`` runs with assertions.
Each line says kills, restarts, samples, how many were scored, masked, lost and duplicated,
and the seconds from the last fault until every batch was done.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from tests import chaos_support as chaos

SCENARIOS = {
    "redis": chaos.redis_restart_with_a_batch_in_flight,
    "kills": chaos.worker_kills_and_redis_restart,
    "postgres": chaos.postgres_restart,
    "api": chaos.api_restart,
}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("scenarios", nargs="*", choices=[[], *SCENARIOS], default=[])
    names = parser.parse_args().scenarios or list(SCENARIOS)
    with chaos.rig() as rig:
        service = chaos.Service(rig)
        try:
            for name in names:
                figures = SCENARIOS[name](service)
                print(figures.line(), flush=True)
                if figures.notes:
                    print(f"  notes: {figures.notes}", flush=True)
        finally:
            service.close()
    print(f"(also appended to {chaos.figures_file()})")


if __name__ == "__main__":
    main()
