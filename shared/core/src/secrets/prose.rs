//! Credentials given in a sentence: "the password is …", "Password for the prod db: …",
//! "my pw was changed to …", "the API key is now …". The context is weaker than an
//! assignment's, so the value must look generated ([`looks_random`]) and be neither a
//! placeholder, a path, nor code: "the password is stored hashed", "the token is valid for
//! 3600 s" and "the secret is SHA-256-hashed" are prose.

use std::sync::LazyLock;

use regex::Regex;

use super::SecretClass;
use super::heuristics::{
    is_placeholder, is_token_placeholder, looks_like_code, looks_like_path_or_url,
};
use super::scanners::Raw;
use super::shape::looks_random;

/// Group 1: the word naming the credential; 2: the value.
static PROSE: LazyLock<Regex> = LazyLock::new(|| {
    Regex::new(concat!(
        r"(?i)(password|passwd|passphrase|passcode|pass[ -]?word|pwd|pw|secret|token",
        r"|api[ _-]?key|access[ _-]?key|secret[ _-]?key|private[ _-]?key)s?",
        // Up to four words between ("for the prod db", "of root").
        r"(?:[ \t]+[A-Za-z0-9_.@/()-]{1,24}){0,4}?",
        // Longer verbs first: the first parse that matches is the one examined.
        r"(?:[ \t]+(?:has been (?:changed |set |reset )?to|(?:was |is )?(?:changed|set|reset|updated) to",
        r"|is now|is|was|are|remains)|[ \t]*[:=])",
        r#"[ \t]+["'`*]{0,2}([^\s"'`*]+)"#,
    ))
    .expect("built-in secret pattern is a valid regex")
});

/// Trailing punctuation of a sentence is not part of the value.
fn trim_value(v: &str) -> &str {
    v.trim_end_matches(['.', ',', ';', ':', ')', ']', '}', '>', '?'])
}

pub(super) fn scan_prose(text: &str, out: &mut Vec<Raw>) {
    let mut at = 0;
    while let Some(caps) = PROSE.captures_at(text, at) {
        let (Some(key), Some(value)) = (caps.get(1), caps.get(2)) else {
            break;
        };
        // A later credential word may start inside this match ("pw: the password is …").
        at = key.end();
        if !word_start(text, key.start()) {
            continue;
        }
        let v = trim_value(value.as_str());
        let word = key.as_str().to_ascii_lowercase();
        let token_like = word.contains("token") || word.contains("key");
        if !looks_random(v, if token_like { 8 } else { 6 })
            || is_placeholder(v)
            || looks_like_path_or_url(v)
            || looks_like_code(v)
            || (token_like && is_token_placeholder(v))
        {
            continue;
        }
        out.push(Raw {
            class: if token_like {
                SecretClass::ApiKeyAssignment
            } else {
                SecretClass::PasswordAssignment
            },
            start: value.start(),
            end: value.start() + v.len(),
        });
    }
}

/// The credential word starts a word: not inside `bypass`, `compass`, `npw`; a camelCase
/// (`dbPassword`) or `snake_case` (`db_pass`) boundary counts.
pub(super) fn word_start(text: &str, pos: usize) -> bool {
    let bytes = text.as_bytes();
    let Some(&prev) = pos.checked_sub(1).and_then(|p| bytes.get(p)) else {
        return true;
    };
    if !prev.is_ascii_alphanumeric() {
        return true;
    }
    let first_upper = bytes.get(pos).is_some_and(u8::is_ascii_uppercase);
    first_upper && (prev.is_ascii_lowercase() || prev.is_ascii_digit())
}
