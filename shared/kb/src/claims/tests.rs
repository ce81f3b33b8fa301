//! The claim invariants through the knowledge base over the embedded store, for any
//! sequence of learn / transition / supersede / purge of evidence: every claim has evidence,
//! its history replays to its state, a superseded claim names an existing successor, a claim
//! whose evidence chunk was purged is stale (never gone), and no reader outside a claim's
//! scope sees it (by id, recall, attention or history).

use evident_ai::Priority;
use evident_core::claims::{Actor, ActorType, ClaimStatus, EvidenceKind, EvidenceRef, replay};
use evident_core::{Scope, Visibility};
use proptest::prelude::*;

use super::{AttentionQuery, Caller, ChangeRequest, NewClaim, Recall};
use crate::{Document, Kb, KbError};

/// The scopes data is written in and read from.
fn scopes() -> [Scope; 4] {
    [
        Scope::client("a"),
        Scope::client("a").with_project("p1"),
        Scope::client("a").with_project("p2"),
        Scope::client("b"),
    ]
}

#[derive(Debug, Clone)]
enum Op {
    /// A claim in scope `scope` citing the chunk of document `doc`.
    Learn {
        scope: usize,
        doc: usize,
    },
    Transition {
        claim: usize,
        to: usize,
    },
    Supersede {
        claim: usize,
        by: usize,
    },
    Purge {
        doc: usize,
    },
}

fn op() -> impl Strategy<Value = Op> {
    prop_oneof![
        3 => (0..4usize, 0..4usize).prop_map(|(scope, doc)| Op::Learn { scope, doc }),
        2 => (0..12usize, 0..6usize).prop_map(|(claim, to)| Op::Transition { claim, to }),
        1 => (0..12usize, 0..12usize).prop_map(|(claim, by)| Op::Supersede { claim, by }),
        1 => (0..4usize).prop_map(|doc| Op::Purge { doc }),
    ]
}

fn caller() -> Caller {
    Caller {
        actor: Actor {
            actor_type: ActorType::Agent,
            id: "agent".into(),
        },
        credential: Some("token".into()),
        admin: true,
    }
}

/// Document `i` lives in scope `i` (one per scope); its first chunk is the evidence.
async fn chunk_of(kb: &Kb, doc: usize) -> Option<String> {
    let scope = &scopes()[doc];
    kb.stores
        .chunks
        .source_chunks(scope.partition(), &format!("doc:{doc}"))
        .await
        .expect("chunks")
        .first()
        .map(|(id, _)| id.clone())
}

