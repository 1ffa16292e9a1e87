//! Reconnection after a server restart, sync then tokio, in one test so that no other test of
//! this binary runs while the server is down.

use blinkdb_clients_rust::{restart_server, server_url};
use redis::{AsyncCommands, Commands};

const PREFIX: &str = "clients:rust:reconnect:";

#[tokio::test]
async fn reconnects_after_server_restart() {
    let client = redis::Client::open(server_url()).unwrap();
    let mut sync_con = client.get_connection().unwrap();
    let mut manager = client.get_connection_manager().await.unwrap();
    let () = sync_con.set(format!("{PREFIX}durable"), "kept").unwrap();

    tokio::task::spawn_blocking(restart_server).await.unwrap();

    // A sync Connection does not reconnect by itself: its next command reports the dropped
    // connection, and the Client then opens a working one.
    let err = redis::cmd("PING")
        .query::<String>(&mut sync_con)
        .unwrap_err();
    assert!(err.is_connection_dropped() || err.is_io_error(), "{err:?}");
    let mut sync_con = client.get_connection().unwrap();
    assert_eq!(
        sync_con
            .get::<_, String>(format!("{PREFIX}durable"))
            .unwrap(),
        "kept"
    );

    // ConnectionManager is redis-rs's reconnecting async connection: a command that meets the
    // dropped connection fails with an I/O error and starts a reconnect in the background.
    let mut attempts = 0;
    let got: String = loop {
        attempts += 1;
        match manager.get(format!("{PREFIX}durable")).await {
            Ok(value) => break value,
            Err(err) if attempts < 20 && (err.is_io_error() || err.is_connection_dropped()) => {
                tokio::time::sleep(std::time::Duration::from_millis(100)).await;
            }
            Err(err) => panic!("ConnectionManager did not reconnect: {err:?}"),
        }
    };
    assert_eq!(got, "kept");
    assert!(attempts <= 2, "took {attempts} attempts");
    let () = manager.del(format!("{PREFIX}durable")).await.unwrap();
}
