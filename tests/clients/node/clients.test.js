// ioredis 6 with default options (RESP3 via HELLO 3, INFO ready check) against BLINKDB_HOST/BLINKDB_PORT.
"use strict";

const { test, before, after } = require("node:test");
const assert = require("node:assert/strict");
const { execFileSync } = require("node:child_process");
const { Redis, ReplyError } = require("ioredis");

const host = process.env.BLINKDB_HOST || "127.0.0.1";
const port = Number(process.env.BLINKDB_PORT || "6379");
const prefix = "clients:node:";

let redis;

before(() => {
  redis = new Redis(port, host);
});

after(async () => {
  const keys = await redis.keys(prefix + "*");
  if (keys.length > 0) await redis.del(...keys);
  await redis.quit();
});

const sleep = (ms) => new Promise((resolve) => setTimeout(resolve, ms));

function allBytesValue() {
  const all = Buffer.from([...Array(256).keys()]);
  return Buffer.concat([all, Buffer.from("\r\n\0\r\n$-1\r\n"), all]);
}

test("default options negotiate RESP3", async () => {
  // HELLO without a version reports the protocol the connection already speaks.
  const hello = await redis.call("HELLO");
  const fields = Array.isArray(hello) ? Object.fromEntries(pairs(hello)) : hello;
  assert.equal(fields.proto, 3);
});

function pairs(flat) {
  const out = [];
  for (let i = 0; i < flat.length; i += 2) out.push([flat[i], flat[i + 1]]);
  return out;
}

test("binary values round-trip", async () => {
  const value = allBytesValue();
  assert.equal(await redis.set(prefix + "bin", value), "OK");
  assert.deepEqual(await redis.getBuffer(prefix + "bin"), value);
  const binaryKey = Buffer.concat([Buffer.from(prefix), Buffer.from([0, 13, 10, 0xff])]);
  await redis.set(binaryKey, "\r\n");
  assert.equal(await redis.get(binaryKey), "\r\n");
});

test("MSET/MGET of every byte value", async () => {
  const args = [];
  const keys = [];
  for (let b = 0; b < 256; b++) {
    keys.push(`${prefix}byte:${b}`);
    args.push(`${prefix}byte:${b}`, Buffer.from([b]));
  }
  assert.equal(await redis.mset(...args), "OK");
  const values = await redis.mgetBuffer(...keys, prefix + "missing");
  for (let b = 0; b < 256; b++) assert.deepEqual(values[b], Buffer.from([b]));
  assert.equal(values[256], null);
});

test("EXPIRE/TTL and a key gone after PEXPIRE 100 ms", async () => {
  await redis.set(prefix + "ttl", "v");
  assert.equal(await redis.ttl(prefix + "ttl"), -1);
  assert.equal(await redis.ttl(prefix + "missing"), -2);
  assert.equal(await redis.expire(prefix + "ttl", 100), 1);
  const ttl = await redis.ttl(prefix + "ttl");
  assert.ok(ttl >= 99 && ttl <= 100, `TTL ${ttl}`);
  await redis.set(prefix + "short", "v");
  assert.equal(await redis.pexpire(prefix + "short", 100), 1);
  await sleep(250);
  assert.equal(await redis.get(prefix + "short"), null);
});

// ioredis writes a pipeline whole before it reads its replies: requests and replies
// outgrow the socket buffers, so the server must keep reading while its replies wait.
test("whole pipelines of 300k GETs, three times", async () => {
  const value = "v".repeat(100);
  await redis.set(prefix + "pipe:big", value);
  for (let round = 0; round < 3; round++) {
    const pipeline = redis.pipeline();
    for (let i = 0; i < 300000; i++) pipeline.get(prefix + "pipe:big");
    const results = await pipeline.exec();
    assert.equal(results.length, 300000);
    assert.deepEqual(results[0], [null, value]);
    assert.deepEqual(results[299999], [null, value]);
  }
});

test("pipeline of 1000 commands", async () => {
  const pipeline = redis.pipeline();
  for (let i = 0; i < 1000; i++) pipeline.incr(`${prefix}pipe:${i % 10}`);
  const results = await pipeline.exec();
  assert.equal(results.length, 1000);
  results.forEach(([err, value], i) => {
    assert.equal(err, null);
    assert.equal(value, Math.floor(i / 10) + 1);
  });
});

test("INCR and errors surface as ReplyError", async () => {
  assert.equal(await redis.incr(prefix + "n"), 1);
  assert.equal(await redis.incrby(prefix + "n", -5), -4);
  await redis.set(prefix + "text", "abc");
  await assert.rejects(redis.incr(prefix + "text"), (err) => {
    assert.ok(err instanceof ReplyError, `${err} is not a ReplyError`);
    assert.equal(err.message, "ERR value is not an integer or out of range");
    return true;
  });
  await assert.rejects(redis.call("GET"), (err) => {
    assert.ok(err instanceof ReplyError, `${err} is not a ReplyError`);
    assert.equal(err.message, "ERR wrong number of arguments for 'get' command");
    return true;
  });
});

test("BF.RESERVE/BF.ADD/BF.EXISTS/BF.INFO through call()", async () => {
  const key = prefix + "bloom";
  assert.equal(await redis.call("BF.RESERVE", key, "0.01", "1000"), "OK");
  assert.equal(await redis.call("BF.ADD", key, "apple"), 1);
  assert.equal(await redis.call("BF.ADD", key, "apple"), 0);
  assert.equal(await redis.call("BF.EXISTS", key, "apple"), 1);
  assert.equal(await redis.call("BF.EXISTS", key, "pear"), 0);
  const reply = await redis.call("BF.INFO", key);
  const info = Array.isArray(reply) ? Object.fromEntries(pairs(reply)) : reply;
  assert.equal(info["Capacity"], 1000);
  assert.equal(info["Number of filters"], 1);
  assert.equal(info["Number of items inserted"], 1);
  assert.equal(info["Expansion rate"], 2);
  assert.ok(info["Size"] > 0, `Size ${info["Size"]}`);
  await assert.rejects(redis.call("BF.RESERVE", key, "0.01", "1000"), /^ReplyError: ERR item exists$/);
});

