//! Gap store cases: claim order, one acquisition per client, expiring leases, the state
//! machine with its append-only history.

use super::*;
use crate::gaps::{Acquirer, GapMove, GapPhase, GapState, NewGap};

fn new_gap(client: &str, question: &str, priority: u8, acquirer: Acquirer) -> NewGap {
    NewGap {
        scope: Scope::client(client),
        question: question.into(),
        context: None,
        priority,
        about: vec!["topic:retries".into()],
        acquirer,
        actor: "tester".into(),
        phase: GapPhase::Detection,
    }
}

fn step(to: GapState, epoch: Option<i64>, kind: &str) -> GapMove {
    GapMove {
        to,
        epoch,
        actor: "agent".into(),
        kind: kind.into(),
        phase: Some(GapPhase::Acquisition),
        detail: serde_json::json!({"note": kind}),
        failure: (to == GapState::Failed).then(|| "no sources".to_string()),
        findings_urn: (to == GapState::Acquired).then(|| "gap-findings:x".to_string()),
        not_before: None,
    }
}

/// Agents claim gaps in priority order, one acquisition per client; an expired lease moves
/// to the next claim with a new epoch and fences the dead holder out; reordering shows in
/// listing and claim order. Long because it is one story: each claim depends on the leases,
/// epochs and backoffs the ones before left.
pub async fn gaps_claim_in_order_one_per_client_with_expiring_leases(h: &Harness) {
    let g = &h.stores.gaps;
    let vis = Visibility::of(Scope::client("c1"));
    let now = 1_000_000;
    let made = g
        .create_gaps(
            vec![
                new_gap("c1", "later question", 5, Acquirer::Agent),
                new_gap("c1", "urgent question", 1, Acquirer::Agent),
                new_gap("c1", "builtin question", 0, Acquirer::Builtin),
            ],
            now,
        )
        .await
        .expect("create");
    assert_eq!(made.len(), 3);
    assert!(made.iter().all(|r| r.state == GapState::Open));
    let again = g
        .create_gaps(
            vec![new_gap("c1", "later question", 5, Acquirer::Agent)],
            now,
        )
        .await
        .expect("create again");
    assert_eq!(
        again[0].gap_id, made[0].gap_id,
        "an open question is asked once"
    );
    g.create_gaps(vec![new_gap("c2", "other client", 0, Acquirer::Agent)], now)
        .await
        .expect("create c2");

    let listed = g.list_gaps("c1", &vis, None, 10).await.expect("list");
    let questions: Vec<&str> = listed.iter().map(|r| r.question.as_str()).collect();
    assert_eq!(
        questions,
        ["builtin question", "urgent question", "later question"]
    );

    // Agents take agent gaps in priority order; the client then has one acquisition running.
    let first = g
        .claim_gap("c1", &vis, Acquirer::Agent, "w1", 10_000, now)
        .await
        .expect("claim")
        .expect("a gap");
    assert_eq!(first.gap.question, "urgent question");
    assert_eq!((first.epoch, first.gap.attempts), (1, 1));
    assert!(
        g.claim_gap("c1", &vis, Acquirer::Agent, "w2", 10_000, now + 1)
            .await
            .expect("claim")
            .is_none(),
        "one gap of a client acquiring at a time"
    );
    assert!(
        g.claim_gap("c1", &vis, Acquirer::Builtin, "b", 10_000, now + 1)
            .await
            .expect("claim")
            .is_none(),
        "the built-in acquirer waits too"
    );
    let other = g
        .claim_gap(
            "c2",
            &Visibility::of(Scope::client("c2")),
            Acquirer::Agent,
            "w3",
            10_000,
            now,
        )
        .await
        .expect("claim c2");
    assert!(other.is_some(), "another client is not held up");

    // The lease expires: after its backoff the same gap is claimed again, with a new epoch.
    let expired = now + 10_000;
    assert!(
        g.claim_gap("c1", &vis, Acquirer::Agent, "w2", 10_000, expired)
            .await
            .expect("claim")
            .is_none(),
        "backoff after an expired lease"
    );
    let later = expired + crate::gaps::gap_backoff(1);
    let second = g
        .claim_gap("c1", &vis, Acquirer::Agent, "w2", 10_000, later)
        .await
        .expect("claim")
        .expect("the expired gap again");
    assert_eq!(second.gap.gap_id, first.gap.gap_id);
    assert_eq!((second.epoch, second.gap.attempts), (2, 2));
    assert_eq!(second.gap.lease_owner.as_deref(), Some("w2"));
    // The dead holder's findings are refused; the live one's accepted.
    let stale = g
        .advance_gap(
            "c1",
            &first.gap.gap_id,
            step(GapState::Acquired, Some(1), "findings"),
            later,
        )
        .await;
    assert!(stale.is_err(), "a stale epoch moves nothing");
    let done = g
        .advance_gap(
            "c1",
            &first.gap.gap_id,
            step(GapState::Acquired, Some(2), "findings"),
            later,
        )
        .await
        .expect("advance")
        .expect("known");
    assert_eq!(done.state, GapState::Acquired);
    // With nothing acquiring, the next claim goes on in order.
    let third = g
        .claim_gap("c1", &vis, Acquirer::Agent, "w2", 10_000, later + 1)
        .await
        .expect("claim")
        .expect("next");
    assert_eq!(third.gap.question, "later question");
    // Reordering is visible in the listing and the claim order.
    let moved = g
        .reorder_gap("c1", &made[2].gap_id, 9, Some(0), "op", later + 2)
        .await
        .expect("reorder")
        .expect("known");
    assert_eq!((moved.priority, moved.position), (9, Some(0)));
    let open = g
        .list_gaps("c1", &vis, Some(GapState::Open), 10)
        .await
        .expect("list");
    assert_eq!(open.len(), 1);
    assert!(
        g.list_gaps("c1", &Visibility::of(Scope::client("c2")), None, 10)
            .await
            .expect("list")
            .is_empty(),
        "another client's reader sees none"
    );
    assert!(
        g.get_gap("c2", &first.gap.gap_id)
            .await
            .expect("get")
            .is_none()
    );
}

