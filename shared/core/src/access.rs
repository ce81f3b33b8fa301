//! Who may do what: roles, grants, and the one authorisation rule.
//!
//! A caller presents a token; the token carries a [`Grant`]: a role and the part of the data
//! it covers (one client, optionally narrowed to projects and groups; an operator covers every
//! client). Every request names the [`Scope`] it reads or writes; [`Grant::authorize`] decides,
//! the same way for every route, whether that scope lies inside the grant.
//!
//! Reads: a reader sees, by the visibility rule, global data, its client's client-level data,
//! its group's and its project's data. A grant narrowed to projects or groups may therefore
//! read with any scope whose project (if named) and group (if named) are granted — what such
//! a reader sees is always inside what the grant covers, and client-level data is shared by
//! every project of the client.
//!
//! Writes: the written scope itself must be covered. A narrowed grant writes only into a
//! granted project, or group-level data of a granted group; client-level and global writes
//! need a grant over the whole client (global writes: an operator).

use serde::{Deserialize, Serialize};

use crate::Scope;

/// What a token may do, in increasing power; each role includes the ones before it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Role {
    /// Search, traverse, read nodes, sources, aliases, memory, queue state.
    Read,
    /// Ingest, memory writes, alias registration, pushes from external indexers.
    Write,
    /// Purge, alias merge, source registration and removal, queue steering, tokens and the
    /// audit log of its client.
    Admin,
    /// Every client: cross-client listings, global data, tokens of any client.
    Operator,
}

impl Role {
    pub const ALL: [Role; 4] = [Role::Read, Role::Write, Role::Admin, Role::Operator];

    pub fn as_str(self) -> &'static str {
        match self {
            Role::Read => "read",
            Role::Write => "write",
            Role::Admin => "admin",
            Role::Operator => "operator",
        }
    }

    pub fn parse(s: &str) -> Option<Role> {
        Role::ALL.into_iter().find(|r| r.as_str() == s)
    }
}

/// The data a token covers and what it may do there.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Grant {
    pub role: Role,
    /// The client covered; `None` only for operators (every client).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub client_id: Option<String>,
    /// When non-empty (or `groups` is), the grant covers only these projects of the client.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub projects: Vec<String>,
    /// When non-empty (or `projects` is), the grant covers only these groups of the client.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub groups: Vec<String>,
}

/// Why a request was refused.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum Denied {
    #[error("this route needs the `{needed}` role; the token has `{held}`", needed = .needed.as_str(), held = .held.as_str())]
    Role { needed: Role, held: Role },
    #[error("the scope {scope} is outside the token's grant ({grant})")]
    Scope { scope: String, grant: String },
    #[error("the token covers several clients or none; name `clientId`")]
    ClientRequired,
}

impl Denied {
    pub fn code(&self) -> &'static str {
        match self {
            Denied::Role { .. } => "forbidden_role",
            Denied::Scope { .. } => "forbidden_scope",
            Denied::ClientRequired => "missing_field",
        }
    }
}

/// Whether a request reads or writes its scope.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Intent {
    Read,
    Write,
}

impl Grant {
    /// A grant over every client.
    pub fn operator() -> Grant {
        Grant {
            role: Role::Operator,
            client_id: None,
            projects: Vec::new(),
            groups: Vec::new(),
        }
    }

    /// A grant over a whole client.
    pub fn client(client: impl Into<String>, role: Role) -> Grant {
        Grant {
            role,
            client_id: Some(client.into()),
            projects: Vec::new(),
            groups: Vec::new(),
        }
    }

    pub fn is_operator(&self) -> bool {
        self.role == Role::Operator
    }

    /// Narrowed to some projects or groups of its client.
    pub fn is_narrowed(&self) -> bool {
        !self.projects.is_empty() || !self.groups.is_empty()
    }

    /// The client a request of this grant means when it names none.
    pub fn default_client(&self) -> Option<&str> {
        if self.is_operator() {
            None
        } else {
            self.client_id.as_deref()
        }
    }

    /// A grant is well formed: operators cover every client, others exactly one.
    pub fn is_well_formed(&self) -> bool {
        match self.role {
            Role::Operator => {
                self.client_id.is_none() && self.projects.is_empty() && self.groups.is_empty()
            }
            _ => self.client_id.is_some(),
        }
    }

    /// Whether `other` asks for nothing this grant does not have (tokens minted by a token
    /// never exceed it).
    pub fn contains(&self, other: &Grant) -> bool {
        if self.is_operator() {
            return true;
        }
        if other.role > self.role || other.client_id != self.client_id {
            return false;
        }
        if !self.is_narrowed() {
            return true;
        }
        // A narrowed grant mints only narrowed grants within its own lists.
        other.is_narrowed()
            && other.projects.iter().all(|p| self.projects.contains(p))
            && other.groups.iter().all(|g| self.groups.contains(g))
    }

