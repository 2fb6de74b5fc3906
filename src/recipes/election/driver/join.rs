//! Joining the line: our candidate node is created exactly once, even when replies are lost
//! (`multi[setData(group, unchanged, V), create(marker node)]`; after an unknown outcome the
//! group node's version and the marker decide), then confirmed as ours and given its token.
//!
//! A marker is given up only once no copy sent with it can still apply: a candidacy that ends
//! (a refusal, a retry) while a copy is unresolved hands its marker to the next candidacy of
//! the same session, which looks for it among the children before it sends a copy of its own;
//! a close in that state finds the node and deletes it, or moves the group node's version past
//! every copy's (one bounded attempt). Without that, a copy landing after the candidacy gave up
//! made a second node of our session that no driver tracks, ahead of ours. Not covered: a group
//! node deleted and made again while a copy is on its way restarts its versions, so the copy
//! can apply once the new node reaches the version it expected.

use super::super::line::{candidates, group_epoch, parse_candidate, token};
use super::super::line::{MARKER_PREFIX, SEQ_PREFIX};
use super::*;

/// The fate of the candidate multis that expected one group version.
enum Resolved {
    /// The group node is still at that version: neither copy applied yet; resend the same.
    Pending,
    /// The version moved on and our marker node exists: a copy applied.
    Found(String),
    /// The version moved on without our marker node: no copy applied, and none ever will.
    Never,
}

impl Driver {
    /// Creates our candidate node, exactly once even when replies are lost (see the module
    /// docs): `multi[setData(group, unchanged, V), create(marker node)]`, and after an unknown
    /// outcome, the group node's version and the marker decide.
    pub(super) async fn candidacy(&mut self, generation: u64) -> Result<Node, Exit> {
        let (marker, mut in_doubt) = match self.carried.take() {
            Some((sent_on, marker)) if sent_on == generation => (marker, true),
            _ => (format!("{:032x}", crate::random::random::<u128>()), false),
        };
        let joined = self.join_line(generation, &marker, &mut in_doubt).await;
        if in_doubt && matches!(joined, Err(Exit::Retry(_))) {
            self.carried = Some((generation, marker));
        }
        joined
    }

