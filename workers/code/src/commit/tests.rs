use super::*;
use evident_core::Scope;

fn ctx() -> RepoContext {
    RepoContext {
        source_id: "acme.shop".into(),
        repository: "shop".into(),
        scope: Scope::client("acme"),
    }
}

fn issues() -> IssueContext {
    IssueContext {
        tracker: "github".into(),
        project: "acme/shop".into(),
    }
}

const DIFF: &str = "diff --git a/src/cart.rs b/src/cart.rs\nindex 1..2 100644\n--- a/src/cart.rs\n+++ b/src/cart.rs\n@@ -10,3 +10,4 @@ fn total()\n     let a = 1;\n-    let b = 2;\n+    let b = 3;\n+    let c = 4;\n     a + b\ndiff --git a/old.txt b/new.txt\nsimilarity index 90%\nrename from old.txt\nrename to new.txt\n--- a/old.txt\n+++ b/new.txt\n@@ -1 +1 @@\n-x\n+y\ndiff --git a/gone.rs b/gone.rs\ndeleted file mode 100644\n--- a/gone.rs\n+++ /dev/null\n@@ -1,2 +0,0 @@\n-fn gone() {}\n-\n";

fn commit() -> CommitInfo {
    let parsed = parse_unified_diff(DIFF);
    let status = [
        ChangeStatus::Modified,
        ChangeStatus::Renamed,
        ChangeStatus::Deleted,
    ];
    CommitInfo {
        hash: "ABCDEF0123456789abcdef0123456789abcdef01".into(),
        parents: vec!["1111111111111111111111111111111111111111".into()],
        author_name: "Jan Novák".into(),
        author_email: "Jan@Example.com".into(),
        committer_name: None,
        committer_email: None,
        date: "2026-11-01T10:00:00Z".into(),
        message: "Fix totals (fixes #12, refs SHOP-7, not UTF-8)\n\nLonger body.".into(),
        files: parsed
            .into_iter()
            .zip(status)
            .map(|((path, old, hunks), status)| FileChange {
                path,
                old_path: old,
                status,
                binary: false,
                omitted: None,
                hunks,
            })
            .collect(),
    }
}

#[test]
fn unified_diffs_parse_into_files_and_hunks() {
    let files = parse_unified_diff(DIFF);
    let paths: Vec<(&str, Option<&str>)> = files
        .iter()
        .map(|f| (f.0.as_str(), f.1.as_deref()))
        .collect();
    assert_eq!(
        paths,
        vec![
            ("src/cart.rs", None),
            ("new.txt", Some("old.txt")),
            ("gone.rs", None)
        ]
    );
    let h = &files[0].2[0];
    assert_eq!(
        (h.old_start, h.old_lines, h.new_start, h.new_lines),
        (10, 3, 10, 4)
    );
    assert_eq!(h.section, "fn total()");
    assert_eq!(h.lines.len(), 5);
    assert_eq!(files[2].2[0].new_lines, 0);
}

#[test]
fn a_commit_becomes_nodes_edges_and_cited_chunks() {
    let p = commit_source(&ctx(), &commit(), &issues(), 384);
    assert_eq!(
        p.source_urn,
        "git:acme.shop:commit:abcdef0123456789abcdef0123456789abcdef01"
    );
    assert_eq!(p.chunks[0].kind.as_deref(), Some("git-commit"));
    assert!(p.chunks[0].text.contains("R old.txt -> new.txt"));
    let edges: Vec<(&str, &str)> = p
        .edges
        .iter()
        .map(|e| (e.edge_type.as_str(), e.to.as_str()))
        .collect();
    for e in [
        ("authored_by", "user:jan_example_com"),
        ("parent", "commit:1111111111111111111111111111111111111111"),
        ("modifies", "file:shop/src/cart.rs"),
        ("renames", "file:shop/new.txt"),
        ("deletes", "file:shop/gone.rs"),
        ("fixes", "github:acme_shop_12"),
        ("references", "jira:shop-7"),
    ] {
        assert!(edges.contains(&e), "{e:?} in {edges:?}");
    }
    assert!(
        !edges.iter().any(|(_, to)| to.contains("utf")),
        "UTF-8 is not an issue"
    );
    // The modification's diff chunk cites the new lines at this commit.
    let diff = p
        .chunks
        .iter()
        .find(|c| c.text.contains("let c = 4"))
        .expect("diff chunk");
    match &diff.locator {
        Locator::File {
            path,
            line_start,
            line_end,
            commit,
            ..
        } => {
            assert_eq!(
                (path.as_str(), *line_start, *line_end),
                ("src/cart.rs", 10, 13)
            );
            assert_eq!(
                commit.as_deref(),
                Some("abcdef0123456789abcdef0123456789abcdef01")
            );
        }
        other => panic!("{other:?}"),
    }
    // A deletion cites the removed lines in the parent, where they still exist.
    let gone = p
        .chunks
        .iter()
        .find(|c| c.text.contains("fn gone"))
        .expect("deleted chunk");
    match &gone.locator {
        Locator::File {
            path,
            commit,
            line_start,
            ..
        } => {
            assert_eq!((path.as_str(), *line_start), ("gone.rs", 1));
            assert_eq!(
                commit.as_deref(),
                Some("1111111111111111111111111111111111111111")
            );
        }
        other => panic!("{other:?}"),
    }
    assert_eq!(
        p.aliases.len(),
        1,
        "the author's name resolves to their e-mail identity"
    );
}

#[test]
fn a_huge_diff_is_chunked_not_cut() {
    let mut c = commit();
    let lines: Vec<String> = (0..5000)
        .map(|i| format!("+line number {i} of a generated table"))
        .collect();
    c.files = vec![FileChange {
        path: "big.txt".into(),
        old_path: None,
        status: ChangeStatus::Added,
        binary: false,
        omitted: None,
        hunks: vec![Hunk {
            old_start: 0,
            old_lines: 0,
            new_start: 1,
            new_lines: 5000,
            section: String::new(),
            lines,
        }],
    }];
    let p = commit_source(&ctx(), &c, &issues(), 384);
    let diff: Vec<&PreparedChunk> = p
        .chunks
        .iter()
        .filter(|c| c.kind.as_deref() == Some("git-diff"))
        .collect();
    assert!(diff.len() > 10);
    let all: String = diff.iter().map(|c| c.text.as_str()).collect();
    for i in [0, 2500, 4999] {
        assert!(
            all.contains(&format!("+line number {i} of")),
            "line {i} kept"
        );
    }
    let spans: Vec<(usize, usize)> = diff
        .iter()
        .map(|c| match &c.locator {
            Locator::File {
                line_start,
                line_end,
                ..
            } => (*line_start, *line_end),
            _ => (0, 0),
        })
        .collect();
    assert_eq!(spans.first().map(|s| s.0), Some(1));
    assert_eq!(spans.last().map(|s| s.1), Some(5000));
    assert!(
        spans.windows(2).all(|w| w[0].1 + 1 == w[1].0),
        "contiguous, no overlap: {spans:?}"
    );
}

proptest::proptest! {
    #[test]
    fn the_diff_parser_never_panics(text in "(?s)(diff --git a/x b/y\n|--- a/x\n|\\+\\+\\+ b/y\n|@@ -[0-9,]{0,5} \\+[0-9,]{0,5} @@\n|[ +-].{0,20}\n|.{0,30}\n){0,30}") {
        let _ = parse_unified_diff(&text);
    }
}
