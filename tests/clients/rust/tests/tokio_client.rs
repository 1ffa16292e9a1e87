//! redis-rs on tokio: `MultiplexedConnection` with default settings (RESP2).

use std::collections::HashMap;
use std::time::Duration;

use blinkdb_clients_rust::{all_bytes_value, server_url};
use redis::aio::MultiplexedConnection;
use redis::bloom::BloomFilterInfoTypeResponse;
use redis::{AsyncCommands, ErrorKind, RedisError, ServerErrorKind};

const PREFIX: &str = "clients:rust:tokio:";

async fn connect() -> MultiplexedConnection {
    redis::Client::open(server_url())
        .expect("valid url")
        .get_multiplexed_async_connection()
        .await
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

#[tokio::test]
async fn binary_values_round_trip() {
    let mut con = connect().await;
    let value = all_bytes_value();
    let () = con.set(key("bin"), &value).await.unwrap();
    let got: Vec<u8> = con.get(key("bin")).await.unwrap();
    assert_eq!(got, value);
}

#[tokio::test]
async fn mset_mget_every_byte() {
    let mut con = connect().await;
    let pairs: Vec<(String, Vec<u8>)> = (0..=255u8)
        .map(|b| (key(&format!("byte:{b}")), vec![b]))
        .collect();
    let () = con.mset(&pairs).await.unwrap();
    let mut keys: Vec<String> = pairs.iter().map(|(k, _)| k.clone()).collect();
    keys.push(key("missing"));
    let values: Vec<Option<Vec<u8>>> = con.mget(&keys).await.unwrap();
    let expected: Vec<Option<Vec<u8>>> = (0..=255u8)
        .map(|b| Some(vec![b]))
        .chain(std::iter::once(None))
        .collect();
    assert_eq!(values, expected);
}

#[tokio::test]
async fn expire_ttl_and_pexpire() {
    let mut con = connect().await;
    let () = con.set(key("ttl"), "v").await.unwrap();
    assert!(con.expire::<_, bool>(key("ttl"), 100).await.unwrap());
    let ttl: i64 = con.ttl(key("ttl")).await.unwrap();
    assert!((99..=100).contains(&ttl), "TTL {ttl}");
    let () = con.set(key("short"), "v").await.unwrap();
    assert!(con.pexpire::<_, bool>(key("short"), 100).await.unwrap());
    tokio::time::sleep(Duration::from_millis(250)).await;
    assert_eq!(
        con.get::<_, Option<String>>(key("short")).await.unwrap(),
        None
    );
}

#[tokio::test]
async fn pipeline_of_1000_commands() {
    let mut con = connect().await;
    let keys: Vec<String> = (0..10).map(|i| key(&format!("pipe:{i}"))).collect();
    let () = con.del(&keys).await.unwrap();
    let mut pipe = redis::pipe();
    for i in 0..1000 {
        pipe.incr(&keys[i % 10], 1);
    }
    let replies: Vec<i64> = pipe.query_async(&mut con).await.unwrap();
    let expected: Vec<i64> = (0..1000).map(|i| i / 10 + 1).collect();
    assert_eq!(replies, expected);
}

#[tokio::test]
async fn incr_and_errors() {
    let mut con = connect().await;
    let () = con.del(key("n")).await.unwrap();
    assert_eq!(con.incr::<_, _, i64>(key("n"), 1).await.unwrap(), 1);
    let () = con.set(key("text"), "abc").await.unwrap();
    let err = con.incr::<_, _, i64>(key("text"), 1).await.unwrap_err();
    assert_server_error(err, "value is not an integer or out of range");
    let err = redis::cmd("GET")
        .query_async::<()>(&mut con)
        .await
        .unwrap_err();
    assert_server_error(err, "wrong number of arguments for 'get' command");
    assert_eq!(con.incr::<_, _, i64>(key("n"), 1).await.unwrap(), 2);
}

#[tokio::test]
async fn bloom_commands_through_bf_helpers() {
    let mut con = connect().await;
    let bloom = key("bloom");
    let () = con.del(&bloom).await.unwrap();
    let () = con.bf_reserve(&bloom, 0.01, 1000).await.unwrap();
    assert!(con.bf_add::<_, _, bool>(&bloom, "apple").await.unwrap());
    assert!(con.bf_exists::<_, _, bool>(&bloom, "apple").await.unwrap());
    assert!(!con.bf_exists::<_, _, bool>(&bloom, "pear").await.unwrap());
    let info: HashMap<String, BloomFilterInfoTypeResponse> = con.bf_info(&bloom).await.unwrap();
    assert_eq!(*info["Capacity"], 1000.0);
    assert_eq!(*info["Number of items inserted"], 1.0);
    let err = con
        .bf_reserve::<_, ()>(&bloom, 0.01, 1000)
        .await
        .unwrap_err();
    assert_server_error(err, "item exists");
}
