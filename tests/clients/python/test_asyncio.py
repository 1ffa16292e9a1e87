"""redis-py 8 asyncio client (redis.asyncio) with default settings (RESP3)."""

import asyncio

import pytest
import redis
import redis.asyncio as aredis

from conftest import BINARY_VALUE, HOST, PORT, restart_server

PREFIX = "clients:py:asyncio:"


def run_with_client(scenario):
    """Runs one async scenario on a fresh default client and deletes its keys afterwards."""

    async def wrapper():
        r = aredis.Redis(host=HOST, port=PORT)
        try:
            await scenario(r, PREFIX)
        finally:
            keys = await r.keys(PREFIX + "*")
            if keys:
                await r.delete(*keys)
            await r.aclose()

    asyncio.run(wrapper())


def test_binary_values_round_trip():
    async def scenario(r, p):
        assert await r.set(p + "bin", BINARY_VALUE) is True
        assert await r.get(p + "bin") == BINARY_VALUE
        await r.mset({p + f"byte:{b}": bytes([b]) for b in range(256)})
        assert await r.mget([p + f"byte:{b}" for b in range(256)]) == [bytes([b]) for b in range(256)]

    run_with_client(scenario)


def test_mset_mget():
    async def scenario(r, p):
        assert await r.mset({p + "a": b"1", p + "b": b""}) is True
        assert await r.mget([p + "a", p + "missing", p + "b"]) == [b"1", None, b""]

    run_with_client(scenario)


def test_expire_ttl_and_pexpire():
    async def scenario(r, p):
        await r.set(p + "ttl", "v")
        assert await r.expire(p + "ttl", 100) is True
        assert 99 <= await r.ttl(p + "ttl") <= 100
        await r.set(p + "short", "v")
        assert await r.pexpire(p + "short", 100) is True
        await asyncio.sleep(0.25)
        assert await r.get(p + "short") is None

    run_with_client(scenario)


def test_pipeline_of_1000_commands():
    async def scenario(r, p):
        async with r.pipeline(transaction=False) as pipe:
            for i in range(1000):
                pipe.incr(p + f"pipe:{i % 10}")
            replies = await pipe.execute()
        assert len(replies) == 1000
        assert replies == [i // 10 + 1 for i in range(1000)]

    run_with_client(scenario)


def test_incr_and_errors():
    async def scenario(r, p):
        assert await r.incr(p + "n") == 1
        await r.set(p + "text", "abc")
        with pytest.raises(redis.ResponseError, match="^value is not an integer or out of range$"):
            await r.incr(p + "text")
        with pytest.raises(redis.ResponseError, match="^wrong number of arguments for 'get' command$"):
            await r.execute_command("GET")
        assert await r.incr(p + "n") == 2

    run_with_client(scenario)


def test_bloom_commands_through_bf_helper():
    async def scenario(r, p):
        bf = r.bf()
        key = p + "bloom"
        await bf.reserve(key, 0.01, 1000)
        assert await bf.add(key, "apple") == 1
        assert await bf.exists(key, "apple") == 1
        assert await bf.exists(key, "pear") == 0
        info = await bf.info(key)
        assert (info.capacity, info.insertedNum, info.filterNum, info.expansionRate) == (1000, 1, 1, 2)

    run_with_client(scenario)


def test_reconnects_after_server_restart():
    async def scenario(r, p):
        await r.set(p + "durable", "kept")
        await asyncio.to_thread(restart_server)
        assert await r.ping() is True
        assert await r.get(p + "durable") == b"kept"

    run_with_client(scenario)
