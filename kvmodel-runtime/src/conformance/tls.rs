//! A `redis-server` that speaks only TLS, for the `rediss://` tests: a
//! private CA and a server certificate for `127.0.0.1` and `localhost`,
//! made with the `openssl` command, and a server on a free loopback port
//! with its plain port closed.

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::{Duration, Instant};

use super::watchdog;

/// A `redis-server` listening for TLS only, on a free loopback port, with
/// its own CA; stopped (by its PID) when dropped or when this process ends.
/// Clients need not present a certificate.
#[derive(Debug)]
pub struct TlsRedisServer {
    process: watchdog::Watched,
    port: u16,
    dir: PathBuf,
    ca: Vec<u8>,
}

impl TlsRedisServer {
    /// Makes the certificates and starts the server; panics with an
    /// actionable message if `openssl` or a TLS-capable `redis-server` is
    /// missing, or the server does not come up.
    pub fn start() -> Self {
        TlsRedisServer::launch(false)
    }

    /// Like [`start`](Self::start), but a Redis Cluster of this one master,
    /// which owns every hash slot and names its TLS port to clients.
    pub fn start_cluster() -> Self {
        TlsRedisServer::launch(true)
    }

    fn launch(cluster: bool) -> Self {
        static NEXT: AtomicUsize = AtomicUsize::new(0);
        let dir = watchdog::scratch().join(format!("tls-{}", NEXT.fetch_add(1, Ordering::SeqCst)));
        std::fs::create_dir_all(&dir).expect("create the TLS server's directory");
        certify(&dir);
        let ca = std::fs::read(dir.join("ca.pem")).expect("read the test CA");
        for _ in 0..10 {
            let port = free_port(cluster);
            if let Some(process) = spawn(&dir, port, &ca, cluster) {
                let server = TlsRedisServer {
                    process,
                    port,
                    dir,
                    ca,
                };
                if cluster {
                    server.form();
                }
                return server;
            }
        }
        panic!(
            "a TLS redis-server did not start on a free loopback port; \
             check that `redis-server --tls-port` works (Redis built with TLS)"
        );
    }

    /// Gives the one master every slot and waits for `cluster_state:ok`.
    fn form(&self) {
        let mut conn = connect(self.port, &self.ca).expect("connect to the TLS cluster node");
        let () = redis::cmd("CLUSTER")
            .arg("ADDSLOTSRANGE")
            .arg(0)
            .arg(16383)
            .query(&mut conn)
            .expect("assign every hash slot to the TLS cluster node");
        let deadline = Instant::now() + Duration::from_secs(30);
        while Instant::now() < deadline {
            let info: String = redis::cmd("CLUSTER")
                .arg("INFO")
                .query(&mut conn)
                .unwrap_or_default();
            if info.contains("cluster_state:ok") {
                return;
            }
            std::thread::sleep(Duration::from_millis(10));
        }
        panic!("the TLS test cluster did not reach cluster_state:ok within 30 s");
    }

    /// `rediss://127.0.0.1:PORT`.
    pub fn url(&self) -> String {
        format!("rediss://127.0.0.1:{}", self.port)
    }

    /// The port it listens on.
    pub fn port(&self) -> u16 {
        self.port
    }

    /// The server's PID.
    pub fn pid(&self) -> u32 {
        self.process.pid()
    }

    /// The CA that signed the server's certificate, in PEM.
    pub fn ca_pem(&self) -> &[u8] {
        &self.ca
    }

    /// The file of [`ca_pem`](Self::ca_pem), for `SSL_CERT_FILE`.
    pub fn ca_file(&self) -> PathBuf {
        self.dir.join("ca.pem")
    }
}

impl Drop for TlsRedisServer {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.dir);
    }
}

