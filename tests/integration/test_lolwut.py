"""LOLWUT against redis-server 7.0.15: the version line, the shape of the
drawings (version 5 is fully determined while no row is disordered, i.e.
with at most 2 rows of squares; version 6 is random but its grid and footer
are not), RESP3's verbatim type, the argument errors, COMMAND INFO/DOCS."""

import re


def both(servers, *args, proto=2):
    replies = []
    for srv in (servers["blinkdb"], servers["redis"]):
        with srv.connect() as c:
            if proto == 3:
                c.call("HELLO", "3")
            r = c.call(*args)
            replies.append((r.kind, r.value))
    return replies


def test_version_line_and_determined_drawings_match_redis(servers):
    cases = [
        ("LOLWUT",),
        ("LOLWUT", "VERSION", "7"),
        ("LOLWUT", "VERSION", "4"),
        ("LOLWUT", "VERSION", "59", "1"),
        ("LOLWUT", "VERSION", "-1"),
        ("LOLWUT", "foo", "bar"),
        ("lolwut", "version", "5", "1", "1", "1"),
        ("LOLWUT", "VERSION", "5", "66", "8", "2"),
        ("LOLWUT", "VERSION", "5", "7", "5", "2"),
        ("LOLWUT", "VERSION", "5", "1000", "200", "2"),
        ("LOLWUT", "VERSION", "5", "-5", "-3", "0"),
        ("LOLWUT", "VERSION", "5", "1001", "201", "1"),
        ("LOLWUT", "VERSION", "49", "20", "3", "1"),
        # Errors: the version, then the drawing's own arguments.
        ("LOLWUT", "VERSION", "x"),
        ("LOLWUT", "VERSION", "5", "x"),
        ("LOLWUT", "VERSION", "5", "1", "1", "y"),
        ("LOLWUT", "VERSION", "6", "1", "z"),
        ("LOLWUT", "VERSION"),
        ("COMMAND", "INFO", "lolwut"),
        ("COMMAND", "DOCS", "lolwut"),
    ]
    for c in cases:
        ours, theirs = both(servers, *c)
        assert ours == theirs, c
    ours, theirs = both(servers, "LOLWUT", "VERSION", "5", "3", "3", "2", proto=3)
    assert ours == theirs and ours[0] == b"="


def shape(text):
    """Version 6's drawing without its random colors: cells per line."""
    lines = text.split("\n")
    cells = [line.count("\x1b[0m") for line in lines[:-3]]
    return cells, lines[-3:]


def test_skyline_grid_and_footer_match_redis(servers):
    for args in ((), ("13", "4"), ("0", "0"), ("1001", "3")):
        (k1, ours), (k2, theirs) = both(servers, "LOLWUT", "VERSION", "6", *args)
        assert k1 == k2 == b"$"
        assert shape(ours.decode()) == shape(theirs.decode()), args
        # Every cell is one of the four colors, nothing else on a line.
        for line in ours.decode().split("\n")[:-3]:
            assert re.fullmatch(r"(\x1b\[0;(30;40|90;100|37;47|97;107)m \x1b\[0m)+", line)
    (_, five), _ = both(servers, "LOLWUT", "VERSION", "5")
    assert five.decode().endswith("\nGeorg Nees - schotter, plotter on paper, 1968. Redis ver. 7.0.15\n")
