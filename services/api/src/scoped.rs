//! [`scoped_request!`]: request bodies and queries that carry the scope fields.

/// Declares a request body or query with the three scope fields every scoped request carries
/// (`clientId`, `projectId`, `groupId`, each optional) ahead of its own fields, and `scope()`
/// over them (a client required). A macro rather than a `#[serde(flatten)]`ed struct:
/// flattening switches `deny_unknown_fields` off, and unknown fields must stay refused.
macro_rules! scoped_request {
    (
        $(#[$meta:meta])*
        pub struct $name:ident {
            $( $(#[$field_meta:meta])* pub $field:ident : $ty:ty ),* $(,)?
        }
    ) => {
        $(#[$meta])*
        pub struct $name {
            #[serde(default)]
            pub client_id: Option<String>,
            #[serde(default)]
            pub project_id: Option<String>,
            #[serde(default)]
            pub group_id: Option<String>,
            $( $(#[$field_meta])* pub $field : $ty ),*
        }

        impl $name {
            /// The request's scope (a client required).
            pub fn scope(&self) -> evident_kb::Result<evident_core::Scope> {
                $crate::routes::gaps::scope_of(&self.client_id, &self.project_id, &self.group_id)
            }
        }
    };
}
