//! [`SimSession`]: one process's session on the simulated ensemble, as zooid's
//! [`ZooKeeper`] interface. A request of a given-up generation is not sent
//! (`Verdict::Closed`); every other one goes through the simulated network, bounded by the
//! request limit (no reply in time: `Verdict::Unknown`); one that finds its session gone
//! reports the generation lost, as the real session layer does.

use std::sync::{Arc, Weak};
use std::time::Duration;

use futures_util::future::BoxFuture;
use futures_util::FutureExt;
use tokio::sync::watch;
use tokio::time::Instant;
use zooid::error::{Result, ZooidError};
use zooid::zk::catch_up::CatchUp;
use zooid::zk::{
    Acl, Confirmed, ConnectOptions, Create, Event, EventKind, Failure, InDoubt, MultiFailed, Op,
    OpResult, Reply, ServerVersion, SessionStatus, Stat, TreeWatch, Verdict, Watch, WeakZk,
    WriteOn, ZooKeeper,
};

use super::faults::{between, chance};
use super::sessions::Life;
use super::{Fail, Req, Resp, World};

/// One process's session (all its generations) on the simulated ensemble.
pub struct SimSession {
    world: World,
    client: usize,
    options: ConnectOptions,
    status: watch::Receiver<SessionStatus>,
    /// Dropped with the last handle: ends [`ZooKeeper::ended`].
    alive: watch::Sender<()>,
    me: Weak<SimSession>,
    catch_up: CatchUp,
}

impl SimSession {
    /// Opens client `client` of process `process`, connected, generation 1.
    pub fn open(world: &World, client: usize, process: usize) -> Arc<SimSession> {
        let status = world.lock().open_client(client, process);
        let options = ConnectOptions {
            session_timeout: status.borrow().timeout,
            server_version: ServerVersion::V3_5,
            ..ConnectOptions::default()
        };
        let (alive, _) = watch::channel(());
        Arc::new_cyclic(|me| SimSession {
            world: world.clone(),
            client,
            options,
            status,
            alive,
            me: me.clone(),
            catch_up: CatchUp::default(),
        })
    }

    /// Sends `req` on `generation` and waits for its reply, bounded by the request limit.
    fn send(
        &self,
        generation: u64,
        req: Req,
    ) -> BoxFuture<'static, std::result::Result<Resp, Fail>> {
        self.send_on(WriteOn::generation(generation), req)
    }

    /// [`SimSession::send`] on `on`: a write bound to a connection is submitted only on that
    /// connection, as the real client's session task writes it (else `Verdict::NotSent`, unsent).
    fn send_on(
        &self,
        on: WriteOn,
        req: Req,
    ) -> BoxFuture<'static, std::result::Result<Resp, Fail>> {
        let generation = on.generation;
        let limit = self.request_limit();
        let mut ended = false;
        if self.crashed() {
            return dead();
        }
        let rx = {
            let mut state = self.world.lock();
            let current = state
                .clients
                .get(&self.client)
                .map(|c| (c.generation, c.lost || c.closed, c.conn));
            match current {
                Some((current, false, conn)) if current == generation => {
                    if on.connection.is_some_and(|bound| bound != conn) {
                        ended = true;
                        None
                    } else {
                        Some(state.submit(self.client, req))
                    }
                }
                _ => None,
            }
        };
        self.world.poke();
        let world = self.world.clone();
        let client = self.client;
        async move {
            let Some(rx) = rx else {
                // Refused locally at once, as the real session does; the pause lets the world
                // run (a caller retrying without backoff would otherwise never yield).
                tokio::time::sleep(Duration::from_millis(1)).await;
                if ended {
                    return Err(Fail::whole(
                        Verdict::NotSent,
                        "the connection the write was planned on ended; the request was not sent",
                    ));
                }
                return Err(Fail::whole(
                    Verdict::Closed,
                    "session generation given up; the request was not sent",
                ));
            };
            let outcome = match tokio::time::timeout(limit, rx).await {
                Ok(Ok(outcome)) => outcome,
                Ok(Err(_)) => Err(Fail::whole(Verdict::Unknown, "connection loss")),
                Err(_) => Err(Fail::whole(
                    Verdict::Unknown,
                    "no reply within the request limit",
                )),
            };
            if let Err(fail) = &outcome {
                if fail.index.is_none() && matches!(fail.failure.verdict, Verdict::Expired) {
                    report_lost(&world, client, generation, "request found the session gone").await;
                }
            }
            outcome
        }
        .boxed()
    }
}

