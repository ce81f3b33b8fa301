//! [`AccessStore`] on MongoDB.
//!
//! `tokens`: `_id` the token id, `secretHash` (unique index `tokens_hash`: a token is found by
//! the hash of its secret, and two tokens never share one), `clientId` (listing), the grant as
//! JSON text, times in milliseconds. Revocation is one `findAndModify` whose pipeline keeps
//! an earlier `revokedAt`.
//!
//! `audit`: `_id` the event id, the filtered fields (`at`, `tokenId`, `clientId`, `route`)
//! beside the whole event as JSON text; index `audit_client_at` serves the per-client
//! listing newest first. Appends are `insert`s; a duplicate id (a retried append) is not an
//! error.

use async_trait::async_trait;
use bson::{Bson, Document, doc};
use evident_store::Result;
use evident_store::access::{AccessStore, AuditEvent, AuditFilter, TokenRecord};
use evident_store::queue::Millis;

use crate::MongoStore;
use crate::codes;
use crate::fields::*;
use crate::schema::{AUDIT, TOKENS};

fn opt(v: Option<i64>) -> Bson {
    v.map_or(Bson::Null, Bson::Int64)
}

fn opt_s(v: Option<&str>) -> Bson {
    v.map_or(Bson::Null, |s| Bson::String(s.to_string()))
}

pub(crate) fn create_token_command(t: &TokenRecord, grant: &str) -> Document {
    doc! {
        "insert": TOKENS,
        "documents": [{
            "_id": t.id.as_str(),
            "name": t.name.as_str(),
            "secretHash": t.secret_hash.as_str(),
            "clientId": opt_s(t.grant.client_id.as_deref()),
            "grant": grant,
            "createdAt": t.created_at,
            "expiresAt": opt(t.expires_at),
            "revokedAt": opt(t.revoked_at),
            "createdBy": opt_s(t.created_by.as_deref()),
        }],
    }
}

pub(crate) fn find_token_command(field: &str, value: &str) -> Document {
    doc! {"find": TOKENS, "filter": {field: value}, "limit": 1, "singleBatch": true}
}

pub(crate) fn list_tokens_command(client: Option<&str>) -> Document {
    let filter = match client {
        Some(c) => doc! {"clientId": c},
        None => doc! {},
    };
    doc! {"find": TOKENS, "filter": filter, "sort": {"createdAt": 1, "_id": 1}}
}

pub(crate) fn revoke_command(id: &str, now: Millis) -> Document {
    doc! {
        "findAndModify": TOKENS,
        "query": {"_id": id},
        "update": [{"$set": {"revokedAt": {"$ifNull": ["$revokedAt", {"$literal": now}]}}}],
        "new": true,
    }
}

pub(crate) fn append_audit_command(e: &AuditEvent, json: &str) -> Document {
    doc! {
        "insert": AUDIT,
        "documents": [{
            "_id": e.id.as_str(),
            "at": e.at,
            "tokenId": e.token_id.as_str(),
            "clientId": opt_s(e.client_id.as_deref()),
            "route": e.route.as_str(),
            "event": json,
        }],
    }
}

pub(crate) fn list_audit_command(f: &AuditFilter) -> Document {
    let mut filter = Document::new();
    if let Some(c) = &f.client_id {
        filter.insert("clientId", c.as_str());
    }
    if let Some(t) = &f.token_id {
        filter.insert("tokenId", t.as_str());
    }
    if let Some(r) = &f.route {
        filter.insert("route", r.as_str());
    }
    let mut at = Document::new();
    if let Some(s) = f.since {
        at.insert("$gte", s);
    }
    if let Some(b) = f.before {
        at.insert("$lt", b);
    }
    if !at.is_empty() {
        filter.insert("at", at);
    }
    doc! {
        "find": AUDIT,
        "filter": filter,
        "sort": {"at": -1, "_id": -1},
        "limit": f.limit as i64,
    }
}

fn token_from_doc(d: &Document) -> Result<TokenRecord> {
    const WHAT: &str = "token";
    Ok(TokenRecord {
        id: req_str(d, "_id", WHAT)?,
        name: req_str(d, "name", WHAT)?,
        secret_hash: req_str(d, "secretHash", WHAT)?,
        grant: serde_json::from_value(parse_json(d, "grant", WHAT)?)
            .map_err(|e| evident_store::StoreError::corrupt(format!("stored grant: {e}")))?,
        created_at: req_i64(d, "createdAt", WHAT)?,
        expires_at: opt_i64(d, "expiresAt"),
        revoked_at: opt_i64(d, "revokedAt"),
        created_by: opt_str(d, "createdBy"),
    })
}

fn event_from_doc(d: &Document) -> Result<AuditEvent> {
    serde_json::from_value(parse_json(d, "event", "audit event")?)
        .map_err(|e| evident_store::StoreError::corrupt(format!("stored audit event: {e}")))
}

