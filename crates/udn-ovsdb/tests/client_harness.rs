//! The private ovsdb-server harness itself: readiness, kill, restart on the same files, RSS,
//! ovn-nbctl, drop.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use udn_ovsdb::client::{Client, ClientConfig};
use udn_ovsdb::nb;
use udn_ovsdb::testing::{HarnessError, OvsdbServer, process_alive};

#[tokio::test]
async fn start_kill_restart_keeps_the_database() {
    let mut server = OvsdbServer::start_nb().unwrap();
    assert!(server.is_running());
    assert!(server.socket().exists());
    assert!(server.rss_kib().unwrap() > 0);
    server.nbctl(&["ls-add", "kept"]).unwrap();
    let socket = server.socket().to_owned();
    let pid = server.pid();

    server.kill().unwrap();
    assert!(!server.is_running());
    // A second kill is a no-op.
    server.kill().unwrap();
    let err = server.nbctl(&["--timeout=1", "ls-list"]).unwrap_err();
    assert!(matches!(err, HarnessError::Failed { .. }), "{err:?}");

    server.restart().unwrap();
    assert!(server.is_running());
    assert_ne!(server.pid(), pid);
    assert_eq!(server.socket(), socket);
    assert!(server.nbctl(&["ls-list"]).unwrap().contains("(kept)"));
    // Nothing monitored: the client still connects, with an empty replica.
    let client = Client::connect(ClientConfig::new(server.endpoint(), nb::DATABASE))
        .await
        .unwrap();
    assert!(client.replica().is_empty());
    assert_eq!(client.list_dbs().await.unwrap().len(), 2);
}

#[test]
fn drop_kills_the_daemon_and_removes_the_directory() {
    let server = OvsdbServer::start_nb().unwrap();
    let pid = server.pid();
    let dir = server.dir().to_owned();
    drop(server);
    // Gone, a zombie nobody reaps (PID 1 in containers often does not), or past releasing its
    // memory and files.
    assert!(!process_alive(pid));
    assert!(!dir.exists());
}

#[test]
fn bad_schema_is_a_typed_failure() {
    let err = OvsdbServer::start_schema_text("{\"not\": \"a schema\"}").unwrap_err();
    let HarnessError::Failed {
        command, stderr, ..
    } = &err
    else {
        panic!("{err:?}")
    };
    assert!(command.starts_with("ovsdb-tool create"), "{command}");
    assert!(!stderr.is_empty());
}
