"""TLS test helpers: Redis's test certificates, server flags, client contexts."""

import os
import socket
import ssl
import subprocess
import time

import redis
from redis.backoff import NoBackoff
from redis.retry import Retry

from server import ServerProcess, free_port


def make_certs(directory):
    """Certificates shaped like Redis's utils/gen-test-certs.sh makes for its
    suite (tests/tls/ under `directory`: a CA; server, client and generic
    certificates it signed, with the same key-usage restrictions), plus a
    second CA and a client certificate it signed. Made here with openssl, so
    the integration stage needs no Redis source."""
    tls = os.path.join(directory, "tests", "tls")
    os.makedirs(tls, exist_ok=True)

    def ssl_cmd(cwd, *args):
        subprocess.run(["openssl", *args], cwd=cwd, check=True, capture_output=True)

    # A named group's parameters (instant, where `openssl dhparam` takes half a
    # minute): read and checked, not used by rustls's ECDHE-only suites.
    ssl_cmd(tls, "genpkey", "-genparam", "-algorithm", "DH", "-pkeyopt", "dh_param:ffdhe2048",
            "-out", "redis.dh")
    with open(os.path.join(tls, "openssl.cnf"), "w") as f:
        f.write("[ server_cert ]\nkeyUsage = digitalSignature, keyEncipherment\n"
                "nsCertType = server\n"
                "[ client_cert ]\nkeyUsage = digitalSignature, keyEncipherment\n"
                "nsCertType = client\n")
    ssl_cmd(tls, "req", "-x509", "-new", "-nodes", "-sha256", "-newkey", "rsa:2048",
            "-keyout", "ca.key", "-days", "30",
            "-subj", "/O=Redis Test/CN=Certificate Authority", "-out", "ca.crt")
    for name, cn, ext in (("server", "Server-only", "server_cert"),
                          ("client", "Client-only", "client_cert"),
                          ("redis", "Generic-cert", None)):
        ssl_cmd(tls, "req", "-new", "-nodes", "-sha256", "-newkey", "rsa:2048",
                "-keyout", f"{name}.key", "-subj", f"/O=Redis Test/CN={cn}",
                "-out", f"{name}.csr")
        extra = ["-extfile", "openssl.cnf", "-extensions", ext] if ext else []
        ssl_cmd(tls, "x509", "-req", "-sha256", "-in", f"{name}.csr", "-CA", "ca.crt",
                "-CAkey", "ca.key", "-CAserial", "ca.txt", "-CAcreateserial",
                "-days", "30", *extra, "-out", f"{name}.crt")
    other = os.path.join(tls, "other")
    os.makedirs(other, exist_ok=True)
    ssl_cmd(other, "req", "-x509", "-new", "-nodes", "-newkey", "rsa:2048",
            "-keyout", "ca.key", "-days", "30", "-subj", "/O=Other/CN=Other CA",
            "-out", "ca.crt")
    ssl_cmd(other, "req", "-new", "-nodes", "-newkey", "rsa:2048", "-keyout", "client.key",
            "-subj", "/O=Other/CN=Other client", "-out", "client.csr")
    # X.509 v3 (extensions given), so that it is refused for its issuer alone.
    ssl_cmd(other, "x509", "-req", "-in", "client.csr", "-CA", "ca.crt", "-CAkey", "ca.key",
            "-CAcreateserial", "-days", "30", "-extfile", "../openssl.cnf",
            "-extensions", "client_cert", "-out", "client.crt")
    return tls


def make_expired_client(tls):
    """A client certificate signed by the CA of make_certs whose validity ended
    in 2020 (openssl ca takes explicit dates, x509 -req does not)."""
    exp = os.path.join(tls, "expired")
    os.makedirs(exp, exist_ok=True)
    with open(os.path.join(exp, "ca.cnf"), "w") as f:
        # Extensions make it X.509 v3, so that it is refused for its dates alone.
        f.write("[ ca ]\ndefault_ca = ca\n[ ca ]\ndatabase = index.txt\nnew_certs_dir = .\n"
                "serial = serial\ndefault_md = sha256\npolicy = any\nx509_extensions = ext\n"
                "[ any ]\ncommonName = supplied\n"
                "[ ext ]\nbasicConstraints = CA:FALSE\nkeyUsage = digitalSignature\n")
    open(os.path.join(exp, "index.txt"), "w").close()
    with open(os.path.join(exp, "serial"), "w") as f:
        f.write("1000\n")
    for args in (["req", "-new", "-nodes", "-newkey", "rsa:2048", "-keyout", "client.key",
                  "-subj", "/O=Redis Test/CN=Expired client", "-out", "client.csr"],
                 ["ca", "-batch", "-config", "ca.cnf", "-cert", "../ca.crt", "-keyfile",
                  "../ca.key", "-in", "client.csr", "-out", "client.crt", "-notext",
                  "-startdate", "20200101000000Z", "-enddate", "20200201000000Z"]):
        subprocess.run(["openssl", *args], cwd=exp, check=True, capture_output=True)
    return "expired/client"


def server_flags(tls, tls_port, **extra):
    flags = {
        "tls-port": tls_port,
        "tls-cert-file": f"{tls}/server.crt",
        "tls-key-file": f"{tls}/server.key",
        "tls-ca-cert-file": f"{tls}/ca.crt",
        "tls-client-cert-file": f"{tls}/client.crt",
        "tls-client-key-file": f"{tls}/client.key",
    }
    flags.update(extra)
    out = []
    for k, v in flags.items():
        out += [f"--{k}", str(v)]
    return out


def context(tls, cert="client", ca=None):
    ctx = ssl.create_default_context(cafile=ca or f"{tls}/ca.crt")
    ctx.check_hostname = False
    if cert:
        ctx.load_cert_chain(f"{tls}/{cert}.crt", f"{tls}/{cert}.key")
    return ctx


def tls_socket(tls, port, cert="client", timeout=10.0):
    raw = socket.create_connection(("127.0.0.1", port), timeout=timeout)
    return context(tls, cert).wrap_socket(raw)


def client(tls, port, cert="client", **kwargs):
    opts = dict(ssl_ca_certs=f"{tls}/ca.crt", ssl_check_hostname=False)
    if cert:
        opts.update(ssl_certfile=f"{tls}/{cert}.crt", ssl_keyfile=f"{tls}/{cert}.key")
    # No retries: a refused handshake is what some tests expect.
    return redis.Redis(port=port, ssl=True, socket_timeout=10, retry=Retry(NoBackoff(), 0),
                       **opts, **kwargs)


def wait_log(srv, text, timeout=15.0):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if text in srv.log_text():
            return
        time.sleep(0.05)
    raise AssertionError(f"no {text!r} in the log:\n{srv.log_text()}")


def start_pair(binary, oracle_bin, tmp_path, tls, **extra):
    """BlinkDB and redis-server, each with a plain port and a TLS port."""
    out = {}
    for name, b in (("blinkdb", binary), ("redis", oracle_bin)):
        port = free_port()
        srv = ServerProcess(b, str(tmp_path / name), server_flags(tls, port, **extra))
        srv.tls_port = port
        out[name] = srv
    return out
