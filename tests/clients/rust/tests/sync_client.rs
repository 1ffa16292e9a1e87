//! redis-rs synchronous `Connection` with default settings (RESP2).

use std::time::Duration;

use blinkdb_clients_rust::{all_bytes_value, server_url};
use redis::{Commands, Connection, ErrorKind, RedisError, ServerErrorKind};

const PREFIX: &str = "clients:rust:sync:";

fn connect() -> Connection {
    redis::Client::open(server_url())
        .expect("valid url")
        .get_connection()
        .expect("connect")
}

fn key(name: &str) -> String {
    format!("{PREFIX}{name}")
}

fn assert_server_error(err: RedisError, message: &str) {
    assert_eq!(
        err.kind(),
        ErrorKind::Server(ServerErrorKind::ResponseError),
        "{err:?}"
    );
    assert_eq!(err.code(), Some("ERR"));
    assert_eq!(err.detail(), Some(message));
}

#[test]
fn binary_values_round_trip() {
    let mut con = connect();
    let value = all_bytes_value();
    let () = con.set(key("bin"), &value).unwrap();
    let got: Vec<u8> = con.get(key("bin")).unwrap();
    assert_eq!(got, value);
    let mut binary_key = key("").into_bytes();
    binary_key.extend_from_slice(b"\0\r\nkey\xff");
    let () = con.set(&binary_key, b"\r\n").unwrap();
    let got: Vec<u8> = con.get(&binary_key).unwrap();
    assert_eq!(got, b"\r\n");
}

#[test]
fn mset_mget_every_byte() {
    let mut con = connect();
    let pairs: Vec<(String, Vec<u8>)> = (0..=255u8)
        .map(|b| (key(&format!("byte:{b}")), vec![b]))
        .collect();
    let () = con.mset(&pairs).unwrap();
    let mut keys: Vec<String> = pairs.iter().map(|(k, _)| k.clone()).collect();
    keys.push(key("missing"));
    let values: Vec<Option<Vec<u8>>> = con.mget(&keys).unwrap();
    let expected: Vec<Option<Vec<u8>>> = (0..=255u8)
        .map(|b| Some(vec![b]))
        .chain(std::iter::once(None))
        .collect();
    assert_eq!(values, expected);
}

#[test]
fn expire_ttl_and_pexpire() {
    let mut con = connect();
    let () = con.set(key("ttl"), "v").unwrap();
    assert_eq!(con.ttl::<_, i64>(key("ttl")).unwrap(), -1);
    assert_eq!(con.ttl::<_, i64>(key("never-set")).unwrap(), -2);
    assert!(con.expire::<_, bool>(key("ttl"), 100).unwrap());
    let ttl: i64 = con.ttl(key("ttl")).unwrap();
    assert!((99..=100).contains(&ttl), "TTL {ttl}");
    let () = con.set(key("short"), "v").unwrap();
    assert!(con.pexpire::<_, bool>(key("short"), 100).unwrap());
    std::thread::sleep(Duration::from_millis(250));
    assert_eq!(con.get::<_, Option<String>>(key("short")).unwrap(), None);
}

#[test]
fn pipeline_of_1000_commands() {
    let mut con = connect();
    let mut pipe = redis::pipe();
    for i in 0..1000 {
        pipe.incr(key(&format!("pipe:{}", i % 10)), 1);
    }
    let replies: Vec<i64> = pipe.query(&mut con).unwrap();
    let expected: Vec<i64> = (0..1000).map(|i| i / 10 + 1).collect();
    assert_eq!(replies, expected);
    let keys: Vec<String> = (0..10).map(|i| key(&format!("pipe:{i}"))).collect();
    let () = con.del(&keys).unwrap();
}

#[test]
fn incr_and_errors() {
    let mut con = connect();
    let () = con.del(key("n")).unwrap();
    assert_eq!(con.incr::<_, _, i64>(key("n"), 1).unwrap(), 1);
    assert_eq!(con.incr::<_, _, i64>(key("n"), -5).unwrap(), -4);
    let () = con.set(key("text"), "abc").unwrap();
    let err = con.incr::<_, _, i64>(key("text"), 1).unwrap_err();
    assert_server_error(err, "value is not an integer or out of range");
    let err = redis::cmd("GET").query::<()>(&mut con).unwrap_err();
    assert_server_error(err, "wrong number of arguments for 'get' command");
    // The connection stays usable after error replies.
    assert_eq!(con.get::<_, String>(key("text")).unwrap(), "abc");
}

