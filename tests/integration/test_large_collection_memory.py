"""Memory per element of large lists (issue 42). A list node's buffer grew exactly to 256 bytes,
then by doubling from there: 4,080 bytes became 8,160, then 16,320 for the node's last few
elements, under an 8 KB node limit, so a list built by RPUSH or LPUSH held about twice the room
it used (16.9 bytes an element of used_memory against redis-server's 10.0). Now a node's buffer
ends at the node limit, and a node sealed with more than an eighth of room gives it back.

Streams: an entry's ID took a flag byte and two varints against its node's first ID (the seq
often two bytes at a thousand entries a millisecond), and a node sealed by shrinking its buffer
left the room the next node had been given as a hole behind it: 13.6 bytes an entry of
used_memory for `XADD c * f v:<i>`, 14.5-15 of RSS. Now an ID is a step from the entry before
(one byte in the same millisecond), and a full node moves to a block of its size while its
buffer carries on to the next node."""
from test_small_objects import used_memory

N = 200_000
BATCH = 1000


def build(conn, push):
    for start in range(0, N, BATCH):
        reply = conn.call(push, "c", *["m:%d" % i for i in range(start, start + BATCH)])
        assert reply.value == start + BATCH, reply


def per_element(srv, push):
    with srv.connect(timeout=60) as c:
        used0 = used_memory(c)
        build(c, push)
        used = (used_memory(c) - used0) / N
        usage = c.call("MEMORY", "USAGE", "c", "SAMPLES", "0").value / N
        first, last = c.call("LINDEX", "c", 0).value, c.call("LINDEX", "c", -1).value
        assert c.call("DEL", "c").value == 1
    ends = ["m:0", "m:%d" % (N - 1)]
    assert [bytes(e).decode() for e in (first, last)] == (ends if push == "RPUSH" else ends[::-1])
    return used, usage


def test_large_lists_cost_no_more_than_redis(servers):
    for push in ("RPUSH", "LPUSH"):
        mine, usage = per_element(servers["blinkdb"], push)
        theirs, _ = per_element(servers["redis"], push)
        # redis-server: 10.0 bytes an element; BlinkDB 9.0 (16.9 before).
        assert mine <= theirs, (push, mine, theirs)
        # MEMORY USAGE answers what the list costs (issue 42: within 10%).
        assert abs(usage - mine) <= 0.10 * mine, (push, usage, mine)


def test_nodes_of_an_entry_fill_give_back_their_room(blinkdb):
    """Under list-max-listpack-size 128 a node is full at 128 entries, wherever its buffer's
    doubling stood: the room is given back when the next node starts."""
    with blinkdb.connect(timeout=60) as conn:
        assert conn.call("CONFIG", "SET", "list-max-listpack-size", "128").value in ("OK", b"OK")
        used0 = used_memory(conn)
        build(conn, "RPUSH")
        used = (used_memory(conn) - used0) / N
    # 128 entries of 9-11 bytes: 1,150-1,400 bytes a node, 1,563 nodes; a node's 40-byte slot.
    # Doubled buffers left 1,024-2,048 of room on many nodes (about 15 bytes an element).
    assert used < 11.5, used


def stream_per_entry(srv):
    with srv.connect(timeout=60) as c:
        used0 = used_memory(c)
        for start in range(0, N, BATCH):
            replies = c.pipeline([("XADD", "c", "*", "f", "v:%d" % i)
                                  for i in range(start, start + BATCH)])
            assert not any(r.is_error() for r in replies), replies[0]
        used = (used_memory(c) - used0) / N
        usage = c.call("MEMORY", "USAGE", "c", "SAMPLES", "0").value / N
        first = c.call("XRANGE", "c", "-", "+", "COUNT", 1).value
        last = c.call("XREVRANGE", "c", "+", "-", "COUNT", 1).value
        assert c.call("XLEN", "c").value == N
        assert c.call("DEL", "c").value == 1
    return used, usage, first, last


def test_large_streams_cost_well_under_redis(servers):
    mine, usage, first, last = stream_per_entry(servers["blinkdb"])
    theirs, _, _, _ = stream_per_entry(servers["redis"])
    # redis-server 20.7 bytes an entry; BlinkDB 11.7 now, 13.6 before (0.66 of Redis's).
    assert mine <= 0.6 * theirs, (mine, theirs)
    assert abs(usage - mine) <= 0.10 * mine, (usage, mine)
    # The first and the last entry read back as written (IDs decoded from the steps).
    for entry, value in ((first, "v:0"), (last, "v:%d" % (N - 1))):
        (_, ((_, eid), (_, fields))), = entry
        assert [bytes(f).decode() for _, f in fields] == ["f", value], eid