test("multi() runs atomically, and a WATCHed change aborts exec()", async () => {
  const key = prefix + "tx";
  const replies = await redis.multi().set(key, "10").incr(key).get(key).exec();
  assert.deepEqual(replies, [[null, "OK"], [null, 11], [null, "11"]]);
  const other = new Redis({ host: redis.options.host, port: redis.options.port });
  try {
    await redis.watch(key);
    await other.set(key, "changed");
    assert.equal(await redis.multi().set(key, "mine").exec(), null);
    assert.equal(await redis.get(key), "changed");
  } finally {
    other.disconnect();
  }
  await assert.rejects(redis.multi().set(key, "x").call("NOSUCHCMD").exec(), /EXECABORT/);
  assert.equal(await redis.get(key), "changed");
});

test("subscriber mode: subscribe, psubscribe and messages in publish order", async () => {
  const channel = prefix + "news";
  const sub = new Redis({ host: redis.options.host, port: redis.options.port });
  try {
    const got = [];
    const pgot = [];
    sub.on("message", (ch, message) => got.push([ch, message]));
    sub.on("pmessage", (pattern, ch, message) => pgot.push([pattern, ch, message]));
    assert.equal(await sub.subscribe(channel), 1);
    assert.equal(await sub.psubscribe(prefix + "n*"), 2);
    assert.equal(await redis.publish(channel, "hello"), 2);
    for (let i = 0; i < 100; i++) await redis.publish(channel, String(i));
    for (let i = 0; i < 100 && got.length < 101; i++) await sleep(20);
    assert.deepEqual(got[0], [channel, "hello"]);
    assert.deepEqual(pgot[0], [prefix + "n*", channel, "hello"]);
    assert.deepEqual(got.slice(1).map((m) => m[1]), [...Array(100).keys()].map(String));
    assert.deepEqual(await redis.pubsub("NUMSUB", channel), [channel, 1]);
  } finally {
    sub.disconnect();
  }
});

test("reconnects after the server restarts", async () => {
  const restart = (process.env.BLINKDB_RESTART_CMD || "").split(/\s+/).filter(Boolean);
  assert.ok(restart.length > 0, "BLINKDB_RESTART_CMD is not set; the reconnection test needs it");
  await redis.set(prefix + "durable", "kept");
  execFileSync(restart[0], restart.slice(1), { stdio: "inherit" });
  // Default options reconnect and queue commands offline, so this must not reject.
  assert.equal(await redis.get(prefix + "durable"), "kept");
  assert.equal(redis.status, "ready");
});

test("collections round-trip, blocking pop included", async () => {
  assert.equal(await redis.hset(prefix + "h", { a: "1", b: "2" }), 2);
  assert.deepEqual(await redis.hgetall(prefix + "h"), { a: "1", b: "2" });
  assert.equal(await redis.hincrby(prefix + "h", "a", 41), 42);
  assert.equal(await redis.sadd(prefix + "s", "x", "y", "3"), 3);
  assert.deepEqual((await redis.smembers(prefix + "s")).sort(), ["3", "x", "y"]);
  assert.equal(await redis.zadd(prefix + "z", 1.5, "m1", -2, "m2"), 2);
  assert.deepEqual(await redis.zrange(prefix + "z", 0, -1, "WITHSCORES"), ["m2", "-2", "m1", "1.5"]);
  assert.deepEqual(await redis.zpopmin(prefix + "z"), ["m2", "-2"]);
  assert.equal(await redis.rpush(prefix + "l", "a", "b", "c"), 3);
  assert.deepEqual(await redis.lrange(prefix + "l", 0, -1), ["a", "b", "c"]);
  // A second connection blocks; this one's push serves it.
  const waiter = new Redis(port, host);
  try {
    const popped = waiter.blpop(prefix + "q", 5);
    await sleep(100);
    assert.equal(await redis.rpush(prefix + "q", "job"), 1);
    assert.deepEqual(await popped, [prefix + "q", "job"]);
    assert.equal(await waiter.blpop(prefix + "q", 0.05), null);
  } finally {
    waiter.disconnect();
  }
});

test("an ACL user with username+password: allowed commands run, others get NOPERM", async () => {
  const user = "clients-node";
  await redis.call("ACL", "SETUSER", user, "reset", "on", ">secret", `~${prefix}acl:*`, "+get", "+set", "+ping");
  const limited = new Redis({ port, host, username: user, password: "secret", lazyConnect: true });
  try {
    await limited.connect();
    assert.equal(await limited.set(prefix + "acl:k", "v"), "OK");
    assert.equal(await limited.get(prefix + "acl:k"), "v");
    await assert.rejects(limited.del(prefix + "acl:k"), (err) => {
      assert.ok(err instanceof ReplyError, `${err} is not a ReplyError`);
      assert.equal(err.message, "NOPERM this user has no permissions to run the 'del' command");
      return true;
    });
    await assert.rejects(limited.get(prefix + "outside"), (err) => {
      assert.equal(err.message, "NOPERM this user has no permissions to access one of the keys used as arguments");
      return true;
    });
  } finally {
    limited.disconnect();
    await redis.del(prefix + "acl:k");
    await redis.call("ACL", "DELUSER", user);
  }
});
