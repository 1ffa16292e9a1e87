"""`fullsync`: only the replication group's full-sync cells (section 3 of
`replication.py`), at full size even with --quick: 1M and then 5M keys of the `rdb` group's
mixed dataset, BlinkDB with `repl-diskless-sync no` and `yes` against Redis 7 with both.
Four masters of 5M keys stay up at once (about 5 GB of RAM). The full run has the same cells
in `replication`, so the default group list leaves this one out: run it with
`--only fullsync`."""
from . import replication

GROUP = replication.GROUP


def run(ctx):
    sizes = ctx.sizes["full"]
    replication.fullsync(ctx, sizes["repl_sync_keys_small"])
    replication.fullsync(ctx, sizes["repl_sync_keys"])