    /// The one authorisation rule: `needed` role, and `scope` inside the grant for `intent`.
    pub fn authorize(&self, needed: Role, scope: &Scope, intent: Intent) -> Result<(), Denied> {
        if self.role < needed {
            return Err(Denied::Role {
                needed,
                held: self.role,
            });
        }
        if self.is_operator() {
            return Ok(());
        }
        if self.covers(scope, intent) {
            Ok(())
        } else {
            Err(Denied::Scope {
                scope: describe_scope(scope),
                grant: self.describe(),
            })
        }
    }

    /// Whether a client-wide operation (no scope beyond the client, such as alias merges or
    /// queue steering of a task of that client) is inside the grant.
    pub fn covers_client(&self, client: Option<&str>) -> bool {
        if self.is_operator() {
            return true;
        }
        client.is_some() && client == self.client_id.as_deref() && !self.is_narrowed()
    }

    /// Whether data of `scope` is inside the grant (for objects read by id, such as a task).
    pub fn covers_data(&self, scope: &Scope) -> bool {
        self.is_operator() || self.covers(scope, Intent::Write)
    }

    /// Whether data stored in `scope` is readable under the grant (listings of objects that
    /// are not filtered by the visibility rule, such as tasks): global data, the client's
    /// client-level data, and the granted projects' and groups' data.
    pub fn sees(&self, scope: &Scope) -> bool {
        if self.is_operator() || scope.client_id.is_none() {
            return true;
        }
        if scope.client_id != self.client_id {
            return false;
        }
        !self.is_narrowed()
            || (scope.project_id.is_none() && scope.group_id.is_none())
            || self.covers(scope, Intent::Write)
    }

    fn covers(&self, scope: &Scope, intent: Intent) -> bool {
        let Some(client) = scope.client_id.as_deref() else {
            // Global scope: everyone reads global data; only operators write it.
            return intent == Intent::Read
                && scope.project_id.is_none()
                && scope.group_id.is_none();
        };
        if Some(client) != self.client_id.as_deref() {
            return false;
        }
        if !self.is_narrowed() {
            return true;
        }
        let project_ok = scope
            .project_id
            .as_ref()
            .is_none_or(|p| self.projects.contains(p));
        match intent {
            Intent::Read => {
                project_ok
                    && scope
                        .group_id
                        .as_ref()
                        .is_none_or(|g| self.groups.contains(g))
            }
            Intent::Write => match (&scope.project_id, &scope.group_id) {
                (Some(_), _) => project_ok,
                (None, Some(g)) => self.groups.contains(g),
                (None, None) => false,
            },
        }
    }

    /// `client c1 (projects p1, p2; groups g1)`.
    pub fn describe(&self) -> String {
        let Some(client) = &self.client_id else {
            return "every client".into();
        };
        let mut parts = Vec::new();
        if !self.projects.is_empty() {
            parts.push(format!("projects {}", self.projects.join(", ")));
        }
        if !self.groups.is_empty() {
            parts.push(format!("groups {}", self.groups.join(", ")));
        }
        if parts.is_empty() {
            format!("client {client}")
        } else {
            format!("client {client} ({})", parts.join("; "))
        }
    }
}

/// The stored form of a token secret: SHA-256, hex. Secrets are random (≥ 128 bits), so a
/// fast hash is enough; the secret itself is never stored or logged.
pub fn token_hash(secret: &str) -> String {
    use sha2::{Digest, Sha256};
    hex::encode(Sha256::digest(secret.as_bytes()))
}

