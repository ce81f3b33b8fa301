//! Credential detection at ingest.
//!
//! Everything Evident ingests (documents, mail, issues, commits, code) ends up in a search
//! index that many agents and people read, so a credential pasted into a ticket or committed to
//! a config file must be spotted before it is stored. [`find_secrets`] reports *where*
//! credentials are (class, byte span, line) and never copies the secret itself: a
//! [`SecretFinding`] holds only offsets, so logging or serialising a finding cannot leak it.
//! [`redact_secrets`] replaces the reported spans with `[REDACTED:<class>]`.
//!
//! # What is detected
//!
//! | class | shape | span reported |
//! |---|---|---|
//! | `private_key` | `-----BEGIN (RSA \|EC \|DSA \|OPENSSH \|ENCRYPTED \|PGP )?PRIVATE KEY( BLOCK)?-----` followed by base64 key material (a run of ≥ 40 base64 chars within 1 KiB) | header through the matching `-----END …-----` line (searched within 64 KiB), else the header |
//! | `aws_access_key` | `AKIA`/`ASIA` + 16 `[0-9A-Z]`, not inside a longer word, not containing `EXAMPLE` | the key id |
//! | `github_token` | `gh[pousr]_` + ≥ 36 alphanumerics, `github_pat_…` | the token |
//! | `slack_token` | `xox[baprs]-…` containing a digit | the token |
//! | `google_api_key` | `AIza` + exactly 35 `[0-9A-Za-z_-]` | the key |
//! | `stripe_key` | `sk_live_…`, `rk_live_…` | the key |
//! | `openai_key` | `sk-` + ≥ 20 alphanumerics, or `sk-proj-` / `sk-svcacct-` / `sk-admin-` / `sk-ant-` + ≥ 20 `[A-Za-z0-9_-]`; must contain a digit | the key |
//! | `jwt_token` | `eyJ….eyJ….<signature ≥ 16>` (header and payload are base64url JSON objects) | the token |
//! | `bearer_token` | `Authorization: Bearer <≥ 16 chars>`; a bare `bearer <token>` only when the token contains a digit | the token |
//! | `password_assignment` | `password`, `passwd`, `passphrase`, `pwd`, `secret` (also as the end of a longer key such as `DB_PASSWORD` or `client_secret`), optionally quoted, then `=`, `:`, `:=` or `=>`, then a value of ≥ 6 chars | the value |
//! | `api_key_assignment` | `api_key`, `apikey`, `api-key`, `api_token`, `api_secret`, `access_token`, `auth_token`, `secret_key`, `secret_access_key`, `private_token`, `refresh_token`, then an assignment as above, value ≥ 8 chars | the value |
//! | `connection_string_password` | `scheme://user:password@host` | the password |
//!
//! When two findings overlap, the more specific class wins (a JWT after `Bearer`, an AWS key in
//! `api_key = …`), so every secret is reported once.
//!
//! # Avoiding false positives
//!
//! A scanner that flags every mention of "password" is ignored, so the assignment rules require
//! an *assignment shape* and a *plausible literal*:
//!
//! * a separator must directly follow the key: "the password is reset daily" has none;
//! * an unquoted value after `:` (YAML, mail "Password: …") must end the line, so
//!   "Password: please reset it every 90 days" is prose, not a credential;
//! * unquoted values that are code are skipped: calls and indexing (`os.environ["PW"]`,
//!   `getenv("X")`, `config.get(…)`), dotted references (`self.password`,
//!   `process.env.DB_PASS`), and unquoted values made only of letters and `_`, which are
//!   variable names or words (`password = user_password`; the price: an unquoted
//!   all-letter literal in a `.env` file is missed);
//! * placeholders are skipped: `${VAR}`, `$VAR`, `%VAR%`, `{{ … }}`, `%(name)s`, `#{…}`,
//!   anything with `<…>`, masks (`******`, `xxxxxx`, `••••`), one repeated char, values
//!   containing `your`, `example`, `placeholder`, `changeme`/`changeit`, `redacted`, `dummy`,
//!   `sample`, `replace`, `insert`, `_here`, and "no value" words (`null`, `none`, `true`,
//!   `string`, `password`, …). `changeme` is treated as a placeholder: it is a documented
//!   default meant to be replaced, and flagging every example `docker-compose.yml` would drown
//!   real findings;
//! * values that name the thing rather than being it are skipped: no digit and containing
//!   `password`/`secret`/`token`/… (`challengePassword`, `no-password-required`,
//!   `FORCE_CHANGE_PASSWORD`), or snake_case identifiers; so are keys inside a type path
//!   (`"AWS::ApiGateway::ApiKey": "<hash>"`);
//! * values with whitespace are skipped (labels and sentences such as
//!   `password: "Mot de passe"`), and so are paths (`PWD=/home/me`), plain URLs and ARNs;
//! * a password value needs a digit or a symbol, or 12+ chars when quoted; values of `secret`
//!   keys and of API-key/token keys need both a letter and a digit (so `secret: my-db-secret`,
//!   a Kubernetes secret *name*, is not flagged, while generated keys always are);
//! * token rules check word boundaries by hand (the slice before `AKIA` must not be a letter
//!   or digit, `sk-` must not be the end of `task-`…), and AWS's documented example keys
//!   (containing `EXAMPLE`) are skipped;
//! * a PEM header counts only when key material follows it, so code and docs that name the
//!   markers (`'-----BEGIN RSA PRIVATE KEY-----' and '-----END …' lines are ignored`) are clean.
//!
//! Documentation examples with literal credentials (`"Password": "h]6EszR}vJ*m"` in an API
//! reference) are reported: they have exactly the shape of a leaked one.
//!
//! Git commit hashes, UUIDs and SHA-256 hex strings match none of the token shapes; they are
//! reported only when assigned to a secret-like key (`secret = "<uuid>"`), where they are
//! indeed secrets.
//!
//! # Cost
//!
//! Each rule is one pass of the `regex` crate (linear time, literal prefilters); word
//! boundaries are checked on bytes afterwards so the regexes stay in the fast DFA engines even
//! on non-ASCII text. PEM footers are located with one more pass and a binary search, so many
//! headers without footers stay linear. Overlap resolution is `O(n log n)` in the number of
//! findings, and line numbers come from one newline pass done only when something was found.

