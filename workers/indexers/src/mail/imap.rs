//! IMAP mailboxes, polled by UID.
//!
//! Per mailbox the cursor is `{uidValidity, lastUid}`: a poll fetches the UIDs above `lastUid`
//! (sizes first, then the messages in batches, read-only with `BODY.PEEK` so nothing is marked
//! seen), queues them, and moves `lastUid` after each batch. A changed `UIDVALIDITY` means the
//! server renumbered the mailbox: the poll starts again from the first message, and messages
//! already written are recognised by their Message-ID and skipped.

use std::sync::Arc;
use std::time::Duration;

use async_imap::{Client, Session};
use async_trait::async_trait;
use evident_egress::EgressPolicy;
use evident_store::indexers::IndexerSource;
use futures_util::TryStreamExt;
use serde::{Deserialize, Serialize};
use serde_json::json;
use tokio::io::{AsyncRead, AsyncWrite};
use tokio::net::TcpStream;

use super::queue_batch;
use crate::poll::{LeasedPoller, PollContext, PollError, PollReport};
use crate::report::ImapReport;
use crate::sources::config_of;
pub use evident_sources::kinds::mail::{ImapConfig, ImapSecurity};

/// Connecting and logging in, and each command, must answer within this.
const CONNECT_TIMEOUT: Duration = Duration::from_secs(30);
const COMMAND_TIMEOUT: Duration = Duration::from_secs(300);

/// Any connection async-imap can drive (TLS or plain), boxed so one session type serves both.
trait ImapIo: AsyncRead + AsyncWrite + Unpin + Send + std::fmt::Debug {}
impl<T: AsyncRead + AsyncWrite + Unpin + Send + std::fmt::Debug> ImapIo for T {}
type ImapSession = Session<Box<dyn ImapIo>>;

fn err(what: &str, e: impl std::fmt::Display) -> PollError {
    PollError::unreachable(format!("imap {what}"), e)
}

async fn timed<T, E: std::fmt::Display>(
    what: &str,
    limit: Duration,
    f: impl std::future::Future<Output = Result<T, E>>,
) -> Result<T, PollError> {
    tokio::time::timeout(limit, f)
        .await
        .map_err(|_| err(what, format!("no answer within {}s", limit.as_secs())))?
        .map_err(|e| err(what, e))
}

fn tls_connector(cfg: &ImapConfig) -> Result<tokio_rustls::TlsConnector, PollError> {
    let mut roots = rustls::RootCertStore::empty();
    roots.extend(webpki_roots::TLS_SERVER_ROOTS.iter().cloned());
    if let Some(ca) = &cfg.ca_file {
        use rustls_pki_types::pem::PemObject;
        let certs = rustls_pki_types::CertificateDer::pem_file_iter(ca)
            .map_err(|e| PollError::Config(format!("caFile {}: {e}", ca.display())))?;
        for cert in certs {
            let cert =
                cert.map_err(|e| PollError::Config(format!("caFile {}: {e}", ca.display())))?;
            roots
                .add(cert)
                .map_err(|e| PollError::Config(format!("caFile {}: {e}", ca.display())))?;
        }
    }
    let config = rustls::ClientConfig::builder_with_provider(Arc::new(
        rustls::crypto::ring::default_provider(),
    ))
    .with_safe_default_protocol_versions()
    .map_err(|e| PollError::Config(format!("tls: {e}")))?
    .with_root_certificates(roots)
    .with_no_client_auth();
    Ok(tokio_rustls::TlsConnector::from(Arc::new(config)))
}

async fn tls_wrap(
    cfg: &ImapConfig,
    tcp: TcpStream,
) -> Result<tokio_rustls::client::TlsStream<TcpStream>, PollError> {
    let name = rustls_pki_types::ServerName::try_from(cfg.host.clone())
        .map_err(|e| PollError::Config(format!("host `{}`: {e}", cfg.host)))?;
    timed(
        "tls handshake",
        CONNECT_TIMEOUT,
        tls_connector(cfg)?.connect(name, tcp),
    )
    .await
}