#[test]
fn bloom_commands_through_bf_helpers() {
    let mut con = connect();
    let bloom = key("bloom");
    let () = con.del(&bloom).unwrap();
    let () = con.bf_reserve(&bloom, 0.01, 1000).unwrap();
    assert!(con.bf_add::<_, _, bool>(&bloom, "apple").unwrap());
    assert!(!con.bf_add::<_, _, bool>(&bloom, "apple").unwrap());
    assert!(con.bf_exists::<_, _, bool>(&bloom, "apple").unwrap());
    assert!(!con.bf_exists::<_, _, bool>(&bloom, "pear").unwrap());
    let info: std::collections::HashMap<String, redis::bloom::BloomFilterInfoTypeResponse> =
        con.bf_info(&bloom).unwrap();
    assert_eq!(*info["Capacity"], 1000.0);
    assert_eq!(*info["Number of filters"], 1.0);
    assert_eq!(*info["Number of items inserted"], 1.0);
    assert_eq!(*info["Expansion rate"], 2.0);
    assert!(*info["Size"] > 0.0);
    let err = con.bf_reserve::<_, ()>(&bloom, 0.01, 1000).unwrap_err();
    assert_server_error(err, "item exists");
}

#[test]
fn atomic_pipeline_and_watch() {
    let mut con = connect();
    let (set, n): (String, i64) = redis::pipe()
        .atomic()
        .set(key("tx"), 10)
        .incr(key("tx"), 1)
        .query(&mut con)
        .unwrap();
    assert_eq!((set.as_str(), n), ("OK", 11));
    // A WATCHed key changed by another connection: EXEC answers nil.
    let mut other = connect();
    redis::cmd("WATCH").arg(key("tx")).exec(&mut con).unwrap();
    let () = other.set(key("tx"), "changed").unwrap();
    let aborted: Option<(String,)> = redis::pipe()
        .atomic()
        .set(key("tx"), "mine")
        .query(&mut con)
        .unwrap();
    assert_eq!(aborted, None);
    let value: String = con.get(key("tx")).unwrap();
    assert_eq!(value, "changed");
}

#[test]
fn collections_round_trip() {
    let mut con = connect();
    let n: i64 = con.hset_multiple(key("h"), &[("a", "1"), ("b", "2")]).map(|()| 2).unwrap();
    assert_eq!(n, 2);
    let h: std::collections::HashMap<String, String> = con.hgetall(key("h")).unwrap();
    assert_eq!(h.get("a").map(String::as_str), Some("1"));
    assert_eq!(h.len(), 2);
    let added: i64 = con.sadd(key("s"), &["x", "y", "3"]).unwrap();
    assert_eq!(added, 3);
    let mut members: Vec<String> = con.smembers(key("s")).unwrap();
    members.sort();
    assert_eq!(members, ["3", "x", "y"]);
    let added: i64 = con.zadd_multiple(key("z"), &[(1.5, "m1"), (-2.0, "m2")]).unwrap();
    assert_eq!(added, 2);
    let z: Vec<(String, f64)> = con.zrange_withscores(key("z"), 0, -1).unwrap();
    assert_eq!(z, vec![("m2".to_string(), -2.0), ("m1".to_string(), 1.5)]);
    let len: i64 = con.rpush(key("l"), &["a", "b", "c"]).unwrap();
    assert_eq!(len, 3);
    let popped: Option<(String, String)> = con.blpop(&[key("none"), key("l")], 1.0).unwrap();
    assert_eq!(popped, Some((key("l"), "a".to_string())));
    let none: Option<(String, String)> = con.blpop(key("empty"), 0.05).unwrap();
    assert_eq!(none, None);
}

#[test]
fn acl_user_with_username_and_password() {
    let mut admin = connect();
    let user = "clients-rust";
    let () = redis::cmd("ACL")
        .arg(&[
            "SETUSER", user, "reset", "on", ">secret", "+get", "+set", "+ping",
        ])
        .arg(format!("~{PREFIX}acl:*"))
        .query(&mut admin)
        .unwrap();
    // redis://user:pass@host:port/ makes redis-rs send AUTH user pass on connect.
    let url = server_url().replacen("redis://", &format!("redis://{user}:secret@"), 1);
    let result = (|| {
        let mut con = redis::Client::open(url)?.get_connection()?;
        let () = con.set(key("acl:k"), "v")?;
        assert_eq!(con.get::<_, String>(key("acl:k"))?, "v");
        let denied = [
            (
                redis::cmd("DEL")
                    .arg(key("acl:k"))
                    .query::<()>(&mut con)
                    .unwrap_err(),
                "this user has no permissions to run the 'del' command",
            ),
            (
                con.get::<_, ()>("outside").unwrap_err(),
                "this user has no permissions to access one of the keys used as arguments",
            ),
        ];
        for (err, detail) in denied {
            assert_eq!(
                err.kind(),
                ErrorKind::Server(ServerErrorKind::NoPerm),
                "{err:?}"
            );
            assert_eq!(err.detail(), Some(detail));
        }
        Ok::<_, RedisError>(())
    })();
    let () = redis::cmd("ACL")
        .arg(&["DELUSER", user])
        .query(&mut admin)
        .unwrap();
    let () = admin.del(key("acl:k")).unwrap();
    result.unwrap();
}
