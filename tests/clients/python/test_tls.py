"""redis-py over TLS (ssl=True): the server's TLS port (run.sh's server has one, with
tls-auth-clients optional), with and without a client certificate; the server's certificate
is checked against the CA, hostname included."""

import os

import pytest
import redis

from conftest import HOST

TLS_DIR = os.environ.get("BLINKDB_TLS_DIR", "")
TLS_PORT = int(os.environ.get("BLINKDB_TLS_PORT", "0"))
pytestmark = pytest.mark.skipif(not TLS_DIR, reason="BLINKDB_TLS_DIR not set: no TLS server")


def tls_client(cert):
    opts = dict(ssl=True, ssl_ca_certs=f"{TLS_DIR}/ca.crt", ssl_cert_reqs="required")
    if cert:
        opts.update(ssl_certfile=f"{TLS_DIR}/client.crt", ssl_keyfile=f"{TLS_DIR}/client.key")
    return redis.Redis(host=HOST, port=TLS_PORT, socket_timeout=10, **opts)


@pytest.mark.parametrize("cert", [True, False], ids=["client-cert", "no-client-cert"])
def test_commands_pipeline_and_pubsub_over_tls(cert):
    r = tls_client(cert)
    assert r.ping()
    key = f"py:tls:{cert}"
    assert r.set(key, b"\x00secret\r\n")
    assert r.get(key) == b"\x00secret\r\n"
    big = os.urandom(300_000)
    pipe = r.pipeline(transaction=False)
    for i in range(200):
        pipe.set(f"{key}:{i}", i)
    pipe.set(f"{key}:big", big)
    pipe.get(f"{key}:big")
    assert pipe.execute()[-1] == big
    p = r.pubsub()
    p.subscribe(f"{key}:chan")
    assert p.get_message(timeout=5)["type"] == "subscribe"
    assert tls_client(cert).publish(f"{key}:chan", "hello") == 1
    msg = p.get_message(timeout=5)
    assert msg["data"] == b"hello"
    p.close()
    r.delete(key, f"{key}:big", *[f"{key}:{i}" for i in range(200)])
    r.close()


def test_wrong_ca_is_refused():
    """A client trusting another CA refuses the server's certificate."""
    other = redis.Redis(host=HOST, port=TLS_PORT, socket_timeout=10, ssl=True,
                        ssl_ca_certs=f"{TLS_DIR}/client.crt", ssl_cert_reqs="required")
    with pytest.raises(redis.ConnectionError):
        other.ping()
