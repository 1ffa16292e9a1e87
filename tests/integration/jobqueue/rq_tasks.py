"""Job functions the RQ workers of test_job_queue.py import (they run in worker processes)."""

import os
import time

import redis


def add(a, b):
    return a + b


def flaky(counter_key, fail_times):
    """Fails its first `fail_times` runs (counted in the server), then succeeds."""
    conn = redis.Redis.from_url(os.environ["JOBQUEUE_URL"])
    runs = conn.incr(counter_key)
    if runs <= fail_times:
        raise RuntimeError(f"planned failure {runs}")
    return runs


def slow(started_key, seconds_key):
    """Sleeps for the seconds the server holds at `seconds_key` (the test shortens it)."""
    conn = redis.Redis.from_url(os.environ["JOBQUEUE_URL"])
    conn.set(started_key, "1")
    time.sleep(float(conn.get(seconds_key)))
    return "finished"
