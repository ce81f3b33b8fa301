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

use std::collections::BTreeMap;
use std::fmt;
use std::sync::LazyLock;

use regex::Regex;
use serde::Serialize;

/// The kind of credential found.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum SecretClass {
    PrivateKey,
    AwsAccessKey,
    GithubToken,
    SlackToken,
    GoogleApiKey,
    StripeKey,
    /// Serialised as `openai_key` (not `open_ai_key`), like [`SecretClass::as_str`].
    #[serde(rename = "openai_key")]
    OpenAiKey,
    JwtToken,
    BearerToken,
    PasswordAssignment,
    ApiKeyAssignment,
    ConnectionStringPassword,
}

impl SecretClass {
    /// Every class, in order of specificity (the order overlaps are resolved in).
    pub const ALL: [SecretClass; 12] = [
        SecretClass::PrivateKey,
        SecretClass::AwsAccessKey,
        SecretClass::GithubToken,
        SecretClass::SlackToken,
        SecretClass::GoogleApiKey,
        SecretClass::StripeKey,
        SecretClass::OpenAiKey,
        SecretClass::JwtToken,
        SecretClass::ConnectionStringPassword,
        SecretClass::BearerToken,
        SecretClass::ApiKeyAssignment,
        SecretClass::PasswordAssignment,
    ];

    /// Stable snake_case name, identical to the serde representation.
    #[must_use]
    pub fn as_str(&self) -> &'static str {
        match self {
            SecretClass::PrivateKey => "private_key",
            SecretClass::AwsAccessKey => "aws_access_key",
            SecretClass::GithubToken => "github_token",
            SecretClass::SlackToken => "slack_token",
            SecretClass::GoogleApiKey => "google_api_key",
            SecretClass::StripeKey => "stripe_key",
            SecretClass::OpenAiKey => "openai_key",
            SecretClass::JwtToken => "jwt_token",
            SecretClass::BearerToken => "bearer_token",
            SecretClass::PasswordAssignment => "password_assignment",
            SecretClass::ApiKeyAssignment => "api_key_assignment",
            SecretClass::ConnectionStringPassword => "connection_string_password",
        }
    }

    /// Human-readable description for messages and UIs.
    #[must_use]
    pub fn description(&self) -> &'static str {
        match self {
            SecretClass::PrivateKey => "PEM, OpenSSH or PGP private key",
            SecretClass::AwsAccessKey => "AWS access key id",
            SecretClass::GithubToken => "GitHub access token",
            SecretClass::SlackToken => "Slack API token",
            SecretClass::GoogleApiKey => "Google API key",
            SecretClass::StripeKey => "Stripe live secret or restricted key",
            SecretClass::OpenAiKey => "OpenAI-style API key (sk-...)",
            SecretClass::JwtToken => "JSON Web Token",
            SecretClass::BearerToken => "bearer token (Authorization header)",
            SecretClass::PasswordAssignment => {
                "password or secret assigned in configuration or code"
            }
            SecretClass::ApiKeyAssignment => {
                "API key or access token assigned in configuration or code"
            }
            SecretClass::ConnectionStringPassword => {
                "password embedded in a connection string or URL"
            }
        }
    }

    /// Lower is more specific; used to resolve overlapping findings.
    fn priority(self) -> usize {
        SecretClass::ALL
            .iter()
            .position(|c| *c == self)
            .unwrap_or(usize::MAX)
    }
}

impl fmt::Display for SecretClass {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

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
    scan_assignments(
        text,
        &PASSWORD_ASSIGNMENT,
        SecretClass::PasswordAssignment,
        &mut raw,
    );
    scan_assignments(
        text,
        &API_KEY_ASSIGNMENT,
        SecretClass::ApiKeyAssignment,
        &mut raw,
    );
    scan_connection_strings(text, &mut raw);
    resolve(text, raw)
}

/// Replaces each finding's span with `[REDACTED:<class>]`. Findings that overlap an earlier
/// one or do not fit `text` (out of range, not on char boundaries) are ignored.
#[must_use]
pub fn redact_secrets(text: &str, findings: &[SecretFinding]) -> String {
    let mut sorted: Vec<&SecretFinding> = findings.iter().collect();
    sorted.sort_by_key(|f| (f.byte_start, f.byte_end));
    let mut out = String::with_capacity(text.len());
    let mut pos = 0;
    for f in sorted {
        let fits = pos <= f.byte_start
            && f.byte_start < f.byte_end
            && f.byte_end <= text.len()
            && text.is_char_boundary(f.byte_start)
            && text.is_char_boundary(f.byte_end);
        if !fits {
            continue;
        }
        out.push_str(&text[pos..f.byte_start]);
        out.push_str("[REDACTED:");
        out.push_str(f.class.as_str());
        out.push(']');
        pos = f.byte_end;
    }
    out.push_str(&text[pos..]);
    out
}

// ---------------------------------------------------------------------------------------------
// Patterns

fn compile(pattern: &str) -> Regex {
    Regex::new(pattern).expect("built-in secret pattern is a valid regex")
}

static PEM_HEADER: LazyLock<Regex> = LazyLock::new(|| {
    compile(r"-----BEGIN (?:RSA |EC |DSA |OPENSSH |ENCRYPTED |PGP )?PRIVATE KEY(?: BLOCK)?-----")
});
static AWS_KEY: LazyLock<Regex> = LazyLock::new(|| compile(r"(?:AKIA|ASIA)[0-9A-Z]{16}"));
static GITHUB_TOKEN: LazyLock<Regex> =
    LazyLock::new(|| compile(r"gh[pousr]_[A-Za-z0-9]{36,}|github_pat_[A-Za-z0-9_]{22,}"));
static SLACK_TOKEN: LazyLock<Regex> = LazyLock::new(|| compile(r"xox[baprs]-[A-Za-z0-9-]{10,}"));
static GOOGLE_KEY: LazyLock<Regex> = LazyLock::new(|| compile(r"AIza[0-9A-Za-z_-]{35}"));
static STRIPE_KEY: LazyLock<Regex> = LazyLock::new(|| compile(r"[sr]k_live_[0-9A-Za-z]{10,}"));
static OPENAI_KEY: LazyLock<Regex> = LazyLock::new(|| {
    compile(r"sk-(?:proj|svcacct|admin|ant)-[A-Za-z0-9_-]{20,}|sk-[A-Za-z0-9]{20,}")
});
static JWT: LazyLock<Regex> =
    LazyLock::new(|| compile(r"eyJ[A-Za-z0-9_-]{8,}\.eyJ[A-Za-z0-9_-]{8,}\.[A-Za-z0-9_-]{16,}"));
