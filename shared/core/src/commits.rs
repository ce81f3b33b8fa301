//! Issue references in commit messages: `fixes #12`, `closes ABC-12`, `resolves owner/repo#3`
//! (a *fixing* reference) and bare `ABC-12` / `#12` (a plain reference).
//!
//! Keys that look like issue keys but name standards or encodings (`UTF-8`, `ISO-8859`,
//! `SHA-256`, `RFC-2047`, …) are not issues. `#12` needs a word boundary before it (so
//! `C#7` or `a#1` anchors do not count).

use std::sync::LazyLock;

use regex::Regex;

#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum IssueRelation {
    /// The commit claims to fix / close / resolve the issue.
    Fixes,
    /// The commit mentions the issue.
    References,
}

impl IssueRelation {
    pub fn edge_type(self) -> &'static str {
        match self {
            IssueRelation::Fixes => "fixes",
            IssueRelation::References => "references",
        }
    }
}

#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum IssueKey {
    /// `ABC-12` (Jira-style project key).
    Project(String),
    /// `#12`, optionally qualified `owner/repo#12`.
    Number { repo: Option<String>, number: u64 },
}

#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct IssueRef {
    pub relation: IssueRelation,
    pub key: IssueKey,
}

/// Prefixes of standard names that look like issue keys.
pub const NOT_ISSUE_PREFIXES: &[&str] = &[
    "UTF", "ISO", "SHA", "RFC", "AES", "MD", "PEP", "ECMA", "CP", "WIN", "GPT", "COVID", "IEEE",
    "HTTP", "TLS", "SSL", "ES", "IPV", "CVE", "CWE", "X", "BASE", "ASCII", "ANSI", "LATIN", "UCS",
    "CRC", "HMAC", "RSA", "EC", "P", "FIPS", "DDR", "USB",
];

static FIXING: LazyLock<Regex> = LazyLock::new(|| {
    Regex::new(r"(?i)\b(?:fix(?:e[sd])?|close[sd]?|resolve[sd]?)\b[:\s]+((?:[\w.-]+/[\w.-]+)?#\d+|[A-Za-z][A-Za-z0-9]{1,9}-\d+)")
        .expect("static regex")
});
static PROJECT_KEY: LazyLock<Regex> =
    LazyLock::new(|| Regex::new(r"\b([A-Z][A-Z0-9]{1,9})-(\d{1,7})\b").expect("static regex"));
static NUMBER: LazyLock<Regex> = LazyLock::new(|| {
    Regex::new(r"(?:^|[\s(\[,;])((?:[\w.-]+/[\w.-]+)?#(\d{1,9}))\b").expect("static regex")
});

fn parse_key(raw: &str) -> Option<IssueKey> {
    if let Some((repo, num)) = raw.split_once('#') {
        let number = num.parse().ok()?;
        return Some(IssueKey::Number {
            repo: (!repo.is_empty()).then(|| repo.to_string()),
            number,
        });
    }
    let (prefix, num) = raw.split_once('-')?;
    let prefix = prefix.to_ascii_uppercase();
    if NOT_ISSUE_PREFIXES.contains(&prefix.as_str()) || num.parse::<u64>().is_err() {
        return None;
    }
    Some(IssueKey::Project(format!("{prefix}-{num}")))
}

/// Issue references of a commit message, each once, fixing references winning over plain.
pub fn issue_refs(message: &str) -> Vec<IssueRef> {
    let mut out: Vec<IssueRef> = Vec::new();
    let mut push = |relation, key: IssueKey| {
        if let Some(existing) = out.iter_mut().find(|r| r.key == key) {
            existing.relation = existing.relation.min(relation);
        } else {
            out.push(IssueRef { relation, key });
        }
    };
    for c in FIXING.captures_iter(message) {
        if let Some(key) = parse_key(&c[1]) {
            push(IssueRelation::Fixes, key);
        }
    }
    for m in PROJECT_KEY.find_iter(message) {
        if let Some(key) = parse_key(m.as_str()) {
            push(IssueRelation::References, key);
        }
    }
    for c in NUMBER.captures_iter(message) {
        if let Some(key) = parse_key(&c[1]) {
            push(IssueRelation::References, key);
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    fn keys(msg: &str) -> Vec<(IssueRelation, String)> {
        issue_refs(msg)
            .into_iter()
            .map(|r| {
                let k = match r.key {
                    IssueKey::Project(p) => p,
                    IssueKey::Number {
                        repo: Some(r),
                        number,
                    } => format!("{r}#{number}"),
                    IssueKey::Number { repo: None, number } => format!("#{number}"),
                };
                (r.relation, k)
            })
            .collect()
    }

    #[test]
    fn fixing_and_plain_references() {
        use IssueRelation::*;
        assert_eq!(
            keys("Fix crash on empty input\n\nFixes #12"),
            vec![(Fixes, "#12".into())]
        );
        assert_eq!(
            keys("closes ABC-12, see also XYZ-3"),
            vec![(Fixes, "ABC-12".into()), (References, "XYZ-3".into())]
        );
        assert_eq!(
            keys("Resolved: acme/api#7"),
            vec![(Fixes, "acme/api#7".into())]
        );
        assert_eq!(
            keys("ABC-12 mentioned, then fixes abc-12"),
            vec![(Fixes, "ABC-12".into())],
            "fixing wins, keys upper-cased"
        );
        assert_eq!(
            keys("Refs #5 and (#6)"),
            vec![(References, "#5".into()), (References, "#6".into())]
        );
    }

    #[test]
    fn standards_and_anchors_are_not_issues() {
        assert!(keys("Decode UTF-8 and ISO-8859-1, hash with SHA-256 per RFC-2047").is_empty());
        assert!(keys("fixes UTF-8 handling").is_empty());
        assert!(keys("C#7 pattern matching; see page#12 anchor").is_empty());
    }

    proptest! {
        #[test]
        fn never_panics(s in ".*") {
            let _ = issue_refs(&s);
        }
    }
}
