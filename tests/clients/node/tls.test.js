// ioredis over TLS (the `tls` option) against BLINKDB_TLS_PORT, with and without a client
// certificate (run.sh's server has tls-auth-clients optional); the server's certificate is
// checked against the CA, its IP address included.
"use strict";

const { test } = require("node:test");
const assert = require("node:assert/strict");
const fs = require("node:fs");
const { Redis } = require("ioredis");

const host = process.env.BLINKDB_HOST || "127.0.0.1";
const tlsDir = process.env.BLINKDB_TLS_DIR;
const tlsPort = Number(process.env.BLINKDB_TLS_PORT || "0");
const skip = tlsDir ? false : "BLINKDB_TLS_DIR not set: no TLS server";

function tlsClient(withCert, ca = "ca.crt") {
  const tls = { ca: fs.readFileSync(`${tlsDir}/${ca}`) };
  if (withCert) {
    tls.cert = fs.readFileSync(`${tlsDir}/client.crt`);
    tls.key = fs.readFileSync(`${tlsDir}/client.key`);
  }
  return new Redis({ host, port: tlsPort, tls, maxRetriesPerRequest: 0, retryStrategy: () => null });
}

for (const withCert of [true, false]) {
  test(`commands, a pipeline and pub/sub over TLS (client certificate: ${withCert})`, { skip }, async () => {
    const r = tlsClient(withCert);
    const key = `clients:node:tls:${withCert}`;
    assert.equal(await r.ping(), "PONG");
    const big = Buffer.alloc(300000, 7);
    const p = r.pipeline();
    for (let i = 0; i < 200; i++) p.set(`${key}:${i}`, i);
    p.set(`${key}:big`, big);
    p.getBuffer(`${key}:big`);
    const replies = await p.exec();
    assert.ok(replies[replies.length - 1][1].equals(big));
    const sub = tlsClient(withCert);
    const got = new Promise((resolve) => sub.on("message", (_c, m) => resolve(m)));
    await sub.subscribe(`${key}:chan`);
    assert.equal(await r.publish(`${key}:chan`, "hello"), 1);
    assert.equal(await got, "hello");
    await r.del(`${key}:big`, ...[...Array(200).keys()].map((i) => `${key}:${i}`));
    sub.disconnect();
    await r.quit();
  });
}

test("a client trusting another CA refuses the server", { skip }, async () => {
  const r = tlsClient(true, "client.crt");
  r.on("error", () => {});
  await assert.rejects(r.ping());
  r.disconnect();
});
