//! Ranking (pure, with an injected clock), validation, and the store round trip over the
//! embedded store (hashing embedder: equal texts have cosine 1, unrelated ones about 0).

use super::*;
use serde_json::json;

const T0: Millis = 1_700_000_000_000;
const DAY: Millis = 24 * 3600 * 1000;

fn step(agent: &str, action: &str) -> ProcedureStep {
    ProcedureStep {
        agent: agent.into(),
        action: action.into(),
        params: None,
    }
}

fn stored(id: &str, trigger: &str, source: ProcedureSource, wins: u64, losses: u64) -> Procedure {
    Procedure {
        id: id.into(),
        client_id: "acme".into(),
        project_id: None,
        trigger_pattern: trigger.into(),
        steps: vec![step("Research", "search_kb")],
        source,
        success_count: wins,
        failure_count: losses,
        usage_count: wins + losses,
        last_used_at: (wins + losses > 0).then_some(T0),
        created_at: T0,
        updated_at: T0,
    }
}

fn scored(p: Procedure, cosine: f32) -> ScoredProcedure {
    ScoredProcedure {
        procedure: p,
        cosine,
    }
}

/// Ranks `candidates` for the task "task" at `T0` (half-life 30 days, five answers).
fn rank_at_t0(candidates: Vec<ScoredProcedure>) -> ProcedureMatches {
    rank(candidates, "task", T0, 30.0, 5)
}

fn order(m: &ProcedureMatches) -> Vec<&str> {
    m.procedures
        .iter()
        .map(|p| p.procedure.procedure.id.as_str())
        .collect()
}

#[test]
fn a_user_defined_procedure_always_outranks_a_learned_one() {
    use ProcedureSource::*;
    // Cases: (learned's cosine, learned's record, user-defined's cosine, its record).
    let cases = [
        (1.0, (100, 0), 0.52, (0, 0)),
        (0.9, (9, 1), 0.55, (0, 9)),
        (0.6, (1, 0), 0.55, (0, 0)),
    ];
    for (lc, (lw, ll), uc, (uw, ul)) in cases {
        let m = rank_at_t0(vec![
            scored(stored("learned", "x", Learned, lw, ll), lc),
            scored(stored("told", "y", UserDefined, uw, ul), uc),
        ]);
        assert_eq!(order(&m), ["told", "learned"], "{lc} {uc}");
        assert!(m.closest.is_empty());
    }
    // …but only when it matches: a user-defined one below the threshold is not returned.
    let m = rank_at_t0(vec![
        scored(stored("learned", "x", Learned, 1, 0), 0.9),
        scored(stored("told", "y", UserDefined, 0, 0), 0.3),
    ]);
    assert_eq!(order(&m), ["learned"]);
}

#[test]
fn a_higher_success_rate_outranks_a_lower_one_of_equal_similarity() {
    use ProcedureSource::Learned;
    let m = rank_at_t0(vec![
        scored(stored("often-fails", "x", Learned, 2, 8), 0.7),
        scored(stored("untried", "x", Learned, 0, 0), 0.7),
        scored(stored("reliable", "x", Learned, 9, 1), 0.7),
    ]);
    assert_eq!(order(&m), ["reliable", "untried", "often-fails"]);
    let scores: Vec<f64> = m.procedures.iter().map(|p| p.score).collect();
    let sim = 0.8 * 0.7;
    for (got, rate) in scores.iter().zip([0.9, 0.5, 0.2]) {
        assert!((got - sim * rate).abs() < 1e-6, "{got} vs {}", sim * rate);
    }
    assert_eq!(m.procedures[1].procedure.success_rate, None, "untried");
}

