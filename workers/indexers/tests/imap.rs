//! IMAP against a real server: Dovecot (Debian's `dovecot-imapd`), started on loopback in a
//! temporary folder for each test, with TLS from a throwaway CA. The setup installs the
//! package when it is missing (as `.ci/run` does).

mod support;

use std::path::{Path, PathBuf};
use std::process::{Child, Command};
use std::time::Duration;

use serde_json::json;
use support::harness;
use tokio::net::TcpStream;

const DOVECOT: &str = "/usr/sbin/dovecot";

/// Installs Dovecot once per machine when missing (tests run in parallel processes: a lock
/// file makes them wait for one another).
fn ensure_dovecot() {
    if Path::new(DOVECOT).exists() {
        return;
    }
    let lock = std::env::temp_dir().join("evident-dovecot-install.lock");
    let file = std::fs::OpenOptions::new()
        .create(true)
        .truncate(false)
        .write(true)
        .open(&lock)
        .expect("lock file");
    let status = Command::new("flock")
        .arg(lock.as_os_str())
        .arg("sh")
        .arg("-c")
        .arg(format!(
            "test -x {DOVECOT} || {{ s=''; [ \"$(id -u)\" -eq 0 ] || s=sudo; DEBIAN_FRONTEND=noninteractive $s apt-get install -y -qq dovecot-imapd openssl >/dev/null || {{ $s apt-get update -qq && DEBIAN_FRONTEND=noninteractive $s apt-get install -y -qq dovecot-imapd openssl >/dev/null; }}; }}"
        ))
        .status()
        .expect("flock");
    drop(file);
    assert!(
        status.success() && Path::new(DOVECOT).exists(),
        "Dovecot is needed for the IMAP tests: apt-get install dovecot-imapd"
    );
}

struct Dovecot {
    child: Child,
    port: u16,
    /// Implicit TLS (imaps).
    tls_port: u16,
    dir: PathBuf,
    ca: PathBuf,
}

