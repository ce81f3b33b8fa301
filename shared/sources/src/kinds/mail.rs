//! Mail sources: `mbox`, `maildir` and `imap`.

use std::path::PathBuf;

use serde::{Deserialize, Serialize};

use crate::SourceConfig;

/// Messages larger than this are read only up to it unless a source says otherwise (their
/// text comes first; the attachment cut off is listed as not read).
pub const DEFAULT_MAX_MESSAGE_BYTES: u64 = 25 * 1024 * 1024;

fn default_max_message_bytes() -> u64 {
    DEFAULT_MAX_MESSAGE_BYTES
}

fn default_max_attachment_bytes() -> u64 {
    super::DEFAULT_MAX_ATTACHMENT_BYTES
}

fn check_limits(max_message: u64, max_attachment: u64) -> Result<(), String> {
    if !(1024..=1 << 30).contains(&max_message) {
        return Err("`maxMessageBytes` must be between 1 KiB and 1 GiB".into());
    }
    if max_attachment == 0 {
        return Err("`maxAttachmentBytes` must be positive".into());
    }
    Ok(())
}

fn check_path(path: &std::path::Path) -> Result<(), String> {
    if path.is_absolute() {
        Ok(())
    } else {
        Err(format!("`path` must be absolute, not `{}`", path.display()))
    }
}

/// The file (or folder) name a path is known by: the source's default name.
fn path_name(path: &std::path::Path) -> String {
    path.file_stem()
        .map(|s| s.to_string_lossy().into_owned())
        .unwrap_or_else(|| "mail".into())
}

/// A mail store on local disk (`path`) with its size limits: the config of one kind, the
/// same for each local format.
macro_rules! local_mail_config {
    ($(#[$doc:meta])* $name:ident, $kind:literal) => {
        $(#[$doc])*
        #[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
        #[serde(rename_all = "camelCase", deny_unknown_fields)]
        pub struct $name {
            pub path: PathBuf,
            #[serde(default = "default_max_message_bytes")]
            pub max_message_bytes: u64,
            #[serde(default = "default_max_attachment_bytes")]
            pub max_attachment_bytes: u64,
        }

        impl SourceConfig for $name {
            const KIND: &'static str = $kind;
            const FAMILY: &'static str = "mail";

            fn validate(&self) -> Result<(), String> {
                check_path(&self.path)?;
                check_limits(self.max_message_bytes, self.max_attachment_bytes)
            }

            fn name(&self) -> String {
                path_name(&self.path)
            }

            fn local_paths(&self) -> Vec<PathBuf> {
                vec![self.path.clone()]
            }
        }
    };
}

local_mail_config!(
    /// `kind = "mbox"`: one mbox file, or every mbox file in a folder (each file is a mailbox).
    MboxConfig,
    "mbox"
);

local_mail_config!(
    /// `kind = "maildir"`: a Maildir (`cur/`, `new/`), with Maildir++ subfolders (`.Sent/`) as
    /// further mailboxes.
    MaildirConfig,
    "maildir"
);

#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum ImapSecurity {
    /// TLS from the first byte (port 993).
    #[default]
    Tls,
    /// Plain connection upgraded with `STARTTLS` (port 143).
    Starttls,
    /// No encryption: only to a server on this machine.
    Plain,
}

fn default_mailboxes() -> Vec<String> {
    vec!["INBOX".into()]
}

fn default_batch() -> u32 {
    100
}

/// `kind = "imap"`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct ImapConfig {
    pub host: String,
    /// Default: 993 for `tls`, 143 otherwise.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub port: Option<u16>,
    #[serde(default)]
    pub security: ImapSecurity,
    /// Environment variables holding the login and password, read when connecting; the
    /// values are never stored or logged.
    pub username_env: String,
    pub password_env: String,
    #[serde(default = "default_mailboxes")]
    pub mailboxes: Vec<String>,
    /// A PEM file of certificates to trust besides the public roots (a private CA or a
    /// self-signed server).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub ca_file: Option<PathBuf>,
    #[serde(default = "default_max_message_bytes")]
    pub max_message_bytes: u64,
    #[serde(default = "default_max_attachment_bytes")]
    pub max_attachment_bytes: u64,
    /// Messages fetched per round trip.
    #[serde(default = "default_batch")]
    pub batch: u32,
}

fn is_loopback(host: &str) -> bool {
    host == "localhost"
        || host
            .parse::<std::net::IpAddr>()
            .is_ok_and(|ip| ip.is_loopback())
}

fn valid_env_name(name: &str) -> bool {
    !name.is_empty()
        && name
            .bytes()
            .all(|b| b.is_ascii_uppercase() || b.is_ascii_digit() || b == b'_')
}

impl SourceConfig for ImapConfig {
    const KIND: &'static str = "imap";
    const FAMILY: &'static str = "mail";

    fn validate(&self) -> Result<(), String> {
        if self.host.trim().is_empty() || self.host.contains(['/', ' ']) {
            return Err("`host` must be a host name or address".into());
        }
        if self.security == ImapSecurity::Plain && !is_loopback(&self.host) {
            return Err(
                "`security = \"plain\"` sends the password in clear: only allowed to localhost"
                    .into(),
            );
        }
        for (field, v) in [
            ("usernameEnv", &self.username_env),
            ("passwordEnv", &self.password_env),
        ] {
            if !valid_env_name(v) {
                return Err(format!(
                    "`{field}` names an environment variable (A-Z, 0-9, _), not a value"
                ));
            }
        }
        if self.mailboxes.is_empty() || self.mailboxes.iter().any(|m| m.trim().is_empty()) {
            return Err("`mailboxes` lists at least one mailbox name".into());
        }
        if let Some(ca) = &self.ca_file {
            check_path(ca)?;
        }
        if !(1..=1000).contains(&self.batch) {
            return Err("`batch` must be between 1 and 1000".into());
        }
        check_limits(self.max_message_bytes, self.max_attachment_bytes)
    }

    fn name(&self) -> String {
        let user = std::env::var(&self.username_env).unwrap_or_default();
        let user = user.split('@').next().unwrap_or("");
        if user.is_empty() {
            self.host.clone()
        } else {
            format!("{user}-{}", self.host)
        }
    }

    fn local_paths(&self) -> Vec<PathBuf> {
        self.ca_file.iter().cloned().collect()
    }

    fn credential_envs(&self) -> Vec<(&'static str, String)> {
        vec![
            ("usernameEnv", self.username_env.clone()),
            ("passwordEnv", self.password_env.clone()),
        ]
    }

    /// The server's host, checked by the egress policy like a URL's (the scheme only carries
    /// the host and port to the check).
    fn remote_urls(&self) -> Vec<String> {
        let host = if self.host.contains(':') && !self.host.starts_with('[') {
            format!("[{}]", self.host)
        } else {
            self.host.clone()
        };
        vec![format!("https://{host}:{}/", self.port())]
    }
}

impl ImapConfig {
    /// The port: as given, else 993 for `tls` and 143 otherwise.
    pub fn port(&self) -> u16 {
        self.port.unwrap_or(match self.security {
            ImapSecurity::Tls => 993,
            _ => 143,
        })
    }
}
