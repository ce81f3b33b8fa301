use proptest::prelude::*;

use super::*;
use ClaimStatus::*;

/// The seed's allowed set, written out pair by pair (independently of [`TRANSITIONS`]).
const SEED: &[(ClaimStatus, ClaimStatus)] = &[
    (Observed, Verified),
    (Observed, Disputed),
    (Observed, Superseded),
    (Inferred, Verified),
    (Inferred, Disputed),
    (Hypothesis, Observed),
    (Hypothesis, Disputed),
    (Verified, Disputed),
    (Disputed, Verified),
    (Disputed, Superseded),
    // "any → superseded"
    (Hypothesis, Superseded),
    (Inferred, Superseded),
    (Verified, Superseded),
];

fn claim(status: ClaimStatus, evidence: Vec<EvidenceRef>) -> Claim {
    Claim {
        id: "c1".into(),
        text: "the retry cap is five minutes".into(),
        evidence,
        status,
        confidence: 0.9,
        scope: Scope::client("acme"),
        subject: None,
        actor: Actor {
            actor_type: ActorType::Agent,
            id: "reviewer".into(),
        },
        session_id: None,
        domain: None,
        tags: Vec::new(),
        about: Vec::new(),
        supersedes: None,
        superseded_by: None,
        evidence_stale: false,
        recorded_by: None,
        created_at: 1000,
        updated_at: 1000,
        version: 1,
    }
}

fn chunk(id: &str) -> EvidenceRef {
    EvidenceRef::new(EvidenceKind::Chunk, id)
}

fn to(status: ClaimStatus) -> Transition {
    Transition {
        to: status,
        actor: Actor::system(),
        reason: None,
        evidence: Vec::new(),
        by: (status == Superseded).then(|| "c2".to_string()),
    }
}

#[test]
fn every_from_and_to_follows_the_seed_table() {
    for from in ClaimStatus::ALL {
        for target in ClaimStatus::ALL {
            let expected = SEED.contains(&(from, target));
            assert_eq!(allowed(from, target), expected, "{from:?} → {target:?}");
            let c = claim(from, vec![chunk("k1")]);
            match c.transition(to(target), 2000) {
                Ok(e) => {
                    assert!(expected, "{from:?} → {target:?} accepted");
                    let mut after = c.clone();
                    after.apply(&e).expect("applies");
                    assert_eq!(after.status, target);
                    assert_eq!(after.version, 2);
                }
                Err(err) => {
                    assert!(!expected, "{from:?} → {target:?} refused: {err}");
                    assert_eq!(err.code(), "invalid_transition");
                    assert_eq!(err.http_status(), 409);
                }
            }
        }
    }
}

#[test]
fn evidence_rules() {
    assert_eq!(
        check_new(Observed, 1.0, &[]).map_err(|e| e.code()),
        Err("evidence_required")
    );
    let inference = vec![EvidenceRef::new(EvidenceKind::ModelInference, "msg-1")];
    for (status, ok) in [(Hypothesis, true), (Inferred, true), (Observed, false)] {
        assert_eq!(check_new(status, 0.3, &inference).is_ok(), ok, "{status:?}");
    }
    assert_eq!(
        check_new(Verified, 1.0, &[chunk("k")]).map_err(|e| e.code()),
        Err("invalid_field")
    );
    assert!(check_new(Observed, 1.5, &[chunk("k")]).is_err());
    // Verifying with nothing but model reasoning is refused too.
    let c = claim(Inferred, inference.clone());
    let mut t = to(Verified);
    t.evidence = inference;
    assert_eq!(
        c.transition(t, 2000).map_err(|e| e.code()),
        Err("invalid_evidence")
    );
    // Superseding needs the successor.
    let mut t = to(Superseded);
    t.by = None;
    assert_eq!(
        claim(Observed, vec![chunk("k")])
            .transition(t, 2000)
            .map_err(|e| e.code()),
        Err("missing_field")
    );
}

#[test]
fn evidence_gone_marks_stale_only_for_cited_chunks() {
    let c = claim(Observed, vec![chunk("k1"), chunk("k2")]);
    assert!(c.evidence_gone(&["zz".into()], 5).is_none());
    let e = c
        .evidence_gone(&["k2".into(), "k9".into()], 5)
        .expect("event");
    assert_eq!(e.stale_chunks, ["k2"]);
    let mut after = c.clone();
    after.apply(&e).expect("applies");
    assert!(after.evidence_stale);
    assert_eq!(after.status, Observed);
}

