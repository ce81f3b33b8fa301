//! Value heuristics: what an assigned value must look like to count as a credential.

use super::scanners::has_digit;

/// After an unquoted value: only blanks, then end of line, a comment or a closing delimiter.
pub(super) fn ends_line(text: &str, pos: usize) -> bool {
    let rest = text[pos..].trim_start_matches([' ', '\t']);
    rest.is_empty() || rest.starts_with(['\n', '\r', '#', ',', ';', '}', ']'])
}

pub(super) fn plausible_value(v: &str, quoted: bool, min_chars: usize, strict: bool) -> bool {
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
        // `secret: SHA-256`, `token: v2-beta`: written values, not generated ones.
        return !super::shape::wordish(v)
            && ((digit && v.chars().any(char::is_alphabetic)) || super::shape::high_entropy(v));
    }
    let symbol = v.chars().any(|c| !c.is_alphanumeric() && c != '_');
    digit || symbol || (quoted && n >= 12)
}

/// Template and environment indirections, masks, and example values.
pub(super) fn is_placeholder(v: &str) -> bool {
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
pub(super) fn is_token_placeholder(v: &str) -> bool {
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

pub(super) fn looks_like_path_or_url(v: &str) -> bool {
    v.starts_with('/')
        || v.starts_with("./")
        || v.starts_with("../")
        || v.starts_with("~/")
        || v.contains("://")
        || v.starts_with("arn:")
        || (v.len() > 2 && v.as_bytes()[0].is_ascii_alphabetic() && v[1..].starts_with(":\\"))
}

/// Unquoted values that are expressions rather than literals.
pub(super) fn looks_like_code(v: &str) -> bool {
    // Calls, indexing, blocks, and paths (`Pass::First`, `std::env::var`).
    if v.contains(['(', ')', '[', ']', '{', '}']) || v.contains("::") {
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
    // A long mixed-case run of letters is a base64 secret without digits, not a name.
    let all_letters =
        v.chars().all(|c| c.is_alphabetic() || c == '_') && !super::shape::high_entropy(v);
    // A dotted reference starts with a name (`self`, `args`, `cfg`); one that starts with a
    // generated string is a credential with a suffix (`Cc4n5zTmC9gjC.git` in a URL).
    let reference = v.contains('.')
        && v.split('.').all(ident)
        && !v
            .split('.')
            .next()
            .is_some_and(|head| super::shape::looks_random(head, 10));
    all_letters || reference
}
