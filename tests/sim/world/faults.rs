//! What the world does to requests and sessions, by seed: the probability of each fault and the
//! delays, drawn from the one seeded RNG.

use std::time::Duration;

use rand::rngs::StdRng;
use rand::Rng;

/// The fault knobs (probabilities per request, or per chaos tick of a process).
#[derive(Clone, Debug)]
pub struct Faults {
    /// A request lost before it reaches the servers (its connection drops): never applies.
    pub lost_before: f64,
    /// A request applied whose reply is lost (its connection drops before the reply).
    pub lost_after: f64,
    /// A request held in the network and applied late, after its connection dropped (and maybe
    /// after the client gave its session up), while the session lives on the servers.
    pub held: f64,
    /// A reply slower than the request limit (the client stops waiting; the request applied).
    pub slow_reply: f64,
    /// A plain read served by a follower behind the leader (until `sync`).
    pub lag: f64,
    /// Of the requests in flight when a connection drops, the share that never arrives.
    pub drop_in_flight: f64,
    /// Per chaos tick: the connection drops (and reattaches).
    pub disconnect: f64,
    /// Per chaos tick: a disconnection that outlasts the session timeout (the servers expire
    /// the session, the client gives it up).
    pub partition: f64,
    /// Per chaos tick: the servers expire the session while the client is connected.
    pub expire: f64,
    /// Per chaos tick: the process crashes (its task dropped at an await point) and restarts.
    pub crash: f64,
    /// Per chaos tick: the process pauses (its clock stops, the servers' does not).
    pub pause: f64,
    /// The servers do not confirm a given-up session's end before the caller's deadline.
    pub unconfirmed: f64,
    /// Time between two chaos ticks of a process.
    pub tick: Duration,
    /// The negotiated session timeout.
    pub session_timeout: Duration,
}

impl Faults {
    /// Every fault kind on, at rates that leave room for progress.
    pub fn all() -> Self {
        Self {
            lost_before: 0.02,
            lost_after: 0.03,
            held: 0.01,
            slow_reply: 0.01,
            lag: 0.2,
            drop_in_flight: 0.5,
            disconnect: 0.05,
            partition: 0.02,
            expire: 0.02,
            crash: 0.01,
            pause: 0.02,
            unconfirmed: 0.05,
            tick: Duration::from_millis(500),
            session_timeout: Duration::from_secs(4),
        }
    }

    /// No fault at all (the quiet phase at the end of a run).
    pub fn none(&self) -> Self {
        Self {
            lost_before: 0.0,
            lost_after: 0.0,
            held: 0.0,
            slow_reply: 0.0,
            lag: 0.0,
            drop_in_flight: 0.0,
            disconnect: 0.0,
            partition: 0.0,
            expire: 0.0,
            crash: 0.0,
            pause: 0.0,
            unconfirmed: 0.0,
            ..self.clone()
        }
    }
}

/// Uniform duration in `[lo, hi]` (milliseconds resolution).
pub fn between(rng: &mut StdRng, lo: Duration, hi: Duration) -> Duration {
    let (lo, hi) = (lo.as_millis() as u64, hi.as_millis() as u64);
    Duration::from_millis(rng.random_range(lo..=hi.max(lo)))
}

/// Whether an event of probability `p` happens.
pub fn chance(rng: &mut StdRng, p: f64) -> bool {
    p > 0.0 && rng.random_bool(p.min(1.0))
}