#[test]
fn severity_and_attention_follow_the_seed() {
    let now = 1000 + STALE_AFTER_MS;
    let mut c = claim(Disputed, vec![chunk("k")]);
    assert_eq!(severity(&c), (Severity::Warning, Tone::Warning));
    assert_eq!(attention(&c, now), [AttentionReason::Disputed]);
    c.status = Verified;
    assert_eq!(severity(&c), (Severity::Neutral, Tone::Success));
    assert!(attention(&c, now).is_empty());
    c.status = Hypothesis;
    c.confidence = 0.2;
    assert_eq!(severity(&c), (Severity::Warning, Tone::Warning));
    assert_eq!(attention(&c, now), [AttentionReason::LowConfidence]);
    assert!(attention(&c, now - 1).is_empty(), "not yet seven days old");
    c.status = Observed;
    c.confidence = 0.9;
    c.evidence_stale = true;
    assert_eq!(attention(&c, now), [AttentionReason::EvidenceStale]);
    c.status = Superseded;
    c.superseded_by = Some("c2".into());
    assert!(attention(&c, now).is_empty());
    assert_eq!(severity(&c), (Severity::Neutral, Tone::Neutral));
}

#[test]
fn replay_refuses_broken_histories() {
    let c = claim(Observed, vec![chunk("k")]);
    let first = ClaimEvent::learned(&c);
    assert!(replay(&[]).is_err());
    let mut skipped = c.transition(to(Verified), 5).expect("event");
    skipped.seq = 3;
    assert!(replay(&[first.clone(), skipped]).is_err());
    let mut bad = c.transition(to(Verified), 5).expect("event");
    bad.to = Hypothesis;
    assert_eq!(
        replay(&[first, bad]).map_err(|e| e.code()),
        Err("invalid_transition")
    );
}

/// One step of a random life of a few claims.
#[derive(Debug, Clone)]
enum Op {
    Learn { status: usize, chunks: Vec<u8> },
    Transition { claim: usize, to: usize },
    Supersede { claim: usize, by: usize },
    Purge { chunk: u8 },
}

fn op() -> impl Strategy<Value = Op> {
    prop_oneof![
        (0..3usize, prop::collection::vec(0..6u8, 0..3))
            .prop_map(|(status, chunks)| Op::Learn { status, chunks }),
        (0..8usize, 0..6usize).prop_map(|(claim, to)| Op::Transition { claim, to }),
        (0..8usize, 0..8usize).prop_map(|(claim, by)| Op::Supersede { claim, by }),
        (0..6u8).prop_map(|chunk| Op::Purge { chunk }),
    ]
}

proptest! {
    /// Whatever happens, every claim has evidence, its history replays to its state, and a
    /// superseded claim names a successor that exists.
    #[test]
    fn invariants_hold_through_any_sequence(ops in prop::collection::vec(op(), 1..40)) {
        let mut claims: Vec<Claim> = Vec::new();
        let mut histories: Vec<Vec<ClaimEvent>> = Vec::new();
        let mut now = 1000;
        for op in ops {
            now += 1;
            match op {
                Op::Learn { status, chunks } => {
                    let status = ClaimStatus::INITIAL[status];
                    let evidence: Vec<EvidenceRef> =
                        chunks.iter().map(|k| chunk(&format!("k{k}"))).collect();
                    if check_new(status, 0.8, &evidence).is_err() {
                        prop_assert!(evidence.is_empty());
                        continue;
                    }
                    let mut c = claim(status, evidence);
                    c.id = format!("c{}", claims.len());
                    c.created_at = now;
                    c.updated_at = now;
                    histories.push(vec![ClaimEvent::learned(&c)]);
                    claims.push(c);
                }
                Op::Transition { claim, to: target } => {
                    let Some(c) = claims.get_mut(claim) else { continue };
                    let target = ClaimStatus::ALL[target];
                    if target == Superseded { continue; }
                    if let Ok(e) = c.transition(to(target), now) {
                        c.apply(&e).expect("applies");
                        histories[claim].push(e);
                    }
                }
                Op::Supersede { claim, by } => {
                    if claim == by || by >= claims.len() { continue; }
                    let by_id = claims[by].id.clone();
                    let Some(c) = claims.get_mut(claim) else { continue };
                    let mut t = to(Superseded);
                    t.by = Some(by_id);
                    if let Ok(e) = c.transition(t, now) {
                        c.apply(&e).expect("applies");
                        histories[claim].push(e);
                    }
                }
                Op::Purge { chunk } => {
                    let gone = vec![format!("k{chunk}")];
                    for (c, h) in claims.iter_mut().zip(histories.iter_mut()) {
                        if let Some(e) = c.evidence_gone(&gone, now) {
                            c.apply(&e).expect("applies");
                            h.push(e);
                        }
                    }
                }
            }
            for (c, h) in claims.iter().zip(&histories) {
                prop_assert!(!c.evidence.is_empty());
                prop_assert_eq!(replay(h).expect("replays"), c.state());
                prop_assert_eq!(c.status == Superseded, c.superseded_by.is_some());
                if let Some(by) = &c.superseded_by {
                    prop_assert!(claims.iter().any(|o| &o.id == by && o.id != c.id));
                }
            }
        }
    }
}
