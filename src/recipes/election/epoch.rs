//! Raising a group's epoch by hand (`zooid elect --bump-epoch GROUP`): after ZooKeeper was
//! restored from an older snapshot, the group node's creation time and sequence numbers are
//! older than those of tokens already handed out, so new tokens could be lower.

use super::line::{group_epoch, EPOCH_KEY, MAX_EPOCH};
use super::*;

/// Raises the epoch of `group` (created when missing) to the current second of the local
/// clock, and returns the new epoch. An epoch at or past the current second (a bump a moment
/// ago) is waited out first, up to 5 s: an epoch ahead of the clock would give a group node made
/// again before the clock got there lower tokens. One further ahead is refused (`Store`). Every
/// candidate that becomes leader afterwards gets a token above every token of an epoch up to the
/// new one minus one, i.e. above every token handed out before this second (the clock
/// assumption: the clock that runs this is not behind the servers' clocks of the lost history).
///
/// The group node's data keeps its other lines; the `zooid-epoch=N` line is replaced. The write
/// is a compare-and-set on the node's version, retried on a concurrent change; after a lost
/// reply the epoch read back decides. Errors: `InvalidArgument` (path), `ConnectionLost` /
/// `Timeout`, `Store` when the node is at its last data version.
pub async fn bump_epoch(zk: &Zk, group: &str) -> Result<i64> {
    validate_group(group)?;
    let group = group.trim_end_matches('/');
    ensure_group(zk, group).await?;
    let mut target: Option<i64> = None;
    for _ in 0..16 {
        let generation = zk.generation();
        let read = async {
            zk.sync(generation, group).await?;
            zk.get(generation, group).await
        };
        let (data, stat) = read
            .await
            .map_err(|failure| crate::zk::to_zooid(&failure, group, zk.options()))?;
        let current = group_epoch(&data, stat.ctime);
        let wanted = match target {
            Some(wanted) => wanted,
            None => {
                let now_ms = unix_millis();
                let next_second_ms = current.saturating_add(1).saturating_mul(1000);
                if now_ms < next_second_ms {
                    // An epoch at or past this second (a bump a moment ago, or a raise by
                    // hand): one past it would be ahead of the clock, and a group node made
                    // again before the clock got there would have a lower epoch, its tokens
                    // below ours. Wait until the clock passes it; refuse one far ahead.
                    let ahead = Duration::from_millis((next_second_ms - now_ms) as u64);
                    if ahead > MAX_AHEAD {
                        return Err(ZooidError::Store {
                            path: group.to_string(),
                            reason: format!(
                                "the group's epoch {current} is {:.0} s ahead of this host's \
                                 clock; raising it further would let a group node made again \
                                 before then give lower tokens: raise it once the clock has \
                                 passed it (or check this host's clock)",
                                ahead.as_secs_f64()
                            ),
                        });
                    }
                    tokio::time::sleep(ahead).await;
                    continue;
                }
                *target.insert((now_ms / 1000).min(MAX_EPOCH))
            }
        };
        if current >= wanted {
            return Ok(current);
        }
        if stat.version == i32::MAX {
            return Err(ZooidError::Store {
                path: group.to_string(),
                reason: "the group node is at its last data version; recreate it".into(),
            });
        }
        let written = zk
            .set(
                generation.into(),
                group,
                &with_epoch(&data, wanted),
                Some(stat.version),
            )
            .await;
        match written {
            Ok(_) => return Ok(wanted),
            // Changed meanwhile (a candidate joining), or the reply was lost: read again.
            Err(
                err @ Failure {
                    verdict: Verdict::BadVersion | Verdict::Unknown,
                    ..
                },
            ) => {
                tracing::debug!(%err, group, "bumping the epoch; reading again");
                tokio::time::sleep(Duration::from_millis(100)).await;
            }
            Err(failure) => return Err(crate::zk::to_zooid(&failure, group, zk.options())),
        }
    }
    Err(ZooidError::Store {
        path: group.to_string(),
        reason: "the group node kept changing while its epoch was raised".into(),
    })
}

/// How far ahead of this host's clock a group's epoch may be for [`bump_epoch`] to wait for the
/// clock to pass it rather than refuse.
const MAX_AHEAD: Duration = Duration::from_secs(5);

/// This host's wall clock in milliseconds since the Unix epoch (0 before it).
fn unix_millis() -> i64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.as_millis() as i64)
        .unwrap_or(0)
}

/// `data` with its `zooid-epoch=` lines replaced by one carrying `epoch`.
fn with_epoch(data: &[u8], epoch: i64) -> Vec<u8> {
    let text = String::from_utf8_lossy(data);
    let mut lines: Vec<String> = text
        .lines()
        .filter(|line| !line.trim().starts_with(EPOCH_KEY))
        .map(str::to_string)
        .collect();
    lines.push(format!("{EPOCH_KEY}{epoch}"));
    let mut out = lines.join("\n");
    out.push('\n');
    out.into_bytes()
}

#[cfg(test)]
mod epoch_tests {
    use super::*;

    #[test]
    fn the_epoch_line_is_replaced_and_other_lines_kept() {
        let data = with_epoch(b"owner=ops\nzooid-epoch=5\n", 1_800_000_000);
        assert_eq!(data, b"owner=ops\nzooid-epoch=1800000000\n");
        assert_eq!(group_epoch(&data, 1_000), 1_800_000_000);
        assert_eq!(with_epoch(b"", 7), b"zooid-epoch=7\n");
    }
}
