//! [`ZooKeeper`] on a real ensemble: each request of the interface as `zookeeper_client` sends
//! it, on the client of the named session generation, bounded by the request limit, its error
//! read once by [`classify`].

use std::sync::Arc;
use std::time::Duration;

use futures_util::future::BoxFuture;
use futures_util::FutureExt;
use tokio::sync::watch;
use tokio::time::Instant;
use zookeeper_client::{
    Acls, AddWatchMode, Client, CreateMode, CreateOptions, Error as ZkError, EventType,
    MultiWriteError, MultiWriteResult, WatchedEvent,
};

use super::acl::Acl;
use super::classify::{classify, describe, is_gone, Verdict};
use super::fate::{Confirmed, InDoubt};
use super::interface::{
    Create, Event, EventKind, Failure, Mode, MultiFailed, Op, OpResult, Reply, Stat, TreeWatch,
    Watch, ZooKeeper,
};
use super::options::{ConnectOptions, ServerVersion};
use super::session::{Session, SessionStatus};
use super::status::WriteOn;
use crate::error::Result;

impl From<&ZkError> for Failure {
    fn from(err: &ZkError) -> Self {
        Failure::new(classify(err), describe(err))
    }
}

fn failure(err: ZkError) -> Failure {
    Failure::from(&err)
}

fn event(event: WatchedEvent) -> Event {
    let kind = match event.event_type {
        EventType::NodeCreated => EventKind::Created,
        EventType::NodeDeleted => EventKind::Deleted,
        EventType::NodeDataChanged => EventKind::DataChanged,
        EventType::NodeChildrenChanged => EventKind::ChildrenChanged,
        EventType::Session => EventKind::Session,
    };
    Event {
        kind,
        path: event.path,
    }
}

fn create_mode(mode: Mode) -> CreateMode {
    match mode {
        Mode::Persistent => CreateMode::Persistent,
        Mode::Ephemeral => CreateMode::Ephemeral,
        Mode::PersistentSequential => CreateMode::PersistentSequential,
        Mode::EphemeralSequential => CreateMode::EphemeralSequential,
    }
}

/// The ACL of a create, in the client's form.
fn zk_acl(session: &Session, acl: Option<&[Acl]>) -> Vec<zookeeper_client::Acl> {
    match acl {
        Some(acl) => acl.iter().map(Acl::to_zk).collect(),
        None => session.default_acls().to_vec(),
    }
}

impl Session {
    /// This session as the handle every part of zooid holds.
    pub fn into_zk(self) -> super::interface::Zk {
        Arc::new(self)
    }

    /// The client of `generation`, if it is still the current one; a request of a given-up
    /// generation is not sent.
    fn client_of(&self, generation: u64) -> std::result::Result<Client, Failure> {
        let (client, current) = self.client();
        if current == generation {
            Ok(client)
        } else {
            Err(Failure::new(
                Verdict::Closed,
                format!(
                    "session generation {generation} was given up (the current one is {current}); \
                     the request was not sent"
                ),
            ))
        }
    }

    /// The client of `on.generation`, if it is still the current one, with its requests bound
    /// to the connection `on.connection` names (`Client::bound_to`: the client's session task
    /// writes them on that connection only, and fails them unsent on any later one).
    fn client_on(&self, on: WriteOn) -> std::result::Result<Client, Failure> {
        let (client, current, offset) = self.client_offset();
        if current != on.generation {
            return self.client_of(on.generation);
        }
        let Some(connection) = on.connection else {
            return Ok(client);
        };
        match connection.checked_sub(offset) {
            // Refused here when the client has reconnected already; the session task refuses it
            // if it reconnects before the request is taken from its queue.
            Some(serial) if serial > 0 && serial == client.connection() => {
                Ok(client.bound_to(serial))
            }
            _ => Err(Failure::new(
                Verdict::NotSent,
                format!(
                    "the write was planned on connection {connection}, which has ended; it was \
                     not sent"
                ),
            )),
        }
    }

    /// Sends one request on the client of `generation`, bounded and classified.
    async fn request<T, F>(
        &self,
        generation: u64,
        send: impl FnOnce(Client) -> F,
    ) -> std::result::Result<T, Failure>
    where
        F: std::future::Future<Output = std::result::Result<T, ZkError>>,
    {
        let client = self.client_of(generation)?;
        self.run(generation, send(client)).await.map_err(failure)
    }
}

