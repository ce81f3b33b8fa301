//! Claims (seed 002): evidence-first learned facts with a lifecycle and a history.
//!
//! - [`Kb::learn`]: checks the claim (evidence rules in `evident_core::claims`, chunk
//!   evidence visible to the writer, the secret scan), indexes its text as a chunk of kind
//!   `claim` (source `claim:{id}`, through the one write path, so BM25 and vector search and
//!   the graph cover claims on every backend) with a `claim:{id}` node and `about` edges to
//!   what it names, then stores the claim with its first event.
//! - `lifecycle`: transitions (verify, dispute, supersede), history, and the staleness hook
//!   the write path calls when chunks go away.
//! - `recall`: hybrid search over claim texts with the store's filters, evidence resolved to
//!   citations; attention.

mod lifecycle;
mod pack;
mod recall;
#[cfg(test)]
mod tests;

use std::hash::{BuildHasher, Hasher};
use std::sync::atomic::{AtomicU64, Ordering};

use evident_ai::Priority;
use evident_core::claims::{
    ABOUT_EDGE, Actor, CLAIM_KIND, Claim, ClaimEvent, ClaimStatus, EvidenceRef, Millis, Subject,
    check_new, claim_urn,
};
use evident_core::hashing::content_hash;
use evident_core::refs::{self, NodeKey};
use evident_core::validate::{self, FieldError};
use evident_core::{
    EvidenceSpec, Locator, PreparedChunk, PreparedEdge, PreparedNode, PreparedSource, Scope,
    Visibility,
};
use serde_json::Map;

pub use lifecycle::ChangeRequest;
pub use pack::PackClaim;
pub use recall::{AttentionItem, AttentionQuery, ClaimView, Recall, RecallHit, ResolvedEvidence};

use crate::credentials::Scan;
use crate::{Kb, KbError, Result};

/// Longest claim text, in bytes: a claim is a fact, not a document.
pub const MAX_TEXT_BYTES: usize = 4 * 1024;
/// Most evidence refs given at once.
pub const MAX_EVIDENCE: usize = 64;
/// Longest note or reason, in bytes.
pub const MAX_NOTE_BYTES: usize = 2 * 1024;
/// Most tags and explicit `about` keys.
pub const MAX_TAGS: usize = 32;

/// A claim to learn, as a writer gives it.
#[derive(Debug, Clone, PartialEq)]
pub struct NewClaim {
    pub text: String,
    pub evidence: Vec<EvidenceRef>,
    pub status: ClaimStatus,
    pub confidence: f64,
    pub subject: Option<Subject>,
    pub actor: Actor,
    pub session_id: Option<String>,
    pub domain: Option<String>,
    pub tags: Vec<String>,
    /// Graph refs the claim is about, beside those its text names.
    pub about: Vec<String>,
    pub supersedes: Option<String>,
}

/// Who asks for a change: the actor it is recorded under, the credential it came with, and
/// whether that credential is an admin's.
#[derive(Debug, Clone, PartialEq)]
pub struct Caller {
    pub actor: Actor,
    pub credential: Option<String>,
    pub admin: bool,
}

fn field(field: &'static str, reason: impl Into<String>) -> KbError {
    KbError::Field(FieldError::Invalid {
        field,
        reason: reason.into(),
    })
}

/// Checks the shape of evidence refs (the lifecycle rules are core's) and scans them.
pub(crate) fn check_evidence(evidence: &[EvidenceRef], scan: &mut Scan) -> Result<()> {
    if evidence.len() > MAX_EVIDENCE {
        return Err(FieldError::TooLong {
            field: "evidence",
            len: evidence.len(),
            max: MAX_EVIDENCE,
        }
        .into());
    }
    for e in evidence {
        validate::bounded_text("evidence.ref", &e.reference, validate::MAX_URN_LEN)?;
        scan.text("evidence.ref", &e.reference)?;
        if let Some(n) = &e.note {
            validate::bounded_text("evidence.note", n, MAX_NOTE_BYTES)?;
            scan.text("evidence.note", n)?;
        }
        if let Some(l) = &e.locator {
            scan.serialised("evidence.locator", l)?;
        }
    }
    Ok(())
}

pub(crate) fn check_actor(actor: &Actor, scan: &mut Scan) -> Result<()> {
    validate::identifier("actor.id", &actor.id)?;
    scan.text("actor.id", &actor.id)
}