impl SimSession {
    /// Whether this client's process crashed. Its tasks are gone in a real process; here a
    /// task it spawned (an operation its caller had given up, a counter's `next`) may still be
    /// polled, and must neither reach the servers nor draw from the seed's random numbers.
    fn crashed(&self) -> bool {
        let state = self.world.lock();
        state.clients.get(&self.client).is_some_and(|c| c.crashed)
    }
}

/// What a crashed process's request or confirmation comes to: nothing, ever.
fn dead<T: Send + 'static>() -> BoxFuture<'static, T> {
    std::future::pending().boxed()
}

async fn report_lost(world: &World, client: usize, generation: u64, why: &str) {
    let mut status = {
        let mut state = world.lock();
        let current = state.clients.get(&client).map(|c| c.generation);
        if current == Some(generation) {
            state.give_up(client, why);
        }
        state.subscribe(client)
    };
    world.poke();
    if let Some(status) = status.as_mut() {
        let newer = status.wait_for(|s| s.generation > generation);
        let _ = tokio::time::timeout(Duration::from_secs(5), newer).await;
    }
}

fn unexpected() -> Failure {
    Failure::new(Verdict::Refused, "unexpected reply")
}

fn whole(fail: Fail) -> Failure {
    fail.failure
}

fn watch_of(rx: Option<tokio::sync::oneshot::Receiver<Event>>) -> Watch {
    Watch::new(
        async move {
            match rx {
                Some(rx) => rx.await.unwrap_or(Event {
                    kind: EventKind::Session,
                    path: String::new(),
                }),
                None => std::future::pending().await,
            }
        }
        .boxed(),
    )
}

impl ZooKeeper for SimSession {
    fn status(&self) -> SessionStatus {
        *self.status.borrow()
    }

    fn subscribe(&self) -> watch::Receiver<SessionStatus> {
        self.world
            .lock()
            .subscribe(self.client)
            .unwrap_or_else(|| self.status.clone())
    }

    fn request_limit(&self) -> Duration {
        self.status().timeout.max(Duration::from_millis(500))
    }

    fn connect_string(&self) -> &str {
        "sim:2181"
    }

    fn options(&self) -> &ConnectOptions {
        &self.options
    }

    fn server_version(&self) -> ServerVersion {
        ServerVersion::V3_5
    }

    fn default_acl(&self) -> Vec<Acl> {
        vec![Acl::world(zooid::zk::Perms::ALL)]
    }

    fn losses(&self) -> u64 {
        self.world
            .lock()
            .clients
            .get(&self.client)
            .map_or(0, |c| c.losses)
    }

