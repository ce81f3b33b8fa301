//! Procedure store cases: definitions replace and keep statistics, scopes stay apart,
//! outcomes count atomically, the nearest procedures come by cosine.

use super::*;
use crate::procedures::{NearestQuery, Procedure, ProcedureSource, ProcedureStep, ProcedureStore};

/// A learned two-step procedure with no outcomes yet: the suite's procedure, and the
/// backends' wire tests' starting point.
pub fn procedure(
    id: &str,
    client: &str,
    project: Option<&str>,
    trigger: &str,
    at: i64,
) -> Procedure {
    Procedure {
        id: id.into(),
        client_id: client.into(),
        project_id: project.map(str::to_string),
        trigger_pattern: trigger.into(),
        steps: vec![
            ProcedureStep {
                agent: "Research".into(),
                action: "search_kb".into(),
                params: Some(serde_json::json!({"depth": 2, "kinds": ["issue"]})),
            },
            ProcedureStep {
                agent: "Coding".into(),
                action: "fix".into(),
                params: None,
            },
        ],
        source: ProcedureSource::Learned,
        success_count: 0,
        failure_count: 0,
        usage_count: 0,
        last_used_at: None,
        created_at: at,
        updated_at: at,
    }
}

/// Stores `p` with `vector`, expecting success (`what` names the step).
async fn put(s: &dyn ProcedureStore, p: Procedure, vector: Vec<f32>, what: &str) -> Procedure {
    s.put_procedure(p, vector).await.expect(what)
}

fn ids(v: &[Procedure]) -> Vec<&str> {
    v.iter().map(|p| p.id.as_str()).collect()
}

/// Put, replace, get, list, delete, scopes and the outcome counters.
pub async fn procedures_keep_statistics_and_scopes(h: &Harness) {
    let now = 1_000_000;
    seed(h, now).await;
    outcomes_count_where_visible(h, now).await;
    replacing_keeps_statistics_and_scope(h, now).await;
    reads_follow_the_visibility_rule(h).await;
    deletes_need_the_exact_scope(h).await;
}

/// `bug` of c1 and of c2, `p1-deploy` and `p2-deploy` of c1's projects.
async fn seed(h: &Harness, now: i64) {
    let s = h.stores.procedures.as_ref();
    let stored = put(
        s,
        procedure("bug", "c1", None, "bug report", now),
        axis(h.dim, 0, 0.0),
        "put",
    )
    .await;
    assert_eq!(stored, procedure("bug", "c1", None, "bug report", now));
    for (id, client, project, trigger, ax) in [
        ("p1-deploy", "c1", Some("p1"), "deploy", 1),
        ("p2-deploy", "c1", Some("p2"), "deploy", 1),
        // The same id under another client.
        ("bug", "c2", None, "other client", 0),
    ] {
        let p = procedure(id, client, project, trigger, now);
        put(s, p, axis(h.dim, ax, 0.0), "put").await;
    }
}

/// Outcomes: counters and last use, only where visible.
async fn outcomes_count_where_visible(h: &Harness, now: i64) {
    let s = h.stores.procedures.as_ref();
    let after = s
        .record_procedure_outcome("c1", Some("p1"), "bug", true, now + 10)
        .await
        .expect("outcome")
        .expect("visible from p1");
    assert_eq!(
        (after.usage_count, after.success_count, after.failure_count),
        (1, 1, 0)
    );
    assert_eq!(after.last_used_at, Some(now + 10));
    let after = s
        .record_procedure_outcome("c1", None, "bug", false, now + 5)
        .await
        .expect("outcome")
        .expect("visible");
    assert_eq!(
        (after.usage_count, after.success_count, after.failure_count),
        (2, 1, 1)
    );
    assert_eq!(after.last_used_at, Some(now + 10), "never moves back");
    assert_eq!(after.success_rate(), Some(0.5));
    assert!(
        s.record_procedure_outcome("c1", None, "p1-deploy", true, now)
            .await
            .expect("outcome")
            .is_none(),
        "the client level does not see a project's procedure"
    );
    assert!(
        s.record_procedure_outcome("c1", Some("p2"), "p1-deploy", true, now)
            .await
            .expect("outcome")
            .is_none(),
        "nor does another project"
    );
}

