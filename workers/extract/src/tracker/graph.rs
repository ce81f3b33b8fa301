//! The issue's graph beyond its people: issues its text mentions (`references` edges, as
//! commit messages make them) and the milestones it is planned for.

use evident_core::commits::IssueRelation;

use super::*;

/// Issues mentioned in what people wrote (description, comments), and the chunks that
/// mention each: the evidence of its edge.
#[derive(Default)]
pub(super) struct Mentions {
    found: Vec<(NodeKey, IssueRelation, Vec<usize>)>,
}

impl Mentions {
    /// Records the issues `text` (chunk `at` of `issue`) names, with the rules of commit
    /// messages ([`issue_refs`]: `#24`, `owner/repo#12`, `ABC-12`, never `UTF-8`). A pull
    /// request's `fixes #12` fixes the issue, as GitHub and GitLab read it; an issue saying so
    /// only mentions it. The issue itself is not its own reference.
    pub(super) fn scan(&mut self, issue: &Issue, own: &NodeKey, text: &str, at: usize) {
        let numbers = number_context(issue);
        for r in issue_refs(text) {
            let target = match (&r.key, numbers.as_ref()) {
                (IssueKey::Project(k), _) => keys::jira_issue(k),
                (IssueKey::Number { .. }, Some(ctx)) => keys::issue_ref(ctx, &r.key),
                (IssueKey::Number { .. }, None) => continue,
            };
            if target == *own || !fits(&target) {
                continue;
            }
            let relation = if issue.is_pull_request {
                r.relation
            } else {
                IssueRelation::References
            };
            match self.found.iter_mut().find(|(k, _, _)| *k == target) {
                Some((_, rel, chunks)) => {
                    *rel = (*rel).min(relation);
                    if !chunks.contains(&at) {
                        chunks.push(at);
                    }
                }
                None => self.found.push((target, relation, vec![at])),
            }
        }
    }

    /// One edge per mentioned issue, from this one, evidenced by the chunks that mention it.
    pub(super) fn edges(&self, from: &NodeKey) -> Vec<PreparedEdge> {
        self.found
            .iter()
            .map(|(to, relation, chunks)| {
                edge(
                    from,
                    relation.edge_type(),
                    to.clone(),
                    EvidenceSpec::Chunks(chunks.clone()),
                )
            })
            .collect()
    }
}

/// `milestone:{tracker}/{project}/{title}`: a milestone's title is unique in its project
/// (GitHub, GitLab; a Jira version name in its project).
pub fn milestone_key(issue: &Issue, title: &str) -> Option<NodeKey> {
    refs::normalize_ref(&format!(
        "milestone:{}/{}/{title}",
        issue.tracker.as_str(),
        issue.project
    ))
    .filter(|k| fits(k) && !k.value().is_empty())
}

/// Milestone nodes (title kept exactly) and `in_milestone` edges, evidenced by the header
/// that names them.
pub(super) fn milestone_graph(
    issue: &Issue,
    key: &NodeKey,
    nodes: &mut Vec<PreparedNode>,
    edges: &mut Vec<PreparedEdge>,
) {
    let mut seen = HashSet::new();
    for m in &issue.milestones {
        let Some(milestone) = milestone_key(issue, &m.title).filter(|k| seen.insert(k.clone()))
        else {
            continue;
        };
        nodes.push(PreparedNode {
            key: milestone.clone(),
            node_type: "milestone".into(),
            label: exact_line(&m.title),
            props: props([
                ("title", exact_text(&m.title).into()),
                ("tracker", issue.tracker.as_str().into()),
                ("project", issue.project.clone().into()),
                ("id", opt(&m.id)),
                ("state", opt(&m.state)),
                ("due", opt(&m.due)),
                ("url", opt(&m.url)),
            ]),
            evidence: EvidenceSpec::chunk(0),
        });
        edges.push(edge(key, "in_milestone", milestone, EvidenceSpec::chunk(0)));
    }
}