/// Group 1: the `Authorization:` prefix, if any; group 2: the token.
static BEARER: LazyLock<Regex> = LazyLock::new(|| {
    compile(
        r#"(?i)(authorization["']?[ \t]*[:=][ \t]*["']?[ \t]*)?bearer[ \t]+([A-Za-z0-9._~+/-]{16,}=*)"#,
    )
});
/// Group 1: key; 2: separator; 3: double-quoted value; 4: single-quoted value; 5: bare value.
/// Quotes may be escaped (`\"password\": \"…\"` inside a string literal or JSON in JSON).
static PASSWORD_ASSIGNMENT: LazyLock<Regex> = LazyLock::new(|| {
    compile(concat!(
        r#"(?i)(password|passwd|passphrase|pwd|secret)\\?["']?[ \t]*(:=|=>|=|:)[ \t]*"#,
        r#"(?:\\?"((?:[^"\\\r\n]|\\[^"\r\n])*)\\?"|\\?'((?:[^'\\\r\n]|\\[^'\r\n])*)\\?'"#,
        r#"|([^\s"'`,;&)\]}\\]+))"#,
    ))
});
/// Same groups as [`PASSWORD_ASSIGNMENT`].
static API_KEY_ASSIGNMENT: LazyLock<Regex> = LazyLock::new(|| {
    compile(concat!(
        r#"(?i)(api[_-]?key|api[_-]?token|api[_-]?secret|access[_-]?token|auth[_-]?token"#,
        r#"|secret[_-]?(?:access[_-]?)?key|private[_-]?token|refresh[_-]?token|token)"#,
        r#"\\?["']?[ \t]*(:=|=>|=|:)[ \t]*"#,
        r#"(?:\\?"((?:[^"\\\r\n]|\\[^"\r\n])*)\\?"|\\?'((?:[^'\\\r\n]|\\[^'\r\n])*)\\?'"#,
        r#"|([^\s"'`,;&)\]}\\]+))"#,
    ))
});
/// Group 1: the password.
static CONNECTION_STRING: LazyLock<Regex> = LazyLock::new(|| {
    compile(r#"[A-Za-z][A-Za-z0-9+.-]{0,30}://[^\s:/@"'<>]*:([^\s/@"'<>]+)@[^\s/@"'<>]"#)
});

/// How far after a PEM header its footer is searched for (large PGP key blocks included).
const PEM_WINDOW: usize = 64 * 1024;

// ---------------------------------------------------------------------------------------------
// Scanners

#[derive(Debug, Clone, Copy)]
struct Raw {
    class: SecretClass,
    start: usize,
    end: usize,
}

fn prev_byte(text: &str, pos: usize) -> Option<u8> {
    pos.checked_sub(1).map(|p| text.as_bytes()[p])
}

fn next_byte(text: &str, pos: usize) -> Option<u8> {
    text.as_bytes().get(pos).copied()
}

fn is_word_byte(b: u8) -> bool {
    b.is_ascii_alphanumeric() || b == b'_'
}

fn has_digit(s: &str) -> bool {
    s.bytes().any(|b| b.is_ascii_digit())
}

fn find_bytes(hay: &[u8], needle: &[u8]) -> Option<usize> {
    hay.windows(needle.len()).position(|w| w == needle)
}

fn scan_private_keys(text: &str, out: &mut Vec<Raw>) {
    let mut footers: Option<Vec<usize>> = None;
    for m in PEM_HEADER.find_iter(text) {
        let footers = footers
            .get_or_insert_with(|| text.match_indices("-----END ").map(|(i, _)| i).collect());
        let k = footers.partition_point(|&p| p < m.end());
        let footer = footers
            .get(k)
            .copied()
            .filter(|&f| f - m.end() <= PEM_WINDOW);
        if !has_key_material(text, m.end(), footer.unwrap_or(text.len())) {
            continue;
        }
        let mut end = m.end();
        if let Some(footer) = footer {
            let label_start = footer + "-----END ".len();
            let label_end = (label_start + 80).min(text.len());
            if let Some(q) = find_bytes(&text.as_bytes()[label_start..label_end], b"-----") {
                end = label_start + q + "-----".len();
            }
        }
        out.push(Raw {
            class: SecretClass::PrivateKey,
            start: m.start(),
            end,
        });
    }
}

/// A header is a key only if base64 key material follows it (a run of at least 40 base64
/// chars within 1 KiB, before the footer); code and docs that merely name the markers
/// (`'-----BEGIN RSA PRIVATE KEY-----' and '-----END …' lines`) are not keys.
fn has_key_material(text: &str, from: usize, until: usize) -> bool {
    let until = until.min(from + 1024).min(text.len());
    let mut run = 0;
    for &b in &text.as_bytes()[from..until] {
        if b.is_ascii_alphanumeric() || b == b'+' || b == b'/' || b == b'=' {
            run += 1;
            if run >= 40 {
                return true;
            }
        } else {
            run = 0;
        }
    }
    false
}

fn accept_aws(text: &str, s: usize, e: usize) -> bool {
    !prev_byte(text, s).is_some_and(|b| b.is_ascii_alphanumeric())
        && !next_byte(text, e).is_some_and(|b| b.is_ascii_alphanumeric())
        && !text[s..e].contains("EXAMPLE")
}

fn accept_github(text: &str, s: usize, _e: usize) -> bool {
    !prev_byte(text, s).is_some_and(is_word_byte)
}

fn accept_slack(text: &str, s: usize, e: usize) -> bool {
    !prev_byte(text, s).is_some_and(is_word_byte) && has_digit(&text[s..e])
}

fn accept_google(text: &str, s: usize, e: usize) -> bool {
    !prev_byte(text, s).is_some_and(is_word_byte)
        && !next_byte(text, e).is_some_and(|b| is_word_byte(b) || b == b'-')
}

fn accept_stripe(text: &str, s: usize, _e: usize) -> bool {
    !prev_byte(text, s).is_some_and(is_word_byte)
}

fn accept_openai(text: &str, s: usize, e: usize) -> bool {
    let token = &text[s..e];
    !prev_byte(text, s).is_some_and(|b| is_word_byte(b) || b == b'-')
        && !next_byte(text, e).is_some_and(|b| is_word_byte(b) || b == b'-')
        && has_digit(token)
        && token.bytes().skip(3).any(|b| b.is_ascii_alphabetic())
}

fn accept_jwt(text: &str, s: usize, _e: usize) -> bool {
    !prev_byte(text, s).is_some_and(|b| is_word_byte(b) || b == b'-' || b == b'.')
}

type Accept = fn(&str, usize, usize) -> bool;

fn scan_tokens(text: &str, out: &mut Vec<Raw>) {
    let rules: [(SecretClass, &Regex, Accept); 7] = [
        (SecretClass::AwsAccessKey, &*AWS_KEY, accept_aws),
        (SecretClass::GithubToken, &*GITHUB_TOKEN, accept_github),
        (SecretClass::SlackToken, &*SLACK_TOKEN, accept_slack),
        (SecretClass::GoogleApiKey, &*GOOGLE_KEY, accept_google),
        (SecretClass::StripeKey, &*STRIPE_KEY, accept_stripe),
        (SecretClass::OpenAiKey, &*OPENAI_KEY, accept_openai),
        (SecretClass::JwtToken, &*JWT, accept_jwt),
    ];
    for (class, regex, accept) in rules {
        for m in regex.find_iter(text) {
            if accept(text, m.start(), m.end()) {
                out.push(Raw {
                    class,
                    start: m.start(),
                    end: m.end(),
                });
            }
        }
    }
}

fn scan_bearer(text: &str, out: &mut Vec<Raw>) {
    for caps in BEARER.captures_iter(text) {
        let (Some(whole), Some(token)) = (caps.get(0), caps.get(2)) else {
            continue;
        };
        let with_header = caps.get(1).is_some();
        let t = token.as_str();
        if !with_header
            && (prev_byte(text, whole.start()).is_some_and(is_word_byte) || !has_digit(t))
        {
            continue;
        }
        if is_placeholder(t) || is_token_placeholder(t) {
            continue;
        }
        out.push(Raw {
            class: SecretClass::BearerToken,
            start: token.start(),
            end: token.end(),
        });
    }
}

fn scan_assignments(text: &str, regex: &Regex, class: SecretClass, out: &mut Vec<Raw>) {
    let mut at = 0;
    while let Some(caps) = regex.captures_at(text, at) {
        let (Some(whole), Some(key), Some(sep)) = (caps.get(0), caps.get(1), caps.get(2)) else {
            break;
        };
        // A quoted value may itself hold an assignment (`SECRET = 'password = "…"'`, a
        // command line with `token='…'` in it): the next search starts inside the quotes,
        // not after them. Otherwise after the match.
        at = match (caps.get(3), caps.get(4)) {
            (Some(v), _) | (_, Some(v)) => v.start(),
            _ => whole.end(),
        }
        .max(key.end());
        if in_type_path(text, key.start()) {
            continue;
        }
        let (value, quoted) = match (caps.get(3), caps.get(4), caps.get(5)) {
            (Some(v), _, _) | (_, Some(v), _) => (v, true),
            (_, _, Some(v)) => (v, false),
            _ => continue,
        };
        let api = class == SecretClass::ApiKeyAssignment;
        // `key: value` without quotes is YAML or a mail header only if the value ends the line.
        if !quoted && sep.as_str() == ":" && !ends_line(text, value.end()) {
            continue;
        }
        let strict = api || key.as_str().eq_ignore_ascii_case("secret");
        let min_chars = if api { 8 } else { 6 };
        let v = value.as_str();
        if !plausible_value(v, quoted, min_chars, strict) || (api && is_token_placeholder(v)) {
            continue;
        }
        out.push(Raw {
            class,
            start: value.start(),
            end: value.end(),
        });
    }
}

/// `AWS::ApiGateway::ApiKey` and the like name a type, they do not assign a key.
fn in_type_path(text: &str, key_start: usize) -> bool {
    let bytes = text.as_bytes();
    let mut i = key_start;
    while i > 0 && (is_word_byte(bytes[i - 1]) || bytes[i - 1] == b'.' || bytes[i - 1] == b'-') {
        i -= 1;
    }
    text[..i].ends_with("::")
}

fn scan_connection_strings(text: &str, out: &mut Vec<Raw>) {
    for caps in CONNECTION_STRING.captures_iter(text) {
        let Some(pw) = caps.get(1) else {
            continue;
        };
        let v = pw.as_str();
        if v.chars().count() < 4 || is_placeholder(v) {
            continue;
        }
        out.push(Raw {
            class: SecretClass::ConnectionStringPassword,
            start: pw.start(),
            end: pw.end(),
        });
    }
}

// ---------------------------------------------------------------------------------------------
// Value heuristics

/// After an unquoted value: only blanks, then end of line, a comment or a closing delimiter.
fn ends_line(text: &str, pos: usize) -> bool {
    let rest = text[pos..].trim_start_matches([' ', '\t']);
    rest.is_empty() || rest.starts_with(['\n', '\r', '#', ',', ';', '}', ']'])
}

fn plausible_value(v: &str, quoted: bool, min_chars: usize, strict: bool) -> bool {
    let n = v.chars().count();
    if n < min_chars || v.chars().any(char::is_whitespace) {
        return false;
    }
    if is_placeholder(v) || looks_like_path_or_url(v) || (!quoted && looks_like_code(v)) {
        return false;
    }
    let digit = has_digit(v);
    // `"FORCE_CHANGE_PASSWORD"`, `"user_name"`: identifiers and constant names, not secrets.
    if !digit && v.contains('_') && v.chars().all(|c| c.is_alphabetic() || c == '_') {
        return false;
    }
    if strict {
        return digit && v.chars().any(char::is_alphabetic);
    }
    let symbol = v.chars().any(|c| !c.is_alphanumeric() && c != '_');
    digit || symbol || (quoted && n >= 12)
}

/// Template and environment indirections, masks, and example values.
fn is_placeholder(v: &str) -> bool {
    const INDIRECTIONS: [&str; 7] = ["${", "$(", "{{", "%(", "#{", "<", ">"];
    const MASK_CHARS: [char; 10] = ['*', 'x', 'X', '.', '-', '_', '#', '?', '•', '●'];
    const EXAMPLE_WORDS: [&str; 16] = [
        "your",
        "example",
        "placeholder",
        "changeme",
        "change_me",
        "change-me",
        "changeit",
        "redacted",
        "dummy",
        "sample",
        "replace",
        "insert",
        "xxxx",
        "****",
        "_here",
        "-here",
    ];
    const NO_VALUE: [&str; 20] = [
        "password",
        "passwd",
        "pass",
        "pwd",
        "secret",
        "token",
        "apikey",
        "api_key",
        "null",
        "none",
        "nil",
        "undefined",
        "true",
        "false",
        "string",
        "required",
        "optional",
        "hidden",
        "masked",
        "empty",
    ];
    if v.starts_with('$') || v.starts_with('%') || INDIRECTIONS.iter().any(|p| v.contains(*p)) {
        return true;
    }
    if v.chars().all(|c| MASK_CHARS.contains(&c)) {
        return true;
    }
    let mut chars = v.chars();
    if let Some(first) = chars.next()
        && chars.all(|c| c == first)
    {
        return true;
    }
    const NAME_WORDS: [&str; 7] = [
        "password", "passwd", "pwd", "secret", "token", "apikey", "api_key",
    ];
    let lower = v.to_lowercase();
    EXAMPLE_WORDS.iter().any(|w| lower.contains(*w))
        || NO_VALUE.contains(&lower.as_str())
        // A value that names the thing (`challengePassword`, `no-password-required`).
        || (!has_digit(v) && NAME_WORDS.iter().any(|w| lower.contains(*w)))
}

/// Token values that name the thing instead of being it (`ACCESS_TOKEN_VALUE`, `my-api-key-1`).
fn is_token_placeholder(v: &str) -> bool {
    let lower = v.to_lowercase();
    [
        "token",
        "api_key",
        "apikey",
        "api-key",
        "access_key",
        "secret",
    ]
    .iter()
    .any(|w| lower.contains(*w))
}

fn looks_like_path_or_url(v: &str) -> bool {
    v.starts_with('/')
        || v.starts_with("./")
        || v.starts_with("../")
        || v.starts_with("~/")
        || v.contains("://")
        || v.starts_with("arn:")
        || (v.len() > 2 && v.as_bytes()[0].is_ascii_alphabetic() && v[1..].starts_with(":\\"))
}

/// Unquoted values that are expressions rather than literals.
fn looks_like_code(v: &str) -> bool {
    if v.contains(['(', ')', '[', ']', '{', '}']) {
        return true;
    }
    let lower = v.to_ascii_lowercase();
    const CODE_HINTS: [&str; 8] = [
        "process.env",
        "os.environ",
        "getenv",
        "environ",
        "env.",
        "config.",
        "settings.",
        "secrets.",
    ];
    if CODE_HINTS.iter().any(|h| lower.contains(*h)) {
        return true;
    }
    // A variable name or a dotted reference (`self.password`, `args.pw`).
    let ident = |part: &str| {
        let mut cs = part.chars();
        cs.next()
            .is_some_and(|c| c.is_ascii_alphabetic() || c == '_' || c == '$')
            && cs.all(|c| c.is_ascii_alphanumeric() || c == '_' || c == '$')
    };
    let all_letters = v.chars().all(|c| c.is_alphabetic() || c == '_');
    all_letters || (v.contains('.') && v.split('.').all(ident))
}

// ---------------------------------------------------------------------------------------------
// Overlaps and line numbers

fn resolve(text: &str, mut raw: Vec<Raw>) -> Vec<SecretFinding> {
    raw.sort_by_key(|r| (r.class.priority(), r.start, r.end));
    let mut taken: BTreeMap<usize, usize> = BTreeMap::new();
    let mut kept: Vec<Raw> = Vec::new();
    for r in raw {
        if r.start >= r.end {
            continue;
        }
        // Accepted spans are disjoint, so only the last one starting before `r.end` can overlap.
        if taken
            .range(..r.end)
            .next_back()
            .is_some_and(|(_, &end)| end > r.start)
        {
            continue;
        }
        taken.insert(r.start, r.end);
        kept.push(r);
    }
    if kept.is_empty() {
        return Vec::new();
    }
    kept.sort_by_key(|r| (r.start, r.end));
    let newlines: Vec<usize> = text.match_indices('\n').map(|(i, _)| i).collect();
    kept.into_iter()
        .map(|r| SecretFinding {
            class: r.class,
            byte_start: r.start,
            byte_end: r.end,
            line: newlines.partition_point(|&p| p < r.start) + 1,
        })
        .collect()
}

// ---------------------------------------------------------------------------------------------

/// `text` with every line that holds a credential replaced by `[redacted: <class>]`, the
/// line count unchanged (so line-based locators still point at the right lines); `None` when
/// there is nothing to redact. Indexers use this where refusing the whole input would lose
/// too much (one API key in a config file, one token pasted into a commit's diff).
#[must_use]
pub fn redact(text: &str) -> Option<(String, Vec<SecretClass>)> {
    let findings = find_secrets(text);
    if findings.is_empty() {
        return None;
    }
    // Byte ranges of whole lines to blank out, merged.
    let line_start = |at: usize| text[..at].rfind('\n').map_or(0, |i| i + 1);
    let line_end = |at: usize| text[at..].find('\n').map_or(text.len(), |i| at + i);
    let mut spans: Vec<(usize, usize, SecretClass)> = findings
        .iter()
        .map(|f| {
            (
                line_start(f.byte_start),
                line_end(f.byte_end.max(f.byte_start)),
                f.class,
            )
        })
        .collect();
    spans.sort_by_key(|s| s.0);
    let mut out = String::with_capacity(text.len());
    let mut classes = Vec::new();
    let mut at = 0;
    let mut i = 0;
    while i < spans.len() {
        let (start, mut end, class) = spans[i];
        while i + 1 < spans.len() && spans[i + 1].0 <= end {
            end = end.max(spans[i + 1].1);
            i += 1;
        }
        let start = start.max(at);
        out.push_str(&text[at..start]);
        let lines = text[start..end].matches('\n').count();
        out.push_str(&format!("[redacted: {}]", class.as_str()));
        for _ in 0..lines {
            out.push_str("\n[redacted]");
        }
        if !classes.contains(&class) {
            classes.push(class);
        }
        at = end;
        i += 1;
    }
    out.push_str(&text[at..]);
    Some((out, classes))
}

#[cfg(test)]
mod tests {

    #[test]
    fn redaction_keeps_lines_and_everything_else() {
        let text = "host = db\npassword = \"hunter2-very-secret\"\nport = 5432\n";
        let (red, classes) = redact(text).expect("a credential");
        assert_eq!(red.lines().count(), text.lines().count());
        assert!(red.contains("host = db") && red.contains("port = 5432"));
        assert!(!red.contains("hunter2"), "{red}");
        assert_eq!(classes, vec![SecretClass::PasswordAssignment]);
        assert!(find_secrets(&red).is_empty());
        assert!(redact("nothing to see").is_none());
        let pem = "a\n-----BEGIN RSA PRIVATE KEY-----\nMIIEpAIBAAKCAQEAxq3Jw9vWzT8ZkR2bYQfLmN0pHcUe4sVdGa7KjX1\n-----END RSA PRIVATE KEY-----\nb";
        let (red, _) = redact(pem).expect("a key");
        assert_eq!(red.lines().count(), pem.lines().count());
        assert!(
            red.starts_with("a\n") && red.ends_with("\nb") && !red.contains("MIIE"),
            "{red}"
        );
    }

    use super::*;

    /// The (class, secret text) pairs found; test tokens are built at run time so this source
    /// file itself contains nothing that looks like a live credential.
    fn found(text: &str) -> Vec<(SecretClass, String)> {
        find_secrets(text)
            .into_iter()
            .map(|f| (f.class, text[f.byte_start..f.byte_end].to_string()))
            .collect()
    }

    fn assert_finds(text: &str, class: SecretClass, secret: &str) {
        let f = found(text);
        assert!(
            f.iter().any(|(c, s)| *c == class && s == secret),
            "expected {class} {secret:?} in {text:?}, got {f:?}"
        );
    }

    fn assert_clean(text: &str) {
        let f = found(text);
        assert!(f.is_empty(), "expected no finding in {text:?}, got {f:?}");
    }

    fn alnum(n: usize, seed: u64) -> String {
        const CHARS: &[u8] = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789";
        let mut s = seed;
        (0..n)
            .map(|_| {
                s = s
                    .wrapping_mul(6364136223846793005)
                    .wrapping_add(1442695040888963407);
                CHARS[((s >> 33) % CHARS.len() as u64) as usize] as char
            })
            .collect()
    }

    #[test]
    fn class_names_are_stable_and_match_serde() {
        for c in SecretClass::ALL {
            let json = serde_json::to_string(&c).expect("serialise");
            assert_eq!(json, format!("\"{}\"", c.as_str()));
            assert!(!c.description().is_empty());
            assert_eq!(c.to_string(), c.as_str());
        }
        assert_eq!(SecretClass::OpenAiKey.as_str(), "openai_key");
    }

    #[test]
    fn private_keys() {
        for kind in ["", "RSA ", "EC ", "DSA ", "OPENSSH ", "ENCRYPTED "] {
            let block = format!(
                "-----BEGIN {kind}PRIVATE KEY-----\nMIIEvQIBADANBgkqhkiG9w0BAQEFAASC{}\n{}==\n-----END {kind}PRIVATE KEY-----",
                alnum(32, 40),
                alnum(40, 41)
            );
            let text = format!("config:\n{block}\ntrailing text\n");
            let f = find_secrets(&text);
            assert_eq!(f.len(), 1, "{kind}: {f:?}");
            assert_eq!(f[0].class, SecretClass::PrivateKey);
            assert_eq!(&text[f[0].byte_start..f[0].byte_end], block);
            assert_eq!(f[0].line, 2);
        }
        let pgp = format!(
            "-----BEGIN PGP PRIVATE KEY BLOCK-----\nVersion: GnuPG v2\n\nlQOYBF{}\n=Xq2P\n-----END PGP PRIVATE KEY BLOCK-----",
            alnum(58, 30)
        );
        assert_finds(&pgp, SecretClass::PrivateKey, &pgp);
        // Legacy encrypted PEM with RFC 1421 headers, and a key inside a JSON string.
        let legacy = format!(
            "-----BEGIN RSA PRIVATE KEY-----\nProc-Type: 4,ENCRYPTED\nDEK-Info: AES-128-CBC,3F17F5316E2BAC89\n\n{}\n-----END RSA PRIVATE KEY-----",
            alnum(64, 31)
        );
        assert_finds(&legacy, SecretClass::PrivateKey, &legacy);
        let json_key = format!(
            "-----BEGIN EC PRIVATE KEY-----\\n{}\\n-----END EC PRIVATE KEY-----",
            alnum(64, 32)
        );
        assert_finds(
            &format!("{{\"privateKey\": \"{json_key}\"}}"),
            SecretClass::PrivateKey,
            &json_key,
        );
        // Without a footer (truncated paste), the header alone is reported.
        let header = "-----BEGIN RSA PRIVATE KEY-----";
        assert_finds(
            &format!("pasted: {header}\n{}", alnum(64, 33)),
            SecretClass::PrivateKey,
            header,
        );
        // Code and docs that only name the markers are not keys.
        assert_clean(
            "when your file has '-----BEGIN RSA PRIVATE KEY-----' and\n'-----END RSA PRIVATE KEY-----' markers",
        );
        assert_clean(
            "_SK_START = b\"-----BEGIN OPENSSH PRIVATE KEY-----\"\n_SK_END = b\"-----END OPENSSH PRIVATE KEY-----\"",
        );
        assert_clean(
            "\"PrivateKey\": \"-----BEGIN RSA PRIVATE KEY-----\\nkey omitted\\n-----END RSA PRIVATE KEY-----\"",
        );
        // Public keys and certificates are not secrets.
        assert_clean("-----BEGIN PUBLIC KEY-----\nMIIBIjANBgkq\n-----END PUBLIC KEY-----");
        assert_clean("-----BEGIN CERTIFICATE-----\nMIIDdzCCAl+g\n-----END CERTIFICATE-----");
    }

    #[test]
    fn many_pem_headers_stay_linear() {
        let body = format!("\n{}\n", alnum(64, 34));
        let text = format!("-----BEGIN PRIVATE KEY-----{body}").repeat(20_000);
        assert_eq!(find_secrets(&text).len(), 20_000);
        // Headers that name no key material at all cost as little.
        assert!(find_secrets(&"-----BEGIN PRIVATE KEY----- ".repeat(50_000)).is_empty());
    }

    #[test]
    fn aws_access_keys() {
        let key = format!("AKIA{}", "Q3EGRRDH4J2KXW7N");
        assert_finds(
            &format!("aws_access_key_id = {key}\n"),
            SecretClass::AwsAccessKey,
            &key,
        );
        assert_finds(
            &format!("export AWS_ACCESS_KEY_ID=\"{key}\""),
            SecretClass::AwsAccessKey,
            &key,
        );
        let temp = format!("ASIA{}", "Y7LQ2ZK4M9TR3WXB");
        assert_finds(&format!("key {temp}."), SecretClass::AwsAccessKey, &temp);
        // AWS's documented example key, and keys glued into longer words.
        assert_clean(&format!("aws_access_key_id = AKIA{}", "IOSFODNN7EXAMPLE"));
        assert_clean(&format!(
            "X-Amz-Credential=AKIA{}%2F20210621",
            "EXAMPLE123456789"
        ));
        assert_clean(&format!("X{key}"));
        assert_clean(&format!("{key}Z"));
    }

    #[test]
    fn github_tokens() {
        let classic = format!("ghp_{}", alnum(36, 1));
        assert_finds(
            &format!("token: {classic}"),
            SecretClass::GithubToken,
            &classic,
        );
        let oauth = format!("gho_{}", alnum(40, 2));
        assert_finds(
            &format!("git clone https://x-access-token:{oauth}@github.com/o/r"),
            SecretClass::GithubToken,
            &oauth,
        );
        let pat = format!("github_pat_{}_{}", alnum(22, 3), alnum(59, 4));
        assert_finds(&format!("GH_TOKEN={pat}"), SecretClass::GithubToken, &pat);
        assert_clean(&format!("ghp_{}", alnum(20, 5)));
        assert_clean(&format!("xghp_{}", alnum(36, 6)));
    }

    #[test]
    fn slack_tokens() {
        let bot = format!(
            "xoxb-{}-{}-{}",
            "123456789012",
            "1234567890123",
            alnum(24, 7)
        );
        assert_finds(
            &format!("SLACK_BOT_TOKEN={bot}"),
            SecretClass::SlackToken,
            &bot,
        );
        let user = format!(
            "xoxp-{}",
            "2837461928-4738291047-5930184756-abcdef0123456789abcdef0123456789"
        );
        assert_finds(
            &format!("slack user token {user}"),
            SecretClass::SlackToken,
            &user,
        );
        assert_clean("see the xoxb-token-format-docs page");
    }

    #[test]
    fn google_api_keys() {
        let key = format!("AIza{}", "SyD4-7xQm2_Lk9PzR3tVw8NcHj5bGf1eUo0");
        assert_eq!(key.len(), 39);
        assert_finds(
            &format!("maps.googleapis.com/maps/api/js?key={key}&callback=x"),
            SecretClass::GoogleApiKey,
            &key,
        );
        assert_clean(&format!("AIza{}", "short-key"));
    }

    #[test]
    fn stripe_keys() {
        let key = format!("sk_{}_{}", "live", "4eC39HqLyjWDarjtT1zdp7dc");
        assert_finds(
            &format!("Stripe.api_key = '{key}'"),
            SecretClass::StripeKey,
            &key,
        );
        let restricted = format!("rk_{}_{}", "live", alnum(24, 8));
        assert_finds(
            &format!("STRIPE_KEY={restricted}"),
            SecretClass::StripeKey,
            &restricted,
        );
    }

    #[test]
    fn openai_style_keys() {
        let legacy = format!("sk-{}T3BlbkFJ{}", alnum(20, 9), alnum(20, 10));
        assert_finds(
            &format!("OPENAI_API_KEY={legacy}"),
            SecretClass::OpenAiKey,
            &legacy,
        );
        let project = format!(
            "sk-proj-{}-{}_{}",
            alnum(30, 11),
            alnum(30, 12),
            alnum(20, 13)
        );
        assert_finds(
            &format!("client = OpenAI(api_key=\"{project}\")"),
            SecretClass::OpenAiKey,
            &project,
        );
        // Slugs and words that merely start with "sk-".
        assert_clean("see https://example.org/task-abcdefghijklmnopqrstuvwxyz123 for details");
        assert_clean("pip install sk-learn-tutorial-for-beginners-2024");
        assert_clean("sk-abcdefghijklmnopqrstuvwxyz is not a key (no digit)");
    }

    fn sample_jwt() -> String {
        [
            "eyJhbGciOiJIUzI1NiIsInR5cCI6IkpXVCJ9",
            "eyJzdWIiOiIxMjM0NTY3ODkwIiwibmFtZSI6IkpvaG4gRG9lIiwiaWF0IjoxNTE2MjM5MDIyfQ",
            "SflKxwRJSMeKKF2QT4fwpMeJf36POk6yJV_adQssw5c",
        ]
        .join(".")
    }

    #[test]
    fn jwts() {
        let jwt = sample_jwt();
        assert_finds(
            &format!("cookie: session={jwt}; Path=/"),
            SecretClass::JwtToken,
            &jwt,
        );
        // After `Bearer`, the more specific class wins and the token is reported once.
        let text = format!("Authorization: Bearer {jwt}");
        assert_eq!(found(&text), vec![(SecretClass::JwtToken, jwt.clone())]);
        assert_clean("eyJhbGciOiJIUzI1NiJ9 alone is just a base64 header");
    }

    #[test]
    fn bearer_tokens() {
        let opaque = alnum(32, 14)
            .to_lowercase()
            .replace(|c: char| c.is_ascii_digit(), "a");
        assert!(!has_digit(&opaque));
        assert_finds(
            &format!("Authorization: Bearer {opaque}"),
            SecretClass::BearerToken,
            &opaque,
        );
        let tok = "9f8e7d6c5b4a39281706f5e4d3c2b1a0";
        assert_finds(
            &format!("curl -H \"authorization: bearer {tok}\" https://api"),
            SecretClass::BearerToken,
            tok,
        );
        assert_finds(
            &format!("{{\"Authorization\": \"Bearer {tok}\"}}"),
            SecretClass::BearerToken,
            tok,
        );
        assert_finds(
            &format!("then use bearer {tok} to call it"),
            SecretClass::BearerToken,
            tok,
        );
        for clean in [
            "a bearer token is required for every request",
            "Bearer authentication (also called token authentication) is an HTTP scheme",
            "Authorization: Bearer <token>",
            "Authorization: Bearer ${ACCESS_TOKEN}",
            "Authorization: Bearer $TOKEN",
            "Authorization: Bearer YOUR_ACCESS_TOKEN_HERE",
            "the cupbearer a1b2c3d4e5f6g7h8i9j0 arrived",
        ] {
            assert_clean(clean);
        }
    }

    #[test]
    fn password_assignments() {
        let cases = [
            ("password = \"Tr0ub4dor&3\"", "Tr0ub4dor&3"),
            ("DB_PASSWORD=s3cr3t-Pa55", "s3cr3t-Pa55"),
            ("{\"password\": \"hunter2hunter2\"}", "hunter2hunter2"),
            ("db:\n  password: Xk9#mPq2\n  user: app", "Xk9#mPq2"),
            ("client_secret: \"9f8e7d6c5b4a3921\"", "9f8e7d6c5b4a3921"),
            ("passwd='Zz8!Zz8!'", "Zz8!Zz8!"),
            ("$pwd := \"Gx7&kL2p\";", "Gx7&kL2p"),
            ("mysql --user=root --password=R00tPw!x db", "R00tPw!x"),
            ("jwt_secret => 'k3y-for-signing-42'", "k3y-for-signing-42"),
            ("Your new password: Qw3rty!9\n", "Qw3rty!9"),
        ];
        for (text, secret) in cases {
            assert_finds(text, SecretClass::PasswordAssignment, secret);
        }
    }

    #[test]
    fn password_negatives() {
        for text in [
            "the password is reset daily",
            "Password: please reset it every 90 days",
            "Your password: must be at least 8 characters long.",
            "Enter password: ******",
            "password = os.environ[\"PW\"]",
            "password = os.environ.get('DB_PASSWORD')",
            "password = getenv(\"X\")",
            "password: ${DB_PASSWORD}",
            "password: \"${DB_PASSWORD}\"",
            "PASSWORD=$DB_PASS",
            "password = \"<your password>\"",
            "password = \"xxxxxx\"",
            "password: \"********\"",
            "password = \"changeme\"",
            "password: \"{{ vault_db_password }}\"",
            "password: \"%(db_password)s\"",
            "password = self.password",
            "password: process.env.DB_PASS",
            "password = config.get('db_password')",
            "password = None",
            "password = user_password",
            "pub password: String,",
            "password: str",
            "def login(user: str, password: str) -> bool:",
            "fn check(password: &str) -> bool",
            "password_hash = \"argon2id-v19\"",
            "<input type=\"password\" name=\"password\" value=\"\">",
            "password: \"Password\"",
            "password: \"Mot de passe\"",
            "PWD=/home/me/projects/evident",
            "secret: my-db-secret",
            "secretName: postgres-credentials",
            "password == \"\"",
            "if password != confirm_password:",
            "FORCE_CHANGE_PASSWORD = \"FORCE_CHANGE_PASSWORD\"",
            "NOPASSWORD = \"no-password-required\"",
            "AttributeOID.CHALLENGE_PASSWORD: \"challengePassword\",",
            "\"IAMUserChangePassword\": \"arn:aws:iam::aws:policy/IAMUserChangePassword\",",
            "\"AWS::MSK::BatchScramSecret\": \"ff2b807a577495b0\",",
            "events={'(?i)password': 'secret\\n'}",
            "password = \"user_name_field\"",
        ] {
            assert_clean(text);
        }
    }

    #[test]
    fn api_key_assignments() {
        let cases = [
            ("api_key = \"f3a9c2e7b1d84a6c9e2f\"", "f3a9c2e7b1d84a6c9e2f"),
            ("X-API-Key: 8b7a6c5d4e3f2a1b0c9d\n", "8b7a6c5d4e3f2a1b0c9d"),
            ("ACCESS_TOKEN=ya29a0AfH6SMB3x9q", "ya29a0AfH6SMB3x9q"),
            ("auth_token: 'a1b2c3d4e5f6'", "a1b2c3d4e5f6"),
            (
                "AWS_SECRET_ACCESS_KEY=wJalrXUtnFEMI/K7MDENG/bPxRfiCYzEXKEY01",
                "wJalrXUtnFEMI/K7MDENG/bPxRfiCYzEXKEY01",
            ),
            (
                "https://api.example.org/v1?access_token=Ab12Cd34Ef56&page=2",
                "Ab12Cd34Ef56",
            ),
        ];
        for (text, secret) in cases {
            assert_finds(text, SecretClass::ApiKeyAssignment, secret);
        }
        for text in [
            "api_key = os.environ[\"API_KEY\"]",
            "apiKey: process.env.API_KEY",
            "api_key = \"YOUR_API_KEY\"",
            "api_key = \"<api key>\"",
            "access_token = response.json()[\"access_token\"]",
            "accessToken: string;",
            "auth_token = token",
            "API_KEY=your-api-key-here",
            "refresh_token: \"{{ refresh }}\"",
            "the api key: ask the admin for one",
            "\"AWS::ApiGateway::ApiKey\": \"48205d4ffd7feba3\",",
        ] {
            assert_clean(text);
        }
    }

    #[test]
    fn connection_strings() {
        assert_finds(
            "DATABASE_URL=postgres://app:Sup3rS3cret@db.internal:5432/app",
            SecretClass::ConnectionStringPassword,
            "Sup3rS3cret",
        );
        assert_finds(
            "mongodb+srv://admin:p%40ss%3Aw0rd@cluster0.example.net/?retryWrites=true",
            SecretClass::ConnectionStringPassword,
            "p%40ss%3Aw0rd",
        );
        assert_finds(
            "redis://:Redis2024pw@cache:6379/0",
            SecretClass::ConnectionStringPassword,
            "Redis2024pw",
        );
        for text in [
            "postgres://user:password@localhost/db",
            "postgres://user:<password>@host/db",
            "postgres://${DB_USER}:${DB_PASS}@host/db",
            "https://example.com:8080/path",
            "git@github.com:org/repo.git",
            "http://user@host/",
            "amqp://guest:****@rabbit:5672",
        ] {
            assert_clean(text);
        }
    }

    #[test]
    fn hashes_and_ids_are_not_secrets() {
        for text in [
            "commit 3f786850e387550fdab836ed7e6dc881de23001b\nAuthor: A <a@b.c>",
            "Merge: 3f78685 9fceb02",
            "id = \"123e4567-e89b-12d3-a456-426614174000\"",
            "request-id: 123e4567-e89b-12d3-a456-426614174000",
            "sha256:9f86d081884c7d659a2feaa0c55ad015a3bf4f1b2b0b822cd15d6c15b0f00a08",
            "\"checksum\": \"9f86d081884c7d659a2feaa0c55ad015a3bf4f1b2b0b822cd15d6c15b0f00a08\"",
            "integrity=\"sha512-dGhpcyBpcyBhIHRlc3Q=\"",
            "The key decision: we keep the password policy as is.",
        ] {
            assert_clean(text);
        }
    }

    #[test]
    fn findings_are_sorted_with_lines_and_no_overlap() {
        let gh = format!("ghp_{}", alnum(36, 20));
        let text = format!(
            "line one\npassword = \"Tr0ub4dor&3\"\n\nGITHUB_TOKEN={gh}\nurl: postgres://a:Sup3rS3cret@h/db\n"
        );
        let f = find_secrets(&text);
        let classes: Vec<SecretClass> = f.iter().map(|x| x.class).collect();
        assert_eq!(
            classes,
            vec![
                SecretClass::PasswordAssignment,
                SecretClass::GithubToken,
                SecretClass::ConnectionStringPassword
            ]
        );
        assert_eq!(f.iter().map(|x| x.line).collect::<Vec<_>>(), vec![2, 4, 5]);
        // An API key assignment whose value is a recognisable token is reported once, as the token.
        let text = format!("api_key = \"{gh}\"");
        assert_eq!(found(&text), vec![(SecretClass::GithubToken, gh.clone())]);
    }

    #[test]
    fn findings_do_not_reveal_the_secret() {
        let secret = "Tr0ub4dor&3";
        let text = format!("password = \"{secret}\"");
        let f = find_secrets(&text);
        assert_eq!(f.len(), 1);
        assert!(!format!("{:?}", f[0]).contains(secret));
        assert!(!format!("{}", f[0]).contains(secret));
        assert!(
            !serde_json::to_string(&f[0])
                .expect("serialise")
                .contains(secret)
        );
        assert_eq!(
            redact_secrets(&text, &f),
            "password = \"[REDACTED:password_assignment]\""
        );
    }

    /// Assignments inside quoted strings (a constant holding a config line, JSON inside a
    /// string literal, a command line) are found and their lines redacted.
    #[test]
    fn assignments_inside_quotes_are_found_and_redacted() {
        let cases = [
            (
                r#"SECRET = 'password = "hunter2longvalue"'"#,
                SecretClass::PasswordAssignment,
                "hunter2longvalue",
            ),
            (
                r#"body = "{\"api_key\": \"Zx81bQ92kLm3Tq7\"}""#,
                SecretClass::ApiKeyAssignment,
                "Zx81bQ92kLm3Tq7",
            ),
            (
                r#"let payload = r"{"api_key": "Zx81bQ92kLm3Tq7"}";"#,
                SecretClass::ApiKeyAssignment,
                "Zx81bQ92kLm3Tq7",
            ),
            (
                r#"run("curl -d token='q7Wm2Xk9Lp4Rz8Tn' https://example.com/hook")"#,
                SecretClass::ApiKeyAssignment,
                "q7Wm2Xk9Lp4Rz8Tn",
            ),
            (
                r#"CMD = "deploy --env prod token='q7Wm2Xk9Lp4Rz8Tn' --fast""#,
                SecretClass::ApiKeyAssignment,
                "q7Wm2Xk9Lp4Rz8Tn",
            ),
            (
                r#"conf = 'db: {pwd: "s3cr3t-Value!"}'"#,
                SecretClass::PasswordAssignment,
                "s3cr3t-Value!",
            ),
        ];
        for (line, class, secret) in cases {
            let text = format!("fn main() {{\n    {line}\n}}\n");
            assert!(
                found(&text).iter().any(|(c, s)| *c == class && s == secret),
                "{line}: {:?}",
                found(&text)
            );
            let (red, _) = redact(&text).expect("redacted");
            assert!(!red.contains(secret), "{red}");
            assert_eq!(red.lines().count(), text.lines().count());
            assert!(
                red.starts_with("fn main() {\n") && red.ends_with("\n}\n"),
                "{red}"
            );
        }
        // Still nothing in ordinary quoted prose and code.
        for quiet in [
            r#"msg = 'the password = field must be filled'"#,
            r#"label = "token: required""#,
            r#"let next_token = tokens.next();"#,
            r#"help = "set token=<your token> in the config""#,
        ] {
            assert!(found(quiet).is_empty(), "{quiet}: {:?}", found(quiet));
        }
    }

    #[test]
    fn redact_ignores_findings_that_do_not_fit() {
        let bogus = [
            SecretFinding {
                class: SecretClass::JwtToken,
                byte_start: 1,
                byte_end: 2,
                line: 1,
            },
            SecretFinding {
                class: SecretClass::JwtToken,
                byte_start: 0,
                byte_end: 99,
                line: 1,
            },
        ];
        assert_eq!(redact_secrets("é!", &bogus), "é!");
    }

    #[test]
    fn large_input_without_secrets() {
        let mut text = String::new();
        while text.len() < 3_000_000 {
            text.push_str("The password policy: rotate keys (see AKIA docs) and the bearer token flow; sk- prefix. ");
            text.push_str(
                "Příliš žluťoučký kůň 東京 😀 commit 3f786850e387550fdab836ed7e6dc881de23001b\n",
            );
        }
        assert!(find_secrets(&text).is_empty());
    }
}

#[cfg(test)]
mod proptests {
    use super::*;
    use proptest::prelude::*;

    const PIECES: &[&str] = &[
        "password",
        "PASSWORD",
        "secret",
        "pwd",
        "api_key",
        "access_token",
        "Authorization: ",
        "Bearer ",
        "bearer ",
        " = ",
        ": ",
        ":",
        "=",
        "=>",
        ":=",
        "\"",
        "'",
        "`",
        " ",
        "\n",
        "\r\n",
        "\t",
        "${",
        "}",
        "(",
        ")",
        "[",
        "]",
        "<",
        ">",
        "abc",
        "Xy9",
        "12345678",
        "-----BEGIN RSA PRIVATE KEY-----",
        "-----END RSA PRIVATE KEY-----",
        "-----END ",
        "AKIA",
        "ABCDEFGH23456789",
        "ghp_",
        "sk-",
        "sk-proj-",
        "eyJ",
        "eyJhbGciOi",
        ".",
        "xoxb-",
        "AIza",
        "sk_live_",
        "postgres://",
        "u",
        "@",
        "/",
        "é",
        "東京",
        "😀",
    ];

    fn structured() -> impl Strategy<Value = String> {
        prop::collection::vec(prop::sample::select(PIECES.to_vec()), 0..80).prop_map(|v| v.concat())
    }

    fn check(text: &str) {
        let findings = find_secrets(text);
        let mut prev_end = 0;
        for f in &findings {
            assert!(f.byte_start < f.byte_end && f.byte_end <= text.len());
            assert!(
                f.byte_start >= prev_end,
                "overlap or disorder: {findings:?}"
            );
            assert!(text.is_char_boundary(f.byte_start) && text.is_char_boundary(f.byte_end));
            assert_eq!(f.line, text[..f.byte_start].matches('\n').count() + 1);
            prev_end = f.byte_end;
        }
        let redacted = redact_secrets(text, &findings);
        assert!(
            redacted.len()
                + findings
                    .iter()
                    .map(|f| f.byte_end - f.byte_start)
                    .sum::<usize>()
                >= text.len()
        );
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(512))]

        #[test]
        fn never_panics_on_arbitrary_strings(s in any::<String>()) {
            check(&s);
        }

        #[test]
        fn never_panics_on_secretish_strings(s in structured()) {
            check(&s);
        }
    }
}
