//! Who leads a group, read without joining it.

use super::line::{candidates, group_epoch, token};
use super::*;

/// Who leads `group`, without joining: the lowest candidate node's name, data and token;
/// `None` when the group has no candidate (or no group node).
///
/// The read starts with a `sync`, so the server it is answered by has caught up with the
/// ensemble's leader first: a server cut off from the quorum cannot answer with a leader whose
/// session the ensemble already expired (the `sync` fails or times out instead).
pub async fn leader(session: &Session, group: &str) -> Result<Option<LeaderInfo>> {
    validate_group(group)?;
    let group = group.trim_end_matches('/');
    for _ in 0..16 {
        let (client, generation) = session.client();
        let listed = async {
            session.run(generation, client.sync(group)).await?;
            let (data, stat) = session.run(generation, client.get_data(group)).await?;
            let children = session.run(generation, client.list_children(group)).await?;
            Ok((group_epoch(&data, stat.ctime), children))
        };
        let (epoch, children) = match listed.await.classified() {
            Ok(listed) => listed,
            Err((Verdict::NoNode, _)) => return Ok(None),
            Err((_, err)) => {
                return Err(crate::zk::client_to_zooid(&err, group, session.options()))
            }
        };
        let Some(lowest) = candidates(&children).into_iter().next() else {
            return Ok(None);
        };
        let path = format!("{group}/{}", lowest.name);
        match session
            .run(generation, client.get_data(&path))
            .await
            .classified()
        {
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
            Err((Verdict::NoNode, _)) => continue,
            Err((_, err)) => {
                return Err(crate::zk::client_to_zooid(&err, group, session.options()))
            }
        }
    }
    Err(ZooidError::Store {
        path: group.to_string(),
        reason: "the lowest candidate kept vanishing between two reads".into(),
    })
}