/// Replacing the definition keeps statistics and creation time; the scope never changes.
async fn replacing_keeps_statistics_and_scope(h: &Harness, now: i64) {
    let s = h.stores.procedures.as_ref();
    let mut changed = procedure("bug", "c1", None, "bug report or crash", now + 100);
    changed.source = ProcedureSource::UserDefined;
    changed.steps.truncate(1);
    let replaced = s
        .put_procedure(changed, axis(h.dim, 0, 0.5))
        .await
        .expect("replace");
    assert_eq!(replaced.trigger_pattern, "bug report or crash");
    assert_eq!(replaced.source, ProcedureSource::UserDefined);
    assert_eq!(replaced.steps.len(), 1);
    assert_eq!(
        (
            replaced.usage_count,
            replaced.success_count,
            replaced.created_at
        ),
        (2, 1, now)
    );
    assert_eq!(replaced.updated_at, now + 100);
    assert_eq!(
        s.get_procedure("c1", None, "bug").await.expect("get"),
        Some(replaced.clone())
    );
    // The scope of an id never changes.
    let moved = s
        .put_procedure(
            procedure("bug", "c1", Some("p1"), "moved", now),
            axis(h.dim, 0, 0.0),
        )
        .await;
    assert_eq!(
        moved.err().map(|e| e.kind),
        Some(crate::ErrorKind::Conflict)
    );
    assert_eq!(
        s.get_procedure("c1", None, "bug")
            .await
            .expect("get")
            .map(|p| p.trigger_pattern),
        Some("bug report or crash".into()),
        "a refused move writes nothing"
    );
}

async fn list(
    h: &Harness,
    project: Option<&'static str>,
    after: Option<&'static str>,
    limit: usize,
) -> Vec<Procedure> {
    h.stores
        .procedures
        .list_procedures("c1", project, after, limit)
        .await
        .expect("list")
}

/// Reads follow the visibility rule.
async fn reads_follow_the_visibility_rule(h: &Harness) {
    let s = h.stores.procedures.as_ref();
    assert_eq!(ids(&list(h, None, None, 10).await), ["bug"]);
    assert_eq!(
        ids(&list(h, Some("p1"), None, 10).await),
        ["bug", "p1-deploy"]
    );
    assert_eq!(ids(&list(h, Some("p1"), None, 1).await), ["bug"]);
    assert_eq!(
        ids(&list(h, Some("p1"), Some("bug"), 10).await),
        ["p1-deploy"]
    );
    assert_eq!(ids(&list(h, Some("p3"), None, 10).await), ["bug"]);
    assert!(
        s.get_procedure("c1", Some("p2"), "p1-deploy")
            .await
            .expect("get")
            .is_none()
    );
    assert_eq!(
        s.get_procedure("c2", None, "bug")
            .await
            .expect("get")
            .map(|p| p.trigger_pattern),
        Some("other client".into())
    );
}

/// Delete only in the exact scope.
async fn deletes_need_the_exact_scope(h: &Harness) {
    let s = h.stores.procedures.as_ref();
    assert!(
        !s.delete_procedure("c1", Some("p1"), "bug")
            .await
            .expect("delete"),
        "a project does not delete the client's procedure"
    );
    assert!(
        s.delete_procedure("c1", Some("p1"), "p1-deploy")
            .await
            .expect("delete")
    );
    assert!(
        !s.delete_procedure("c1", Some("p1"), "p1-deploy")
            .await
            .expect("delete again")
    );
    assert_eq!(ids(&list(h, Some("p1"), None, 10).await), ["bug"]);
}

