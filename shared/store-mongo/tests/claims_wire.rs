//! The commands `ClaimStore` sends to MongoDB, pinned against recorded exchanges
//! (`fixtures/claims.json`; see `fixtures/SOURCE.txt` for how replies were written).

use std::sync::Arc;

use evident_core::claims::{Actor, Claim, ClaimEvent, ClaimStatus, Transition, replay};
use evident_core::{Scope, Visibility};
use evident_store::ErrorKind;
use evident_store::claims::{ClaimFilter, ClaimStore};
use evident_store_mongo::{MongoStore, RecordedTransport};

fn fixture(scenario: &str) -> (Arc<RecordedTransport>, MongoStore) {
    let path = format!("{}/tests/fixtures/claims.json", env!("CARGO_MANIFEST_DIR"));
    let text = std::fs::read_to_string(&path).expect("fixture file");
    let t = Arc::new(RecordedTransport::from_fixture(&text, scenario).expect("scenario"));
    (t.clone(), MongoStore::new(t, "evident"))
}

fn claim() -> Claim {
    let mut c = evident_store::conformance::claim("c1", Scope::client("acme"), "k1", 10);
    c.text = "the retry cap is five minutes".into();
    c.session_id = None;
    c
}

#[tokio::test]
async fn create_indexes_the_evidence_then_inserts_and_a_second_create_conflicts() {
    let (t, store) = fixture("create_indexes_evidence_then_inserts_one_document");
    let c = claim();
    store
        .create_claim(&c, &ClaimEvent::learned(&c))
        .await
        .expect("create");
    let again = store.create_claim(&c, &ClaimEvent::learned(&c)).await;
    assert_eq!(again.map_err(|e| e.kind), Err(ErrorKind::Conflict));
    t.assert_done();
}

#[tokio::test]
async fn an_update_from_an_old_version_changes_nothing() {
    let (t, store) = fixture("update_is_conditional_on_the_version");
    let c = claim();
    let e = c
        .transition(
            Transition {
                to: ClaimStatus::Verified,
                actor: Actor::system(),
                reason: None,
                evidence: Vec::new(),
                by: None,
            },
            20,
        )
        .expect("event");
    let mut after = c.clone();
    after.apply(&e).expect("apply");
    assert!(
        !store.update_claim(&after, 1, &e).await.expect("update"),
        "the version moved meanwhile"
    );
    t.assert_done();
}

#[tokio::test]
async fn history_citing_and_listing_read_what_was_stored() {
    let (t, store) = fixture("history_citing_and_list");
    let history = store.claim_history("acme", "c1").await.expect("history");
    let state = replay(&history).expect("replay");
    assert_eq!((state.status, state.version), (ClaimStatus::Disputed, 2));
    assert_eq!(
        store
            .claims_citing("acme", &["k1".into(), "k2".into()])
            .await
            .expect("citing"),
        ["c1"]
    );
    let filter = ClaimFilter {
        statuses: vec![ClaimStatus::Disputed],
        ..Default::default()
    };
    let listed = store
        .list_claims(&Visibility::of(Scope::client("acme")), &filter, 10)
        .await
        .expect("list");
    assert_eq!(listed.len(), 1);
    assert_eq!(listed[0].status, ClaimStatus::Disputed);
    t.assert_done();
}
