//! What one poll did, per kind of source: typed here, serialised flat (camelCase) into the
//! source's `stats.lastPoll` — the JSON `GET /api/v1/sources/{id}` shows — and summed into
//! `stats.totals` by [`crate::poll::accumulate`].
//!
//! Every report says how many tasks it `queued` (the key every kind shares, read by the
//! metrics); the rest is the kind's own counts, and for what a poll left out, how many and a
//! few examples saying why.

use std::collections::BTreeMap;

use evident_code::skip::SkipReason;
use serde::{Deserialize, Serialize};
use serde_json::Value;

/// Examples kept in a report of what a poll left out.
pub const EXAMPLES: usize = 5;

/// The first [`EXAMPLES`] of a list.
pub fn examples(all: impl IntoIterator<Item = String>) -> Vec<String> {
    all.into_iter().take(EXAMPLES).collect()
}

/// Items a poll did not read: how many (`skipped`), and a few of them with the reason
/// (`skippedExamples`, "what: why").
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct Skips {
    #[serde(rename = "skipped")]
    pub count: usize,
    #[serde(rename = "skippedExamples")]
    pub examples: Vec<String>,
}

impl Skips {
    /// Counts every item of `all` ("what: why"), keeping the first few as examples.
    pub fn of(all: Vec<String>) -> Self {
        Skips {
            count: all.len(),
            examples: examples(all),
        }
    }
}

/// A git repository's poll.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct GitReport {
    pub branches: usize,
    pub changed_branches: usize,
    pub deleted_branches: usize,
    pub new_commits: usize,
    pub removed_commits: usize,
    pub files_queued: usize,
    pub files_deleted: usize,
    /// Tasks queued (`queued`, the key every poller reports; `tasks` in older reports).
    #[serde(rename = "queued", alias = "tasks")]
    pub tasks: usize,
    /// Files left out by rule at planning time, by reason.
    pub skipped: BTreeMap<SkipReason, usize>,
    /// A few of them ("path (reason)"), to say what was skipped.
    pub skipped_examples: Vec<String>,
    /// Every branch was read again: the source had been indexed under an older key scheme.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub reindexed: bool,
}

/// What a scan of a folder found (`documents`, `transcripts`).
#[derive(Debug, Clone, Default, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct FolderReport {
    pub queued: u64,
    pub unchanged: usize,
    /// Files gone since the last poll (their sources' purges queued).
    pub removed: usize,
    /// Files not read (too large, unreadable).
    #[serde(flatten)]
    pub skipped: Skips,
}

/// A folder of documents.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct DocumentsReport {
    pub documents: u64,
    #[serde(flatten)]
    pub folder: FolderReport,
}

/// A folder of transcripts, and of recordings when the source transcribes them.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct TranscriptsReport {
    pub transcripts: u64,
    #[serde(flatten)]
    pub folder: FolderReport,
    #[serde(flatten, skip_serializing_if = "Option::is_none")]
    pub recordings: Option<RecordingsReport>,
}

/// Recordings by state (`uploaded`, `transcribing`, `failed`, …), and a few failures.
#[derive(Debug, Clone, Default, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct RecordingsReport {
    pub recordings: BTreeMap<String, u64>,
    pub failed_examples: Vec<String>,
}

/// mbox files.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct MboxReport {
    pub files: usize,
    pub unchanged_files: u64,
    /// Files rewritten (not appended to) since the last poll: read from the start.
    pub reread_files: u64,
    pub messages: u64,
    pub queued: u64,
}

/// A Maildir.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct MaildirReport {
    pub mailboxes: usize,
    pub messages: u64,
    pub queued: u64,
    /// Subfolders not read (outside `[sources] roots`).
    pub unreadable: usize,
    pub unreadable_examples: Vec<String>,
}

/// An IMAP account.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct ImapReport {
    pub mailboxes: usize,
    pub messages: u64,
    pub queued: u64,
    /// Mailboxes renumbered by the server (`UIDVALIDITY` changed): read again from the start.
    pub uid_validity_changed: usize,
    pub uid_validity_changed_examples: Vec<String>,
}

/// A GitHub repository's, GitLab project's or Jira project's issues.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct TrackerReport {
    pub issues: u64,
    pub queued: u64,
    /// Issues read again and found as they were queued last time.
    pub unchanged: u64,
    /// Answers 304 to a conditional request (lists that cost nothing).
    pub not_modified: u64,
    /// API pages read.
    pub pages: u64,
    /// GitHub pull requests (its issues API lists them too) left out.
    pub pull_requests_skipped: u64,
    /// The source's rate-limit budget the poll's last answer left spent: the next poll
    /// waits this long (ms) at least, for this reason. Kept out of the report itself: the
    /// source's stats show it as `retryAt` / `retryReason`.
    #[serde(skip)]
    pub budget_spent: Option<(i64, String)>,
}

/// A Confluence space.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct WikiReport {
    pub deleted: u64,
    pub pages: u64,
    pub queued: u64,
    pub unchanged: u64,
    pub attachments: u64,
    #[serde(flatten)]
    pub skipped: Skips,
}

/// A web crawl.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct WebReport {
    /// Seeds the egress policy refused.
    pub refused: usize,
    pub refused_examples: Vec<String>,
    pub fetched: u32,
    pub pages: u64,
    pub queued: u64,
    pub unchanged: u64,
    /// Pages whose content another page of the crawl already has.
    pub duplicates: u64,
    /// Pages that answered 404/410 since the last crawl (their sources' purges queued).
    pub gone: u64,
    #[serde(flatten)]
    pub skipped: Skips,
}