mod class;
mod formats;
mod heuristics;
mod patterns;
mod prose;
mod redaction;
mod resolve;
pub mod samples;
mod scanners;
mod shape;

use std::fmt;

use serde::Serialize;

pub use class::SecretClass;
pub use redaction::{redact, redact_secrets};

use formats::scan_tokens;
use patterns::{API_KEY_ASSIGNMENT, KEY_ASSIGNMENT, PASSWORD_ASSIGNMENT};
use prose::scan_prose;
use resolve::resolve;
use scanners::{Family, scan_assignments, scan_bearer, scan_connection_strings, scan_private_keys};

/// Where a credential was found. Holds offsets only, never the secret.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct SecretFinding {
    pub class: SecretClass,
    /// Byte offset of the secret (a char boundary).
    pub byte_start: usize,
    /// Byte offset one past the secret (a char boundary).
    pub byte_end: usize,
    /// 1-based line of `byte_start`.
    pub line: usize,
}

impl fmt::Display for SecretFinding {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "{} at line {} (bytes {}..{})",
            self.class, self.line, self.byte_start, self.byte_end
        )
    }
}

/// Scans `text` for credentials. Findings are sorted by offset and never overlap.
#[must_use]
pub fn find_secrets(text: &str) -> Vec<SecretFinding> {
    let mut raw = Vec::new();
    scan_private_keys(text, &mut raw);
    scan_tokens(text, &mut raw);
    scan_bearer(text, &mut raw);
    scan_assignments(text, &PASSWORD_ASSIGNMENT, Family::Password, &mut raw);
    scan_assignments(text, &API_KEY_ASSIGNMENT, Family::ApiKey, &mut raw);
    scan_assignments(text, &KEY_ASSIGNMENT, Family::Key, &mut raw);
    scan_prose(text, &mut raw);
    scan_connection_strings(text, &mut raw);
    resolve(text, raw)
}

#[cfg(test)]
mod tests;

#[cfg(test)]
mod proptests;

#[cfg(test)]
mod evasion_tests;