/// Connects and logs in. The credentials come from the environment now and go nowhere else.
async fn connect(cfg: &ImapConfig, egress: &EgressPolicy) -> Result<ImapSession, PollError> {
    let user = std::env::var(&cfg.username_env).map_err(|_| {
        PollError::Config(format!(
            "environment variable {} is not set",
            cfg.username_env
        ))
    })?;
    let password = std::env::var(&cfg.password_env).map_err(|_| {
        PollError::Config(format!(
            "environment variable {} is not set",
            cfg.password_env
        ))
    })?;
    // The host resolved and every address checked by the egress policy; the connection goes
    // to exactly those addresses.
    let addrs = egress
        .resolve(&cfg.host, cfg.port())
        .await
        .map_err(|e| match e {
            e if e.is_refusal() => PollError::Refused(format!("imap: {e}")),
            e => PollError::unreachable("imap", e),
        })?;
    let tcp = timed(
        "connect",
        CONNECT_TIMEOUT,
        TcpStream::connect(addrs.as_slice()),
    )
    .await?;
    let client: Client<Box<dyn ImapIo>> = match cfg.security {
        ImapSecurity::Tls => {
            let mut c = Client::new(Box::new(tls_wrap(cfg, tcp).await?) as Box<dyn ImapIo>);
            greeting(&mut c).await?;
            c
        }
        ImapSecurity::Plain => {
            let mut c = Client::new(Box::new(tcp) as Box<dyn ImapIo>);
            greeting(&mut c).await?;
            c
        }
        ImapSecurity::Starttls => {
            let mut plain = Client::new(tcp);
            timed("greeting", CONNECT_TIMEOUT, async {
                plain
                    .read_response()
                    .await?
                    .ok_or_else(|| std::io::Error::other("connection closed before the greeting"))
            })
            .await?;
            timed(
                "starttls",
                CONNECT_TIMEOUT,
                plain.run_command_and_check_ok("STARTTLS", None),
            )
            .await?;
            // No greeting after STARTTLS.
            Client::new(Box::new(tls_wrap(cfg, plain.into_inner()).await?) as Box<dyn ImapIo>)
        }
    };
    tokio::time::timeout(CONNECT_TIMEOUT, client.login(&user, &password))
        .await
        .map_err(|_| err("login", "no answer"))?
        // The error names the server's refusal, never the credentials.
        .map_err(|(e, _)| PollError::AuthRefused {
            what: "imap login".into(),
            reason: e.to_string(),
        })
}

async fn greeting(c: &mut Client<Box<dyn ImapIo>>) -> Result<(), PollError> {
    timed("greeting", CONNECT_TIMEOUT, async {
        c.read_response()
            .await?
            .ok_or_else(|| std::io::Error::other("connection closed before the greeting"))
    })
    .await
    .map(drop)
}

/// Where a mailbox was left.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
struct MailboxCursor {
    uid_validity: u32,
    last_uid: u32,
}

/// `a,b,c` for UID FETCH.
fn uid_set(uids: &[u32]) -> String {
    uids.iter()
        .map(u32::to_string)
        .collect::<Vec<_>>()
        .join(",")
}

/// Polls `kind = "imap"` sources.
pub struct ImapPoller {
    pub ctx: PollContext,
}

#[derive(Default)]
struct MailboxReport {
    messages: u64,
    uid_validity_changed: bool,
}

/// The UIDs above `last_uid` with their sizes, in UID order.
async fn new_sizes(session: &mut ImapSession, last_uid: u32) -> Result<Vec<(u32, u32)>, PollError> {
    // `n:*` also answers the highest message when no UID is above n: filter.
    let mut sizes: Vec<(u32, u32)> = timed("fetch sizes", COMMAND_TIMEOUT, async {
        session
            .uid_fetch(format!("{}:*", last_uid + 1), "(UID RFC822.SIZE)")
            .await?
            .try_collect::<Vec<_>>()
            .await
    })
    .await?
    .iter()
    .filter_map(|f| Some((f.uid?, f.size.unwrap_or(0))))
    .filter(|(uid, _)| *uid > last_uid)
    .collect();
    sizes.sort_unstable();
    Ok(sizes)
}

/// Fetches a batch of (UID, size): messages within the size limit whole, in one command;
/// larger ones only their head (their text comes first), one by one. (UID, bytes, size).
async fn fetch_batch(
    session: &mut ImapSession,
    cfg: &ImapConfig,
    batch: &[(u32, u32)],
) -> Result<Vec<(u32, Vec<u8>, u64)>, PollError> {
    let (small, large): (Vec<_>, Vec<_>) = batch
        .iter()
        .copied()
        .partition(|(_, size)| u64::from(*size) <= cfg.max_message_bytes);
    let mut fetched: Vec<(u32, Vec<u8>, u64)> = Vec::with_capacity(batch.len());
    if !small.is_empty() {
        let uids: Vec<u32> = small.iter().map(|(u, _)| *u).collect();
        let got = timed("fetch", COMMAND_TIMEOUT, async {
            session
                .uid_fetch(uid_set(&uids), "(UID BODY.PEEK[])")
                .await?
                .try_collect::<Vec<_>>()
                .await
        })
        .await?;
        for f in &got {
            if let (Some(uid), Some(body)) = (f.uid, f.body()) {
                fetched.push((uid, body.to_vec(), body.len() as u64));
            }
        }
    }
    for (uid, size) in large {
        // Only the head of an oversized message: its text comes first.
        let got = timed("fetch", COMMAND_TIMEOUT, async {
            session
                .uid_fetch(
                    uid.to_string(),
                    format!("(UID BODY.PEEK[]<0.{}>)", cfg.max_message_bytes),
                )
                .await?
                .try_collect::<Vec<_>>()
                .await
        })
        .await?;
        if let Some(body) = got.iter().find_map(|f| f.body()) {
            fetched.push((uid, body.to_vec(), u64::from(size)));
        }
    }
    Ok(fetched)
}