    fn persistent_watches(&self) -> BoxFuture<'_, Result<bool>> {
        async { Ok(true) }.boxed()
    }

    fn wait_connected(&self, timeout: Duration) -> BoxFuture<'_, Result<SessionStatus>> {
        let mut rx = self.subscribe();
        async move {
            let wait = rx.wait_for(|s| s.state == zooid::zk::ConnectionState::Connected);
            match tokio::time::timeout(timeout, wait).await {
                Ok(Ok(status)) => Ok(*status),
                Ok(Err(_)) => Err(ZooidError::ConnectionLost {
                    category: "sim".into(),
                    reason: "closed".into(),
                }),
                Err(_) => Err(ZooidError::Timeout {
                    what: "connecting to sim".into(),
                    after: timeout,
                }),
            }
        }
        .boxed()
    }

    fn report_lost<'a>(&'a self, generation: u64, why: &'a str) -> BoxFuture<'a, ()> {
        report_lost(&self.world, self.client, generation, why).boxed()
    }

    fn confirm_gone(
        &self,
        generation: u64,
        deadline: Instant,
    ) -> BoxFuture<'_, std::result::Result<Confirmed, InDoubt>> {
        if self.crashed() {
            return dead();
        }
        async move {
            if !self.is_gone_generation(generation) {
                return Err(InDoubt::Live { generation });
            }
            let (sid, unconfirmed, wait) = {
                let mut state = self.world.lock();
                let sid = state
                    .clients
                    .get(&self.client)
                    .and_then(|c| c.generations.get(&generation).copied());
                let p = state.faults.unconfirmed;
                let unconfirmed = chance(&mut state.rng, p);
                let wait = between(
                    &mut state.rng,
                    Duration::from_millis(1),
                    Duration::from_millis(300),
                );
                (sid, unconfirmed, wait)
            };
            let Some(sid) = sid else {
                return Err(InDoubt::Unconfirmed {
                    generation,
                    reason: "never given up".into(),
                });
            };
            // Wipe hook (world/wipe.rs): no server answers while closed to this client.
            let unconfirmed = unconfirmed || self.world.lock().gated(self.client);
            if unconfirmed {
                tokio::time::sleep_until(deadline).await;
                self.world
                    .lock()
                    .log(format!("c{} g{generation} end not confirmed", self.client));
                return Err(InDoubt::Unconfirmed {
                    generation,
                    reason: "no server answered".into(),
                });
            }
            if Instant::now() + wait > deadline {
                tokio::time::sleep_until(deadline).await;
                return Err(InDoubt::Unconfirmed {
                    generation,
                    reason: "deadline".into(),
                });
            }
            tokio::time::sleep(wait).await;
            let mut state = self.world.lock();
            let life = state.sessions.get(&sid).map(|s| s.state);
            let confirmed = match life {
                Some(Life::Expired) | None => Confirmed::Expired,
                Some(Life::Closed) => Confirmed::Closed,
                Some(Life::Alive) => {
                    // Reattached with its id and password, and closed.
                    state.end_session(sid, Life::Closed);
                    Confirmed::Closed
                }
            };
            state.log(format!(
                "c{} g{generation} s{sid:x} confirmed gone: {confirmed:?}",
                self.client
            ));
            Ok(confirmed)
        }
        .boxed()
    }

    fn ended(&self) -> BoxFuture<'static, ()> {
        let mut alive = self.alive.subscribe();
        async move { while alive.changed().await.is_ok() {} }.boxed()
    }

    fn downgrade(&self) -> WeakZk {
        let me = self.me.clone();
        WeakZk::new(move || me.upgrade().map(|s| s as zooid::zk::Zk))
    }

    fn close(self: Arc<Self>) -> BoxFuture<'static, ()> {
        let last = Arc::strong_count(&self) == 1;
        let (world, client) = (self.world.clone(), self.client);
        drop(self);
        async move {
            if !last {
                return;
            }
            let mut state = world.lock();
            let sid = state.clients.get(&client).map(|c| c.session);
            if let Some(sid) = sid {
                state.end_session(sid, Life::Closed);
            }
            if let Some(c) = state.clients.get_mut(&client) {
                c.closed = true;
            }
            state.publish(client);
        }
        .boxed()
    }

    fn catch_up(&self) -> &CatchUp {
        &self.catch_up
    }

    fn served_get<'a>(&'a self, generation: u64, path: &'a str) -> Reply<'a, (Vec<u8>, Stat)> {
        let reply = self.send(generation, Req::Get(path.into(), false));
        async move {
            match reply.await.map_err(whole)? {
                Resp::Data(data, stat, _) => Ok((data, stat)),
                _ => Err(unexpected()),
            }
        }
        .boxed()
    }

    fn served_exists<'a>(&'a self, generation: u64, path: &'a str) -> Reply<'a, Option<Stat>> {
        self.exists_now(generation, path)
    }

    fn exists_now(&self, generation: u64, path: &str) -> Reply<'static, Option<Stat>> {
        let reply = self.send(generation, Req::Exists(path.into(), false));
        async move {
            match reply.await.map_err(whole)? {
                Resp::Exists(stat, _) => Ok(stat),
                _ => Err(unexpected()),
            }
        }
        .boxed()
    }

    fn served_children<'a>(
        &'a self,
        generation: u64,
        path: &'a str,
    ) -> Reply<'a, (Vec<String>, Stat)> {
        let reply = self.send(generation, Req::Children(path.into(), false));
        async move {
            match reply.await.map_err(whole)? {
                Resp::Children(names, stat, _) => Ok((names, stat)),
                _ => Err(unexpected()),
            }
        }
        .boxed()
    }

    fn served_get_acl<'a>(&'a self, generation: u64, path: &'a str) -> Reply<'a, Vec<Acl>> {
        let reply = self.send(generation, Req::GetAcl(path.into()));
        async move {
            match reply.await.map_err(whole)? {
                Resp::Acl(acl) => Ok(acl),
                _ => Err(unexpected()),
            }
        }
        .boxed()
    }

    fn served_get_watched<'a>(
        &'a self,
        generation: u64,
        path: &'a str,
    ) -> Reply<'a, (Vec<u8>, Stat, Watch)> {
        let reply = self.send(generation, Req::Get(path.into(), true));
        async move {
            match reply.await.map_err(whole)? {
                Resp::Data(data, stat, rx) => Ok((data, stat, watch_of(rx))),
                _ => Err(unexpected()),
            }
        }
        .boxed()
    }

    fn served_exists_watched<'a>(
        &'a self,
        generation: u64,
        path: &'a str,
    ) -> Reply<'a, (Option<Stat>, Watch)> {
        let reply = self.send(generation, Req::Exists(path.into(), true));
        async move {
            match reply.await.map_err(whole)? {
                Resp::Exists(stat, rx) => Ok((stat, watch_of(rx))),
                _ => Err(unexpected()),
            }
        }
        .boxed()
    }

    fn served_children_watched<'a>(
        &'a self,
        generation: u64,
        path: &'a str,
    ) -> Reply<'a, (Vec<String>, Stat, Watch)> {
        let reply = self.send(generation, Req::Children(path.into(), true));
        async move {
            match reply.await.map_err(whole)? {
                Resp::Children(names, stat, rx) => Ok((names, stat, watch_of(rx))),
                _ => Err(unexpected()),
            }
        }
        .boxed()
    }

    fn watch_tree<'a>(&'a self, generation: u64, path: &'a str) -> Reply<'a, TreeWatch> {
        let reply = self.send(generation, Req::WatchTree(path.into()));
        async move {
            match reply.await.map_err(whole)? {
                Resp::Tree(rx) => {
                    let rx = Arc::new(tokio::sync::Mutex::new(rx));
                    Ok(TreeWatch::new(move || {
                        let rx = rx.clone();
                        async move {
                            rx.lock().await.recv().await.unwrap_or(Event {
                                kind: EventKind::Session,
                                path: String::new(),
                            })
                        }
                        .boxed()
                    }))
                }
                _ => Err(unexpected()),
            }
        }
        .boxed()
    }

    fn sync<'a>(&'a self, generation: u64, path: &'a str) -> Reply<'a, ()> {
        let reply = self.send(generation, Req::Sync(path.into()));
        async move { reply.await.map(drop).map_err(whole) }.boxed()
    }

    fn create<'a>(
        &'a self,
        generation: u64,
        path: &'a str,
        data: &'a [u8],
        create: &'a Create,
    ) -> Reply<'a, (String, Option<Stat>)> {
        let reply = self.send(
            generation,
            Req::Create(path.into(), data.to_vec(), create.clone()),
        );
        async move {
            match reply.await.map_err(whole)? {
                Resp::Created(path, stat) => Ok((path, stat)),
                _ => Err(unexpected()),
            }
        }
        .boxed()
    }

    fn create_all<'a>(
        &'a self,
        generation: u64,
        path: &'a str,
        acl: Option<&'a [Acl]>,
    ) -> Reply<'a, ()> {
        let reply = self.send(
            generation,
            Req::CreateAll(path.into(), acl.map(<[Acl]>::to_vec)),
        );
        async move { reply.await.map(drop).map_err(whole) }.boxed()
    }

    fn set<'a>(
        &'a self,
        on: WriteOn,
        path: &'a str,
        data: &'a [u8],
        expected: Option<i32>,
    ) -> Reply<'a, Stat> {
        let reply = self.send_on(on, Req::Set(path.into(), data.to_vec(), expected));
        async move {
            match reply.await.map_err(whole)? {
                Resp::Stat(stat) => Ok(stat),
                _ => Err(unexpected()),
            }
        }
        .boxed()
    }

    fn delete<'a>(
        &'a self,
        generation: u64,
        path: &'a str,
        expected: Option<i32>,
    ) -> Reply<'a, ()> {
        let reply = self.send(generation, Req::Delete(path.into(), expected));
        async move { reply.await.map(drop).map_err(whole) }.boxed()
    }

    fn delete_now(&self, generation: u64, path: &str, expected: Option<i32>) -> Reply<'static, ()> {
        let reply = self.send(generation, Req::Delete(path.into(), expected));
        async move { reply.await.map(drop).map_err(whole) }.boxed()
    }

    fn multi(
        &self,
        on: WriteOn,
        ops: Vec<Op>,
    ) -> BoxFuture<'_, std::result::Result<Vec<OpResult>, MultiFailed>> {
        let reply = self.send_on(on, Req::Multi(ops));
        async move {
            match reply.await {
                Ok(Resp::Multi(results)) => Ok(results),
                Ok(_) => Err(MultiFailed {
                    index: None,
                    failure: unexpected(),
                }),
                Err(fail) => Err(MultiFailed {
                    index: fail.index,
                    failure: fail.failure,
                }),
            }
        }
        .boxed()
    }
}