/// Writes `ca.pem` (a CA) and `server.pem`, `server.key` (a certificate it
/// signed for `127.0.0.1` and `localhost`) into `dir`. P-256 keys: made at
/// once.
fn certify(dir: &Path) {
    let ext = "basicConstraints=CA:FALSE\n\
               keyUsage=digitalSignature\n\
               extendedKeyUsage=serverAuth\n\
               subjectAltName=IP:127.0.0.1,DNS:localhost\n";
    std::fs::write(dir.join("server.ext"), ext).expect("write the certificate's extensions");
    let key = [
        "-newkey",
        "ec",
        "-pkeyopt",
        "ec_paramgen_curve:prime256v1",
        "-nodes",
    ];
    openssl(
        dir,
        &[
            &["req", "-x509"][..],
            &key,
            &[
                "-keyout",
                "ca.key",
                "-out",
                "ca.pem",
                "-days",
                "2",
                "-subj",
                "/CN=kvmodel test CA",
            ],
        ]
        .concat(),
    );
    openssl(
        dir,
        &[
            &["req"][..],
            &key,
            &[
                "-keyout",
                "server.key",
                "-out",
                "server.csr",
                "-subj",
                "/CN=localhost",
            ],
        ]
        .concat(),
    );
    openssl(
        dir,
        &[
            "x509",
            "-req",
            "-in",
            "server.csr",
            "-CA",
            "ca.pem",
            "-CAkey",
            "ca.key",
            "-set_serial",
            "1",
            "-days",
            "2",
            "-extfile",
            "server.ext",
            "-out",
            "server.pem",
        ],
    );
}

fn openssl(dir: &Path, args: &[&str]) {
    let status = Command::new("openssl")
        .args(args)
        .current_dir(dir)
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .status();
    assert!(
        status.is_ok_and(|s| s.success()),
        "`openssl {}` failed: the TLS tests make their certificates with the \
         `openssl` command (`apt-get install openssl`)",
        args.join(" ")
    );
}

/// A TLS server (with `cluster`, a cluster node) on `port`, or `None` if it exits (the port was taken) or
/// does not answer over TLS within 30 s.
fn spawn(dir: &Path, port: u16, ca: &[u8], cluster: bool) -> Option<watchdog::Watched> {
    let file = |name: &str| dir.join(name).into_os_string();
    let mut args: Vec<std::ffi::OsString> = [
        "--port",
        "0",
        "--tls-port",
        &port.to_string(),
        "--bind",
        "127.0.0.1",
        "--save",
        "",
        "--appendonly",
        "no",
        "--tls-auth-clients",
        "no",
    ]
    .into_iter()
    .map(Into::into)
    .collect();
    args.extend(["--tls-cert-file".into(), file("server.pem")]);
    args.extend(["--tls-key-file".into(), file("server.key")]);
    args.extend(["--tls-ca-cert-file".into(), file("ca.pem")]);
    args.extend(["--dir".into(), dir.as_os_str().to_owned()]);
    if cluster {
        let conf = ["--cluster-enabled", "yes", "--tls-cluster", "yes"];
        args.extend(conf.into_iter().map(Into::into));
    }
    let process = watchdog::Watched::spawn(args)?;
    let deadline = Instant::now() + Duration::from_secs(30);
    while Instant::now() < deadline {
        if process.exited() {
            return None;
        }
        if serves(port, process.pid(), ca) {
            return Some(process);
        }
        std::thread::sleep(Duration::from_millis(5));
    }
    None
}

/// A free loopback port; for a cluster node, one in 15000–22767 whose bus
/// port (+10000) is free too.
fn free_port(cluster: bool) -> u16 {
    let free = |port: u16| std::net::TcpListener::bind(("127.0.0.1", port)).is_ok();
    if cluster {
        loop {
            let port = fastrand::u16(15_000..22_768);
            if free(port) && free(port + 10_000) {
                return port;
            }
        }
    }
    std::net::TcpListener::bind("127.0.0.1:0")
        .and_then(|l| l.local_addr())
        .expect("find a free loopback port")
        .port()
}

/// A TLS connection to the server on `port`, trusting `ca`.
fn connect(port: u16, ca: &[u8]) -> Option<redis::Connection> {
    crate::store::ensure_tls_provider();
    let certs = redis::TlsCertificates {
        client_tls: None,
        root_cert: Some(ca.to_vec()),
    };
    redis::Client::build_with_tls(format!("rediss://127.0.0.1:{port}"), certs)
        .ok()?
        .get_connection_with_timeout(Duration::from_secs(1))
        .ok()
}

/// Whether the TLS server on `port` is the process `pid`, asked over TLS.
fn serves(port: u16, pid: u32, ca: &[u8]) -> bool {
    let Some(mut conn) = connect(port, ca) else {
        return false;
    };
    let info: redis::RedisResult<String> = redis::cmd("INFO").arg("server").query(&mut conn);
    info.is_ok_and(|text| text.contains(&format!("\r\nprocess_id:{pid}\r\n")))
}
