// ioredis discovering its master through Sentinel and surviving a failover (issue 22).
// Run by tests/integration/test_failover.py, not by `node --test` (it needs a Sentinel):
//   node sentinel_failover.js <sentinel port> <master name>
// Writes `ioredis:<n>` keys one after another (each awaited: a write ioredis retries across
// the failover is one write) until a line arrives on stdin, then writes `ioredis:final`,
// reads it back, and prints one JSON line: writes acknowledged, errors seen, the value read,
// and the port of the server it talks to by then.
"use strict";

const Redis = require("ioredis");

const [sentinelPort, name] = process.argv.slice(2);
const client = new Redis({
  sentinels: [{ host: "127.0.0.1", port: Number(sentinelPort) }],
  name,
  sentinelRetryStrategy: () => 100,
  retryStrategy: () => 100,
  maxRetriesPerRequest: null,
  // A READONLY reply (a demoted master) makes ioredis reconnect through Sentinel.
  reconnectOnError: (err) => err.message.startsWith("READONLY"),
});

// Connection errors while the master is down are expected: ioredis retries.
client.on("error", () => {});

let stop = false;
process.stdin.on("data", () => {
  stop = true;
});

async function main() {
  let acked = 0;
  let errors = 0;
  await client.set("ioredis:start", "1");
  console.log("ready");
  while (!stop) {
    try {
      await client.set(`ioredis:${acked}`, String(acked));
      acked += 1;
    } catch (e) {
      errors += 1;
    }
    await new Promise((r) => setTimeout(r, 5));
  }
  await client.set("ioredis:final", "ok");
  const final = await client.get("ioredis:final");
  const port = client.stream ? client.stream.remotePort : null;
  console.log(JSON.stringify({ acked, errors, final, port }));
  client.disconnect();
  process.stdin.destroy();
}

main().catch((e) => {
  console.log(JSON.stringify({ error: String(e) }));
  process.exit(1);
});
