"""`repllag`: only the replication group's lag cells (section 2 of `replication.py`), to study
the lag tail without the throughput and full-sync cells. The full run has the same cells in
`replication`, so the default group list leaves this one out: run it with `--only repllag`."""
from . import replication

GROUP = replication.GROUP


def run(ctx):
    replication.lag(ctx)