impl ZooKeeper for Session {
    fn status(&self) -> SessionStatus {
        Session::status(self)
    }

    fn subscribe(&self) -> watch::Receiver<SessionStatus> {
        Session::subscribe(self)
    }

    fn request_limit(&self) -> Duration {
        Session::request_limit(self)
    }

    fn connect_string(&self) -> &str {
        Session::connect_string(self)
    }

    fn options(&self) -> &ConnectOptions {
        Session::options(self)
    }

    fn server_version(&self) -> ServerVersion {
        Session::server_version(self)
    }

    fn default_acl(&self) -> Vec<Acl> {
        self.default_acls().iter().map(Acl::from_zk).collect()
    }

    fn losses(&self) -> u64 {
        Session::losses(self)
    }

    fn persistent_watches(&self) -> BoxFuture<'_, Result<bool>> {
        Session::persistent_watches(self).boxed()
    }

    fn wait_connected(&self, timeout: Duration) -> BoxFuture<'_, Result<SessionStatus>> {
        Session::wait_connected(self, timeout).boxed()
    }

    fn report_lost<'a>(&'a self, generation: u64, why: &'a str) -> BoxFuture<'a, ()> {
        Session::report_lost(self, generation, why).boxed()
    }

    fn confirm_gone(
        &self,
        generation: u64,
        deadline: Instant,
    ) -> BoxFuture<'_, std::result::Result<Confirmed, InDoubt>> {
        Session::confirm_gone(self, generation, deadline).boxed()
    }

    fn hold_lease(&self) -> BoxFuture<'_, Result<super::LeaseGuard>> {
        Session::hold_lease(self).boxed()
    }

    fn ended(&self) -> BoxFuture<'static, ()> {
        Session::ended(self).boxed()
    }

    fn runtime(&self) -> Option<tokio::runtime::Handle> {
        Some(Session::runtime(self).clone())
    }

    fn downgrade(&self) -> super::interface::WeakZk {
        let weak = Session::downgrade(self);
        super::interface::WeakZk::new(move || {
            weak.upgrade()
                .map(|session| Arc::new(session) as super::interface::Zk)
        })
    }

    fn close(self: Arc<Self>) -> BoxFuture<'static, ()> {
        match Arc::try_unwrap(self) {
            Ok(session) => session.close().boxed(),
            Err(_shared) => async {}.boxed(),
        }
    }

    fn catch_up(&self) -> &super::catch_up::CatchUp {
        self.catch_up_state()
    }

    fn served_get<'a>(&'a self, generation: u64, path: &'a str) -> Reply<'a, (Vec<u8>, Stat)> {
        self.request(generation, move |c| async move { c.get_data(path).await })
            .boxed()
    }

    fn served_exists<'a>(&'a self, generation: u64, path: &'a str) -> Reply<'a, Option<Stat>> {
        self.request(generation, move |c| async move { c.check_stat(path).await })
            .boxed()
    }

    fn exists_now(&self, generation: u64, path: &str) -> Reply<'static, Option<Stat>> {
        // The client sends a request when its method is called, not when the future is polled.
        let sent = self.client_of(generation).map(|c| c.check_stat(path));
        let session = self.clone();
        async move {
            match sent {
                Ok(request) => session.run(generation, request).await.map_err(failure),
                Err(failure) => Err(failure),
            }
        }
        .boxed()
    }

    fn served_children<'a>(
        &'a self,
        generation: u64,
        path: &'a str,
    ) -> Reply<'a, (Vec<String>, Stat)> {
        self.request(
            generation,
            move |c| async move { c.get_children(path).await },
        )
        .boxed()
    }

    fn served_get_acl<'a>(&'a self, generation: u64, path: &'a str) -> Reply<'a, Vec<Acl>> {
        async move {
            let (acl, _) = self
                .request(generation, move |c| async move { c.get_acl(path).await })
                .await?;
            Ok(acl.iter().map(Acl::from_zk).collect())
        }
        .boxed()
    }

    fn served_get_watched<'a>(
        &'a self,
        generation: u64,
        path: &'a str,
    ) -> Reply<'a, (Vec<u8>, Stat, Watch)> {
        async move {
            let (data, stat, watcher) = self
                .request(generation, move |c| async move {
                    c.get_and_watch_data(path).await
                })
                .await?;
            Ok((data, stat, Watch::new(watcher.changed().map(event).boxed())))
        }
        .boxed()
    }

    fn served_exists_watched<'a>(
        &'a self,
        generation: u64,
        path: &'a str,
    ) -> Reply<'a, (Option<Stat>, Watch)> {
        async move {
            let (stat, watcher) = self
                .request(generation, move |c| async move {
                    c.check_and_watch_stat(path).await
                })
                .await?;
            Ok((stat, Watch::new(watcher.changed().map(event).boxed())))
        }
        .boxed()
    }

    fn served_children_watched<'a>(
        &'a self,
        generation: u64,
        path: &'a str,
    ) -> Reply<'a, (Vec<String>, Stat, Watch)> {
        async move {
            let (names, stat, watcher) = self
                .request(generation, move |c| async move {
                    c.get_and_watch_children(path).await
                })
                .await?;
            Ok((
                names,
                stat,
                Watch::new(watcher.changed().map(event).boxed()),
            ))
        }
        .boxed()
    }

    fn watch_tree<'a>(&'a self, generation: u64, path: &'a str) -> Reply<'a, TreeWatch> {
        async move {
            let watcher = self
                .request(generation, move |c| async move {
                    c.watch(path, AddWatchMode::PersistentRecursive).await
                })
                .await?;
            let watcher = Arc::new(tokio::sync::Mutex::new(watcher));
            Ok(TreeWatch::new(move || {
                let watcher = watcher.clone();
                async move { event(watcher.lock().await.changed().await) }.boxed()
            }))
        }
        .boxed()
    }

    fn sync<'a>(&'a self, generation: u64, path: &'a str) -> Reply<'a, ()> {
        self.request(generation, move |c| async move { c.sync(path).await })
            .boxed()
    }

    fn create<'a>(
        &'a self,
        generation: u64,
        path: &'a str,
        data: &'a [u8],
        create: &'a Create,
    ) -> Reply<'a, (String, Option<Stat>)> {
        async move {
            let acl = zk_acl(self, create.acl.as_deref());
            let options = create_mode(create.mode).with_acls(Acls::new(&acl));
            let (stat, sequence) = self
                .request(generation, |c| async move {
                    c.create(path, data, &options).await
                })
                .await?;
            let created = if create.mode.is_sequential() {
                format!("{path}{sequence}")
            } else {
                path.to_string()
            };
            Ok((created, (stat.czxid != -1).then_some(stat)))
        }
        .boxed()
    }

    fn create_all<'a>(
        &'a self,
        generation: u64,
        path: &'a str,
        acl: Option<&'a [Acl]>,
    ) -> Reply<'a, ()> {
        async move {
            let acl = zk_acl(self, acl);
            let options = CreateMode::Persistent.with_acls(Acls::new(&acl));
            self.request(generation, |c| async move { c.mkdir(path, &options).await })
                .await
        }
        .boxed()
    }

    fn set<'a>(
        &'a self,
        on: WriteOn,
        path: &'a str,
        data: &'a [u8],
        expected: Option<i32>,
    ) -> Reply<'a, Stat> {
        async move {
            let client = self.client_on(on)?;
            let request = client.set_data(path, data, expected);
            self.run(on.generation, request).await.map_err(failure)
        }
        .boxed()
    }

    fn delete<'a>(
        &'a self,
        generation: u64,
        path: &'a str,
        expected: Option<i32>,
    ) -> Reply<'a, ()> {
        self.request(generation, move |c| async move {
            c.delete(path, expected).await
        })
        .boxed()
    }

    fn delete_now(&self, generation: u64, path: &str, expected: Option<i32>) -> Reply<'static, ()> {
        // The client sends a request when its method is called; its future holds the reply's
        // receiver, not the session.
        let sent = self.client_of(generation).map(|c| c.delete(path, expected));
        let limit = self.request_limit();
        async move {
            let request = sent?;
            tokio::time::timeout(limit, request)
                .await
                .unwrap_or(Err(ZkError::Timeout))
                .map_err(failure)
        }
        .boxed()
    }

    fn multi(
        &self,
        on: WriteOn,
        ops: Vec<Op>,
    ) -> BoxFuture<'_, std::result::Result<Vec<OpResult>, MultiFailed>> {
        async move {
            let client = self.client_on(on).map_err(|failure| MultiFailed {
                index: None,
                failure,
            })?;
            let results = commit(self, &client, on.generation, &ops).await?;
            Ok(results
                .into_iter()
                .zip(&ops)
                .map(|(result, op)| match result {
                    MultiWriteResult::Check => OpResult::Check,
                    MultiWriteResult::Delete => OpResult::Delete,
                    MultiWriteResult::SetData { stat } => OpResult::Set { stat },
                    MultiWriteResult::Create { path, stat } => OpResult::Create {
                        stat: (!stat.is_invalid()).then_some(stat),
                        path: match op {
                            Op::Create {
                                create,
                                path: asked,
                                ..
                            } if !create.mode.is_sequential() => asked.clone(),
                            _ => path,
                        },
                    },
                    // Every op zooid sends has a result above; a newer client's new kind of
                    // result is read from the op that produced it.
                    _ => match op {
                        Op::Check { .. } => OpResult::Check,
                        Op::Delete { .. } => OpResult::Delete,
                        Op::Create { path, .. } => OpResult::Create {
                            path: path.clone(),
                            stat: None,
                        },
                        Op::Set { .. } => OpResult::Set {
                            stat: unknown_stat(),
                        },
                    },
                })
                .collect())
        }
        .boxed()
    }
}