/// A gap walks its state machine (open → acquiring → acquired → constructed, failure and
/// retry, a question asked again) with every move appended to its history. Long because it
/// is one gap's life: each move is only legal from the state the one before left.
pub async fn gaps_move_by_the_state_machine_with_append_only_history(h: &Harness) {
    let g = &h.stores.gaps;
    let vis = Visibility::of(Scope::client("c1"));
    let now = 2_000_000;
    let gap = g
        .create_gaps(vec![new_gap("c1", "what is X?", 3, Acquirer::Agent)], now)
        .await
        .expect("create")
        .remove(0);
    // Not acquired yet: construction cannot finish it.
    let early = g
        .advance_gap(
            "c1",
            &gap.gap_id,
            step(GapState::Constructed, None, "graph_write"),
            now,
        )
        .await;
    assert!(early.is_err());
    let c = g
        .claim_gap("c1", &vis, Acquirer::Agent, "w", 60_000, now)
        .await
        .expect("claim")
        .expect("gap");
    g.advance_gap(
        "c1",
        &gap.gap_id,
        step(GapState::Acquired, Some(c.epoch), "findings"),
        now + 1,
    )
    .await
    .expect("findings")
    .expect("known");
    let built = g
        .advance_gap(
            "c1",
            &gap.gap_id,
            step(GapState::Constructed, None, "graph_write"),
            now + 2,
        )
        .await
        .expect("construct")
        .expect("known");
    assert_eq!(built.state, GapState::Constructed);
    assert_eq!(built.findings_urn.as_deref(), Some("gap-findings:x"));
    assert!(
        g.advance_gap(
            "c1",
            &gap.gap_id,
            step(GapState::Failed, None, "failed"),
            now + 3
        )
        .await
        .is_err(),
        "constructed is final"
    );
    assert!(
        g.advance_gap(
            "c1",
            "g-unknown",
            step(GapState::Failed, None, "failed"),
            now
        )
        .await
        .expect("advance")
        .is_none()
    );
    let history = g.gap_history("c1", &gap.gap_id).await.expect("history");
    let kinds: Vec<(&str, GapState)> = history.iter().map(|e| (e.kind.as_str(), e.to)).collect();
    assert_eq!(
        kinds,
        [
            ("created", GapState::Open),
            ("claimed", GapState::Acquiring),
            ("findings", GapState::Acquired),
            ("graph_write", GapState::Constructed),
        ]
    );
    let seqs: Vec<i64> = history.iter().map(|e| e.seq).collect();
    assert_eq!(seqs, [1, 2, 3, 4]);
    assert_eq!(history[2].detail["note"], "findings");
    assert_eq!(history[2].phase, Some(GapPhase::Acquisition));
    // A failure with its reason, and a retry back to open.
    let other = g
        .create_gaps(vec![new_gap("c1", "what is Y?", 3, Acquirer::Agent)], now)
        .await
        .expect("create")
        .remove(0);
    let c = g
        .claim_gap("c1", &vis, Acquirer::Agent, "w", 60_000, now + 10)
        .await
        .expect("claim")
        .expect("gap");
    assert_eq!(c.gap.gap_id, other.gap_id);
    let mut back = step(GapState::Open, Some(c.epoch), "released");
    back.not_before = Some(now + 5_000);
    let reopened = g
        .advance_gap("c1", &other.gap_id, back, now + 11)
        .await
        .expect("release")
        .expect("known");
    assert_eq!(
        (reopened.state, reopened.not_before),
        (GapState::Open, Some(now + 5_000))
    );
    assert!(reopened.lease_owner.is_none());
    let failed = g
        .advance_gap(
            "c1",
            &other.gap_id,
            step(GapState::Failed, None, "failed"),
            now + 12,
        )
        .await
        .expect("fail")
        .expect("known");
    assert_eq!(failed.failure.as_deref(), Some("no sources"));
    // A failed question may be asked again: a new gap.
    let asked = g
        .create_gaps(
            vec![new_gap("c1", "what is Y?", 3, Acquirer::Agent)],
            now + 13,
        )
        .await
        .expect("create")
        .remove(0);
    assert_ne!(asked.gap_id, other.gap_id);
}