/// Declares [`PollReport`] with one variant a report kind, and `From` each report into it:
/// the list of kinds written once.
macro_rules! poll_reports {
    ($($variant:ident($report:ty)),* $(,)?) => {
        /// One poll's report, whichever the kind.
        #[derive(Debug, Clone, PartialEq, Serialize)]
        #[serde(untagged)]
        pub enum PollReport {
            $($variant($report)),*
        }

        $(impl From<$report> for PollReport {
            fn from(r: $report) -> Self {
                PollReport::$variant(r)
            }
        })*
    };
}

poll_reports!(
    Git(GitReport),
    Documents(DocumentsReport),
    Transcripts(TranscriptsReport),
    Mbox(MboxReport),
    Maildir(MaildirReport),
    Imap(ImapReport),
    Tracker(TrackerReport),
    Wiki(WikiReport),
    Web(WebReport),
);

impl PollReport {
    /// Tasks the poll queued.
    pub fn queued(&self) -> u64 {
        match self {
            PollReport::Git(r) => r.tasks as u64,
            PollReport::Documents(r) => r.folder.queued,
            PollReport::Transcripts(r) => r.folder.queued,
            PollReport::Mbox(r) => r.queued,
            PollReport::Maildir(r) => r.queued,
            PollReport::Imap(r) => r.queued,
            PollReport::Tracker(r) => r.queued,
            PollReport::Wiki(r) => r.queued,
            PollReport::Web(r) => r.queued,
        }
    }

    /// A wait the source asked for although the poll succeeded (its budget is spent): ms and
    /// the signal that said so.
    pub fn budget_spent(&self) -> Option<&(i64, String)> {
        match self {
            PollReport::Tracker(r) => r.budget_spent.as_ref(),
            _ => None,
        }
    }

    /// The report as the source's stats keep it (and the API shows it).
    pub fn to_json(&self) -> Value {
        // Numbers, strings and maps with string keys only: serialising cannot fail.
        serde_json::to_value(self).unwrap_or_default()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    /// The JSON each kind wrote before its report was typed: the API shows the same.
    #[test]
    fn reports_serialise_as_before() {
        let cases: Vec<(PollReport, Value)> = vec![
            (
                DocumentsReport {
                    documents: 2,
                    folder: FolderReport {
                        queued: 2,
                        unchanged: 1,
                        removed: 0,
                        skipped: Skips::of(vec!["big.pdf: too large".into()]),
                    },
                }
                .into(),
                json!({"documents": 2, "queued": 2, "unchanged": 1, "removed": 0,
                       "skipped": 1, "skippedExamples": ["big.pdf: too large"]}),
            ),
            (
                TranscriptsReport {
                    transcripts: 1,
                    folder: FolderReport::default(),
                    recordings: Some(RecordingsReport {
                        recordings: BTreeMap::from([("failed".to_string(), 1)]),
                        failed_examples: vec!["a.m4a: too many attempts".into()],
                    }),
                }
                .into(),
                json!({"transcripts": 1, "queued": 0, "unchanged": 0, "removed": 0,
                       "skipped": 0, "skippedExamples": [], "recordings": {"failed": 1},
                       "failedExamples": ["a.m4a: too many attempts"]}),
            ),
            (
                TranscriptsReport {
                    transcripts: 0,
                    folder: FolderReport::default(),
                    recordings: None,
                }
                .into(),
                json!({"transcripts": 0, "queued": 0, "unchanged": 0, "removed": 0,
                       "skipped": 0, "skippedExamples": []}),
            ),
            (
                GitReport {
                    tasks: 3,
                    skipped: BTreeMap::from([(SkipReason::NotText, 1)]),
                    ..Default::default()
                }
                .into(),
                json!({"branches": 0, "changedBranches": 0, "deletedBranches": 0,
                       "newCommits": 0, "removedCommits": 0, "filesQueued": 0,
                       "filesDeleted": 0, "queued": 3, "skipped": {"not_text": 1},
                       "skippedExamples": []}),
            ),
            (
                TrackerReport {
                    issues: 4,
                    queued: 4,
                    unchanged: 1,
                    not_modified: 3,
                    pages: 1,
                    pull_requests_skipped: 2,
                    budget_spent: Some((60_000, "x-ratelimit-remaining: 0".into())),
                }
                .into(),
                json!({"issues": 4, "queued": 4, "unchanged": 1, "notModified": 3, "pages": 1,
                       "pullRequestsSkipped": 2}),
            ),
            (
                ImapReport {
                    mailboxes: 1,
                    messages: 2,
                    queued: 2,
                    uid_validity_changed: 0,
                    uid_validity_changed_examples: vec![],
                }
                .into(),
                json!({"mailboxes": 1, "messages": 2, "queued": 2, "uidValidityChanged": 0,
                       "uidValidityChangedExamples": []}),
            ),
        ];
        for (report, expected) in cases {
            assert_eq!(report.to_json(), expected, "{report:?}");
            assert_eq!(report.queued(), expected["queued"].as_u64().unwrap_or(0));
        }
    }

    #[test]
    fn older_git_reports_still_read() {
        let old: GitReport = serde_json::from_value(json!({"branches": 1, "changedBranches": 0,
                "deletedBranches": 0, "newCommits": 0, "removedCommits": 0, "filesQueued": 0,
                "filesDeleted": 0, "tasks": 5, "skipped": {"binary": 2},
                "skippedExamples": []}))
        .expect("old report");
        assert_eq!(old.tasks, 5);
        assert_eq!(old.skipped.get(&SkipReason::Binary), Some(&2));
    }
}
