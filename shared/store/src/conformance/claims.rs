//! Conformance of [`ClaimStore`](crate::claims::ClaimStore).

use evident_core::claims::{
    Actor, ActorType, Claim, ClaimEvent, ClaimStatus, EvidenceKind, EvidenceRef, Transition, replay,
};
use evident_core::{Scope, Visibility};

use super::{Harness, unique_suffix};
use crate::ErrorKind;
use crate::claims::ClaimFilter;

/// An observed claim `id` of an agent, evidenced by `chunk`, written at `at` (version 1):
/// the suite's claim, and the backends' wire tests' starting point.
pub fn claim(id: &str, scope: Scope, chunk: &str, at: i64) -> Claim {
    Claim {
        id: id.into(),
        text: format!("claim {id}"),
        evidence: vec![EvidenceRef::new(EvidenceKind::Chunk, chunk)],
        status: ClaimStatus::Observed,
        confidence: 0.9,
        scope,
        subject: None,
        actor: Actor {
            actor_type: ActorType::Agent,
            id: "reviewer".into(),
        },
        session_id: Some("s1".into()),
        domain: None,
        tags: Vec::new(),
        about: Vec::new(),
        supersedes: None,
        superseded_by: None,
        evidence_stale: false,
        recorded_by: None,
        created_at: at,
        updated_at: at,
        version: 1,
    }
}

/// Claims: created once, changed only from the version read (history appended in the same
/// write, replaying to the state), found by evidence chunk, listed with visibility and
/// filters, newest change first.
/// Long because it is one claim's story: each change is made from the version the step before
/// read.
pub async fn claims_keep_history_index_evidence_and_respect_visibility(h: &Harness) {
    let s = &h.stores.claims;
    let client = format!("cl{}", unique_suffix());
    let a = claim("a", Scope::client(&client), "k1", 100);
    s.create_claim(&a, &ClaimEvent::learned(&a))
        .await
        .expect("create");
    let again = s.create_claim(&a, &ClaimEvent::learned(&a)).await;
    assert_eq!(again.map_err(|e| e.kind), Err(ErrorKind::Conflict));

    let t = Transition {
        to: ClaimStatus::Disputed,
        actor: Actor::system(),
        reason: Some("contradicted".into()),
        evidence: vec![EvidenceRef::new(EvidenceKind::Chunk, "k2")],
        by: None,
    };
    let e = a.transition(t, 200).expect("event");
    let mut after = a.clone();
    after.apply(&e).expect("apply");
    assert!(s.update_claim(&after, 1, &e).await.expect("update"));
    assert!(
        !s.update_claim(&after, 1, &e).await.expect("update"),
        "a writer holding an old version loses"
    );
    let history = s.claim_history(&client, "a").await.expect("history");
    assert_eq!(history.len(), 2);
    assert_eq!(replay(&history).expect("replay"), after.state());
    assert!(
        s.claim_history(&client, "zz")
            .await
            .expect("history")
            .is_empty()
    );

    let p = claim("p", Scope::client(&client).with_project("p1"), "k1", 300);
    s.create_claim(&p, &ClaimEvent::learned(&p))
        .await
        .expect("create");
    assert_eq!(
        s.get_claims(&client, &["p".into(), "zz".into(), "a".into()])
            .await
            .expect("get")
            .into_iter()
            .map(|c| c.id)
            .collect::<Vec<_>>(),
        ["p", "a"]
    );
    assert!(
        s.get_claims("other", &["a".into()])
            .await
            .expect("get")
            .is_empty()
    );
    assert_eq!(
        s.claims_citing(&client, &["k1".into()])
            .await
            .expect("citing"),
        ["a", "p"]
    );
    assert_eq!(
        s.claims_citing(&client, &["k2".into(), "k9".into()])
            .await
            .expect("citing"),
        ["a"],
        "evidence a transition brought is indexed too"
    );

    let list = |vis: Visibility, f: ClaimFilter| {
        let s = s.clone();
        async move {
            s.list_claims(&vis, &f, 10)
                .await
                .expect("list")
                .into_iter()
                .map(|c| c.id)
                .collect::<Vec<_>>()
        }
    };
    let client_vis = Visibility::of(Scope::client(&client));
    let p1 = Visibility::of(Scope::client(&client).with_project("p1"));
    assert_eq!(
        list(client_vis.clone(), ClaimFilter::default()).await,
        ["a"]
    );
    assert_eq!(list(p1.clone(), ClaimFilter::default()).await, ["p", "a"]);
    assert!(
        list(
            Visibility::of(Scope::client("other")),
            ClaimFilter::default()
        )
        .await
        .is_empty()
    );
    let disputed = ClaimFilter {
        statuses: vec![ClaimStatus::Disputed],
        ..Default::default()
    };
    assert_eq!(list(p1.clone(), disputed).await, ["a"]);
    let attention = ClaimFilter {
        attention_before: Some(0),
        session_id: Some("s1".into()),
        ..Default::default()
    };
    assert_eq!(
        list(p1, attention).await,
        ["a"],
        "disputed needs attention; p does not"
    );
}
