//! Conformance cases of the access state: tokens and the audit log.

use evident_core::access::{Grant, Role};

use super::Harness;
use crate::access::{AuditEvent, AuditFilter, TokenRecord};

fn token(id: &str, hash: &str, grant: Grant, at: i64) -> TokenRecord {
    TokenRecord {
        id: id.into(),
        name: format!("{id} name"),
        secret_hash: hash.into(),
        grant,
        created_at: at,
        expires_at: Some(at + 10_000),
        revoked_at: None,
        created_by: Some("bootstrap".into()),
    }
}

pub async fn tokens_are_found_by_hash_listed_by_client_and_revoked_once(h: &Harness) {
    let a = &h.stores.access;
    let narrowed = Grant {
        role: Role::Write,
        client_id: Some("c1".into()),
        projects: vec!["p1".into()],
        groups: vec![],
    };
    a.create_token(token("t1", "h1", narrowed.clone(), 1_000))
        .await
        .expect("create");
    a.create_token(token("t2", "h2", Grant::client("c2", Role::Read), 2_000))
        .await
        .expect("create");
    a.create_token(token("t3", "h3", Grant::operator(), 3_000))
        .await
        .expect("create");
    let dup = a
        .create_token(token("t1", "h9", Grant::operator(), 4_000))
        .await
        .expect_err("same id");
    assert_eq!(dup.kind, crate::ErrorKind::Conflict);
    let dup = a
        .create_token(token("t9", "h1", Grant::operator(), 4_000))
        .await
        .expect_err("same hash");
    assert_eq!(dup.kind, crate::ErrorKind::Conflict);

    let found = a.token_by_hash("h1").await.expect("get").expect("found");
    assert_eq!(found.grant, narrowed);
    assert_eq!(found.secret_hash, "h1");
    assert_eq!(found.expires_at, Some(11_000));
    assert!(a.token_by_hash("nope").await.expect("get").is_none());
    assert_eq!(
        a.token("t2").await.expect("get").expect("t2").name,
        "t2 name"
    );

    let ids = |v: Vec<TokenRecord>| v.into_iter().map(|t| t.id).collect::<Vec<_>>();
    assert_eq!(ids(a.list_tokens(Some("c1")).await.expect("list")), ["t1"]);
    assert_eq!(
        ids(a.list_tokens(None).await.expect("list")),
        ["t1", "t2", "t3"]
    );

    let revoked = a
        .revoke_token("t1", 5_000)
        .await
        .expect("revoke")
        .expect("t1");
    assert_eq!(revoked.revoked_at, Some(5_000));
    assert!(!revoked.is_live(5_000));
    let again = a
        .revoke_token("t1", 6_000)
        .await
        .expect("revoke")
        .expect("t1");
    assert_eq!(
        again.revoked_at,
        Some(5_000),
        "the first revocation time stays"
    );
    assert!(
        a.revoke_token("t404", 6_000)
            .await
            .expect("revoke")
            .is_none()
    );
    let stored = a.token_by_hash("h1").await.expect("get").expect("kept");
    assert_eq!(stored.revoked_at, Some(5_000), "revoked tokens stay listed");
}

fn event(n: u32, at: i64, client: Option<&str>, token: &str, route: &str) -> AuditEvent {
    AuditEvent {
        id: format!("{at:013}-{n}"),
        at,
        token_id: token.into(),
        token_name: format!("{token} name"),
        method: "POST".into(),
        route: route.into(),
        target: route.into(),
        client_id: client.map(str::to_string),
        project_id: None,
        group_id: None,
        status: 200,
        outcome: "ok".into(),
    }
}

pub async fn audit_events_are_kept_filtered_and_paged_newest_first(h: &Harness) {
    let a = &h.stores.access;
    let events = [
        event(1, 1_000, Some("c1"), "t1", "/api/v1/ingest"),
        event(2, 2_000, Some("c2"), "t2", "/api/v1/ingest"),
        event(3, 3_000, Some("c1"), "t1", "/api/v1/purge"),
        event(4, 4_000, None, "t3", "/api/v1/tokens"),
        event(5, 5_000, Some("c1"), "t4", "/api/v1/ingest"),
    ];
    for e in &events {
        a.append_audit(e.clone()).await.expect("append");
    }
    // Appending the same event again changes nothing.
    a.append_audit(events[0].clone()).await.expect("append");
    let list = |f: AuditFilter| async move {
        a.list_audit(&f)
            .await
            .expect("list")
            .into_iter()
            .map(|e| e.at)
            .collect::<Vec<_>>()
    };
    let all = AuditFilter {
        limit: 100,
        ..Default::default()
    };
    assert_eq!(list(all.clone()).await, [5_000, 4_000, 3_000, 2_000, 1_000]);
    let c1 = AuditFilter {
        client_id: Some("c1".into()),
        ..all.clone()
    };
    assert_eq!(list(c1.clone()).await, [5_000, 3_000, 1_000]);
    assert_eq!(
        list(AuditFilter {
            limit: 2,
            ..c1.clone()
        })
        .await,
        [5_000, 3_000]
    );
    assert_eq!(
        list(AuditFilter {
            before: Some(3_000),
            ..c1.clone()
        })
        .await,
        [1_000]
    );
    assert_eq!(
        list(AuditFilter {
            route: Some("/api/v1/ingest".into()),
            since: Some(2_000),
            ..all.clone()
        })
        .await,
        [5_000, 2_000]
    );
    assert_eq!(
        list(AuditFilter {
            token_id: Some("t1".into()),
            ..all.clone()
        })
        .await,
        [3_000, 1_000]
    );
    let got = a.list_audit(&c1).await.expect("list");
    assert_eq!(got[2], events[0], "stored as sent");
}