    /// [`Self::candidacy`] with `marker`; `in_doubt` says whether a copy sent with it may still
    /// apply, and is kept up to date.
    async fn join_line(
        &mut self,
        generation: u64,
        marker: &str,
        in_doubt: &mut bool,
    ) -> Result<Node, Exit> {
        let prefix = format!("{}/{MARKER_PREFIX}{marker}{SEQ_PREFIX}", self.group);
        let create = Create::new(Mode::EphemeralSequential);
        'fresh: loop {
            if self.closed() {
                if *in_doubt {
                    self.settle(generation, marker).await;
                }
                // Otherwise nothing of this candidacy is unresolved: every earlier copy of the
                // multi expected a version the group node has left behind, and none made our node.
                return Err(Exit::Closed);
            }
            let (data, stat) = match self.zk.get(generation, &self.group).await {
                Ok(read) => read,
                Err(Failure {
                    verdict: Verdict::NoNode,
                    ..
                }) => {
                    if let Err(err) = ensure_group(&self.zk, &self.group).await {
                        return Err(Exit::Retry(err.to_string()));
                    }
                    continue;
                }
                Err(failure) if says_gone(&failure) => return Err(Exit::SessionGone),
                Err(_) => {
                    // Closed: the top of the loop settles what may be in doubt.
                    match self.recover(generation).await {
                        Ok(()) | Err(Exit::Closed) => continue,
                        Err(exit) => return Err(exit),
                    }
                }
            };
            let expected = stat.version;
            if *in_doubt {
                // A copy sent with this marker may have applied: it is ours if it did. One that
                // has not yet expected a version no later than `expected`.
                match self.find_marker(generation, marker).await {
                    Ok(Some(path)) => return self.confirm(generation, &path).await,
                    Ok(None) => {}
                    Err(failure) if says_gone(&failure) => return Err(Exit::SessionGone),
                    Err(_) => match self.recover(generation).await {
                        Ok(()) | Err(Exit::Closed) => continue,
                        Err(exit) => return Err(exit),
                    },
                }
            }
            if expected < 0 || expected == i32::MAX {
                return Err(Exit::Retry(format!(
                    "group node {} is at data version {expected}; recreate the group node",
                    self.group
                )));
            }
            loop {
                // An op the client refuses to add (a malformed path) fails the commit as that
                // op's refusal, before anything is sent: a retry below.
                let mut multi = Multi::new();
                multi.set(&self.group, &data, Some(expected)).create(
                    &prefix,
                    &self.payload,
                    &create,
                );
                let failed = match multi.commit(&*self.zk, generation).await {
                    Ok(results) => {
                        let path = results.into_iter().find_map(|r| match r {
                            OpResult::Create { path, .. } => Some(path),
                            _ => None,
                        });
                        return match path {
                            Some(path) => self.confirm(generation, &path).await,
                            None => Err(Exit::Retry("multi returned no created path".into())),
                        };
                    }
                    Err(failed) => failed,
                };
                let source = &failed.failure;
                match (failed.index, failed.verdict()) {
                    (Some(_), Verdict::NoNode) => continue 'fresh,
                    (Some(0), Verdict::BadVersion) => {
                        // This copy did not apply; the version moved past `expected`, so any
                        // earlier copy's fate is fixed: the marker decides.
                    }
                    (Some(_), _) => {
                        return Err(Exit::Retry(format!(
                            "creating the candidate node: {source}"
                        )))
                    }
                    // The commit told the session layer (or the generation was given up
                    // already, and the multi was not sent).
                    (None, Verdict::Expired | Verdict::Closed) => return Err(Exit::SessionGone),
                    (None, _) => {
                        *in_doubt = true;
                        tracing::info!(group = %self.group, %source, "candidate create: outcome unknown; resolving");
                    }
                }
                // Resolve: sync, then the group node's version says whether the copies expecting
                // `expected` can still apply.
                loop {
                    match self.wait_usable(generation).await {
                        Ok(()) => {}
                        // The top of the loop settles the copies in doubt.
                        Err(Exit::Closed) => continue 'fresh,
                        Err(exit) => return Err(exit),
                    }
                    match self.resolve(generation, marker, expected).await {
                        Ok(Resolved::Pending) => break, // resend the identical multi
                        Ok(Resolved::Found(path)) => return self.confirm(generation, &path).await,
                        Ok(Resolved::Never) => {
                            *in_doubt = false;
                            continue 'fresh;
                        }
                        // The group node is gone: made again, and the marker looked for, above.
                        Err(Failure {
                            verdict: Verdict::NoNode,
                            ..
                        }) => continue 'fresh,
                        Err(failure) if says_gone(&failure) => return Err(Exit::SessionGone),
                        Err(_) => match self.recover(generation).await {
                            Ok(()) => {}
                            Err(Exit::Closed) => continue 'fresh,
                            Err(exit) => return Err(exit),
                        },
                    }
                }
            }
        }
    }

    /// Our candidate node with `marker`, if one exists (after a `sync`).
    async fn find_marker(
        &self,
        generation: u64,
        marker: &str,
    ) -> std::result::Result<Option<String>, Failure> {
        leave::marker_node(&self.zk, generation, &self.group, marker).await
    }

    /// A close while a copy of our create may still apply: within [`Self::delete_bound`], finds
    /// our node (and deletes it, or leaves it to the background task that deletes a node left
    /// behind), or else moves the group node's version past every copy's (a `setData` of its
    /// data unchanged at the version read), so that none ever applies ([`leave::settle_once`]). When
    /// that cannot be done in time (a disconnection, reads that keep failing), the same attempt
    /// goes on in the background until it succeeds or the session is gone, and `resign` reports
    /// it: a copy that applied would head the line, and nobody else would lead.
    async fn settle(&mut self, generation: u64, marker: &str) {
        let deadline = Instant::now() + self.delete_bound();
        let attempt = leave::settle_once(&self.zk, generation, &self.group, marker);
        let settled = tokio::time::timeout_at(deadline, attempt).await;
        match settled {
            Ok(Ok(None)) => {}
            Ok(Ok(Some(path))) => {
                if !self.delete_node(generation, &path, Some(deadline)).await {
                    self.leave_behind(generation, Left::Node(path));
                }
            }
            Ok(Err(failure)) if says_gone(&failure) => {} // The copies went with the session.
            // No group node: no copy can apply (they set its data at a version).
            Ok(Err(Failure {
                verdict: Verdict::NoNode,
                ..
            })) => {}
            Ok(Err(_)) | Err(_) => self.leave_behind(
                generation,
                Left::InDoubt {
                    group: self.group.clone(),
                    marker: marker.to_string(),
                },
            ),
        }
    }

    /// Decides the fate of the multis that expected group version `expected`.
    async fn resolve(
        &self,
        generation: u64,
        marker: &str,
        expected: i32,
    ) -> std::result::Result<Resolved, Failure> {
        self.zk.sync(generation, &self.group).await?;
        let (_, stat) = self.zk.get(generation, &self.group).await?;
        if stat.version == expected {
            return Ok(Resolved::Pending);
        }
        let (children, _) = self.zk.children(generation, &self.group).await?;
        Ok(candidates(&children)
            .into_iter()
            .find(|c| c.marker == marker)
            .map(|c| Resolved::Found(format!("{}/{}", self.group, c.name)))
            .unwrap_or(Resolved::Never))
    }

    /// Reads our new node's stat (it must belong to our session), then the group node's: our
    /// node lives in it now, so it cannot be deleted and re-created under us, and its epoch with
    /// our sequence number is the token.
    async fn confirm(&mut self, generation: u64, path: &str) -> Result<Node, Exit> {
        loop {
            let read = async {
                let (_, stat) = self.zk.get(generation, path).await?;
                let (data, group) = self.zk.get(generation, &self.group).await?;
                Ok::<_, Failure>((stat, group_epoch(&data, group.ctime)))
            };
            match read.await {
                Ok((stat, epoch)) => return self.check_owner(generation, path, &stat, epoch),
                Err(Failure {
                    verdict: Verdict::NoNode,
                    ..
                }) => return Err(Exit::Rejoin { delete: false }),
                Err(failure) if says_gone(&failure) => return Err(Exit::SessionGone),
                Err(_) => match self.recover(generation).await {
                    Ok(()) => {}
                    Err(Exit::Closed) => {
                        // Closed before our node was confirmed: it is ours (its marker), so it
                        // is deleted as a closed candidacy's is.
                        let deadline = Instant::now() + self.delete_bound();
                        if !self.delete_node(generation, path, Some(deadline)).await {
                            self.leave_behind(generation, Left::Node(path.to_string()));
                        }
                        return Err(Exit::Closed);
                    }
                    Err(exit) => return Err(exit),
                },
            }
        }
    }

    /// Our node as a [`Node`], once its owner is the session of `generation` (the session id
    /// the session layer published with that generation).
    fn check_owner(
        &self,
        generation: u64,
        path: &str,
        stat: &Stat,
        epoch: i64,
    ) -> Result<Node, Exit> {
        let status = self.zk.status();
        if status.generation != generation {
            // Replaced since the node was read: it went, or goes, with its session.
            return Err(Exit::SessionGone);
        }
        let session_id = status.session_id;
        if stat.ephemeral_owner != session_id {
            return Err(Exit::Retry(format!(
                "candidate node {path} belongs to session {:#x}, not ours ({session_id:#x})",
                stat.ephemeral_owner
            )));
        }
        let name = path.rsplit('/').next().unwrap_or(path);
        let Some(candidate) = parse_candidate(name) else {
            return Err(Exit::Retry(format!(
                "unexpected candidate node name {path}"
            )));
        };
        Ok(Node {
            path: path.to_string(),
            seq: candidate.seq,
            token: token(epoch, candidate.seq),
        })
    }

    /// The group node's epoch, read now.
    pub(super) async fn current_epoch(&mut self, generation: u64) -> Result<i64, Exit> {
        loop {
            match self.zk.get(generation, &self.group).await {
                Ok((data, stat)) => return Ok(group_epoch(&data, stat.ctime)),
                Err(Failure {
                    verdict: Verdict::NoNode,
                    ..
                }) => return Err(Exit::Rejoin { delete: false }),
                Err(failure) if says_gone(&failure) => return Err(Exit::SessionGone),
                Err(_) => self.recover(generation).await?,
            }
        }
    }
}
