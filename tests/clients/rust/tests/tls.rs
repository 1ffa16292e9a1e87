//! redis-rs over TLS (the `tls-rustls` feature, `rediss://`) against BLINKDB_TLS_PORT, with
//! and without a client certificate (run.sh's server has tls-auth-clients optional); the
//! server's certificate is checked against the CA, its IP address included. Without
//! BLINKDB_TLS_DIR (a server of the caller's without TLS) the tests return at once.

use redis::{ClientTlsConfig, Commands, TlsCertificates};

fn client(with_cert: bool, ca: &str) -> Option<redis::Client> {
    let dir = std::env::var("BLINKDB_TLS_DIR").ok()?;
    let _ = rustls::crypto::ring::default_provider().install_default();
    let host = std::env::var("BLINKDB_HOST").unwrap_or_else(|_| "127.0.0.1".into());
    let port = std::env::var("BLINKDB_TLS_PORT").expect("BLINKDB_TLS_PORT");
    let read = |name: &str| std::fs::read(format!("{dir}/{name}")).expect(name);
    let certs = TlsCertificates {
        client_tls: with_cert.then(|| ClientTlsConfig {
            client_cert: read("client.crt"),
            client_key: read("client.key"),
        }),
        root_cert: Some(read(ca)),
    };
    Some(redis::Client::build_with_tls(format!("rediss://{host}:{port}/"), certs).expect("client"))
}

fn round_trip(with_cert: bool) {
    let Some(client) = client(with_cert, "ca.crt") else {
        return;
    };
    let mut con = client.get_connection().expect("TLS connection");
    let key = format!("clients:rust:tls:{with_cert}");
    let big = vec![7u8; 300_000];
    let mut pipe = redis::pipe();
    for i in 0..200 {
        pipe.set(format!("{key}:{i}"), i).ignore();
    }
    pipe.set(format!("{key}:big"), &big).ignore();
    pipe.get(format!("{key}:big"));
    let (back,): (Vec<u8>,) = pipe.query(&mut con).expect("pipeline");
    assert_eq!(back, big);
    let v: i64 = con.get(format!("{key}:199")).expect("get");
    assert_eq!(v, 199);
    let keys: Vec<String> = (0..200).map(|i| format!("{key}:{i}")).collect();
    let _: i64 = con.del(&keys).expect("del");
    let _: i64 = con.del(format!("{key}:big")).expect("del");
}

#[test]
fn with_client_certificate() {
    round_trip(true);
}

#[test]
fn without_client_certificate() {
    round_trip(false);
}

#[test]
fn wrong_ca_is_refused() {
    let Some(client) = client(true, "client.crt") else {
        return;
    };
    assert!(client.get_connection().is_err());
}
