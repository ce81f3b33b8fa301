//! The regexes behind the scanners, compiled once.

use std::sync::LazyLock;

use regex::Regex;

fn compile(pattern: &str) -> Regex {
    Regex::new(pattern).expect("built-in secret pattern is a valid regex")
}

pub(super) static PEM_HEADER: LazyLock<Regex> = LazyLock::new(|| {
    compile(r"-----BEGIN (?:RSA |EC |DSA |OPENSSH |ENCRYPTED |PGP )?PRIVATE KEY(?: BLOCK)?-----")
});
/// Group 1: the `Authorization:` prefix, if any; group 2: the token.
pub(super) static BEARER: LazyLock<Regex> = LazyLock::new(|| {
    compile(
        r#"(?i)(authorization["']?[ \t]*[:=][ \t]*["']?[ \t]*)?bearer[ \t]+([A-Za-z0-9._~+/-]{16,}=*)"#,
    )
});
/// Group 1: key; 2: separator; 3: double-quoted value; 4: single-quoted value; 5: bare value.
/// Quotes may be escaped (`\"password\": \"…\"` inside a string literal or JSON in JSON).
pub(super) static PASSWORD_ASSIGNMENT: LazyLock<Regex> = LazyLock::new(|| {
    compile(concat!(
        r#"(?i)(password|passwd|passphrase|passcode|pwd|pass|pw|secret)\\?["']?[ \t]*(:=|=>|=|:)[ \t]*"#,
        r#"(?:\\?"((?:[^"\\\r\n]|\\[^"\r\n])*)\\?"|\\?'((?:[^'\\\r\n]|\\[^'\r\n])*)\\?'"#,
        r#"|([^\s"'`,;&)\]}\\]+))"#,
    ))
});
/// Same groups as [`PASSWORD_ASSIGNMENT`].
pub(super) static API_KEY_ASSIGNMENT: LazyLock<Regex> = LazyLock::new(|| {
    compile(concat!(
        r#"(?i)(api[_-]?key|api[_-]?token|api[_-]?secret|access[_-]?token|auth[_-]?token"#,
        r#"|secret[_-]?(?:access[_-]?)?key|private[_-]?token|refresh[_-]?token|token)"#,
        r#"\\?["']?[ \t]*(:=|=>|=|:)[ \t]*"#,
        r#"(?:\\?"((?:[^"\\\r\n]|\\[^"\r\n])*)\\?"|\\?'((?:[^'\\\r\n]|\\[^'\r\n])*)\\?'"#,
        r#"|([^\s"'`,;&)\]}\\]+))"#,
    ))
});
/// Names of keys that are secret when their value is high-entropy (`signing_key`,
/// `AccountKey`, `APP_KEY`); same groups as [`PASSWORD_ASSIGNMENT`].
pub(super) static KEY_ASSIGNMENT: LazyLock<Regex> = LazyLock::new(|| {
    compile(concat!(
        r#"(?i)((?:private|signing|encryption|encrypt|master|access|client|app|auth|session|hmac"#,
        r#"|jwt|aes|crypto|consumer|license|webhook|deploy|account|shared|storage)[_-]?key)"#,
        r#"\\?["']?[ \t]*(:=|=>|=|:)[ \t]*"#,
        r#"(?:\\?"((?:[^"\\\r\n]|\\[^"\r\n])*)\\?"|\\?'((?:[^'\\\r\n]|\\[^'\r\n])*)\\?'"#,
        r#"|([^\s"'`,;&)\]}\\]+))"#,
    ))
});
/// Group 1: the password.
pub(super) static CONNECTION_STRING: LazyLock<Regex> = LazyLock::new(|| {
    compile(r#"[A-Za-z][A-Za-z0-9+.-]{0,30}://[^\s:/@"'<>]*:([^\s/@"'<>]+)@[^\s/@"'<>]"#)
});

/// How far after a PEM header its footer is searched for (large PGP key blocks included).
pub(super) const PEM_WINDOW: usize = 64 * 1024;
