//! Redaction: span-wise ([`redact_secrets`]) and line-wise ([`redact`]).

use super::{SecretClass, SecretFinding, find_secrets};

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