#[test]
fn decay_lowers_an_unused_procedure_as_the_clock_moves() {
    use ProcedureSource::Learned;
    let mut recent = stored("recent", "x", Learned, 4, 1);
    let mut stale = stored("stale", "x", Learned, 4, 1);
    recent.last_used_at = Some(T0 + 60 * DAY);
    stale.last_used_at = Some(T0);
    let at = |now| {
        rank(
            vec![scored(stale.clone(), 0.7), scored(recent.clone(), 0.7)],
            "task",
            now,
            30.0,
            5,
        )
    };
    let m = at(T0 + 60 * DAY);
    assert_eq!(order(&m), ["recent", "stale"]);
    let (fresh, old) = (m.procedures[0].score, m.procedures[1].score);
    assert!(
        (old / fresh - 0.25).abs() < 1e-9,
        "two half-lives: {old} / {fresh}"
    );
    // The same procedure, unused, loses half its score per half-life.
    let later = at(T0 + 90 * DAY);
    assert!((later.procedures[0].score / fresh - 0.5).abs() < 1e-9);
    // Never used: the age counts from its creation.
    stale.last_used_at = None;
    stale.created_at = T0 + 30 * DAY;
    assert!((decay(&stale, T0 + 60 * DAY, 30.0) - 0.5).abs() < 1e-12);
    assert_eq!(
        decay(&stale, T0, 30.0),
        1.0,
        "a clock behind the procedure: no decay"
    );
    recent.last_used_at = Some(T0);
    assert!(
        (decay(&recent, T0 + 7 * DAY, 7.0) - 0.5).abs() < 1e-12,
        "half-life configurable"
    );
}

#[test]
fn nothing_matching_answers_the_closest_candidates() {
    use ProcedureSource::*;
    let m = rank(
        vec![
            scored(stored("a", "deploy to production", Learned, 0, 0), 0.3),
            scored(stored("b", "bug report", UserDefined, 0, 0), 0.1),
            scored(stored("c", "weekly status report", Learned, 0, 0), 0.45),
            scored(stored("d", "invoice", Learned, 0, 0), 0.2),
        ],
        "what is the weather",
        T0,
        30.0,
        5,
    );
    assert!(m.procedures.is_empty());
    let closest: Vec<&str> = m
        .closest
        .iter()
        .map(|p| p.procedure.procedure.id.as_str())
        .collect();
    assert_eq!(closest, ["c", "a", "d"], "most similar first, at most 3");
    assert!(m.closest.iter().all(|p| p.similarity < MIN_SIMILARITY));
    assert_eq!(m.min_similarity, MIN_SIMILARITY);
}

#[test]
fn the_trigger_words_in_the_task_add_to_the_similarity() {
    assert_eq!(
        terms("Users reported crashes when emailing_questions"),
        ["user", "report", "crash", "email", "question"]
            .into_iter()
            .map(String::from)
            .collect()
    );
    let m = rank(
        vec![
            scored(
                stored("bug", "bug_report", ProcedureSource::Learned, 0, 0),
                0.3,
            ),
            scored(
                stored("other", "invoice_dispute", ProcedureSource::Learned, 0, 0),
                0.3,
            ),
        ],
        "A bug report: the login page crashes",
        T0,
        30.0,
        5,
    );
    assert_eq!(
        order(&m),
        ["bug"],
        "0.8·0.3 + 0.2·1 = 0.44 ≥ 0.4; the other 0.24"
    );
    assert!((m.procedures[0].similarity - 0.44).abs() < 1e-6);
    assert_eq!(trigger_text("email_with-question"), "email with question");
}

#[test]
fn limits_cut_the_ranked_list() {
    let many: Vec<ScoredProcedure> = (0..10)
        .map(|i| {
            scored(
                stored(&format!("p{i}"), "x", ProcedureSource::Learned, 0, 0),
                0.5 + i as f32 / 100.0,
            )
        })
        .collect();
    let m = rank(many, "task", T0, 30.0, 3);
    assert_eq!(order(&m), ["p9", "p8", "p7"]);
}

