//! Test certificates made with the `openssl` CLI: a CA and leaf certificates it signs, all PEM,
//! in a temporary directory owned by the value.

use std::fs;
use std::path::{Path, PathBuf};
use std::process::Command;

use tempfile::TempDir;

/// A CA (certificate and key) in its own temporary directory.
pub struct Ca {
    dir: TempDir,
    pub cert: PathBuf,
    key: PathBuf,
}

/// A certificate signed by a [`Ca`], with its (unencrypted PKCS#8) key.
pub struct Leaf {
    pub cert: PathBuf,
    pub key: PathBuf,
    /// Certificate followed by key, the PEM "key store" ZooKeeper reads.
    pub keystore: PathBuf,
}

fn openssl(args: &[&str], cwd: &Path) {
    let out = Command::new("openssl")
        .args(args)
        .current_dir(cwd)
        .output()
        .expect("run openssl (is the openssl CLI installed?)");
    assert!(
        out.status.success(),
        "openssl {args:?} failed: {}",
        String::from_utf8_lossy(&out.stderr)
    );
}

impl Ca {
    /// A fresh self-signed CA named `name`.
    pub fn new(name: &str) -> Ca {
        let dir = tempfile::Builder::new()
            .prefix("zooid-pki-")
            .tempdir()
            .unwrap();
        let cert = dir.path().join(format!("{name}-ca.pem"));
        let key = dir.path().join(format!("{name}-ca.key"));
        openssl(
            &[
                "req",
                "-x509",
                "-newkey",
                "rsa:2048",
                "-nodes",
                "-days",
                "2",
                "-subj",
                &format!("/CN={name} test CA"),
                "-keyout",
                key.to_str().unwrap(),
                "-out",
                cert.to_str().unwrap(),
            ],
            dir.path(),
        );
        Ca { dir, cert, key }
    }

    /// A leaf certificate for `cn`, valid for 127.0.0.1 and localhost, for servers and clients.
    pub fn issue(&self, cn: &str) -> Leaf {
        let d = self.dir.path();
        let key = d.join(format!("{cn}.key"));
        let csr = d.join(format!("{cn}.csr"));
        let cert = d.join(format!("{cn}.pem"));
        let ext = d.join(format!("{cn}.ext"));
        fs::write(
            &ext,
            "subjectAltName=IP:127.0.0.1,DNS:localhost\nbasicConstraints=CA:FALSE\n\
             keyUsage=digitalSignature,keyEncipherment\nextendedKeyUsage=serverAuth,clientAuth\n",
        )
        .unwrap();
        openssl(
            &[
                "req",
                "-newkey",
                "rsa:2048",
                "-nodes",
                "-subj",
                &format!("/CN={cn}"),
                "-keyout",
                key.to_str().unwrap(),
                "-out",
                csr.to_str().unwrap(),
            ],
            d,
        );
        openssl(
            &[
                "x509",
                "-req",
                "-in",
                csr.to_str().unwrap(),
                "-CA",
                self.cert.to_str().unwrap(),
                "-CAkey",
                self.key.to_str().unwrap(),
                "-CAcreateserial",
                "-days",
                "2",
                "-extfile",
                ext.to_str().unwrap(),
                "-out",
                cert.to_str().unwrap(),
            ],
            d,
        );
        let keystore = d.join(format!("{cn}-keystore.pem"));
        let mut both = fs::read_to_string(&cert).unwrap();
        both.push_str(&fs::read_to_string(&key).unwrap());
        fs::write(&keystore, both).unwrap();
        Leaf {
            cert,
            key,
            keystore,
        }
    }
}
