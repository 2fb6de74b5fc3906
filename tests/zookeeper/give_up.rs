//! A session zooid gave up must be allowed to die on the servers. Confirming its end reattaches
//! with its id and password, and every reattach that reaches a server touches the session there:
//! when the answers never come back (replies lost on the way, a one-way partition), reattaching
//! without pause would keep the given-up session alive for ever, and with it its ephemeral
//! nodes: an election candidate that blocks the successor, a queue lock that holds its item.

use zooid_test_support as support;

use std::time::{Duration, Instant};

use support::{runtime, session_options, FaultProxy, ZkServer};
use zooid::zk::session::ConnectionState;
use zooid::zk::{Create, ZooKeeper};
use zookeeper_client::Client;

#[test]
fn a_given_up_session_whose_replies_are_lost_still_expires_on_the_servers() {
    support::init_tracing();
    let zk = ZkServer::start();
    let proxy = FaultProxy::start(zk.addr());
    runtime().block_on(async {
        let session = zooid::zk::Session::connect(&proxy.connect_string(), &session_options(2_000))
            .await
            .expect("connect");
        let negotiated = session.status().timeout;
        let generation = session.status().generation;
        let path = "/give-up-eph";
        ZooKeeper::create(&session, generation, path, b"", &Create::ephemeral())
            .await
            .expect("create ephemeral");
        let other = Client::connect(&zk.connect_string()).await.expect("direct client");

        let muted_at = Instant::now();
        proxy.mute_replies();
        // Guard: zooid gives the generation up (its client hears nothing back).
        let mut status = session.subscribe();
        let gave_up = tokio::time::timeout(negotiated * 5, async {
            loop {
                let now = *status.borrow_and_update();
                if now.generation > generation || now.state == ConnectionState::Lost {
                    return;
                }
                if status.changed().await.is_err() {
                    return;
                }
            }
        })
        .await;
        assert!(gave_up.is_ok(), "zooid never gave the muted session up");
        let given_up = muted_at.elapsed();

        // The servers must expire it: within a few timeouts of the give-up, the node is gone.
        let limit = negotiated * 6;
        let gone_at = loop {
            if other.check_stat(path).await.expect("exists").is_none() {
                break Some(muted_at.elapsed());
            }
            if muted_at.elapsed() > given_up + limit {
                break None;
            }
            tokio::time::sleep(Duration::from_millis(100)).await;
        };
        let accepted = proxy.stats().accepted;
        eprintln!(
            "given up {given_up:?} after the mute; ephemeral gone: {gone_at:?}; connections through \
             the proxy: {accepted}"
        );
        // Guard: reattaches reached the server through the muted proxy.
        assert!(accepted > 1, "no reattach went through the proxy");
        assert!(
            gone_at.is_some(),
            "the given-up session's ephemeral node was still there {limit:?} after the give-up: \
             reattaching kept the session alive on the server"
        );
        proxy.unmute();
    });
}
