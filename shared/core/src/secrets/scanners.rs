//! One scanner per rule family (private keys, tokens, bearer, assignments, connection
//! strings); each pushes raw spans that [`resolve`](super::resolve::resolve) turns into findings.

use regex::Regex;

use super::SecretClass;
use super::heuristics::{
    ends_line, is_placeholder, is_token_placeholder, looks_like_code, looks_like_path_or_url,
    plausible_value,
};
use super::patterns::{BEARER, CONNECTION_STRING, PEM_HEADER, PEM_WINDOW};
use super::prose::word_start;
use super::shape::{high_entropy, looks_random, wordish};

#[derive(Debug, Clone, Copy)]
pub(super) struct Raw {
    pub(super) class: SecretClass,
    pub(super) start: usize,
    pub(super) end: usize,
}

pub(super) fn prev_byte(text: &str, pos: usize) -> Option<u8> {
    pos.checked_sub(1).map(|p| text.as_bytes()[p])
}

pub(super) fn next_byte(text: &str, pos: usize) -> Option<u8> {
    text.as_bytes().get(pos).copied()
}

pub(super) fn is_word_byte(b: u8) -> bool {
    b.is_ascii_alphanumeric() || b == b'_'
}

pub(super) fn has_digit(s: &str) -> bool {
    s.bytes().any(|b| b.is_ascii_digit())
}

fn find_bytes(hay: &[u8], needle: &[u8]) -> Option<usize> {
    hay.windows(needle.len()).position(|w| w == needle)
}

pub(super) fn scan_private_keys(text: &str, out: &mut Vec<Raw>) {
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

pub(super) fn scan_bearer(text: &str, out: &mut Vec<Raw>) {
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

/// Which rule family an assignment regex belongs to: what its values must look like.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Family {
    /// `password`, `pwd`, `pass`, `pw`, `secret`, … (`DB_PASSWORD`, `client_secret`).
    Password,
    /// `api_key`, `access_token`, `token`, … : a generated value (letters and digits).
    ApiKey,
    /// `signing_key`, `AccountKey`, … : only a high-entropy value.
    Key,
}

pub(super) fn scan_assignments(text: &str, regex: &Regex, family: Family, out: &mut Vec<Raw>) {
    let mut at = 0;
    while let Some(caps) = regex.captures_at(text, at) {
        let (Some(key), Some(sep)) = (caps.get(1), caps.get(2)) else {
            break;
        };
        // Every candidate is examined: the next search starts right after this key, so a
        // rejected pair (a decoy: `pwd: db_password = …`) cannot hide the one after it, and
        // a quoted value that itself holds an assignment (`SECRET = 'password = "…"'`, a
        // command line with `token='…'`) is searched too.
        at = key.end();
        let Some((value, quoted)) = value_of(&caps) else {
            continue;
        };
        // `Pass::First`, `pw == x`: a path or a comparison, not an assignment.
        if text[sep.end()..].starts_with([':', '=']) {
            continue;
        }
        if in_type_path(text, key.start()) || shell_default(text, key.start(), value.as_str()) {
            continue;
        }
        let k = key.as_str().to_ascii_lowercase();
        // `pass` and `pw` are words and parts of words (`bypass`, `compass`): only a whole
        // word or a `db_pass`/`dbPass` suffix, and not a written value (`pass: all-tests`).
        let short = k == "pass" || k == "pw";
        if short && !word_start(text, key.start()) {
            continue;
        }
        let v = value.as_str();
        // `key: value` without quotes ends its line in YAML or a mail header; mid-line it is
        // prose ("Password: please reset it"), a credential only when it looks generated
        // (`Password: <a generated string> (prod db)`).
        let mid_line = !quoted && sep.as_str() == ":" && !ends_line(text, value.end());
        let accepted = match family {
            Family::Password if mid_line => looks_random(v, 6) && literal(v, quoted),
            Family::Password if short => {
                plausible_value(v, quoted, 6, false) && !wordish(v) && literal(v, quoted)
            }
            Family::Password => plausible_value(v, quoted, 6, k == "secret"),
            Family::ApiKey if mid_line => {
                looks_random(v, 8) && literal(v, quoted) && !is_token_placeholder(v)
            }
            Family::ApiKey => plausible_value(v, quoted, 8, true) && !is_token_placeholder(v),
            Family::Key => {
                literal(v, quoted)
                    && !v.chars().any(char::is_whitespace)
                    && (high_entropy(v) || (v.len() >= 16 && looks_random(v, 16)))
            }
        };
        if !accepted {
            continue;
        }
        out.push(Raw {
            class: match family {
                Family::Password => SecretClass::PasswordAssignment,
                Family::ApiKey | Family::Key => SecretClass::ApiKeyAssignment,
            },
            start: value.start(),
            end: value.end(),
        });
    }
}

/// The value of an assignment match and whether it was quoted.
fn value_of<'h>(caps: &regex::Captures<'h>) -> Option<(regex::Match<'h>, bool)> {
    match (caps.get(3), caps.get(4), caps.get(5)) {
        (Some(v), _, _) | (_, Some(v), _) => Some((v, true)),
        (_, _, Some(v)) => Some((v, false)),
        _ => None,
    }
}

/// A literal, not a placeholder, a path or (unquoted) an expression or another pair.
fn literal(v: &str, quoted: bool) -> bool {
    !is_placeholder(v)
        && !looks_like_path_or_url(v)
        && (quoted || (!looks_like_code(v) && !starts_a_pair(v)))
}

/// `host=db.internal`, `port:5432`, `db_pass:`: the next pair (searched on its own), not a
/// value. Base64 padding (`…pQ==`) is not a pair.
fn starts_a_pair(v: &str) -> bool {
    let name = v
        .find(|c: char| !(c.is_ascii_alphanumeric() || c == '_' || c == '.' || c == '-'))
        .unwrap_or(v.len());
    let rest = &v[name..];
    let next_pair = (rest.starts_with('=') || rest.starts_with(':'))
        && rest.len() > 1
        && !rest[1..].starts_with('=');
    // `db_pass:` alone: the next key, its value still to come.
    name > 0 && v.as_bytes()[0].is_ascii_alphabetic() && (next_pair || rest == ":")
}

/// `${DB_PASSWORD:-dev}`: a shell parameter's default, inside a reference to the variable
/// that holds the real value (an example deployment's documented default).
fn shell_default(text: &str, key_start: usize, value: &str) -> bool {
    let bytes = text.as_bytes();
    let mut i = key_start;
    while i > 0 && is_word_byte(bytes[i - 1]) {
        i -= 1;
    }
    text[..i].ends_with("${") && value.starts_with(['-', '=', '?', '+'])
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

pub(super) fn scan_connection_strings(text: &str, out: &mut Vec<Raw>) {
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
