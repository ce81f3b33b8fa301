//! AccessStore over SQLite: `tokens` (one row per token, the grant as JSON, the secret's
//! hash unique) and `audit` (append-only; the event as JSON beside the columns it is
//! filtered by).

use async_trait::async_trait;
use evident_store::Result;
use evident_store::access::{AccessStore, AuditEvent, AuditFilter, TokenRecord};
use evident_store::queue::Millis;
use rusqlite::{OptionalExtension, params};

use crate::{EmbeddedStore, json_err, sql, sqlite_err};

const TOKEN_COLUMNS: &str =
    "id, name, secret_hash, grant_json, created_at, expires_at, revoked_at, created_by";

fn token_row(r: &rusqlite::Row<'_>) -> rusqlite::Result<(TokenRecord, String)> {
    Ok((
        TokenRecord {
            id: r.get(0)?,
            name: r.get(1)?,
            secret_hash: r.get(2)?,
            grant: evident_core::access::Grant::operator(),
            created_at: r.get(4)?,
            expires_at: r.get(5)?,
            revoked_at: r.get(6)?,
            created_by: r.get(7)?,
        },
        r.get(3)?,
    ))
}

fn parse_token((mut t, grant): (TokenRecord, String)) -> Result<TokenRecord> {
    t.grant = serde_json::from_str(&grant).map_err(json_err)?;
    Ok(t)
}

fn one_token(
    conn: &rusqlite::Connection,
    column: &'static str,
    value: &str,
) -> Result<Option<TokenRecord>> {
    conn.prepare_cached(&format!(
        "SELECT {TOKEN_COLUMNS} FROM tokens WHERE {column} = ?1"
    ))
    .map_err(sqlite_err)?
    .query_row([value], token_row)
    .optional()
    .map_err(sqlite_err)?
    .map(parse_token)
    .transpose()
}

#[async_trait]
impl AccessStore for EmbeddedStore {
    async fn create_token(&self, token: TokenRecord) -> Result<()> {
        let grant = serde_json::to_string(&token.grant).map_err(json_err)?;
        self.write_grouped(move |conn| {
            conn.prepare_cached(&format!(
                "INSERT INTO tokens({TOKEN_COLUMNS}, client_id) VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9)"
            ))
            .map_err(sqlite_err)?
            .execute(params![
                token.id,
                token.name,
                token.secret_hash,
                grant,
                token.created_at,
                token.expires_at,
                token.revoked_at,
                token.created_by,
                token.grant.client_id,
            ])
            .map_err(sqlite_err)?;
            Ok(())
        })
        .await
    }

    async fn token_by_hash(&self, secret_hash: &str) -> Result<Option<TokenRecord>> {
        let hash = secret_hash.to_string();
        self.read(move |conn, _| one_token(conn, "secret_hash", &hash))
            .await
    }

    async fn token(&self, id: &str) -> Result<Option<TokenRecord>> {
        let id = id.to_string();
        self.read(move |conn, _| one_token(conn, "id", &id)).await
    }

    async fn list_tokens(&self, client: Option<&str>) -> Result<Vec<TokenRecord>> {
        let client = client.map(str::to_string);
        self.read(move |conn, _| {
            let q = format!(
                "SELECT {TOKEN_COLUMNS} FROM tokens WHERE ?1 IS NULL OR client_id = ?1 ORDER BY created_at, id"
            );
            let rows = sql::rows(conn, &q, [client], token_row)?;
            rows.into_iter().map(parse_token).collect()
        })
        .await
    }

    async fn revoke_token(&self, id: &str, now: Millis) -> Result<Option<TokenRecord>> {
        let id = id.to_string();
        self.write_grouped(move |conn| {
            conn.prepare_cached(
                "UPDATE tokens SET revoked_at = COALESCE(revoked_at, ?2) WHERE id = ?1",
            )
            .map_err(sqlite_err)?
            .execute(params![id, now])
            .map_err(sqlite_err)?;
            one_token(conn, "id", &id)
        })
        .await
    }

    async fn append_audit(&self, event: AuditEvent) -> Result<()> {
        let json = serde_json::to_string(&event).map_err(json_err)?;
        self.write_grouped(move |conn| {
            conn.prepare_cached(
                "INSERT OR IGNORE INTO audit(id, at, token_id, client_id, route, event) VALUES (?1, ?2, ?3, ?4, ?5, ?6)",
            )
            .map_err(sqlite_err)?
            .execute(params![
                event.id,
                event.at,
                event.token_id,
                event.client_id,
                event.route,
                json
            ])
            .map_err(sqlite_err)?;
            Ok(())
        })
        .await
    }

    async fn list_audit(&self, filter: &AuditFilter) -> Result<Vec<AuditEvent>> {
        let f = filter.clone();
        self.read(move |conn, _| {
            let mut stmt = conn
                .prepare_cached(
                    "SELECT event FROM audit WHERE (?1 IS NULL OR client_id = ?1) \
                     AND (?2 IS NULL OR token_id = ?2) AND (?3 IS NULL OR route = ?3) \
                     AND (?4 IS NULL OR at >= ?4) AND (?5 IS NULL OR at < ?5) \
                     ORDER BY at DESC, id DESC LIMIT ?6",
                )
                .map_err(sqlite_err)?;
            let rows = stmt
                .query_map(
                    params![
                        f.client_id,
                        f.token_id,
                        f.route,
                        f.since,
                        f.before,
                        f.limit as i64
                    ],
                    |r| r.get::<_, String>(0),
                )
                .map_err(sqlite_err)?
                .collect::<rusqlite::Result<Vec<_>>>()
                .map_err(sqlite_err)?;
            rows.iter()
                .map(|j| serde_json::from_str(j).map_err(json_err))
                .collect()
        })
        .await
    }
}