impl Drop for Dovecot {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

fn run(cmd: &mut Command) {
    let out = cmd.output().expect("run");
    assert!(
        out.status.success(),
        "{cmd:?}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
}

/// A CA and a server certificate for `localhost` / 127.0.0.1 signed by it.
fn certificates(dir: &Path) -> PathBuf {
    let p = |f: &str| dir.join(f);
    run(Command::new("openssl")
        .args([
            "req",
            "-x509",
            "-newkey",
            "rsa:2048",
            "-nodes",
            "-days",
            "2",
            "-subj",
            "/CN=Evident Test CA",
        ])
        .arg("-keyout")
        .arg(p("ca.key"))
        .arg("-out")
        .arg(p("ca.pem")));
    run(Command::new("openssl")
        .args([
            "req",
            "-newkey",
            "rsa:2048",
            "-nodes",
            "-subj",
            "/CN=localhost",
        ])
        .arg("-keyout")
        .arg(p("server.key"))
        .arg("-out")
        .arg(p("server.csr")));
    std::fs::write(p("ext.cnf"), "subjectAltName=DNS:localhost,IP:127.0.0.1\n").expect("ext");
    run(Command::new("openssl")
        .args(["x509", "-req", "-days", "2", "-CAcreateserial"])
        .arg("-in")
        .arg(p("server.csr"))
        .arg("-CA")
        .arg(p("ca.pem"))
        .arg("-CAkey")
        .arg(p("ca.key"))
        .arg("-extfile")
        .arg(p("ext.cnf"))
        .arg("-out")
        .arg(p("server.pem")));
    p("ca.pem")
}

fn free_port() -> u16 {
    std::net::TcpListener::bind("127.0.0.1:0")
        .expect("bind")
        .local_addr()
        .expect("addr")
        .port()
}

impl Dovecot {
    async fn start(dir: &Path) -> Dovecot {
        ensure_dovecot();
        let dir = dir.join("dovecot");
        for sub in ["run", "state", "home/alice/Maildir"] {
            std::fs::create_dir_all(dir.join(sub)).expect("mkdir");
        }
        let ca = certificates(&dir);
        let port = free_port();
        let tls_port = free_port();
        // The mail files belong to the test's user; as root (which Dovecot refuses as a mail
        // user), to `nobody`, with the folders on the way made traversable.
        let (uid, gid) = match numeric_id("-u") {
            0 => {
                use std::os::unix::fs::PermissionsExt;
                let home = dir.join("home/alice");
                for p in [
                    dir.parent().expect("parent"),
                    dir.as_path(),
                    &dir.join("home"),
                ] {
                    std::fs::set_permissions(p, std::fs::Permissions::from_mode(0o755))
                        .expect("chmod");
                }
                for p in [home.clone(), home.join("Maildir")] {
                    std::os::unix::fs::chown(&p, Some(65534), Some(65534)).expect("chown");
                }
                (65534, 65534)
            }
            uid => (uid, numeric_id("-g")),
        };
        let root = numeric_id("-u") == 0;
        let user = String::from_utf8(Command::new("id").arg("-un").output().expect("id").stdout)
            .expect("utf8")
            .trim()
            .to_string();
        // As root, Dovecot's own unprivileged users (from the package) run the login and
        // internal processes; otherwise everything runs as the test's user.
        let (login_user, internal_user) = if root {
            ("dovenull".to_string(), "dovecot".to_string())
        } else {
            (user.clone(), user.clone())
        };
        std::fs::write(
            dir.join("passwd"),
            format!(
                "alice:{{PLAIN}}wonderland:{uid}:{gid}::{}\n",
                dir.join("home/alice").display()
            ),
        )
        .expect("passwd");
        let conf = format!(
            r#"base_dir = {d}/run
state_dir = {d}/state
log_path = {d}/dovecot.log
protocols = imap
listen = 127.0.0.1
default_login_user = {login_user}
default_internal_user = {internal_user}
default_internal_group = {internal_group}
ssl = yes
ssl_cert = <{d}/server.pem
ssl_key = <{d}/server.key
auth_mechanisms = plain login
auth_failure_delay = 0
disable_plaintext_auth = no
mail_location = maildir:~/Maildir
first_valid_uid = 0
passdb {{
  driver = passwd-file
  args = scheme=PLAIN username_format=%u {d}/passwd
}}
userdb {{
  driver = passwd-file
  args = username_format=%u {d}/passwd
}}
service imap-login {{
  inet_listener imap {{
    address = 127.0.0.1
    port = {port}
  }}
  inet_listener imaps {{
    address = 127.0.0.1
    port = {tls_port}
    ssl = yes
  }}
}}
service anvil {{
  chroot =
}}
service imap-login {{
  chroot =
}}
service stats {{
  unix_listener stats-reader {{
    mode = 0666
  }}
  unix_listener stats-writer {{
    mode = 0666
  }}
}}
"#,
            d = dir.display(),
            internal_group = if root {
                "dovecot".to_string()
            } else {
                group_name()
            },
        );
        std::fs::write(dir.join("dovecot.conf"), conf).expect("conf");
        let child = Command::new(DOVECOT)
            .arg("-F")
            .arg("-c")
            .arg(dir.join("dovecot.conf"))
            .spawn()
            .expect("start dovecot");
        let mut d = Dovecot {
            child,
            port,
            tls_port,
            dir: dir.clone(),
            ca,
        };
        // Ready when it accepts connections (bounded wait on a real process).
        for _ in 0..200 {
            if TcpStream::connect(("127.0.0.1", port)).await.is_ok() {
                return d;
            }
            if let Ok(Some(status)) = d.child.try_wait() {
                panic!(
                    "dovecot exited ({status}): {}",
                    std::fs::read_to_string(dir.join("dovecot.log")).unwrap_or_default()
                );
            }
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
        let _ = d.child.kill();
        panic!(
            "dovecot did not listen: {}",
            std::fs::read_to_string(dir.join("dovecot.log")).unwrap_or_default()
        );
    }

    /// A logged-in session (plain, on loopback) to set up mailboxes as a mail client would.
    async fn session(&self) -> async_imap::Session<TcpStream> {
        let tcp = TcpStream::connect(("127.0.0.1", self.port))
            .await
            .expect("connect");
        let mut client = async_imap::Client::new(tcp);
        client.read_response().await.expect("greeting");
        match client.login("alice", "wonderland").await {
            Ok(session) => session,
            Err((e, _)) => panic!(
                "login: {e}\n{}",
                std::fs::read_to_string(self.dir.join("dovecot.log")).unwrap_or_default()
            ),
        }
    }
}

fn numeric_id(flag: &str) -> u32 {
    String::from_utf8(Command::new("id").arg(flag).output().expect("id").stdout)
        .expect("utf8")
        .trim()
        .parse()
        .expect("id")
}

fn group_name() -> String {
    String::from_utf8(Command::new("id").arg("-gn").output().expect("id").stdout)
        .expect("utf8")
        .trim()
        .to_string()
}

/// Sets a variable of this test process (nextest runs each test in a process of its own, and
/// each test uses its own names, so no reader races the write).
#[allow(unsafe_code)]
fn set_env(name: &str, value: &str) {
    // SAFETY: see above — no other thread reads or writes these variables.
    unsafe { std::env::set_var(name, value) }
}

fn msg(id: &str, subject: &str, body: &str) -> String {
    format!(
        "Message-ID: <{id}>\r\nFrom: Ann Lee <ann@acme.io>\r\nTo: team@acme.io\r\nSubject: {subject}\r\nDate: Mon, 05 Jan 2026 10:00:00 +0000\r\n\r\n{body}\r\n"
    )
}

async fn append(s: &mut async_imap::Session<TcpStream>, mailbox: &str, m: &str) {
    s.append(mailbox, None, None, m.as_bytes())
        .await
        .expect("append");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn imap_over_starttls_reads_new_mail_and_survives_a_uidvalidity_change() {
    let h = harness().await;
    let server = Dovecot::start(h.dir.path()).await;
    let mut s = server.session().await;
    s.create("Projects").await.expect("create");
    append(
        &mut s,
        "INBOX",
        &msg("a1@acme.io", "Kickoff", "The kickoff is on Monday."),
    )
    .await;
    append(
        &mut s,
        "Projects",
        &msg("p1@acme.io", "Roadmap", "The roadmap has three milestones."),
    )
    .await;

    // The credentials live in the environment of the indexer, never in its settings.
    set_env("EVIDENT_TEST_IMAP_USER", "alice");
    set_env("EVIDENT_TEST_IMAP_PASSWORD", "wonderland");
    let src = h
        .register(
            "imap",
            json!({
                "id": "acme.alice",
                "host": "localhost", "port": server.port, "security": "starttls",
                "usernameEnv": "EVIDENT_TEST_IMAP_USER", "passwordEnv": "EVIDENT_TEST_IMAP_PASSWORD",
                "mailboxes": ["INBOX", "Projects"], "caFile": server.ca,
            }),
        )
        .await;
    let first = h.poll(&src.id).await.expect("poll");
    assert_eq!(first["messages"], 2, "{first}");
    assert!(h.drain().await.errors.is_empty());
    assert!(
        !serde_json::to_string(&h.source(&src.id).await)
            .expect("json")
            .contains("wonderland")
    );

    // A message arriving between polls: only it is read.
    append(
        &mut s,
        "INBOX",
        &msg(
            "a2@acme.io",
            "Budget",
            "The budget review moved to Thursday.",
        ),
    )
    .await;
    let second = h.poll(&src.id).await.expect("poll");
    assert_eq!(second["messages"], 1, "{second}");
    assert!(h.drain().await.errors.is_empty());
    let quiet = h.poll(&src.id).await.expect("poll");
    assert_eq!(quiet["messages"], 0);

    // The server renumbers a mailbox (deleted and created again): UIDVALIDITY changes, the
    // mailbox is read from the start, and what was already written is not written twice.
    let before = s.examine("Projects").await.expect("examine").uid_validity;
    s.close().await.ok();
    let mut after = before;
    for _ in 0..30 {
        s.delete("Projects").await.expect("delete");
        s.create("Projects").await.expect("create");
        after = s.examine("Projects").await.expect("examine").uid_validity;
        s.close().await.ok();
        if after != before {
            break;
        }
        // Dovecot derives UIDVALIDITY from the clock's seconds.
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
    assert_ne!(before, after, "UIDVALIDITY changed");
    append(
        &mut s,
        "Projects",
        &msg("p1@acme.io", "Roadmap", "The roadmap has three milestones."),
    )
    .await;
    append(
        &mut s,
        "Projects",
        &msg("p2@acme.io", "Hiring", "Two engineers join in March."),
    )
    .await;
    let third = h.poll(&src.id).await.expect("poll");
    assert_eq!(third["messages"], 2, "{third}");
    assert_eq!(third["uidValidityChanged"], 1);
    assert!(h.drain().await.errors.is_empty());
    assert_eq!(
        h.urns("mail:acme.alice:").await,
        vec![
            "mail:acme.alice:a1@acme.io",
            "mail:acme.alice:a2@acme.io",
            "mail:acme.alice:p1@acme.io",
            "mail:acme.alice:p2@acme.io",
        ]
    );
    let pack = h.retrieve("budget review Thursday", &[]).await;
    assert_eq!(pack.items[0].source_urn, "mail:acme.alice:a2@acme.io");
    assert_eq!(
        support::locator_json(&pack.items[0].locator)["mailbox"],
        "INBOX"
    );

    // The same account over implicit TLS (port 993 style).
    let tls = h
        .register(
            "imap",
            json!({
                "id": "acme.alice-tls",
                "host": "localhost", "port": server.tls_port, "security": "tls",
                "usernameEnv": "EVIDENT_TEST_IMAP_USER", "passwordEnv": "EVIDENT_TEST_IMAP_PASSWORD",
                "caFile": server.ca,
            }),
        )
        .await;
    let over_tls = h.poll(&tls.id).await.expect("poll");
    assert_eq!(over_tls["messages"], 2, "INBOX over TLS: {over_tls}");
    s.logout().await.ok();
    drop(server);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn wrong_credentials_and_untrusted_certificates_are_poll_errors() {
    let h = harness().await;
    let server = Dovecot::start(h.dir.path()).await;
    set_env("EVIDENT_TEST_IMAP_USER2", "alice");
    set_env("EVIDENT_TEST_IMAP_BAD_PASSWORD", "not-the-password");
    let bad = h
        .register(
            "imap",
            json!({
                "id": "acme.bad", "host": "localhost", "port": server.port, "security": "starttls",
                "usernameEnv": "EVIDENT_TEST_IMAP_USER2", "passwordEnv": "EVIDENT_TEST_IMAP_BAD_PASSWORD",
                "caFile": server.ca,
            }),
        )
        .await;
    let err = h.poll(&bad.id).await.expect_err("refused").to_string();
    assert!(err.contains("login"), "{err}");
    assert!(
        !err.contains("not-the-password"),
        "the password is never shown"
    );
    // Without the CA the server's certificate is not trusted.
    let untrusted = h
        .register(
            "imap",
            json!({
                "id": "acme.untrusted", "host": "localhost", "port": server.port, "security": "starttls",
                "usernameEnv": "EVIDENT_TEST_IMAP_USER2", "passwordEnv": "EVIDENT_TEST_IMAP_BAD_PASSWORD",
            }),
        )
        .await;
    let err = h
        .poll(&untrusted.id)
        .await
        .expect_err("untrusted")
        .to_string();
    assert!(err.contains("tls"), "{err}");
    let _ = server.dir.clone();
}
