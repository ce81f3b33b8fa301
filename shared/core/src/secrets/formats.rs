//! Known token formats, found anywhere in one pass of one regex (its literal prefixes let
//! the regex engine skip text that holds none); the class comes from the prefix, and each
//! class has its own acceptance rule (word boundaries, digits, AWS's example keys).

use std::sync::LazyLock;

use regex::Regex;

use super::SecretClass;
use super::scanners::{Raw, has_digit, is_word_byte, next_byte, prev_byte};

static TOKENS: LazyLock<Regex> = LazyLock::new(|| {
    Regex::new(concat!(
        r"(?:AKIA|ASIA|akia|asia)[0-9A-Za-z]{16}",
        r"|gh[pousr]_[A-Za-z0-9]{36,}|github_pat_[A-Za-z0-9_]{22,}",
        r"|xox[baprs]-[A-Za-z0-9-]{10,}",
        r"|AIza[0-9A-Za-z_-]{35}",
        r"|[sr]k_live_[0-9A-Za-z]{10,}",
        r"|sk-(?:proj|svcacct|admin|ant)-[A-Za-z0-9_-]{20,}|sk-[A-Za-z0-9]{20,}",
        r"|eyJ[A-Za-z0-9_-]{8,}\.eyJ[A-Za-z0-9_-]{8,}\.[A-Za-z0-9_-]{16,}",
        r"|evd_[A-Za-z0-9_-]{43}",
        r"|glpat-[A-Za-z0-9_-]{20,}",
        r"|npm_[A-Za-z0-9]{36}",
        r"|pypi-AgEIcHlwaS5vcmc[A-Za-z0-9_-]{50,}",
        r"|hf_[A-Za-z0-9]{34,}",
        r"|(?:https://)?hooks\.slack\.com/services/T[A-Z0-9]{8,}/B[A-Z0-9]{8,}/[A-Za-z0-9]{24}",
        r"|SG\.[A-Za-z0-9_-]{22}\.[A-Za-z0-9_-]{43}",
        r"|GOCSPX-[A-Za-z0-9_-]{28}",
        r"|do[opr]_v1_[a-f0-9]{64}",
        r"|shp(?:at|ca|pa|ss)_[a-fA-F0-9]{32}",
    ))
    .expect("built-in secret pattern is a valid regex")
});

/// The class of a match, from its prefix (the alternatives of [`TOKENS`] start differently).
fn class_of(m: &str) -> SecretClass {
    const PREFIXES: [(&str, SecretClass); 21] = [
        ("akia", SecretClass::AwsAccessKey),
        ("asia", SecretClass::AwsAccessKey),
        ("github_p", SecretClass::GithubToken),
        ("gh", SecretClass::GithubToken),
        ("xox", SecretClass::SlackToken),
        ("aiza", SecretClass::GoogleApiKey),
        ("sk_live_", SecretClass::StripeKey),
        ("rk_live_", SecretClass::StripeKey),
        ("sk-", SecretClass::OpenAiKey),
        ("eyj", SecretClass::JwtToken),
        ("evd_", SecretClass::EvidentToken),
        ("glpat-", SecretClass::GitlabToken),
        ("npm_", SecretClass::NpmToken),
        ("pypi-", SecretClass::PypiToken),
        ("hf_", SecretClass::HuggingFaceToken),
        ("hooks.", SecretClass::SlackWebhook),
        ("https://", SecretClass::SlackWebhook),
        ("sg.", SecretClass::SendgridKey),
        ("gocspx-", SecretClass::GoogleOauthSecret),
        ("do", SecretClass::DigitaloceanToken),
        ("shp", SecretClass::ShopifyToken),
    ];
    let head = m.get(..8).unwrap_or(m).to_ascii_lowercase();
    PREFIXES
        .iter()
        .find(|(p, _)| head.starts_with(p))
        .map_or(SecretClass::ShopifyToken, |(_, c)| *c)
}

/// Whether a match of `class` at `s..e` is a credential.
fn accept(class: SecretClass, text: &str, s: usize, e: usize) -> bool {
    let token = &text[s..e];
    let prev_word = prev_byte(text, s).is_some_and(is_word_byte);
    match class {
        SecretClass::AwsAccessKey => {
            let body = &token[4..];
            // As issued (upper case) or lower-cased whole (a normalised key: recoverable).
            let upper = token[..4].bytes().all(|b| b.is_ascii_uppercase())
                && body
                    .bytes()
                    .all(|b| b.is_ascii_uppercase() || b.is_ascii_digit());
            let lower = token[..4].bytes().all(|b| b.is_ascii_lowercase())
                && body
                    .bytes()
                    .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit())
                && body.bytes().filter(u8::is_ascii_digit).count() >= 2;
            !prev_byte(text, s).is_some_and(|b| b.is_ascii_alphanumeric())
                && !next_byte(text, e).is_some_and(|b| b.is_ascii_alphanumeric())
                && (upper || lower)
                && !token.to_ascii_uppercase().contains("EXAMPLE")
        }
        SecretClass::SlackToken => !prev_word && has_digit(token),
        SecretClass::GoogleApiKey => {
            !prev_word && !next_byte(text, e).is_some_and(|b| is_word_byte(b) || b == b'-')
        }
        SecretClass::OpenAiKey => {
            !prev_byte(text, s).is_some_and(|b| is_word_byte(b) || b == b'-')
                && !next_byte(text, e).is_some_and(|b| is_word_byte(b) || b == b'-')
                && has_digit(token)
                && token.bytes().skip(3).any(|b| b.is_ascii_alphabetic())
        }
        SecretClass::JwtToken => {
            !prev_byte(text, s).is_some_and(|b| is_word_byte(b) || b == b'-' || b == b'.')
        }
        SecretClass::EvidentToken | SecretClass::NpmToken => {
            !prev_word && !next_byte(text, e).is_some_and(|b| is_word_byte(b) || b == b'-')
        }
        SecretClass::HuggingFaceToken => {
            let c = super::shape::Classes::of(&token[3..]);
            !prev_word && !next_byte(text, e).is_some_and(is_word_byte) && c.upper && c.lower
        }
        SecretClass::SendgridKey | SecretClass::ShopifyToken | SecretClass::DigitaloceanToken => {
            !prev_word && !next_byte(text, e).is_some_and(is_word_byte)
        }
        _ => !prev_word,
    }
}

pub(super) fn scan_tokens(text: &str, out: &mut Vec<Raw>) {
    let mut at = 0;
    while let Some(m) = TOKENS.find_at(text, at) {
        let class = class_of(m.as_str());
        if accept(class, text, m.start(), m.end()) {
            out.push(Raw {
                class,
                start: m.start(),
                end: m.end(),
            });
            at = m.end();
        } else {
            // Every alternative starts with an ASCII byte: the next char starts one later.
            at = m.start() + 1;
        }
    }
}
