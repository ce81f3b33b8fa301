//! Hostile input: no body, damaged fixture or random JSON makes a parser panic.

use super::*;
use proptest::prelude::*;

const FIELDS: &[&str] = &[
    "number",
    "iid",
    "key",
    "id",
    "title",
    "summary",
    "body",
    "description",
    "state",
    "labels",
    "name",
    "login",
    "username",
    "user",
    "author",
    "actor",
    "assignee",
    "assignees",
    "pull_request",
    "references",
    "full",
    "web_url",
    "fields",
    "status",
    "comment",
    "comments",
    "changelog",
    "histories",
    "items",
    "issuelinks",
    "type",
    "outward",
    "inward",
    "outwardIssue",
    "inwardIssue",
    "issues",
    "startAt",
    "total",
    "isLast",
    "nextPageToken",
    "event",
    "label",
    "rename",
    "from",
    "to",
    "system",
    "created_at",
    "updated_at",
    "created",
    "updated",
    "emailAddress",
    "displayName",
    "accountId",
    "content",
    "text",
    "attrs",
    "fromString",
    "toString",
    "commit_id",
    "source_commit",
    "self",
    "priority",
    "issuetype",
    "milestone",
    "message",
    "errorMessages",
];

/// JSON built from the field names the parsers read, so generated values reach deep.
fn json() -> impl Strategy<Value = Value> {
    let leaf = prop_oneof![
        Just(Value::Null),
        any::<bool>().prop_map(Value::from),
        any::<i64>().prop_map(Value::from),
        any::<u64>().prop_map(Value::from),
        any::<f64>().prop_map(Value::from),
        "\\PC{0,24}".prop_map(Value::from),
        "[A-Z]{1,4}-[0-9]{1,3}|#[0-9]{1,3}|[0-9a-f]{40}|[a-z]+ [a-z]+|\\{BASE\\}/rest/api/2/x"
            .prop_map(Value::from),
    ];
    leaf.prop_recursive(5, 96, 8, |inner| {
        prop_oneof![
            proptest::collection::vec(inner.clone(), 0..6).prop_map(Value::Array),
            proptest::collection::vec((proptest::sample::select(FIELDS.to_vec()), inner), 0..10)
                .prop_map(|kv| Value::Object(
                    kv.into_iter().map(|(k, v)| (k.to_string(), v)).collect()
                )),
        ]
    })
}

/// Every parser on `body`; every parsed issue, with whatever comments and history the
/// same body yields, made into a source whose evidence must stay in range.
fn exercise(body: &[u8]) {
    let scope = Scope::client("c");
    let chunking = ChunkingConfig {
        max_tokens: 12,
        min_tokens: 3,
    };
    let c = ctx(&scope, &chunking, "s");
    let mut issues = Vec::new();
    issues.extend(github_issues(body, "acme/shop").unwrap_or_default());
    issues.extend(gitlab_issues(body, "42").unwrap_or_default());
    issues.extend(jira_search(body).map(|p| p.issues).unwrap_or_default());
    let comments = github_comments(body).unwrap_or_default();
    let mut history = github_events(body).unwrap_or_default();
    history.extend(gitlab_state_events(body).unwrap_or_default());
    let (more_comments, more_history) = gitlab_notes(body).unwrap_or_default();
    for mut issue in issues {
        issue.comments.extend(comments.iter().cloned());
        issue.comments.extend(more_comments.iter().cloned());
        issue.history.extend(history.iter().cloned());
        issue.history.extend(more_history.iter().cloned());
        let src = issue_source(&issue, &c);
        assert!(!src.chunks.is_empty());
        let n = src.chunks.len();
        let ok = |e: &EvidenceSpec| match e {
            EvidenceSpec::Chunks(ix) => !ix.is_empty() && ix.iter().all(|i| *i < n),
            _ => true,
        };
        assert!(src.nodes.iter().all(|x| ok(&x.evidence)));
        assert!(
            src.edges
                .iter()
                .all(|x| ok(&x.evidence) && is_edge_type(&x.edge_type))
        );
        assert!(
            src.chunks
                .iter()
                .all(|c| !c.text.trim().is_empty() && !c.text.contains('\0'))
        );
        assert!(src.title.iter().all(|t| !t.chars().any(char::is_control)));
    }
}

proptest! {
    #[test]
    fn never_panics(s in proptest::collection::vec(any::<u8>(), 0..600)) {
        exercise(&s);
    }

    #[test]
    fn never_panics_on_json(v in json()) {
        exercise(&serde_json::to_vec(&v).expect("serialises"));
        exercise(&serde_json::to_vec(&Value::Array(vec![v.clone()])).expect("serialises"));
        exercise(&serde_json::to_vec(&serde_json::json!({"issues": [v]})).expect("serialises"));
    }

    #[test]
    fn never_panics_on_damaged_fixtures(
        which in 0usize..4,
        pos in any::<proptest::sample::Index>(),
        byte in any::<u8>(),
        cut in any::<proptest::sample::Index>()
    ) {
        let body = match which {
            0 => ok_body(GITHUB_PAGED, "/repos/acme/shop/issues", 1),
            1 => ok_body(GITHUB_INCREMENTAL, "/repos/acme/shop/issues/12/events", 0),
            2 => ok_body(GITLAB_PAGED, "/api/v4/projects/42/issues/9/notes", 0),
            _ => ok_body(JIRA_PAGED, "/rest/api/2/search", 1),
        };
        let mut damaged = body.clone();
        let i = pos.index(damaged.len());
        damaged[i] = byte;
        exercise(&damaged);
        exercise(&body[..cut.index(body.len())]);
    }
}
