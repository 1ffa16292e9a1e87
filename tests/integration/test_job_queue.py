"""Real job-queue software end to end (issue 20): RQ 3 (BLMOVE/BRPOPLPUSH-free LMOVE pops,
hashes, sorted-set registries, Lua, MULTI pipelines) enqueues 1,000 jobs that two worker
processes complete, jobs that fail and are retried, and a job whose worker is killed mid-job,
which RQ's maintenance moves to the failed registry and which is requeued and completed.
Run against BlinkDB and, as the reference that the test itself is right, redis-server 7.
The 1,000 jobs run in RQ's SimpleWorker (in the worker process: the default worker forks a
work horse per job, which made this test take 90 s per server on 2 cores); the killed job runs
in the default forking worker."""

import os
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