/// `client c1, project p1` / `global`.
pub fn describe_scope(scope: &Scope) -> String {
    let Some(client) = &scope.client_id else {
        return "global".into();
    };
    let mut s = format!("client {client}");
    if let Some(p) = &scope.project_id {
        s.push_str(&format!(", project {p}"));
    }
    if let Some(g) = &scope.group_id {
        s.push_str(&format!(", group {g}"));
    }
    s
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::Visibility;
    use proptest::prelude::*;

    fn narrowed() -> Grant {
        Grant {
            role: Role::Write,
            client_id: Some("c1".into()),
            projects: vec!["p1".into()],
            groups: vec!["g1".into()],
        }
    }

    #[test]
    fn roles_are_ordered_and_parse() {
        assert!(Role::Read < Role::Write && Role::Write < Role::Admin);
        assert!(Role::Admin < Role::Operator);
        for r in Role::ALL {
            assert_eq!(Role::parse(r.as_str()), Some(r));
        }
        assert_eq!(Role::parse("root"), None);
    }

    #[test]
    fn a_role_below_the_route_is_refused_whatever_the_scope() {
        let g = Grant::client("c1", Role::Read);
        let err = g
            .authorize(Role::Write, &Scope::client("c1"), Intent::Write)
            .expect_err("refused");
        assert_eq!(err.code(), "forbidden_role");
    }

    #[test]
    fn a_client_grant_covers_its_client_and_nothing_else() {
        let g = Grant::client("c1", Role::Admin);
        for s in [
            Scope::client("c1"),
            Scope::client("c1").with_project("p9"),
            Scope::client("c1").with_group("g9"),
        ] {
            assert!(g.authorize(Role::Write, &s, Intent::Write).is_ok(), "{s:?}");
        }
        let other = g
            .authorize(Role::Read, &Scope::client("c2"), Intent::Read)
            .expect_err("refused");
        assert_eq!(other.code(), "forbidden_scope");
        assert!(
            g.authorize(Role::Read, &Scope::global(), Intent::Read)
                .is_ok()
        );
        assert!(
            g.authorize(Role::Write, &Scope::global(), Intent::Write)
                .is_err(),
            "global writes are an operator's"
        );
    }

    #[test]
    fn a_narrowed_grant_reads_client_data_but_writes_only_its_projects_and_groups() {
        let g = narrowed();
        let ok_reads = [
            Scope::client("c1"),
            Scope::client("c1").with_project("p1"),
            Scope::client("c1").with_project("p1").with_group("g1"),
            Scope::client("c1").with_group("g1"),
        ];
        for s in ok_reads {
            assert!(g.authorize(Role::Read, &s, Intent::Read).is_ok(), "{s:?}");
        }
        for s in [
            Scope::client("c1").with_project("p2"),
            Scope::client("c1").with_group("g2"),
            Scope::client("c1").with_project("p1").with_group("g2"),
        ] {
            assert!(g.authorize(Role::Read, &s, Intent::Read).is_err(), "{s:?}");
        }
        assert!(
            g.authorize(
                Role::Write,
                &Scope::client("c1").with_project("p1"),
                Intent::Write
            )
            .is_ok()
        );
        assert!(
            g.authorize(
                Role::Write,
                &Scope::client("c1").with_group("g1"),
                Intent::Write
            )
            .is_ok()
        );
        assert!(
            g.authorize(Role::Write, &Scope::client("c1"), Intent::Write)
                .is_err(),
            "client-level writes reach every project"
        );
        assert!(!g.covers_client(Some("c1")));
    }

    #[test]
    fn operators_cover_everything_and_mint_anything() {
        let op = Grant::operator();
        assert!(op.is_well_formed());
        assert!(
            op.authorize(Role::Operator, &Scope::global(), Intent::Write)
                .is_ok()
        );
        assert!(op.contains(&narrowed()));
        assert!(!Grant::client("c1", Role::Admin).contains(&Grant::operator()));
        assert!(!narrowed().contains(&Grant::client("c1", Role::Read)));
        assert!(Grant::client("c1", Role::Admin).contains(&narrowed()));
    }

    fn id() -> impl Strategy<Value = Option<String>> {
        proptest::option::of(prop_oneof![Just("a".to_string()), Just("b".to_string())])
    }

    fn grant() -> impl Strategy<Value = Grant> {
        (
            prop_oneof![Just(Role::Read), Just(Role::Write), Just(Role::Admin)],
            prop_oneof![Just("a".to_string()), Just("b".to_string())],
            proptest::collection::vec(
                prop_oneof![Just("a".to_string()), Just("b".to_string())],
                0..2,
            ),
            proptest::collection::vec(
                prop_oneof![Just("a".to_string()), Just("b".to_string())],
                0..2,
            ),
        )
            .prop_map(|(role, c, projects, groups)| Grant {
                role,
                client_id: Some(c),
                projects,
                groups,
            })
    }

    fn scope() -> impl Strategy<Value = Scope> {
        (id(), id(), id())
            .prop_map(|(c, p, g)| Scope {
                client_id: c,
                project_id: p,
                group_id: g,
            })
            .prop_filter("consistent", Scope::is_consistent)
    }

    proptest! {
        /// An authorised reader sees only data the grant covers (or global data).
        #[test]
        fn authorised_reads_see_nothing_outside_the_grant(g in grant(), reader in scope(), data in scope()) {
            if g.authorize(Role::Read, &reader, Intent::Read).is_ok()
                && Visibility::of(reader).admits(&data)
            {
                let inside = data.client_id.is_none()
                    || (data.client_id == g.client_id
                        && (!g.is_narrowed()
                            || (data.project_id.is_none() && data.group_id.is_none())
                            || g.covers_data(&data)));
                prop_assert!(inside, "{data:?} read under {g:?}");
            }
        }

        /// An authorised write lands only inside the grant.
        #[test]
        fn authorised_writes_land_inside_the_grant(g in grant(), target in scope()) {
            if g.authorize(Role::Read, &target, Intent::Write).is_ok() {
                prop_assert_eq!(target.client_id.as_ref(), g.client_id.as_ref());
                prop_assert!(g.covers_data(&target));
            }
        }
    }
}
