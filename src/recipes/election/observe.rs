//! Who leads a group, read without joining it.

use super::line::{candidates, group_epoch, token};
use super::*;

/// Who leads `group`, without joining: the lowest candidate node's name, data and token;
/// `None` when the group has no candidate (or no group node).
///
/// The read starts with a `sync`, so the server it is answered by has caught up with the
/// ensemble's leader first: a server cut off from the quorum cannot answer with a leader whose
/// session the ensemble already expired (the `sync` fails or times out instead).
pub async fn leader(zk: &Zk, group: &str) -> Result<Option<LeaderInfo>> {
    validate_group(group)?;
    let group = group.trim_end_matches('/');
    for _ in 0..16 {
        let generation = zk.generation();
        let listed = async {
            zk.sync(generation, group).await?;
            let (data, stat) = zk.get(generation, group).await?;
            let (children, _) = zk.children(generation, group).await?;
            Ok::<_, Failure>((group_epoch(&data, stat.ctime), children))
        };
        let (epoch, children) = match listed.await {
            Ok(listed) => listed,
            Err(Failure {
                verdict: Verdict::NoNode,
                ..
            }) => return Ok(None),
            Err(failure) => return Err(crate::zk::to_zooid(&failure, group, zk.options())),
        };
        let Some(lowest) = candidates(&children).into_iter().next() else {
            return Ok(None);
        };
        let path = format!("{group}/{}", lowest.name);
        match zk.get(generation, &path).await {
            Ok((data, _)) => {
                let (name, data) = decode_payload(&data);
                return Ok(Some(LeaderInfo {
                    name,
                    data,
                    token: token(epoch, lowest.seq),
                    node: path,
                }));
            }
            // It left between the two reads: look again.
            Err(Failure {
                verdict: Verdict::NoNode,
                ..
            }) => continue,
            Err(failure) => return Err(crate::zk::to_zooid(&failure, group, zk.options())),
        }
    }
    Err(ZooidError::Store {
        path: group.to_string(),
        reason: "the lowest candidate kept vanishing between two reads".into(),
    })
}