#[async_trait]
impl AccessStore for MongoStore {
    async fn create_token(&self, token: TokenRecord) -> Result<()> {
        let grant = json_text(
            &serde_json::to_value(&token.grant)
                .map_err(|e| evident_store::StoreError::invalid(format!("grant: {e}")))?,
        )?;
        let s = self
            .db()
            .write_allowing(
                "token create",
                create_token_command(&token, &grant),
                &[codes::DUPLICATE_KEY, codes::DUPLICATE_KEY_LEGACY],
            )
            .await?;
        if s.has_error(codes::DUPLICATE_KEY) || s.has_error(codes::DUPLICATE_KEY_LEGACY) {
            return Err(evident_store::StoreError::new(
                evident_store::ErrorKind::Conflict,
                format!("token `{}` (or its secret) exists", token.id),
            ));
        }
        Ok(())
    }

    async fn token_by_hash(&self, secret_hash: &str) -> Result<Option<TokenRecord>> {
        self.db()
            .find_one(
                "token by hash",
                find_token_command("secretHash", secret_hash),
            )
            .await?
            .map(|d| token_from_doc(&d))
            .transpose()
    }

    async fn token(&self, id: &str) -> Result<Option<TokenRecord>> {
        self.db()
            .find_one("token get", find_token_command("_id", id))
            .await?
            .map(|d| token_from_doc(&d))
            .transpose()
    }

    async fn list_tokens(&self, client: Option<&str>) -> Result<Vec<TokenRecord>> {
        self.db()
            .find_decoded("token list", list_tokens_command(client), token_from_doc)
            .await
    }

    async fn revoke_token(&self, id: &str, now: Millis) -> Result<Option<TokenRecord>> {
        self.db()
            .find_and_modify("token revoke", revoke_command(id, now))
            .await?
            .map(|d| token_from_doc(&d))
            .transpose()
    }

    async fn append_audit(&self, event: AuditEvent) -> Result<()> {
        let json = json_text(
            &serde_json::to_value(&event)
                .map_err(|e| evident_store::StoreError::invalid(format!("audit event: {e}")))?,
        )?;
        self.db()
            .write_allowing(
                "audit append",
                append_audit_command(&event, &json),
                &[codes::DUPLICATE_KEY, codes::DUPLICATE_KEY_LEGACY],
            )
            .await?;
        Ok(())
    }

    async fn list_audit(&self, filter: &AuditFilter) -> Result<Vec<AuditEvent>> {
        self.db()
            .find_decoded("audit list", list_audit_command(filter), event_from_doc)
            .await
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::fake::FakeMongo;
    use evident_core::access::{Grant, Role};
    use std::sync::Arc;

    #[tokio::test]
    async fn tokens_and_audit_round_trip_through_the_commands() {
        let store = MongoStore::new(Arc::new(FakeMongo::new()), "evident");
        let token = TokenRecord {
            id: "t1".into(),
            name: "ci".into(),
            secret_hash: "abc".into(),
            grant: Grant::client("$c1", Role::Write),
            created_at: 1_000,
            expires_at: None,
            revoked_at: None,
            created_by: Some("local".into()),
        };
        store.create_token(token.clone()).await.expect("create");
        let dup = store.create_token(token.clone()).await.expect_err("dup");
        assert_eq!(dup.kind, evident_store::ErrorKind::Conflict);
        assert_eq!(
            store.token_by_hash("abc").await.expect("get"),
            Some(token.clone())
        );
        assert_eq!(store.list_tokens(Some("$c1")).await.expect("list").len(), 1);
        assert!(
            store
                .list_tokens(Some("c2"))
                .await
                .expect("list")
                .is_empty()
        );
        let r = store
            .revoke_token("t1", 5)
            .await
            .expect("revoke")
            .expect("t1");
        assert_eq!(r.revoked_at, Some(5));
        let r = store
            .revoke_token("t1", 9)
            .await
            .expect("revoke")
            .expect("t1");
        assert_eq!(r.revoked_at, Some(5), "first revocation kept");

        let event = AuditEvent {
            id: "0000000000010-1".into(),
            at: 10,
            token_id: "t1".into(),
            token_name: "ci".into(),
            method: "POST".into(),
            route: "/api/v1/purge".into(),
            target: "/api/v1/purge".into(),
            client_id: Some("$c1".into()),
            project_id: None,
            group_id: None,
            status: 200,
            outcome: "ok".into(),
        };
        store.append_audit(event.clone()).await.expect("append");
        store
            .append_audit(event.clone())
            .await
            .expect("append twice");
        let got = store
            .list_audit(&AuditFilter {
                client_id: Some("$c1".into()),
                limit: 10,
                ..Default::default()
            })
            .await
            .expect("list");
        assert_eq!(got, vec![event]);
    }
}
