//! Who leads a group, read without joining it.

use super::line::candidates;
use super::*;

/// Who leads `group`, without joining: the lowest candidate node's name, data and token;
/// `None` when the group has no candidate (or no group node).
pub async fn leader(session: &Session, group: &str) -> Result<Option<LeaderInfo>> {
    validate_group(group)?;
    let group = group.trim_end_matches('/');
    for _ in 0..16 {
        let (client, generation) = session.client();
        let children = match session
            .run(generation, client.list_children(group))
            .await
            .classified()
        {
            Ok(children) => children,
            Err((Verdict::NoNode, _)) => return Ok(None),
            Err((_, err)) => return Err(crate::zk::to_zooid(&err, group, session.options())),
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
            Ok((data, stat)) => {
                let (name, data) = decode_payload(&data);
                return Ok(Some(LeaderInfo {
                    name,
                    data,
                    token: stat.czxid,
                    node: path,
                }));
            }
            // It left between the two reads: look again.
            Err((Verdict::NoNode, _)) => continue,
            Err((_, err)) => return Err(crate::zk::to_zooid(&err, group, session.options())),
        }
    }
    Err(ZooidError::Store {
        path: group.to_string(),
        reason: "the lowest candidate kept vanishing between two reads".into(),
    })
}
