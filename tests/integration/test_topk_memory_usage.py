"""MEMORY USAGE of a top-k follows its heap's items as they come and go: the sketch keeps the
sum of its items' bytes as a running count (summing k items after every write was a fifth of
TOPK.ADD's instructions), so the count after thousands of expulsions must equal the one a
RESTORE computes afresh from the same heap."""

from rdb_helpers import client


def test_memory_usage_after_expulsions_matches_a_fresh_load(blinkdb):
    b = client(blinkdb.port)
    b.execute_command("TOPK.RESERVE", "tk", 20, 50, 4, 0.9)
    # Items of many lengths, so a wrong running sum shows in the byte count.
    items = ["x" * (1 + i % 97) + str(i) for i in range(3000)]
    expelled = 0
    for i in range(0, len(items), 100):
        replies = b.execute_command("TOPK.ADD", "tk", *items[i:i + 100])
        expelled += sum(r is not None for r in replies)
    assert expelled > 100
    b.restore("cp", 0, b.dump("tk"))  # a key name of the same length
    assert b.memory_usage("tk") == b.memory_usage("cp")
    listed = b.execute_command("TOPK.LIST", "tk")
    assert listed == b.execute_command("TOPK.LIST", "cp") and len(listed) == 20
