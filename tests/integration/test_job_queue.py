"""Real job-queue software end to end (issue 20): RQ 3 (BLMOVE/BRPOPLPUSH-free LMOVE pops,
hashes, sorted-set registries, Lua, MULTI pipelines) enqueues 1,000 jobs that two worker
processes complete, jobs that fail and are retried, and a job whose worker is killed mid-job,
which RQ's maintenance moves to the failed registry and which is requeued and completed.
Run against BlinkDB and, as the reference that the test itself is right, redis-server 7.
The 1,000 jobs run in RQ's SimpleWorker (in the worker process: the default worker forks a
work horse per job, which made this test take 90 s per server on 2 cores); the killed job runs
in the default forking worker.
BullMQ (Node, pinned in jobqueue/bullmq/package.json; its Lua scripts by EVALSHA with
cmsgpack, lists, sorted sets, hashes, streams for its events, blocking BZPOPMIN) does the
same: 1,000 jobs, jobs that fail twice and succeed on their third attempt, and a job whose
worker is SIGKILLed mid-job, which another worker's stalled-job check takes back and completes."""

import json
import os
import shutil
import signal
import subprocess
import sys
import time

import pytest
import redis
from rq import Queue, Retry
from rq.job import Job, JobStatus
from rq.registry import FailedJobRegistry, StartedJobRegistry

HERE = os.path.dirname(os.path.abspath(__file__))
TASKS = os.path.join(HERE, "jobqueue")
sys.path.insert(0, TASKS)
import rq_tasks  # noqa: E402


SIMPLE = ("--worker-class", "rq.worker.SimpleWorker")


def worker(url, *extra, burst=True):
    env = dict(os.environ, PYTHONPATH=TASKS, JOBQUEUE_URL=url)
    cmd = [sys.executable, "-m", "rq.cli", "worker", "--url", url, "--with-scheduler",
           "--logging_level", "WARNING", *extra]
    if burst:
        cmd.append("--burst")
    return subprocess.Popen(cmd, env=env, start_new_session=True,
                            stdout=subprocess.PIPE, stderr=subprocess.STDOUT)


def wait_for(pred, timeout, what):
    deadline = time.time() + timeout
    while not pred():
        assert time.time() < deadline, f"timed out waiting for {what}"
        time.sleep(0.1)


@pytest.fixture(params=["blinkdb", "redis"])
def server(request):
    return request.getfixturevalue("blinkdb" if request.param == "blinkdb" else "oracle")


def test_rq_jobs_retries_and_a_killed_worker(server):
    url = f"redis://127.0.0.1:{server.port}/0"
    conn = redis.Redis.from_url(url)
    conn.flushall()
    q = Queue("default", connection=conn)

    jobs = [q.enqueue(rq_tasks.add, i, i) for i in range(1000)]
    flaky = [q.enqueue(rq_tasks.flaky, f"runs:{i}", 2, retry=Retry(max=3)) for i in range(5)]
    workers = [worker(url, *SIMPLE) for _ in range(2)]
    for w in workers:
        out, _ = w.communicate(timeout=300)
        assert w.returncode == 0, out.decode(errors="replace")[-3000:]
    # Retries are scheduled at once (no interval); a last burst picks up any left queued.
    for _ in range(3):
        if all(Job.fetch(j.id, connection=conn).get_status() == JobStatus.FINISHED for j in flaky):
            break
        out, _ = worker(url, *SIMPLE).communicate(timeout=120)
    for i, job in enumerate(jobs):
        job = Job.fetch(job.id, connection=conn)
        assert job.get_status() == JobStatus.FINISHED, (i, job.get_status())
        assert job.return_value() == 2 * i
    for job in flaky:
        job = Job.fetch(job.id, connection=conn)
        assert job.get_status() == JobStatus.FINISHED
        assert job.return_value() == 3  # failed twice, then ran a third time
    assert q.count == 0

    # A worker killed (with its work horse) in the middle of a job.
    conn.set("slow:seconds", "60")
    victim = q.enqueue(rq_tasks.slow, "slow:started", "slow:seconds", job_timeout=120)
    w = worker(url, burst=False)
    wait_for(lambda: conn.get("slow:started") == b"1", 30, "the slow job to start")
    os.killpg(w.pid, signal.SIGKILL)
    w.wait()
    started = StartedJobRegistry(queue=q)
    assert victim.id in started.get_job_ids()
    # RQ's maintenance finds the abandoned job (as if its deadline had passed) and fails it.
    started.cleanup(timestamp=time.time() + 10_000)
    failed = FailedJobRegistry(queue=q)
    assert victim.id in failed.get_job_ids()
    failed.requeue(victim.id)
    # Requeued, the same job runs to the end now (quickly).
    conn.set("slow:seconds", "0")
    out, _ = worker(url).communicate(timeout=120)
    assert Job.fetch(victim.id, connection=conn).get_status() == JobStatus.FINISHED, out[-2000:]
    assert Job.fetch(victim.id, connection=conn).return_value() == "finished"


