//! One scanner per rule family (private keys, tokens, bearer, assignments, connection
//! strings); each pushes raw spans that [`resolve`](super::resolve::resolve) turns into findings.

use regex::Regex;

use super::SecretClass;
use super::heuristics::{ends_line, is_placeholder, is_token_placeholder, plausible_value};
use super::patterns::{
    AWS_KEY, BEARER, CONNECTION_STRING, GITHUB_TOKEN, GOOGLE_KEY, JWT, OPENAI_KEY, PEM_HEADER,
    PEM_WINDOW, SLACK_TOKEN, STRIPE_KEY,
};

#[derive(Debug, Clone, Copy)]
pub(super) struct Raw {
    pub(super) class: SecretClass,
    pub(super) start: usize,
    pub(super) end: usize,
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

pub(super) fn scan_tokens(text: &str, out: &mut Vec<Raw>) {
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

pub(super) fn scan_assignments(text: &str, regex: &Regex, class: SecretClass, out: &mut Vec<Raw>) {
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