/// Builds and commits `ops` on `client`, bounded by the request limit; a `multi` whose error
/// says its session is gone reports that generation lost.
async fn commit(
    session: &Session,
    client: &Client,
    generation: u64,
    ops: &[Op],
) -> std::result::Result<Vec<MultiWriteResult>, MultiFailed> {
    let refused = |index: usize, err: ZkError| MultiFailed {
        index: Some(index),
        failure: failure(err),
    };
    let mut writer = client.new_multi_writer();
    let acls: Vec<Option<Vec<zookeeper_client::Acl>>> = ops
        .iter()
        .map(|op| match op {
            Op::Create { create, .. } => Some(zk_acl(session, create.acl.as_deref())),
            _ => None,
        })
        .collect();
    for (index, (op, acl)) in ops.iter().zip(&acls).enumerate() {
        let added = match op {
            Op::Check { path, version } => writer.add_check_version(path, *version),
            Op::Create { path, data, create } => {
                let acl = acl.as_deref().unwrap_or_default();
                let options: CreateOptions<'_> = create_mode(create.mode).with_acls(Acls::new(acl));
                writer.add_create(path, data, &options)
            }
            Op::Set {
                path,
                data,
                expected,
            } => writer.add_set_data(path, data, *expected),
            Op::Delete { path, expected } => writer.add_delete(path, *expected),
        };
        added.map_err(|err| refused(index, err))?;
    }
    let reply = tokio::time::timeout(session.request_limit(), writer.commit())
        .await
        .unwrap_or(Err(MultiWriteError::RequestFailed {
            source: ZkError::Timeout,
        }));
    let failed = match reply {
        Ok(results) => return Ok(results),
        Err(MultiWriteError::RequestFailed { source }) => (None, source),
        Err(MultiWriteError::OperationFailed { index, source }) => (Some(index), source),
    };
    if failed.0.is_none() && is_gone(&failed.1) {
        session.report_lost(generation, &failed.1.to_string()).await;
    }
    Err(MultiFailed {
        index: failed.0,
        failure: failure(failed.1),
    })
}

/// A `Stat` the client did not give (every field -1, as the client marks an invalid one).
fn unknown_stat() -> Stat {
    Stat {
        czxid: -1,
        mzxid: -1,
        pzxid: -1,
        ctime: -1,
        mtime: -1,
        version: -1,
        cversion: -1,
        aversion: -1,
        ephemeral_owner: -1,
        data_length: -1,
        num_children: -1,
    }
}
