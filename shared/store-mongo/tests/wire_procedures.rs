//! Wire tests of the procedure store: the exact commands each operation sends and how it
//! reads the replies, against recorded exchanges in `tests/fixtures/procedures.json`.

use std::sync::Arc;

use evident_store::ErrorKind;
use evident_store::conformance::assert_error;
use evident_store::procedures::{NearestQuery, Procedure, ProcedureStore};
use evident_store_mongo::{MongoStore, RecordedTransport};
use serde_json::json;

fn fixture(scenario: &str) -> (Arc<RecordedTransport>, MongoStore) {
    let path = format!(
        "{}/tests/fixtures/procedures.json",
        env!("CARGO_MANIFEST_DIR")
    );
    let text = std::fs::read_to_string(&path).expect("fixture file");
    let transport =
        Arc::new(RecordedTransport::from_fixture(&text, scenario).expect("fixture scenario"));
    let store = MongoStore::new(transport.clone(), "evident");
    (transport, store)
}

fn procedure(project: Option<&str>) -> Procedure {
    let mut p =
        evident_store::conformance::procedure("bug", "c1", project, "bug report", 1_000_000);
    p.steps[0].params = Some(json!({"depth": 2}));
    p
}

#[tokio::test]
async fn put_is_one_pipeline_upsert_pinned_to_the_scope() {
    let (t, store) = fixture("put_upserts_with_a_pipeline_that_keeps_statistics");
    let stored = store
        .put_procedure(procedure(None), vec![0.0, 2.0])
        .await
        .expect("put");
    assert_eq!(stored, procedure(None));
    t.assert_done();

    let (t, store) = fixture("put_into_another_scope_hits_the_id_and_is_a_conflict");
    let e = store
        .put_procedure(procedure(Some("p1")), vec![0.0, 2.0])
        .await
        .expect_err("conflict");
    assert_error(&e, ErrorKind::Conflict, "another scope");
    t.assert_done();
}

#[tokio::test]
async fn an_outcome_is_one_find_and_modify_with_inc_and_max() {
    let (t, store) = fixture("outcome_is_one_find_and_modify_with_inc_and_max");
    let after = store
        .record_procedure_outcome("c1", Some("p1"), "bug", false, 1_000_500)
        .await
        .expect("outcome")
        .expect("found");
    assert_eq!(
        (after.usage_count, after.success_count, after.failure_count),
        (4, 3, 1)
    );
    assert_eq!(after.last_used_at, Some(1_000_500));
    assert_eq!(after.success_rate(), Some(0.75));
    assert!(
        store
            .record_procedure_outcome("c1", Some("p1"), "gone", true, 1_000_600)
            .await
            .expect("outcome")
            .is_none()
    );
    t.assert_done();
}

#[tokio::test]
async fn reads_and_deletes_apply_the_scope() {
    let (t, store) = fixture("get_list_and_delete_apply_the_scope");
    let got = store
        .get_procedure("c1", Some("p1"), "bug")
        .await
        .expect("get")
        .expect("found");
    assert_eq!(got.last_used_at, Some(1_000_100));
    let listed = store
        .list_procedures("c1", Some("p1"), Some("a"), 10)
        .await
        .expect("list");
    let ids: Vec<(&str, Option<&str>)> = listed
        .iter()
        .map(|p| (p.id.as_str(), p.project_id.as_deref()))
        .collect();
    assert_eq!(ids, [("bug", None), ("deploy", Some("p1"))]);
    assert!(
        store
            .delete_procedure("c1", Some("p1"), "deploy")
            .await
            .expect("delete")
    );
    assert!(
        !store
            .delete_procedure("c1", Some("p1"), "bug")
            .await
            .expect("delete")
    );
    t.assert_done();
}

#[tokio::test]
async fn nearest_reads_the_readers_procedures_and_ranks_them_in_process() {
    let (t, store) = fixture("nearest_reads_the_readers_procedures_and_ranks_in_process");
    let near = store
        .nearest_procedures(NearestQuery {
            client: "c1",
            project: Some("p1"),
            vector: &[0.0, 3.0],
            min_cosine: 0.7,
            max: 5,
            closest: 1,
        })
        .await
        .expect("nearest");
    let got: Vec<(&str, f32)> = near
        .iter()
        .map(|s| (s.procedure.id.as_str(), (s.cosine * 100.0).round() / 100.0))
        .collect();
    assert_eq!(got, [("deploy", 1.0), ("mail", 0.8), ("bug", 0.0)]);
    t.assert_done();
}
