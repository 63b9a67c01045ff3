"""What DJANGO_WORKFLOWS["METRICS"] adds to a three-step workflow's CPU, timed alone: three
step attempts through the step middleware's chain, one execution through process_execution()
and one claim observed, with METRICS off and on (no database: the calls around the steps only).

    python benchmarks/metrics_cost.py [N]

Prints the best of five rounds of N workflows' worth of calls, in microseconds per workflow.
The drain itself, with and without: `BENCH_METRICS=1 python benchmarks/drain_cpu.py`.
"""

from __future__ import annotations

import os
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


def main() -> None:
    sys.path.insert(0, str(ROOT))
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "benchmarks.settings")
    import django

    django.setup()
    from django.test.utils import override_settings

    from django_workflows import middleware
    from django_workflows.metrics.counters import metrics
    from django_workflows.models import WorkflowInstance

    n = int(sys.argv[1]) if len(sys.argv) > 1 else 10_000
    instance = WorkflowInstance(id="cost-1", workflow="bench", version=1, runs=1)

    def workflows(claims: bool) -> float:
        """The best of five rounds: CPU microseconds per workflow's worth of calls."""
        best = float("inf")
        for _ in range(5):
            started = time.process_time()
            for _ in range(n):
                for step in ("one", "two", "three"):
                    middleware.wrap(instance, step, step, 1, lambda: None)()
                middleware.run_execution(instance, {}, lambda: "completed")
                if claims:
                    metrics().claim(0.002)
            best = min(best, (time.process_time() - started) / n * 1e6)
        return best

    with override_settings(DJANGO_WORKFLOWS={"METRICS": False}):
        off = workflows(claims=False)
    with override_settings(DJANGO_WORKFLOWS={"METRICS": True}):
        on = workflows(claims=True)
    print(f"METRICS off {off:.2f} µs, on {on:.2f} µs per workflow: {on - off:.2f} µs more")


if __name__ == "__main__":
    main()