proptest::proptest! {
    /// Whatever the candidates: only matches are returned, at most `limit`, user-defined ones
    /// first by similarity, then learned ones by score; `closest` only when nothing matched.
    #[test]
    fn ranking_invariants(
        candidates in proptest::collection::vec(
            (0.0f32..1.0, proptest::bool::ANY, 0u64..20, 0u64..20, 0i64..120),
            0..40,
        ),
        limit in 1usize..10,
    ) {
        use ProcedureSource::*;
        let scored_candidates: Vec<ScoredProcedure> = candidates
            .iter()
            .enumerate()
            .map(|(i, (cosine, user, wins, losses, age))| {
                let source = if *user { UserDefined } else { Learned };
                let mut p = stored(&format!("p{i:02}"), "x", source, *wins, *losses);
                p.last_used_at = Some(T0 - age * DAY);
                scored(p, *cosine)
            })
            .collect();
        let m = rank(scored_candidates, "task", T0, 30.0, limit);
        // The trigger `x` has no content word: similarity is 0.8 · cosine.
        let matching = candidates
            .iter()
            .filter(|c| COSINE_WEIGHT * c.0 >= MIN_SIMILARITY)
            .count();
        proptest::prop_assert_eq!(m.procedures.len(), matching.min(limit));
        proptest::prop_assert!(m.procedures.iter().all(|p| p.similarity >= MIN_SIMILARITY));
        let source = |p: &ProcedureMatch| p.procedure.procedure.source;
        let learned_from = m
            .procedures
            .iter()
            .position(|p| source(p) == Learned)
            .unwrap_or(m.procedures.len());
        let (told, learned) = m.procedures.split_at(learned_from);
        proptest::prop_assert!(learned.iter().all(|p| source(p) == Learned));
        proptest::prop_assert!(told.windows(2).all(|w| w[0].similarity >= w[1].similarity));
        proptest::prop_assert!(learned.windows(2).all(|w| w[0].score >= w[1].score));
        proptest::prop_assert_eq!(m.closest.is_empty(), matching > 0 || candidates.is_empty());
        proptest::prop_assert!(m.closest.len() <= CLOSEST);
        proptest::prop_assert!(m.closest.windows(2).all(|w| w[0].similarity >= w[1].similarity));
    }
}

fn def(trigger: &str, source: &str) -> NewProcedure {
    NewProcedure {
        trigger_pattern: trigger.into(),
        steps: vec![step("CodeReview", "review"), step("DevOps", "deploy")],
        source: source.into(),
    }
}