/// Chunk evidence checked against what `vis` sees, each given the chunk's locator (kept with
/// the claim, so it still says where its evidence was once the chunk is gone).
pub(crate) async fn with_chunk_locators(
    kb: &Kb,
    vis: &Visibility,
    evidence: &mut [EvidenceRef],
) -> Result<()> {
    let ids: Vec<String> = evidence
        .iter()
        .filter_map(|e| e.chunk_id().map(str::to_string))
        .collect();
    let chunks = kb.require_visible_chunks(vis, &ids).await?;
    for e in evidence.iter_mut() {
        if let Some(c) = e.chunk_id().and_then(|id| chunks.get(id)) {
            e.locator = Some(c.locator.clone());
        }
    }
    Ok(())
}

fn check_new_claim(c: &NewClaim) -> Result<Vec<NodeKey>> {
    let mut scan = Scan::default();
    validate::bounded_text("text", &c.text, MAX_TEXT_BYTES).or_else(|e| match e {
        // Claims may span lines.
        FieldError::ControlChar { .. } => validate::content("text", &c.text),
        e => Err(e),
    })?;
    scan.text("text", &c.text)?;
    check_new(c.status, c.confidence, &c.evidence)?;
    check_evidence(&c.evidence, &mut scan)?;
    check_actor(&c.actor, &mut scan)?;
    for (name, v) in [
        ("sessionId", &c.session_id),
        ("domain", &c.domain),
        ("supersedes", &c.supersedes),
    ] {
        if let Some(v) = v {
            validate::identifier(name, v)?;
            scan.text(name, v)?;
        }
    }
    if let Some(s) = &c.subject {
        validate::identifier("subject.scopeId", &s.scope_id)?;
        scan.text("subject.scopeId", &s.scope_id)?;
    }
    if c.tags.len() > MAX_TAGS || c.about.len() > MAX_TAGS {
        return Err(field(
            "tags",
            format!("at most {MAX_TAGS} tags and {MAX_TAGS} about keys"),
        ));
    }
    for t in &c.tags {
        validate::identifier("tags", t)?;
    }
    scan.all("tags", c.tags.iter().map(String::as_str))?;
    let mut about = Vec::new();
    for a in &c.about {
        validate::identifier("about", a)?;
        let key = refs::normalize_ref(a)
            .filter(|k| !k.namespace().is_empty())
            .ok_or_else(|| field("about", format!("`{a}` is not a `namespace:value` ref")))?;
        if !about.contains(&key) {
            about.push(key);
        }
    }
    scan.all("about", c.about.iter().map(String::as_str))?;
    Ok(about)
}

/// A new claim id: `clm_` and 20 hex digits of a hash of what the claim is, when, and a
/// per-process counter with a random start (two processes never share ids in practice).
fn new_id(partition: &str, text: &str, now: Millis) -> String {
    static NEXT: AtomicU64 = AtomicU64::new(0);
    static SALT: std::sync::OnceLock<u64> = std::sync::OnceLock::new();
    let salt = *SALT.get_or_init(|| {
        let mut h = std::collections::hash_map::RandomState::new().build_hasher();
        h.write_u32(std::process::id());
        h.finish()
    });
    let n = NEXT.fetch_add(1, Ordering::Relaxed);
    let hash = content_hash(&format!("{partition}\n{now}\n{salt}\n{n}\n{text}"));
    let hex = hash.rsplit(':').next().unwrap_or(&hash);
    format!("clm_{}", &hex[..20.min(hex.len())])
}