BULLMQ = os.path.join(TASKS, "bullmq")


@pytest.fixture(scope="module")
def bullmq():
    """The pinned BullMQ, installed by npm from its lock file (once)."""
    if shutil.which("node") is None or shutil.which("npm") is None:
        pytest.skip("BullMQ needs node and npm")
    if not os.path.isdir(os.path.join(BULLMQ, "node_modules", "bullmq")):
        subprocess.run(["npm", "ci", "--no-audit", "--no-fund"], cwd=BULLMQ, check=True,
                       timeout=600)
    return os.path.join(BULLMQ, "bullmq_jobs.js")


def bullmq_run(script, mode, port, *extra, timeout=300):
    out = subprocess.run(["node", script, mode, str(port), *extra], cwd=BULLMQ, timeout=timeout,
                         stdout=subprocess.PIPE, stderr=subprocess.STDOUT)
    assert out.returncode == 0, out.stdout.decode(errors="replace")[-3000:]
    return out.stdout.decode()


def bullmq_worker(script, port, *extra):
    return subprocess.Popen(["node", script, "work", str(port), *extra], cwd=BULLMQ,
                            start_new_session=True, stdout=subprocess.PIPE,
                            stderr=subprocess.STDOUT)


def test_bullmq_jobs_retries_and_a_killed_worker(server, bullmq):
    conn = redis.Redis(port=server.port)
    conn.flushall()
    bullmq_run(bullmq, "enqueue", server.port)
    workers = [bullmq_worker(bullmq, server.port, "burst") for _ in range(2)]
    for w in workers:
        out, _ = w.communicate(timeout=300)
        text = out.decode(errors="replace")
        assert w.returncode == 0 and "error" not in text.lower(), text[-3000:]
    summary = json.loads(bullmq_run(bullmq, "check", server.port))
    jobs = summary["jobs"]
    for i in range(1000):
        assert jobs[f"add-{i}"]["state"] == "completed", (i, jobs[f"add-{i}"])
        assert jobs[f"add-{i}"]["value"] == 2 * i
    for i in range(5):
        job = jobs[f"flaky-{i}"]
        # Failed twice (retried by BullMQ's backoff), then done on its third attempt.
        assert (job["state"], job["value"], job["attempts"]) == ("completed", 3, 3), job
        assert conn.get(f"runs:{i}") == b"3"
    assert summary["counts"]["completed"] == 1005
    assert summary["counts"]["failed"] == summary["counts"]["waiting"] == 0

    # A worker killed in the middle of a job: its lock runs out, and another worker's
    # stalled-job check moves the job back to wait and runs it to the end.
    conn.set("slow:seconds", "60")
    bullmq_run(bullmq, "enqueue-slow", server.port)
    w = bullmq_worker(bullmq, server.port)
    wait_for(lambda: conn.get("slow:started") == b"1", 30, "the slow job to start")
    os.killpg(w.pid, signal.SIGKILL)
    w.wait()
    conn.set("slow:seconds", "0")
    out, _ = bullmq_worker(bullmq, server.port, "burst").communicate(timeout=120)
    summary = json.loads(bullmq_run(bullmq, "check", server.port))
    slow = summary["jobs"]["slow"]
    assert (slow["state"], slow["value"], slow["stalled"]) == ("completed", "slow done", 1), \
        (slow, out.decode(errors="replace")[-2000:])
    assert summary["counts"]["completed"] == 1006
    assert summary["counts"]["active"] == 0
