//! Starts the compiled `blinkdb` on an ephemeral port and a unix socket and
//! talks to it with the `redis` crate (redis-rs) and with raw RESP.

use redis::Commands;
use std::io::{Read, Write};
use std::net::{TcpListener, TcpStream};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

struct Server {
    child: Child,
    port: u16,
    socket: std::path::PathBuf,
    _dir: tempfile::TempDir,
}

impl Server {
    fn start() -> Server {
        let dir = tempfile::tempdir().expect("temp dir");
        // An ephemeral port the OS picked; released just before the server binds it.
        let port = TcpListener::bind("127.0.0.1:0")
            .unwrap()
            .local_addr()
            .unwrap()
            .port();
        let socket = dir.path().join("blinkdb.sock");
        let child = Command::new(env!("CARGO_BIN_EXE_blinkdb"))
            .args([
                "--port",
                &port.to_string(),
                "--bind",
                "127.0.0.1",
                "--appendonly",
                "no",
            ])
            .arg("--dir")
            .arg(dir.path())
            .arg("--unixsocket")
            .arg(&socket)
            .args(["--unixsocketperm", "700"])
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .expect("start blinkdb");
        let server = Server {
            child,
            port,
            socket,
            _dir: dir,
        };
        let deadline = Instant::now() + Duration::from_secs(10);
        while TcpStream::connect(("127.0.0.1", port)).is_err() || !server.socket.exists() {
            assert!(Instant::now() < deadline, "blinkdb did not start");
            std::thread::sleep(Duration::from_millis(20));
        }
        server
    }

    fn tcp_client(&self) -> redis::Connection {
        redis::Client::open(format!("redis://127.0.0.1:{}/", self.port))
            .unwrap()
            .get_connection()
            .unwrap()
    }
}

impl Drop for Server {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

#[test]
fn redis_rs_over_tcp() {
    let server = Server::start();
    let mut c = server.tcp_client();
    let value: Vec<u8> = (0..=255u8).collect();
    let _: () = c.set(b"bin\r\n\0key", &value).unwrap();
    let got: Vec<u8> = c.get(b"bin\r\n\0key").unwrap();
    assert_eq!(got, value);
    let _: () = c.mset(&[("a", "1"), ("b", "2")]).unwrap();
    let got: Vec<Option<String>> = c.mget(&["a", "b", "missing"]).unwrap();
    assert_eq!(got, vec![Some("1".into()), Some("2".into()), None]);
    assert_eq!(c.incr::<_, _, i64>("a", 41).unwrap(), 42);
    let err = c.incr::<_, _, i64>("bin\r\n\0key", 1).unwrap_err();
    assert_eq!(err.code(), Some("ERR"));
    assert!(
        err.to_string()
            .contains("value is not an integer or out of range"),
        "{err}"
    );
    let _: () = c.set_ex("ttl", "v", 100).unwrap();
    let ttl: i64 = c.ttl("ttl").unwrap();
    assert!((99..=100).contains(&ttl), "{ttl}");
    let mut pipe = redis::pipe();
    for i in 0..1000 {
        pipe.cmd("SET").arg(format!("p{i}")).arg(i).ignore();
    }
    pipe.cmd("DBSIZE");
    let (size,): (i64,) = pipe.query(&mut c).unwrap();
    assert_eq!(size, 1000 + 4);
}

#[test]
fn redis_rs_over_unix_socket() {
    let server = Server::start();
    let mode = std::fs::metadata(&server.socket).unwrap();
    assert_eq!(
        std::os::unix::fs::PermissionsExt::mode(&mode.permissions()) & 0o777,
        0o700
    );
    let client = redis::Client::open(format!("redis+unix://{}", server.socket.display())).unwrap();
    let mut c = client.get_connection().unwrap();
    let _: () = c.set("k", "over unix").unwrap();
    assert_eq!(c.get::<_, String>("k").unwrap(), "over unix");
    // The same keyspace is visible over TCP.
    assert_eq!(
        server.tcp_client().get::<_, String>("k").unwrap(),
        "over unix"
    );
}

#[test]
fn raw_resp_pipeline_gets_all_replies_in_order() {
    let server = Server::start();
    let mut s = TcpStream::connect(("127.0.0.1", server.port)).unwrap();
    s.set_read_timeout(Some(Duration::from_secs(5))).unwrap();
    let mut req = Vec::new();
    for i in 0..100 {
        req.extend_from_slice(
            format!(
                "*3\r\n$3\r\nSET\r\n$2\r\nk{}\r\n$1\r\n{}\r\n",
                i % 10,
                i % 10
            )
            .as_bytes(),
        );
    }
    req.extend_from_slice(b"PING\r\n*2\r\n$3\r\nGET\r\n$2\r\nk7\r\n");
    s.write_all(&req).unwrap();
    let expected: Vec<u8> = [&b"+OK\r\n".repeat(100)[..], b"+PONG\r\n$1\r\n7\r\n"].concat();
    let mut got = vec![0u8; expected.len()];
    s.read_exact(&mut got).unwrap();
    assert_eq!(got, expected);
    s.write_all(b"*1\r\n$-5\r\n").unwrap();
    let mut err = String::new();
    s.read_to_string(&mut err).unwrap();
    assert_eq!(err, "-ERR Protocol error: invalid bulk length\r\n");
}