/// The claim's text as a prepared source: one chunk of kind `claim`, the `claim:{id}` node,
/// and `about` edges to the refs it names and its explicit `about` keys.
fn claim_source(claim: &Claim) -> PreparedSource {
    let urn = claim_urn(&claim.id);
    let node = NodeKey::from_canonical(urn.clone());
    let mut chunk = PreparedChunk::new(
        claim.text.clone(),
        Locator::Document {
            uri: urn.clone(),
            char_start: 0,
            char_end: claim.text.chars().count(),
            page: None,
            section: None,
        },
    );
    chunk
        .metadata
        .insert("claimId".into(), claim.id.clone().into());
    let mut targets: Vec<NodeKey> = refs::extract_refs(&claim.text)
        .into_iter()
        .map(|r| r.key)
        .collect();
    for k in &claim.about {
        if !targets.contains(k) {
            targets.push(k.clone());
        }
    }
    targets.retain(|k| *k != node);
    chunk.refs = targets.clone();
    let label: String = claim.text.chars().take(120).collect();
    PreparedSource {
        scope: claim.scope.clone(),
        source_urn: urn,
        kind: CLAIM_KIND.into(),
        title: Some(label.clone()),
        fingerprint: content_hash(&format!("claim-v1\n{}", claim.text)),
        observed_at: None,
        chunks: vec![chunk],
        nodes: vec![PreparedNode {
            key: node.clone(),
            node_type: CLAIM_KIND.into(),
            label,
            props: evident_core::prepared::props([("claimId", claim.id.clone().into())]),
            evidence: EvidenceSpec::AllChunks,
        }],
        edges: targets
            .into_iter()
            .map(|to| PreparedEdge {
                from: node.clone(),
                to,
                edge_type: ABOUT_EDGE.into(),
                props: Map::new(),
                evidence: EvidenceSpec::AllChunks,
            })
            .collect(),
        aliases: Vec::new(),
        merges: Vec::new(),
    }
}

impl Kb {
    /// Learns a claim in `scope` (a client is required): checked, indexed for recall, stored
    /// with its first event. Returns the claim as stored.
    #[tracing::instrument(skip_all, fields(client = scope.client_id.as_deref()))]
    pub async fn learn(
        &self,
        scope: Scope,
        new: NewClaim,
        recorded_by: Option<String>,
        now: Millis,
        priority: Priority,
    ) -> Result<Claim> {
        if scope.client_id.is_none() {
            return Err(FieldError::Missing { field: "clientId" }.into());
        }
        let about = check_new_claim(&new)?;
        if let Some(old) = &new.supersedes {
            // Only a claim the writer can see may be named: one that does not exist and one
            // of another client (or scope) are refused alike, so an id's existence never leaks.
            self.claim(&Visibility::of(scope.clone()), old)
                .await
                .map_err(|e| match e {
                    KbError::NotFound { .. } => KbError::Unprocessable {
                        code: "supersedes_not_found",
                        message: format!(
                            "`supersedes`: claim `{old}` does not exist or is not visible in this scope"
                        ),
                    },
                    e => e,
                })?;
        }
        let mut evidence = new.evidence;
        with_chunk_locators(self, &Visibility::of(scope.clone()), &mut evidence).await?;
        let id = new_id(scope.partition(), &new.text, now);
        let claim = Claim {
            id,
            text: new.text.trim().to_string(),
            evidence,
            status: new.status,
            confidence: new.confidence,
            scope,
            subject: new.subject,
            actor: new.actor,
            session_id: new.session_id,
            domain: new.domain,
            tags: new.tags,
            about,
            supersedes: new.supersedes,
            superseded_by: None,
            evidence_stale: false,
            recorded_by,
            created_at: now,
            updated_at: now,
            version: 1,
        };
        // The text first: a claim stored without its chunk could not be recalled, while a
        // chunk without its claim is never returned (recall reads the claim store) and is
        // removed below when the claim cannot be stored.
        self.ingest_prepared(claim_source(&claim), priority).await?;
        let event = ClaimEvent::learned(&claim);
        if let Err(e) = self.stores.claims.create_claim(&claim, &event).await {
            let _ = self.purge(&claim.scope, &claim.urn(), priority).await;
            return Err(e.into());
        }
        metrics::counter!("evident_claims_learned_total").increment(1);
        tracing::debug!(claim = %claim.id, evidence = claim.evidence.len(), "claim learned");
        Ok(claim)
    }

    /// A claim the reader may see, or `not_found` (another scope's claim is not found either).
    pub async fn claim(&self, vis: &Visibility, id: &str) -> Result<Claim> {
        validate::identifier("id", id)?;
        let partition = vis.reader().partition();
        self.stores
            .claims
            .get_claims(partition, &[id.to_string()])
            .await?
            .into_iter()
            .find(|c| vis.admits(&c.scope))
            .ok_or_else(|| KbError::NotFound {
                what: format!("claim `{id}`"),
            })
    }
}