async fn run(ops: Vec<Op>) {
    let dir = tempfile::tempdir().expect("tmp");
    let kb = crate::test_kb(dir.path()).await;
    for (i, scope) in scopes().iter().enumerate() {
        kb.ingest(
            Document {
                client_id: scope.client_id.clone(),
                project_id: scope.project_id.clone(),
                source_urn: format!("doc:{i}"),
                kind: "doc".into(),
                content: format!("document {i} says the retry cap is {i} minutes"),
                ..Default::default()
            },
            Priority::DEFAULT,
        )
        .await
        .expect("ingest");
    }
    // (id, scope index) of every claim learned, and the chunks purged.
    let mut learned: Vec<(String, usize)> = Vec::new();
    let mut purged: Vec<String> = Vec::new();
    let mut now = 1_000;
    for op in ops {
        now += 1;
        match op {
            Op::Learn { scope, doc } => {
                let chunk = chunk_of(&kb, doc).await;
                let reference = chunk.clone().unwrap_or_else(|| "gone".into());
                let new = NewClaim {
                    text: format!("claim {now} about retries"),
                    evidence: vec![EvidenceRef::new(EvidenceKind::Chunk, reference)],
                    status: ClaimStatus::Observed,
                    confidence: 0.4,
                    subject: None,
                    actor: caller().actor,
                    session_id: Some("s".into()),
                    domain: None,
                    tags: Vec::new(),
                    about: Vec::new(),
                    supersedes: None,
                };
                let writer = scopes()[scope].clone();
                let visible =
                    chunk.is_some() && Visibility::of(writer.clone()).admits(&scopes()[doc]);
                match kb
                    .learn(writer, new, Some("token".into()), now, Priority::DEFAULT)
                    .await
                {
                    Ok(c) => {
                        assert!(visible, "a claim cited a chunk its writer cannot see");
                        learned.push((c.id, scope));
                    }
                    Err(KbError::EvidenceNotVisible { .. }) => assert!(!visible),
                    Err(e) => panic!("learn: {e}"),
                }
            }
            Op::Transition { claim, to } => {
                let Some((id, scope)) = learned.get(claim).cloned() else {
                    continue;
                };
                let to = ClaimStatus::ALL[to];
                if to == ClaimStatus::Superseded {
                    continue;
                }
                let req = ChangeRequest {
                    to,
                    reason: None,
                    evidence: Vec::new(),
                    by: None,
                };
                match kb
                    .transition(&scopes()[scope], &id, req, &caller(), now)
                    .await
                {
                    Ok(_) | Err(KbError::Claim(_)) => {}
                    Err(e) => panic!("transition: {e}"),
                }
            }
            Op::Supersede { claim, by } => {
                let (Some((id, scope)), Some((by_id, _))) =
                    (learned.get(claim).cloned(), learned.get(by).cloned())
                else {
                    continue;
                };
                let req = ChangeRequest {
                    to: ClaimStatus::Superseded,
                    reason: None,
                    evidence: Vec::new(),
                    by: Some(by_id),
                };
                match kb
                    .transition(&scopes()[scope], &id, req, &caller(), now)
                    .await
                {
                    Ok(c) => assert!(c.superseded_by.is_some()),
                    // Invisible or missing successor, itself, or not allowed from its status.
                    Err(KbError::NotFound { .. } | KbError::Invalid(_) | KbError::Claim(_)) => {}
                    Err(e) => panic!("supersede: {e}"),
                }
            }
            Op::Purge { doc } => {
                if let Some(chunk) = chunk_of(&kb, doc).await {
                    purged.push(chunk);
                }
                kb.purge(&scopes()[doc], &format!("doc:{doc}"), Priority::DEFAULT)
                    .await
                    .expect("purge");
            }
        }
        check(&kb, &learned, &purged, now).await;
    }
}

async fn check(kb: &Kb, learned: &[(String, usize)], purged: &[String], now: i64) {
    for (id, scope) in learned {
        let owner = &scopes()[*scope];
        let claim = kb
            .claim(&Visibility::of(owner.clone()), id)
            .await
            .expect("a claim is never deleted");
        assert!(!claim.evidence.is_empty());
        let history = kb
            .claim_history(&Visibility::of(owner.clone()), id)
            .await
            .expect("history");
        assert_eq!(replay(&history).expect("replays"), claim.state());
        if let Some(by) = &claim.superseded_by {
            kb.claim(&Visibility::of(owner.clone()), by)
                .await
                .expect("the successor exists where the claim is seen");
        }
        let cites_purged = claim
            .evidence_chunks()
            .any(|c| purged.iter().any(|p| p == c));
        assert_eq!(claim.evidence_stale, cites_purged, "{id}");
        for reader in scopes() {
            let vis = Visibility::of(reader.clone());
            let sees = vis.admits(&claim.scope);
            assert_eq!(
                kb.claim(&vis, id).await.is_ok(),
                sees,
                "{id} read from {reader:?}"
            );
            assert_eq!(kb.claim_history(&vis, id).await.is_ok(), sees);
        }
    }
    for reader in scopes() {
        let vis = Visibility::of(reader.clone());
        let all = ClaimStatus::ALL.to_vec();
        let hits = kb
            .recall(
                &vis,
                Recall {
                    question: "claim about retries".into(),
                    statuses: all,
                    limit: 100,
                    ..Default::default()
                },
            )
            .await
            .expect("recall");
        assert!(hits.iter().all(|h| vis.admits(&h.view.claim.scope)));
        let items = kb
            .claim_attention(
                &vis,
                AttentionQuery {
                    limit: 100,
                    ..Default::default()
                },
                now,
            )
            .await
            .expect("attention");
        assert!(items.iter().all(|i| vis.admits(&i.view.claim.scope)));
    }
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 24, ..ProptestConfig::default() })]

    #[test]
    fn claim_invariants_hold_through_any_sequence(ops in prop::collection::vec(op(), 1..14)) {
        let rt = tokio::runtime::Builder::new_multi_thread()
            .worker_threads(2)
            .enable_all()
            .build()
            .expect("runtime");
        rt.block_on(run(ops));
    }
}
