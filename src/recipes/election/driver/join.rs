//! Joining the line: our candidate node is created exactly once, even when replies are lost
//! (`multi[setData(group, unchanged, V), create(marker node)]`; after an unknown outcome the
//! group node's version and the marker decide), then confirmed as ours and given its token.

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
        let marker = format!("{:032x}", rand::random::<u128>());
        let prefix = format!("{}/{MARKER_PREFIX}{marker}{SEQ_PREFIX}", self.group);
        let create = Create::new(Mode::EphemeralSequential);
        'fresh: loop {
            if self.closed() {
                // Nothing of this candidacy is unresolved here: every earlier copy of the multi
                // expected a version the group node has left behind, and none made our node.
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
                    if !self.recover(generation).await {
                        return Err(Exit::SessionGone);
                    }
                    continue;
                }
            };
            let expected = stat.version;
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
                        tracing::info!(group = %self.group, %source, "candidate create: outcome unknown; resolving");
                    }
                }
                // Resolve: sync, then the group node's version says whether the copies expecting
                // `expected` can still apply.
                loop {
                    if !self.wait_same_session(generation).await {
                        return Err(Exit::SessionGone);
                    }
                    match self.resolve(generation, &marker, expected).await {
                        Ok(Resolved::Pending) => break, // resend the identical multi
                        Ok(Resolved::Found(path)) => return self.confirm(generation, &path).await,
                        Ok(Resolved::Never) => continue 'fresh,
                        Err(failure) if says_gone(&failure) => return Err(Exit::SessionGone),
                        Err(_) => {
                            if !self.recover(generation).await {
                                return Err(Exit::SessionGone);
                            }
                        }
                    }
                }
            }
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
                Err(_) => {
                    if !self.recover(generation).await {
                        return Err(Exit::SessionGone);
                    }
                }
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
                Err(_) => {
                    if !self.recover(generation).await {
                        return Err(Exit::SessionGone);
                    }
                }
            }
        }
    }
}
