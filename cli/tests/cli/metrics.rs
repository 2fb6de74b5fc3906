//! `zooid elect --metrics-addr`: a long-running zooid serves Prometheus text over HTTP, and the
//! figures follow a leadership change (the leader is stopped; the follower takes over).

use zooid_test_support as support;

use std::io::{Read, Write};
use std::net::TcpStream;
use std::os::unix::process::CommandExt;
use std::process::{Child, Command, Stdio};
use std::time::Duration;

use support::{wait_until, ZkServer};

/// A `zooid elect` process; SIGKILLed and reaped on drop, dies with the test.
struct Elect {
    child: Child,
    addr: String,
}

impl Elect {
    fn start(connect: &str, group: &str, name: &str) -> Elect {
        let addr = format!("127.0.0.1:{}", free_port());
        let mut cmd = Command::new(env!("CARGO_BIN_EXE_zooid"));
        cmd.args([
            "--connect",
            connect,
            "--session-timeout-ms",
            "4000",
            "elect",
        ])
        .args([
            group,
            "--name",
            name,
            "--metrics-addr",
            &addr,
            "--grace-ms",
            "500",
        ])
        .args(["--", "sleep", "600"])
        .stdin(Stdio::null())
        .stdout(Stdio::null());
        // SAFETY: prctl and getppid are async-signal-safe.
        unsafe {
            let parent = libc::getpid();
            cmd.pre_exec(move || {
                libc::prctl(
                    libc::PR_SET_PDEATHSIG,
                    libc::SIGKILL as libc::c_ulong,
                    0,
                    0,
                    0,
                );
                if libc::getppid() != parent {
                    libc::_exit(1);
                }
                Ok(())
            });
        }
        let child = cmd.spawn().expect("start zooid elect");
        Elect { child, addr }
    }

    /// The body of `GET /metrics`, or `None` while nothing answers.
    fn scrape(&self) -> Option<String> {
        let mut stream = TcpStream::connect(&self.addr).ok()?;
        stream.set_read_timeout(Some(Duration::from_secs(5))).ok()?;
        write!(
            stream,
            "GET /metrics HTTP/1.1\r\nHost: {}\r\nConnection: close\r\n\r\n",
            self.addr
        )
        .ok()?;
        let mut reply = String::new();
        stream.read_to_string(&mut reply).ok()?;
        let (head, body) = reply.split_once("\r\n\r\n")?;
        head.starts_with("HTTP/1.1 200").then(|| body.to_string())
    }

    /// Waits until a scrape satisfies `cond`; returns that scrape.
    fn wait_for(&self, what: &str, cond: impl Fn(&str) -> bool) -> String {
        let mut last = String::new();
        let ok = wait_until(Duration::from_secs(30), || match self.scrape() {
            Some(text) => {
                let hit = cond(&text);
                last = text;
                hit
            }
            None => false,
        });
        assert!(ok, "{what}; last scrape of {}:\n{last}", self.addr);
        last
    }

    fn terminate(&self) {
        // SAFETY: kill(2) on our own child's pid.
        unsafe {
            libc::kill(self.child.id() as i32, libc::SIGTERM);
        }
    }
}

impl Drop for Elect {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

fn free_port() -> u16 {
    std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port()
}

/// The value of `name{...}` whose labels contain every `labels` pair.
fn sample(text: &str, name: &str, labels: &[(&str, &str)]) -> Option<f64> {
    text.lines()
        .filter(|line| !line.starts_with('#'))
        .filter(|line| {
            line.strip_prefix(name)
                .is_some_and(|rest| rest.starts_with('{') || rest.starts_with(' '))
        })
        .find(|line| {
            labels
                .iter()
                .all(|(k, v)| line.contains(&format!("{k}=\"{v}\"")))
        })
        .and_then(|line| line.rsplit(' ').next())
        .and_then(|value| value.parse().ok())
}

#[test]
fn elect_serves_prometheus_metrics_that_follow_the_leadership() {
    let zk = ZkServer::start();
    let group = ("group", "/metrics-elect");
    let first = Elect::start(&zk.connect_string(), group.1, "first");
    let text = first.wait_for("first leads", |t| {
        sample(t, "zooid_election_leader", &[group]) == Some(1.0)
    });
    assert!(
        text.contains("# TYPE zooid_election_leader gauge"),
        "{text}"
    );
    assert_eq!(sample(&text, "zooid_session_generation", &[]), Some(1.0));
    let token_of = |text: &str| {
        (
            sample(text, "zooid_election_token_epoch", &[group]).expect("an epoch"),
            sample(text, "zooid_election_token_sequence", &[group]).expect("a sequence"),
        )
    };
    let first_token = token_of(&text);
    assert!(sample(&text, "zooid_election_token", &[group]).is_some_and(|t| t > 0.0));
    assert!(first_token.0 > 0.0);

    let second = Elect::start(&zk.connect_string(), group.1, "second");
    second.wait_for("second follows", |t| {
        sample(t, "zooid_election_leader", &[group]) == Some(0.0)
    });

    first.terminate();
    let text = second.wait_for("second takes over", |t| {
        sample(t, "zooid_election_leader", &[group]) == Some(1.0)
    });
    let second_token = token_of(&text);
    eprintln!("tokens (epoch, sequence): first {first_token:?}, second {second_token:?}");
    assert!(
        second_token > first_token,
        "the new leader's token is larger"
    );
    assert_eq!(
        sample(
            &text,
            "zooid_election_transitions_total",
            &[group, ("state", "active")]
        ),
        Some(1.0)
    );
    let mut first = first;
    let mut status = None;
    assert!(wait_until(Duration::from_secs(10), || {
        status = first.child.try_wait().ok().flatten();
        status.is_some()
    }));
    assert_eq!(
        status.and_then(|s| s.code()),
        Some(0),
        "SIGTERM: resign, exit 0"
    );
    assert!(
        first.scrape().is_none(),
        "the exporter ends with the process"
    );
}
