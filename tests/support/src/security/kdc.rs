//! A real MIT Kerberos KDC on loopback for one test (Debian's krb5-kdc and krb5-admin-server:
//! `kdb5_util`, `kadmin.local`, `krb5kdc`), with its realm, database, principals and keytabs in
//! a temporary directory. The KDC process is killed by PID and reaped on drop, and dies with the
//! test process.

use std::fs;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use tempfile::TempDir;

use crate::{free_loopback_ports, spawn_owned};

/// The test realm.
pub const REALM: &str = "ZOOID.TEST";

/// A running KDC for [`REALM`].
pub struct Kdc {
    dir: TempDir,
    child: Child,
    /// The client configuration (`KRB5_CONFIG`, `-Djava.security.krb5.conf`).
    pub krb5_conf: PathBuf,
}

fn run(cmd: &mut Command, what: &str) {
    let out = cmd.output().unwrap_or_else(|e| {
        panic!("{what}: cannot run (are krb5-kdc and krb5-admin-server installed?): {e}")
    });
    assert!(
        out.status.success(),
        "{what} failed: {}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
}

impl Kdc {
    /// Creates the realm's database and starts `krb5kdc` on a free loopback port.
    pub fn start() -> Kdc {
        let dir = tempfile::Builder::new()
            .prefix("zooid-kdc-")
            .tempdir()
            .unwrap();
        let d = dir.path();
        let port = free_loopback_ports(1)[0];
        let krb5_conf = d.join("krb5.conf");
        fs::write(
            &krb5_conf,
            format!(
                "[libdefaults]\n  default_realm = {REALM}\n  dns_lookup_realm = false\n  \
                 dns_lookup_kdc = false\n  dns_canonicalize_hostname = false\n  rdns = false\n  \
                 udp_preference_limit = 1\n[realms]\n  {REALM} = {{\n    kdc = 127.0.0.1:{port}\n  }}\n\
                 [domain_realm]\n  localhost = {REALM}\n"
            ),
        )
        .unwrap();
        fs::write(
            d.join("kdc.conf"),
            format!(
                "[kdcdefaults]\n  kdc_ports = {port}\n  kdc_tcp_ports = {port}\n[realms]\n  {REALM} = {{\n    \
                 database_name = {db}\n    key_stash_file = {stash}\n    acl_file = {acl}\n  }}\n\
                 [logging]\n  kdc = FILE:{log}\n",
                db = d.join("principal").display(),
                stash = d.join("stash").display(),
                acl = d.join("kadm5.acl").display(),
                log = d.join("kdc.log").display(),
            ),
        )
        .unwrap();
        let kdc = |program: &str| {
            let mut cmd = Command::new(program);
            cmd.env("KRB5_CONFIG", &krb5_conf)
                .env("KRB5_KDC_PROFILE", d.join("kdc.conf"));
            cmd
        };
        run(
            kdc("kdb5_util").args(["create", "-s", "-r", REALM, "-P", "zooid-test-master"]),
            "kdb5_util create",
        );
        let mut cmd = kdc("krb5kdc");
        cmd.args(["-n", "-r", REALM])
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::null());
        let child = spawn_owned(cmd).expect("start krb5kdc");
        let kdc = Kdc {
            dir,
            child,
            krb5_conf,
        };
        kdc.wait_ready(port);
        kdc
    }

    fn wait_ready(&self, port: u16) {
        let deadline = Instant::now() + Duration::from_secs(20);
        while std::net::TcpStream::connect(("127.0.0.1", port)).is_err() {
            assert!(
                Instant::now() < deadline,
                "krb5kdc did not listen on {port} within 20 s"
            );
            std::thread::sleep(Duration::from_millis(50));
        }
    }

    /// Adds `principal` with a random key and writes its keytab; returns the keytab's path.
    pub fn keytab(&self, principal: &str) -> PathBuf {
        let d = self.dir.path();
        let keytab = d.join(format!("{}.keytab", principal.replace('/', "_")));
        for query in [
            format!("addprinc -randkey {principal}"),
            format!("ktadd -k {} {principal}", keytab.display()),
        ] {
            run(
                Command::new("kadmin.local")
                    .env("KRB5_CONFIG", &self.krb5_conf)
                    .env("KRB5_KDC_PROFILE", d.join("kdc.conf"))
                    .args(["-r", REALM, "-q", &query]),
                &format!("kadmin.local {query}"),
            );
        }
        keytab
    }

    /// A scratch directory that lives as long as the KDC.
    pub fn dir(&self) -> &Path {
        self.dir.path()
    }
}

impl Drop for Kdc {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}