impl ImapPoller {
    async fn poll_mailbox(
        &self,
        session: &mut ImapSession,
        source: &IndexerSource,
        cfg: &ImapConfig,
        mailbox: &str,
    ) -> Result<MailboxReport, PollError> {
        let mut report = MailboxReport::default();
        let key = format!("imap:{mailbox}");
        let mb = timed("examine", COMMAND_TIMEOUT, session.examine(mailbox)).await?;
        let validity = mb.uid_validity.ok_or_else(|| {
            err(
                "examine",
                format!("{mailbox}: the server sent no UIDVALIDITY"),
            )
        })?;
        let mut cursor: MailboxCursor = self
            .ctx
            .cursor(&source.key(), &key)
            .await?
            .and_then(|v| serde_json::from_value(v).ok())
            .unwrap_or_default();
        if cursor.uid_validity != validity {
            report.uid_validity_changed = cursor.uid_validity != 0;
            cursor = MailboxCursor {
                uid_validity: validity,
                last_uid: 0,
            };
        }
        if mb.exists > 0 {
            let sizes = new_sizes(session, cursor.last_uid).await?;
            for batch in sizes.chunks(cfg.batch as usize) {
                let mut fetched = fetch_batch(session, cfg, batch).await?;
                fetched.sort_by_key(|(uid, _, _)| *uid);
                let messages = fetched
                    .into_iter()
                    .map(|(_, raw, size)| (raw, size))
                    .collect();
                report.messages +=
                    queue_batch(&self.ctx, source, mailbox, messages, cfg.max_message_bytes)
                        .await?;
                // A message expunged between the size listing and the fetch is simply gone.
                cursor.last_uid = batch.last().map_or(cursor.last_uid, |(uid, _)| *uid);
                self.ctx
                    .set_cursor(&source.key(), &key, &json!(cursor))
                    .await?;
            }
        }
        self.ctx
            .set_cursor(&source.key(), &key, &json!(cursor))
            .await?;
        Ok(report)
    }

    async fn poll_now(&self, source: &IndexerSource) -> Result<ImapReport, PollError> {
        let mut cfg: ImapConfig = config_of(source).map_err(PollError::Config)?;
        if let Some(ca) = &cfg.ca_file {
            cfg.ca_file = Some(self.ctx.access.path(ca)?);
        }
        let mut session = connect(&cfg, &self.ctx.access.egress).await?;
        let mut messages = 0;
        let mut renumbered = Vec::new();
        let mut result = Ok(());
        for mailbox in &cfg.mailboxes {
            match self.poll_mailbox(&mut session, source, &cfg, mailbox).await {
                Ok(r) => {
                    messages += r.messages;
                    if r.uid_validity_changed {
                        tracing::warn!(source_id = %source.id, mailbox = %mailbox, "UIDVALIDITY changed: reading the mailbox again");
                        renumbered.push(mailbox.clone());
                    }
                }
                Err(e) => {
                    result = Err(e);
                    break;
                }
            }
        }
        let _ = tokio::time::timeout(CONNECT_TIMEOUT, session.logout()).await;
        result?;
        Ok(ImapReport {
            mailboxes: cfg.mailboxes.len(),
            messages,
            queued: messages,
            uid_validity_changed: renumbered.len(),
            uid_validity_changed_examples: renumbered,
        })
    }
}

#[async_trait]
impl LeasedPoller for ImapPoller {
    const KIND: &'static str = "imap";

    fn context(&self) -> &PollContext {
        &self.ctx
    }

    async fn poll_source(&self, source: &IndexerSource) -> Result<PollReport, PollError> {
        self.poll_now(source).await.map(Into::into)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::sources::SourceConfig;

    fn cfg() -> ImapConfig {
        serde_json::from_value(json!({
            "host": "imap.example.com", "usernameEnv": "MAIL_USER", "passwordEnv": "MAIL_PASSWORD"
        }))
        .expect("config")
    }

    #[test]
    fn settings_are_checked() {
        let c = cfg();
        assert!(c.validate().is_ok());
        assert_eq!(c.port(), 993);
        assert_eq!(c.mailboxes, vec!["INBOX"]);
        let mut plain = c.clone();
        plain.security = ImapSecurity::Plain;
        assert!(
            plain
                .validate()
                .expect_err("clear text")
                .contains("localhost")
        );
        plain.host = "127.0.0.1".into();
        assert!(plain.validate().is_ok());
        assert_eq!(plain.port(), 143);
        let mut secret = c.clone();
        secret.password_env = "hunter2!".into();
        assert!(secret.validate().is_err(), "a value where a name belongs");
        assert!(
            serde_json::from_value::<ImapConfig>(json!({
                "host": "h", "usernameEnv": "U", "passwordEnv": "P", "password": "x"
            }))
            .is_err(),
            "no field for a password"
        );
    }

    #[test]
    fn uid_sets() {
        assert_eq!(uid_set(&[3, 4, 9]), "3,4,9");
    }
}