#[test]
fn definitions_are_checked_and_credentials_refused() {
    assert_eq!(
        check(&def("bug report", "learned")).ok(),
        Some(ProcedureSource::Learned)
    );
    let bad: Vec<(NewProcedure, &str)> = vec![
        (def("bug report", "learnt"), "invalid_field"),
        (def(" ", "learned"), "invalid_field"),
        (def(&"x".repeat(501), "user_defined"), "invalid_field"),
        (
            NewProcedure {
                steps: Vec::new(),
                ..def("t", "learned")
            },
            "invalid_field",
        ),
        (
            NewProcedure {
                steps: vec![ProcedureStep {
                    params: Some(json!([1])),
                    ..step("a", "b")
                }],
                ..def("t", "learned")
            },
            "invalid_request",
        ),
        (
            NewProcedure {
                steps: vec![step("", "b")],
                ..def("t", "learned")
            },
            "invalid_request",
        ),
        (
            NewProcedure {
                steps: vec![ProcedureStep {
                    params: Some(json!({"password": "hunter2hunter2"})),
                    ..step("a", "b")
                }],
                ..def("t", "learned")
            },
            "credential_detected",
        ),
        (
            def("deploy with AKIAZ3MHQ7RT2LQKXW5P", "learned"),
            "credential_detected",
        ),
    ];
    for (d, code) in bad {
        assert_eq!(check(&d).err().map(|e| e.code()), Some(code), "{d:?}");
    }
    assert!(check_id("bug-report.v2:1").is_ok());
    assert!(check_id("a/b").is_err());
    assert!(check_id(&"a".repeat(129)).is_err());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn saved_procedures_match_count_outcomes_atomically_and_stay_in_scope() {
    let dir = tempfile::tempdir().expect("tmp");
    let kb = crate::test_kb(dir.path())
        .await
        .with_procedure_half_life_days(7);
    assert_eq!(kb.procedure_half_life_days(), 7);
    let learned = kb
        .save_procedure("acme", None, None, def("bug report", "learned"), T0)
        .await
        .expect("save");
    assert!(learned.procedure.id.starts_with("proc-"));
    let told = kb
        .save_procedure(
            "acme",
            Some("shop"),
            Some("bug-told".into()),
            def("bug report", "user_defined"),
            T0,
        )
        .await
        .expect("save");
    let m = kb
        .match_procedures("acme", Some("shop"), "bug report", 5, T0)
        .await
        .expect("match");
    let ids: Vec<&str> = m
        .procedures
        .iter()
        .map(|p| p.procedure.procedure.id.as_str())
        .collect();
    assert_eq!(
        ids,
        [told.procedure.id.as_str(), learned.procedure.id.as_str()]
    );
    assert!((m.procedures[0].similarity - 1.0).abs() < 1e-4);

    // Scope: the client level, another project, another client.
    for (client, project, n) in [
        ("acme", None, 1),
        ("acme", Some("blog"), 1),
        ("globex", None, 0),
    ] {
        let m = kb
            .match_procedures(client, project, "bug report", 5, T0)
            .await
            .expect("match");
        assert_eq!(m.procedures.len(), n, "{client} {project:?}");
        assert!(
            m.procedures
                .iter()
                .all(|p| p.procedure.procedure.project_id.is_none())
        );
        assert_eq!(
            kb.procedures(client, project, None, 100)
                .await
                .expect("list")
                .len(),
            n
        );
    }
    let e = kb
        .record_procedure_outcome("acme", Some("blog"), "bug-told", true, T0)
        .await
        .expect_err("not visible");
    assert_eq!(e.code(), "not_found");
    let e = kb
        .delete_procedure("acme", None, "bug-told")
        .await
        .expect_err("not visible");
    assert_eq!(e.code(), "not_found");
    let e = kb
        .delete_procedure("acme", Some("shop"), &learned.procedure.id)
        .await
        .expect_err("the client's, not the project's");
    assert_eq!(e.code(), "procedure_scope_conflict");
    let e = kb
        .save_procedure(
            "acme",
            None,
            Some("bug-told".into()),
            def("x", "learned"),
            T0,
        )
        .await
        .expect_err("id of another scope");
    assert_eq!(
        (e.code(), e.http_status()),
        ("procedure_scope_conflict", 409)
    );

    // N concurrent outcomes: exactly N uses.
    let mut calls = tokio::task::JoinSet::new();
    for i in 0..24 {
        let (kb, id) = (kb.clone(), learned.procedure.id.clone());
        calls.spawn(async move {
            kb.record_procedure_outcome("acme", Some("shop"), &id, i % 3 != 0, T0 + i)
                .await
                .expect("outcome")
        });
    }
    while calls.join_next().await.is_some() {}
    let after = kb
        .procedure("acme", None, &learned.procedure.id)
        .await
        .expect("get");
    assert_eq!(
        (
            after.procedure.usage_count,
            after.procedure.success_count,
            after.procedure.failure_count
        ),
        (24, 16, 8)
    );
    assert_eq!(after.procedure.last_used_at, Some(T0 + 23));
    assert!((after.success_rate.expect("rate") - 2.0 / 3.0).abs() < 1e-9);

    // Update keeps statistics; delete removes it from matches at once.
    let updated = kb
        .update_procedure(
            "acme",
            None,
            &learned.procedure.id,
            def("crash report", "learned"),
            T0 + 5,
        )
        .await
        .expect("update");
    assert_eq!(updated.procedure.usage_count, 24);
    assert_eq!(updated.procedure.trigger_pattern, "crash report");
    assert_eq!(
        kb.update_procedure("acme", None, "nope", def("x", "learned"), T0)
            .await
            .err()
            .map(|e| e.code()),
        Some("not_found")
    );
    kb.delete_procedure("acme", Some("shop"), "bug-told")
        .await
        .expect("delete");
    let m = kb
        .match_procedures("acme", Some("shop"), "bug report", 5, T0)
        .await
        .expect("match");
    assert!(
        m.procedures
            .iter()
            .all(|p| p.procedure.procedure.id != "bug-told")
    );
}
