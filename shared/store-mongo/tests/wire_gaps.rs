//! Wire tests of the knowledge-gap store: the commands `create_gaps`, `claim_gap` and
//! `advance_gap` send and how they read the replies (`tests/fixtures/gaps.json`).

use std::sync::Arc;

use evident_core::{Scope, Visibility};
use evident_store::ErrorKind;
use evident_store::gaps::{Acquirer, GapMove, GapPhase, GapState, GapStore, NewGap};
use evident_store_mongo::{MongoStore, RecordedTransport};

fn fixture(scenario: &str) -> (Arc<RecordedTransport>, MongoStore) {
    let path = format!("{}/tests/fixtures/gaps.json", env!("CARGO_MANIFEST_DIR"));
    let text = std::fs::read_to_string(&path).expect("fixture file");
    let transport =
        Arc::new(RecordedTransport::from_fixture(&text, scenario).expect("fixture scenario"));
    let store = MongoStore::new(transport.clone(), "evident");
    (transport, store)
}

fn gap() -> NewGap {
    NewGap {
        scope: Scope::client("c1"),
        question: "Who owns the ledger?".into(),
        context: None,
        priority: 4,
        about: Vec::new(),
        acquirer: Acquirer::Agent,
        actor: "t".into(),
        phase: GapPhase::Detection,
    }
}

#[tokio::test]
async fn create_inserts_a_new_question_or_returns_the_open_one() {
    let (t, store) = fixture("create_inserts_a_new_question");
    let made = store.create_gaps(vec![gap()], 1_000).await.expect("create");
    assert_eq!((made[0].state, made[0].priority), (GapState::Open, 4));
    assert!(made[0].gap_id.starts_with('g'));
    t.assert_done();
    let (t, store) = fixture("create_returns_the_open_question");
    let made = store.create_gaps(vec![gap()], 1_500).await.expect("create");
    assert_eq!(made[0].gap_id, "g1");
    t.assert_done();
}

#[tokio::test]
async fn a_claim_is_a_compare_and_set_checked_for_one_acquisition_per_client() {
    let vis = Visibility::of(Scope::client("c1"));
    let (t, store) = fixture("claim_takes_the_first_candidate_by_compare_and_set");
    let c = store
        .claim_gap("c1", &vis, Acquirer::Agent, "w1", 60_000, 2_000)
        .await
        .expect("claim")
        .expect("a gap");
    assert_eq!(
        (c.gap.gap_id.as_str(), c.epoch, c.lease_expires_at),
        ("g1", 1, 62_000)
    );
    assert_eq!(c.gap.lease_owner.as_deref(), Some("w1"));
    t.assert_done();
    let (t, store) = fixture("claim_waits_while_the_client_acquires");
    let none = store
        .claim_gap("c1", &vis, Acquirer::Agent, "w2", 60_000, 3_000)
        .await
        .expect("claim");
    assert!(none.is_none(), "the live lease holds the client");
    t.assert_done();
}

#[tokio::test]
async fn a_move_that_lost_a_race_is_refused_as_a_conflict() {
    let (t, store) = fixture("a_move_that_lost_a_race_is_refused");
    let e = store
        .advance_gap(
            "c1",
            "g1",
            GapMove {
                to: GapState::Acquired,
                epoch: Some(1),
                actor: "w1".into(),
                kind: "findings".into(),
                phase: Some(GapPhase::Acquisition),
                detail: serde_json::Value::Null,
                failure: None,
                findings_urn: Some("gap-findings:g1".into()),
                not_before: None,
            },
            4_000,
        )
        .await
        .expect_err("refused");
    assert_eq!(e.kind, ErrorKind::Conflict);
    t.assert_done();
}
