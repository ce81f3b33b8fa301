//! Scopes and the one visibility rule (reference-behaviour §5).
//!
//! Every piece of data carries the [`Scope`] it was written in; every read carries the
//! reader's [`Visibility`]. A reader (client C, project P, group G) sees:
//! global data (no client), C's client-level data (no project, no group), G's group-level
//! data (group G, no project) and P's project data. Nothing of another client, and nothing of
//! another project — even one in the same group.
//!
//! The rule is implemented once, in [`Visibility::admits`]. Backends that evaluate it inside
//! their own query language translate [`Visibility::clauses`], which enumerates the same rule
//! as a disjunction of exact-match clauses; the conformance suite checks both agree.

use serde::{Deserialize, Serialize};

/// Where a piece of data lives. `client_id == None` means global data.
#[derive(Debug, Clone, Default, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Scope {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub client_id: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub project_id: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub group_id: Option<String>,
}

impl Scope {
    pub fn global() -> Self {
        Self::default()
    }

    pub fn client(client: impl Into<String>) -> Self {
        Scope {
            client_id: Some(client.into()),
            ..Self::default()
        }
    }

    pub fn with_project(mut self, project: impl Into<String>) -> Self {
        self.project_id = Some(project.into());
        self
    }

    pub fn with_group(mut self, group: impl Into<String>) -> Self {
        self.group_id = Some(group.into());
        self
    }

    pub fn is_global(&self) -> bool {
        self.client_id.is_none()
    }

    /// The client partition this data belongs to; `""` is the global partition.
    pub fn partition(&self) -> &str {
        self.client_id.as_deref().unwrap_or("")
    }

    /// Scope fields must be consistent: project or group need a client.
    pub fn is_consistent(&self) -> bool {
        self.client_id.is_some() || (self.project_id.is_none() && self.group_id.is_none())
    }
}

/// What a reader may see. Built from the reader's own scope.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct Visibility {
    reader: Scope,
}

/// One exact-match clause of the visibility rule: data is visible when, for some clause,
/// every field equals the clause's value (`None` meaning "field absent").
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct VisibilityClause {
    pub client_id: Option<String>,
    pub project_id: Option<String>,
    /// `Some(None)` = group must be absent; `None` = group not constrained.
    pub group_id: Option<Option<String>>,
}

impl Visibility {
    pub fn of(reader: Scope) -> Self {
        Visibility { reader }
    }

    pub fn reader(&self) -> &Scope {
        &self.reader
    }

    /// The single visibility rule.
    pub fn admits(&self, data: &Scope) -> bool {
        let Some(data_client) = &data.client_id else {
            return true; // global data is visible to everyone
        };
        if self.reader.client_id.as_ref() != Some(data_client) {
            return false;
        }
        match (&data.project_id, &data.group_id) {
            (None, None) => true,
            (Some(project), _) => self.reader.project_id.as_ref() == Some(project),
            (None, Some(group)) => self.reader.group_id.as_ref() == Some(group),
        }
    }

    /// The client partitions a reader may touch (`""` = global), for backends that keep one
    /// partition per client.
    pub fn partitions(&self) -> Vec<&str> {
        let mut parts = vec![""];
        if let Some(c) = self.reader.client_id.as_deref() {
            parts.push(c);
        }
        parts
    }

    /// The same rule as [`Visibility::admits`], enumerated as exact-match clauses for query
    /// languages (SQL, AQL, GraphQL filters).
    pub fn clauses(&self) -> Vec<VisibilityClause> {
        let mut out = vec![VisibilityClause {
            client_id: None,
            project_id: None,
            group_id: Some(None),
        }];
        if let Some(client) = &self.reader.client_id {
            out.push(VisibilityClause {
                client_id: Some(client.clone()),
                project_id: None,
                group_id: Some(None),
            });
            if let Some(group) = &self.reader.group_id {
                out.push(VisibilityClause {
                    client_id: Some(client.clone()),
                    project_id: None,
                    group_id: Some(Some(group.clone())),
                });
            }
            if let Some(project) = &self.reader.project_id {
                out.push(VisibilityClause {
                    client_id: Some(client.clone()),
                    project_id: Some(project.clone()),
                    group_id: None,
                });
            }
        }
        out
    }
}

impl VisibilityClause {
    pub fn matches(&self, data: &Scope) -> bool {
        data.client_id == self.client_id
            && data.project_id == self.project_id
            && match &self.group_id {
                None => true,
                Some(g) => &data.group_id == g,
            }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    fn reader() -> Visibility {
        Visibility::of(Scope::client("c1").with_project("p1").with_group("g1"))
    }

    #[test]
    fn project_reader_sees_global_client_group_and_own_project() {
        let v = reader();
        assert!(v.admits(&Scope::global()));
        assert!(v.admits(&Scope::client("c1")));
        assert!(v.admits(&Scope::client("c1").with_group("g1")));
        assert!(v.admits(&Scope::client("c1").with_project("p1")));
        assert!(v.admits(&Scope::client("c1").with_project("p1").with_group("g1")));
    }

    #[test]
    fn project_reader_sees_nothing_of_other_clients_projects_or_groups() {
        let v = reader();
        assert!(!v.admits(&Scope::client("c2")));
        assert!(!v.admits(&Scope::client("c1").with_project("p2")));
        assert!(!v.admits(&Scope::client("c1").with_project("p2").with_group("g1")));
        assert!(!v.admits(&Scope::client("c1").with_group("g2")));
        assert!(!v.admits(&Scope::client("c2").with_project("p1")));
    }

    #[test]
    fn global_reader_sees_only_global() {
        let v = Visibility::of(Scope::global());
        assert!(v.admits(&Scope::global()));
        assert!(!v.admits(&Scope::client("c1")));
    }

    fn small_scope() -> impl Strategy<Value = Scope> {
        let id = proptest::option::of(prop_oneof![Just("a".to_string()), Just("b".to_string())]);
        (id.clone(), id.clone(), id).prop_map(|(c, p, g)| Scope {
            client_id: c,
            project_id: p,
            group_id: g,
        })
    }

    proptest! {
        #[test]
        fn clauses_agree_with_admits(r in small_scope(), d in small_scope()) {
            prop_assume!(r.is_consistent() && d.is_consistent());
            let v = Visibility::of(r);
            let by_clause = v.clauses().iter().any(|c| c.matches(&d));
            prop_assert_eq!(by_clause, v.admits(&d));
        }
    }
}
