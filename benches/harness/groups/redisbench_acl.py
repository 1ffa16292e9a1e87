"""`redisbench_acl`: the `redisbench` cells with every redis-benchmark client logged in as an
ACL user with Redis's "all but the dangerous commands" rights (`+@all -@dangerous ~*`), created
the same way on both servers: what per-command permission checks cost (issue 40). The test
list and sizes are redisbench's. redis-benchmark's opening CONFIG GET is @dangerous, so it
warns that it cannot read the server's config, on both servers alike."""
from ..context import running
from ..runners import NotApplicable, send_all
from . import redisbench

GROUP = "redisbench_acl"
USER = ("bench", "bench-password")
RULES = ["on", ">" + USER[1], "+@all", "-@dangerous", "~*"]


def run(ctx):
    with running(ctx, [ctx.blinkdb, ctx.redis]) as started:
        servers = []
        for label, server in started:
            try:
                if not isinstance(server, str):
                    send_all(server, [["ACL", "SETUSER", USER[0], *RULES]])
                servers.append((label, server))
            except NotApplicable as e:
                servers.append((label, "n/a (%s)" % e))
        ctx.results.note(GROUP, "clients log in as ACL user %s: %s" % (USER[0], " ".join(
            r for r in RULES if not r.startswith(">"))))
        redisbench.test_cells(ctx, GROUP, servers, redisbench.TESTS,
                              {1: ctx.size("redisbench_requests_p1"),
                               16: ctx.size("redisbench_requests_p16")}, user=USER)
