//! A write planned on a read goes only on the connection of that read (docs/DESIGN.md, rule 2),
//! and the client checks it where it writes the request, not the session layer ahead of it: a
//! request handed to the client on connection N (the session layer had not noticed anything) and
//! still in the client's queue when the client reconnects is not written on connection N + 1,
//! where the servers may have been restarted, rolled back and restored meanwhile.

use zooid::zk::{Create, Multi, Verdict, Zk, ZooKeeperExt};
use zooid_test_support as support;

use std::time::Duration;

use support::{runtime, session_options, FaultProxy, ZkServer};
use zooid::{ConnectionState, Session};

async fn wait_for(zk: &Zk, what: &str, until: impl Fn(&zooid::SessionStatus) -> bool) {
    let mut rx = zk.subscribe();
    let waited = tokio::time::timeout(Duration::from_secs(20), rx.wait_for(|s| until(s))).await;
    assert!(
        matches!(waited, Ok(Ok(_))),
        "{what}: status {:?}",
        zk.status()
    );
}

/// The client drops its connection and cannot reconnect yet; a `set` and a `multi` planned on
/// the read of connection N are handed to it (they wait in its queue); it reconnects (N + 1).
/// Both fail unsent (`NotSent`) and the node keeps its contents, while an unbound write on the
/// new connection applies. Without the client's check they were written on the new connection
/// and applied (the node read "set on N+1").
#[test]
fn a_write_bound_to_a_connection_is_not_written_after_the_client_reconnected() {
    support::init_tracing();
    let server = ZkServer::start();
    let proxy = FaultProxy::start(server.addr());
    runtime().block_on(async {
        let session = Session::connect(&proxy.connect_string(), &session_options(10000))
            .await
            .unwrap();
        let zk: Zk = session.into_zk();
        let generation = zk.generation();
        zk.create(generation, "/bound", b"old", &Create::persistent())
            .await
            .unwrap();
        // The plan: the read, on connection N.
        let read = zk.read_on();
        let (data, stat) = zk.get(read.generation, "/bound").await.unwrap();
        assert_eq!((data.as_slice(), stat.version), (&b"old"[..], 0));

        // The connection drops; reconnections are held (accepted, not connected upstream).
        proxy.blackhole();
        proxy.close_all();
        wait_for(&zk, "the client noticed the disconnection", |s| {
            s.state == ConnectionState::Suspended
        })
        .await;
        assert_eq!(
            zk.status().connection,
            read.connection,
            "no reconnection yet"
        );

        // Handed to the client while it is disconnected: they wait in its queue.
        let set = tokio::spawn({
            let zk = zk.clone();
            async move { zk.set(read.into(), "/bound", b"set on N+1", Some(0)).await }
        });
        let multi = tokio::spawn({
            let zk = zk.clone();
            async move {
                let mut multi = Multi::new();
                multi.set("/bound", b"multi on N+1", Some(0));
                multi.commit_on(&*zk, read).await
            }
        });
        tokio::time::sleep(Duration::from_millis(300)).await;
        assert!(
            !set.is_finished() && !multi.is_finished(),
            "both wait in the client's queue"
        );

        proxy.heal();
        let set = set.await.unwrap();
        let multi = multi.await.unwrap();
        wait_for(&zk, "reconnected", |s| {
            s.state == ConnectionState::Connected && s.connection > read.connection
        })
        .await;
        let now = zk.status();
        assert_eq!(now.generation, read.generation, "the same session");
        let (data, stat) = zk.get(now.generation, "/bound").await.unwrap();
        assert_eq!(
            (String::from_utf8_lossy(&data).into_owned(), stat.version),
            ("old".to_string(), 0),
            "a write bound to connection {} was written after the reconnection (set: {set:?}, \
             multi: {multi:?})",
            read.connection
        );
        assert_eq!(set.unwrap_err().verdict, Verdict::NotSent);
        let multi = multi.unwrap_err();
        assert_eq!((multi.index, multi.verdict()), (None, Verdict::NotSent));

        // Planned on a read of the new connection, a write goes.
        let read = zk.read_on();
        zk.get(read.generation, "/bound").await.unwrap();
        let stat = zk
            .set(read.into(), "/bound", b"planned on N+1", Some(0))
            .await
            .unwrap();
        assert_eq!(stat.version, 1);
    });
}
