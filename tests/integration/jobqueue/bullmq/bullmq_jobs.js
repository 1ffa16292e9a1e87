// BullMQ end to end, driven by tests/integration/test_job_queue.py:
//   node bullmq_jobs.js enqueue PORT        1,000 jobs adding two numbers and 5 that fail twice
//                                           (attempts 3), then print nothing
//   node bullmq_jobs.js enqueue-slow PORT   one job that sleeps as long as the key slow:seconds says
//   node bullmq_jobs.js work PORT [burst]   a worker (concurrency 8); with burst, exits once the
//                                           queue has nothing waiting, delayed or active
//   node bullmq_jobs.js check PORT          prints a JSON summary of every job's state and result
'use strict';
const { Queue, Worker } = require('bullmq');
const IORedis = require('ioredis');

const [mode, port, burst] = process.argv.slice(2);
const connection = { host: '127.0.0.1', port: Number(port), maxRetriesPerRequest: null };
const NAME = 'jobs';
const sleep = (ms) => new Promise((r) => setTimeout(r, ms));

async function enqueue() {
  const q = new Queue(NAME, { connection });
  const bulk = [];
  for (let i = 0; i < 1000; i++) {
    bulk.push({ name: 'add', data: { a: i, b: i }, opts: { jobId: `add-${i}` } });
  }
  for (let i = 0; i < 1000; i += 100) await q.addBulk(bulk.slice(i, i + 100));
  for (let i = 0; i < 5; i++) {
    await q.add('flaky', { key: `runs:${i}`, failures: 2 },
      { jobId: `flaky-${i}`, attempts: 3, backoff: { type: 'fixed', delay: 10 } });
  }
  await q.close();
}

async function enqueueSlow() {
  const q = new Queue(NAME, { connection });
  await q.add('slow', {}, { jobId: 'slow' });
  await q.close();
}

async function work() {
  const redis = new IORedis(connection);
  const worker = new Worker(NAME, async (job) => {
    switch (job.name) {
      case 'add':
        return job.data.a + job.data.b;
      case 'flaky': {
        const runs = await redis.incr(job.data.key);
        if (runs <= job.data.failures) throw new Error(`flaky run ${runs}`);
        return runs;
      }
      case 'slow': {
        await redis.set('slow:started', '1');
        const secs = Number(await redis.get('slow:seconds')) || 0;
        await sleep(secs * 1000);
        return 'slow done';
      }
      default:
        throw new Error(`unknown job ${job.name}`);
    }
  }, {
    connection,
    concurrency: 8,
    lockDuration: 3000,
    stalledInterval: 1000,
    maxStalledCount: 1,
  });
  worker.on('error', (err) => console.error('worker error:', err));
  if (burst !== 'burst') return; // runs until killed
  const q = new Queue(NAME, { connection });
  for (;;) {
    await sleep(300);
    const c = await q.getJobCounts('waiting', 'active', 'delayed', 'prioritized', 'waiting-children');
    if (Object.values(c).every((n) => n === 0)) break;
  }
  await worker.close();
  await q.close();
  await redis.quit();
}

async function check() {
  const q = new Queue(NAME, { connection });
  const summary = { counts: await q.getJobCounts(), jobs: {} };
  const ids = [...Array(1000).keys()].map((i) => `add-${i}`)
    .concat([...Array(5).keys()].map((i) => `flaky-${i}`), ['slow']);
  for (const id of ids) {
    const job = await q.getJob(id);
    if (!job) continue;
    summary.jobs[id] = {
      state: await job.getState(),
      value: job.returnvalue,
      attempts: job.attemptsMade,
      stalled: job.stalledCounter,
      failed: job.failedReason || null,
    };
  }
  console.log(JSON.stringify(summary));
  await q.close();
}

const modes = { enqueue, 'enqueue-slow': enqueueSlow, work, check };
modes[mode]().catch((err) => {
  console.error(err);
  process.exit(1);
});