/// Candidates by cosine: visible only, the floor, the cap, then the closest below it.
pub async fn procedures_nearest_by_cosine(h: &Harness) {
    let s = h.stores.procedures.as_ref();
    let now = 1_000_000;
    // Axis 0 with growing tilts towards axis 1: decreasing cosine to axis 0.
    for (i, tilt) in [0.0f32, 0.5, 1.0, 3.0].iter().enumerate() {
        put(
            s,
            procedure(&format!("a{i}"), "c1", None, "t", now),
            axis(h.dim, 0, *tilt),
            "put",
        )
        .await;
    }
    put(
        s,
        procedure("proj", "c1", Some("p1"), "t", now),
        axis(h.dim, 0, 0.1),
        "put",
    )
    .await;
    put(
        s,
        procedure("other", "c2", None, "t", now),
        axis(h.dim, 0, 0.0),
        "put",
    )
    .await;
    let query = axis(h.dim, 0, 0.0);
    let nearest = |project: Option<&'static str>, min_cosine, max, closest| {
        let query = query.clone();
        async move {
            s.nearest_procedures(NearestQuery {
                client: "c1",
                project,
                vector: &query,
                min_cosine,
                max,
                closest,
            })
            .await
            .expect("nearest")
        }
    };
    let got = nearest(None, 0.6, 10, 0).await;
    let names: Vec<&str> = got.iter().map(|s| s.procedure.id.as_str()).collect();
    // cos = 1 / sqrt(1 + tilt²): 1, 0.894, 0.707, 0.316.
    assert_eq!(names, ["a0", "a1", "a2"]);
    assert!((got[0].cosine - 1.0).abs() < 1e-4);
    assert!((got[1].cosine - 0.894).abs() < 1e-3);
    let got = nearest(Some("p1"), 0.6, 2, 1).await;
    let names: Vec<&str> = got.iter().map(|s| s.procedure.id.as_str()).collect();
    assert_eq!(
        names,
        ["a0", "proj", "a3"],
        "the cap, then the closest below"
    );
    let got = nearest(None, 0.99, 5, 2).await;
    let names: Vec<&str> = got.iter().map(|s| s.procedure.id.as_str()).collect();
    assert_eq!(
        names,
        ["a0", "a1", "a2"],
        "a1 and a2 are the closest misses"
    );
    assert!(
        nearest(Some("p2"), 0.0, 10, 10)
            .await
            .iter()
            .all(|s| s.procedure.client_id == "c1" && s.procedure.project_id.is_none()),
        "another project sees only the client's own"
    );
}

/// N concurrent outcomes add exactly N uses (no lost update).
pub async fn procedure_outcomes_are_atomic(h: &Harness) {
    let s = h.stores.procedures.as_ref();
    let now = 1_000_000;
    put(
        s,
        procedure("hot", "c1", None, "t", now),
        axis(h.dim, 0, 0.0),
        "put",
    )
    .await;
    const N: u64 = 40;
    // All in flight at once: each is a separate call into the store.
    let calls: Vec<_> = (0..N)
        .map(|i| s.record_procedure_outcome("c1", None, "hot", i % 4 != 0, now + i as i64))
        .collect();
    for r in join_all(calls).await {
        r.expect("outcome").expect("found");
    }
    let p = s
        .get_procedure("c1", None, "hot")
        .await
        .expect("get")
        .expect("found");
    assert_eq!(p.usage_count, N);
    assert_eq!((p.success_count, p.failure_count), (N - N / 4, N / 4));
    assert_eq!(p.last_used_at, Some(now + N as i64 - 1));
}

/// Polls every future until all are done (the suite depends on no runtime); the backends'
/// tests of concurrent calls use it too.
pub async fn join_all<F: std::future::Future + Unpin>(futures: Vec<F>) -> Vec<F::Output> {
    use std::task::Poll;
    let mut futures: Vec<Option<F>> = futures.into_iter().map(Some).collect();
    let mut outs: Vec<Option<F::Output>> = futures.iter().map(|_| None).collect();
    std::future::poll_fn(move |cx| {
        for (f, out) in futures.iter_mut().zip(outs.iter_mut()) {
            if let Some(fut) = f
                && let Poll::Ready(v) = std::pin::Pin::new(fut).poll(cx)
            {
                *out = Some(v);
                *f = None;
            }
        }
        if futures.iter().all(Option::is_none) {
            Poll::Ready(outs.iter_mut().filter_map(Option::take).collect())
        } else {
            Poll::Pending
        }
    })
    .await
}
