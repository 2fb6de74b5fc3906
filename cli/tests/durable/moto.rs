//! A real S3-compatible server on loopback for the durable-record tests: `moto_server` (PyPI
//! package `moto[server]`), started on a free port and killed by PID when dropped.

use std::net::{Ipv4Addr, TcpListener, TcpStream};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use zooid_test_support::spawn_with_parent_death_signal;

/// A running `moto_server`.
pub struct Moto {
    child: Child,
    port: u16,
}

impl Moto {
    /// Starts `moto_server` (or `$ZOOID_MOTO_SERVER`) on a free loopback port and waits until it
    /// accepts connections. Panics, naming the install command, when it is not installed.
    pub fn start() -> Moto {
        let program =
            std::env::var("ZOOID_MOTO_SERVER").unwrap_or_else(|_| "moto_server".to_string());
        let port = TcpListener::bind((Ipv4Addr::LOCALHOST, 0))
            .and_then(|l| l.local_addr())
            .expect("free port")
            .port();
        let mut cmd = Command::new(&program);
        cmd.args(["-H", "127.0.0.1", "-p", &port.to_string()])
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::null());
        let child = spawn_with_parent_death_signal(cmd).unwrap_or_else(|e| {
            panic!("cannot run {program} ({e}): install it with pip install 'moto[server]'")
        });
        let moto = Moto { child, port };
        let deadline = Instant::now() + Duration::from_secs(30);
        while TcpStream::connect((Ipv4Addr::LOCALHOST, port)).is_err() {
            assert!(Instant::now() < deadline, "moto_server did not start");
            std::thread::sleep(Duration::from_millis(50));
        }
        moto
    }

    /// The endpoint URL.
    pub fn endpoint(&self) -> String {
        format!("http://127.0.0.1:{}", self.port)
    }

    /// Sets the `AWS_*` variables the S3 backend reads, for this test process and its children.
    pub fn export_env(&self) {
        // Set before any thread reads them (the tests using this run one server per binary).
        unsafe {
            std::env::set_var("AWS_ENDPOINT", self.endpoint());
            std::env::set_var("AWS_ALLOW_HTTP", "true");
            std::env::set_var("AWS_ACCESS_KEY_ID", "zooid-test");
            std::env::set_var("AWS_SECRET_ACCESS_KEY", "zooid-test-secret");
            std::env::set_var("AWS_REGION", "us-east-1");
        }
    }

    /// Creates a bucket (moto accepts an unsigned `PUT /BUCKET`).
    pub fn create_bucket(&self, bucket: &str) {
        use std::io::{Read, Write};
        let mut stream = TcpStream::connect((Ipv4Addr::LOCALHOST, self.port)).expect("connect");
        write!(
            stream,
            "PUT /{bucket} HTTP/1.1\r\nHost: 127.0.0.1:{}\r\nContent-Length: 0\r\nConnection: close\r\n\r\n",
            self.port
        )
        .expect("send");
        let mut reply = String::new();
        let _ = stream.read_to_string(&mut reply);
        assert!(reply.starts_with("HTTP/1.1 200"), "create bucket: {reply}");
    }
}

impl Drop for Moto {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}
