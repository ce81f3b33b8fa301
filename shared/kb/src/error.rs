use evident_ai::EmbedError;
use evident_core::secrets::SecretClass;
use evident_core::validate::FieldError;
use evident_store::{ErrorKind, StoreError};

/// Everything the application layer can refuse or fail with. Each variant has a stable
/// snake_case code and an HTTP status, mapped once here.
#[derive(Debug, thiserror::Error)]
pub enum KbError {
    #[error(transparent)]
    Field(#[from] FieldError),
    /// A credential in a string that would be stored; `field` names where (a path into JSON
    /// values), never the secret.
    #[error("{field} contains a credential ({}) at line {line}; remove it before writing", class.description())]
    CredentialDetected {
        field: String,
        class: SecretClass,
        line: usize,
    },
    #[error(
        "relationship #{index} is not in a supported format (`a|EDGE|b`, `a->EDGE->b`, `a -[EDGE]-> b`): {reason}"
    )]
    InvalidRelationship { index: usize, reason: String },
    #[error("{what} not found")]
    NotFound { what: String },
    /// The source belongs to another scope of the same client (a `sourceUrn` has one owner;
    /// only an explicit move changes it). Names the two scopes, nothing else of the owner's.
    #[error(
        "source `{source_urn}` belongs to scope {owner}; this request's scope is {requested} (an admin can move it explicitly)"
    )]
    ScopeConflict {
        source_urn: String,
        /// The owner's scope, described (`client=acme project=p1`).
        owner: String,
        requested: String,
    },
    /// A policy refused the request (a path outside `[sources] roots`, an address the egress
    /// policy refuses): `code` is stable (`path_not_allowed`, `egress_refused`).
    #[error("{message}")]
    PolicyRefused { code: &'static str, message: String },
    #[error("{0}")]
    Invalid(String),
    /// A malformed request with its own stable `code` (`command_not_allowed`,
    /// `unknown_command`): 400.
    #[error("{message}")]
    BadRequest { code: &'static str, message: String },
    /// Well-formed but refused as it stands (`evidence_required`, `evidence_not_visible`):
    /// 422 with the stable `code`.
    #[error("{message}")]
    Unprocessable { code: &'static str, message: String },
    /// Refused by the state of what it names (`gap_conflict`; a procedure id in use in
    /// another scope, `procedure_scope_conflict`): 409 with the stable `code`.
    #[error("{message}")]
    Conflict { code: &'static str, message: String },
    #[error("storage: {0}")]
    Store(#[from] StoreError),
    #[error(transparent)]
    Embed(#[from] EmbedError),
    /// The caller cancelled the call before its write began; nothing was written.
    #[error("the call was cancelled by the client before anything was written")]
    Cancelled,
    /// A claim or a change of one refused by the lifecycle rules (`evidence_required`,
    /// `invalid_evidence`, `invalid_transition`…).
    #[error(transparent)]
    Claim(#[from] evident_core::claims::ClaimError),
    /// Evidence names a chunk the writer cannot see (or that does not exist: the two are
    /// told apart for no one, so a chunk's existence never leaks across scopes).
    #[error("evidence chunk `{chunk_id}` does not exist or is not visible in this scope")]
    EvidenceNotVisible { chunk_id: String },
}

impl KbError {
    pub fn code(&self) -> &'static str {
        match self {
            KbError::Field(FieldError::Missing { .. }) => "missing_field",
            KbError::Field(FieldError::TooLong { .. }) => "field_too_long",
            KbError::Field(_) => "invalid_field",
            KbError::CredentialDetected { .. } => "credential_detected",
            KbError::InvalidRelationship { .. } => "invalid_relationship",
            KbError::NotFound { .. } => "not_found",
            KbError::ScopeConflict { .. } => "scope_conflict",
            KbError::PolicyRefused { code, .. } => code,
            KbError::Invalid(_) => "invalid_request",
            KbError::Unprocessable { code, .. }
            | KbError::Conflict { code, .. }
            | KbError::BadRequest { code, .. } => code,
            KbError::Store(e) => e.code(),
            KbError::Embed(e) => e.code(),
            KbError::Cancelled => "cancelled",
            KbError::Claim(e) => e.code(),
            KbError::EvidenceNotVisible { .. } => "evidence_not_visible",
        }
    }

    pub fn http_status(&self) -> u16 {
        match self {
            KbError::Field(_)
            | KbError::InvalidRelationship { .. }
            | KbError::Invalid(_)
            | KbError::BadRequest { .. } => 400,
            KbError::CredentialDetected { .. } => 422,
            KbError::NotFound { .. } => 404,
            KbError::PolicyRefused { .. } => 403,
            KbError::ScopeConflict { .. } | KbError::Conflict { .. } => 409,
            KbError::Unprocessable { .. } => 422,
            KbError::Store(e) => match e.kind {
                ErrorKind::Unavailable => 503,
                ErrorKind::Invalid => 400,
                ErrorKind::Conflict => 409,
                ErrorKind::Incompatible => 409,
                ErrorKind::Corrupt => 500,
                ErrorKind::CapacityExceeded => 507,
            },
            KbError::Embed(e) if e.is_retryable() => 503,
            KbError::Embed(_) => 502,
            // As nginx logs a request its client gave up on.
            KbError::Cancelled => 499,
            KbError::Claim(e) => e.http_status(),
            KbError::EvidenceNotVisible { .. } => 422,
        }
    }

    /// Whether the same request can succeed later unchanged (drives the queue's backoff).
    pub fn is_retryable(&self) -> bool {
        match self {
            KbError::Store(e) => e.is_retryable(),
            KbError::Embed(e) => e.is_retryable(),
            _ => false,
        }
    }
}

/// `client=acme project=p1 group=g1` (`global` for global data).
pub fn describe(scope: &evident_core::Scope) -> String {
    if scope.is_global() {
        return "global".into();
    }
    let mut parts = Vec::new();
    for (name, v) in [
        ("client", &scope.client_id),
        ("project", &scope.project_id),
        ("group", &scope.group_id),
    ] {
        if let Some(v) = v {
            parts.push(format!("{name}={v}"));
        }
    }
    parts.join(" ")
}

pub type Result<T, E = KbError> = std::result::Result<T, E>;
