//! Requests that carry the scope fields: [`ScopedRequest`] reads them into a write scope or a
//! reader's visibility, so no handler spells the three fields out again;
//! [`scoped_request!`] declares a request with them; [`scope_fields!`] implements the trait
//! for a request declared by hand (a body shared with the CLI, a required client).

use evident_core::{Scope, Visibility};

/// A request's scope fields (`clientId`, `projectId`, `groupId`, and `global` where it has
/// one) and what they mean.
pub trait ScopedRequest {
    /// The client, project and group the request names.
    fn scope_fields(&self) -> [Option<&str>; 3];

    /// Whether it writes global data (visible to every reader).
    fn global(&self) -> bool {
        false
    }

    /// The scope it writes into (a client required unless global).
    fn write_scope(&self) -> evident_kb::Result<Scope> {
        let [client, project, group] = self.scope_fields();
        evident_kb::write_scope(client, project, group, self.global())
    }

    /// The reader's visibility it names.
    fn visibility(&self) -> evident_kb::Result<Visibility> {
        let [client, project, group] = self.scope_fields();
        evident_kb::visibility(client, project, group)
    }
}

/// Implements [`ScopedRequest`] for requests whose scope fields are `Option<String>`s
/// (`global:` first: with a `global` flag too; `required:` first: a `client_id: String`).
macro_rules! scope_fields {
    (@client $s:ident required) => { Some($s.client_id.as_str()) };
    (@client $s:ident $_k:ident) => { $s.client_id.as_deref() };
    (@global $s:ident global) => { fn global(&self) -> bool { self.global } };
    (@global $s:ident $_k:ident) => {};
    ($kind:ident: $($ty:ty),+ $(,)?) => {
        $(impl $crate::scoped::ScopedRequest for $ty {
            fn scope_fields(&self) -> [Option<&str>; 3] {
                [
                    scope_fields!(@client self $kind),
                    self.project_id.as_deref(),
                    self.group_id.as_deref(),
                ]
            }
            scope_fields!(@global self $kind);
        })+
    };
    ($($ty:ty),+ $(,)?) => { scope_fields!(optional: $($ty),+); };
}

/// Declares a request body or query with the three scope fields every scoped request carries
/// (`clientId`, `projectId`, `groupId`) ahead of its own fields, and [`ScopedRequest`] over
/// them. The client is optional; `required:` first makes it a `client_id: String` (a missing
/// one is refused), `global:` first reads a `global` flag the body declares itself. Absent
/// project and group are left out when the request is serialised (the CLI sends these).
/// A macro rather than a `#[serde(flatten)]`ed struct: flattening switches
/// `deny_unknown_fields` off, and unknown fields must stay refused.
macro_rules! scoped_request {
    (required: $($body:tt)*) => {
        scoped_request!(@declare required [] String; $($body)*);
    };
    (global: $($body:tt)*) => {
        scoped_request!(@declare global [#[serde(default, skip_serializing_if = "Option::is_none")]]
            Option<String>; $($body)*);
    };
    (
        @declare $kind:ident [$(#[$client_meta:meta])*] $client:ty;
        $(#[$meta:meta])*
        pub struct $name:ident {
            $( $(#[$field_meta:meta])* $vis:vis $field:ident : $ty:ty ),* $(,)?
        }
    ) => {
        $(#[$meta])*
        pub struct $name {
            $(#[$client_meta])*
            pub client_id: $client,
            #[serde(default, skip_serializing_if = "Option::is_none")]
            pub project_id: Option<String>,
            #[serde(default, skip_serializing_if = "Option::is_none")]
            pub group_id: Option<String>,
            $( $(#[$field_meta])* $vis $field : $ty ),*
        }

        scope_fields!($kind: $name);
    };
    ($($body:tt)*) => {
        scoped_request!(@declare optional [#[serde(default, skip_serializing_if = "Option::is_none")]]
            Option<String>; $($body)*);
    };
}
