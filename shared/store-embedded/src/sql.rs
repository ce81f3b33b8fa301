//! Small SQL builders: the visibility rule as a WHERE fragment, `IN` lists, LIKE escaping,
//! statements' rows collected, and the scope columns read back.

use evident_core::{Scope, Visibility};
use rusqlite::types::Value;

/// Every row of the (cached) statement `sql` with `params`, each mapped by `row`.
pub fn rows<T, P: rusqlite::Params>(
    conn: &rusqlite::Connection,
    sql: &str,
    params: P,
    row: impl FnMut(&rusqlite::Row<'_>) -> rusqlite::Result<T>,
) -> evident_store::Result<Vec<T>> {
    let mut stmt = conn.prepare_cached(sql).map_err(crate::sqlite_err)?;
    let rows = stmt.query_map(params, row).map_err(crate::sqlite_err)?;
    rows.collect::<rusqlite::Result<Vec<T>>>()
        .map_err(crate::sqlite_err)
}

/// The scope stored in the three columns `client_id, project_id, group_id` of a row, the
/// first at index `first` (every table stores a scope in that order).
pub fn scope_at(r: &rusqlite::Row<'_>, first: usize) -> rusqlite::Result<Scope> {
    Ok(Scope {
        client_id: r.get(first)?,
        project_id: r.get(first + 1)?,
        group_id: r.get(first + 2)?,
    })
}

/// Appends the visibility rule (from [`Visibility::clauses`], the single rule in core) as a
/// parenthesised condition over `{prefix}client_id/project_id/group_id`, pushing its
/// parameters in order.
pub fn visibility(vis: &Visibility, prefix: &str, sql: &mut String, params: &mut Vec<Value>) {
    sql.push('(');
    for (i, clause) in vis.clauses().iter().enumerate() {
        if i > 0 {
            sql.push_str(" OR ");
        }
        sql.push('(');
        eq_or_null(
            &mut *sql,
            params,
            prefix,
            "client_id",
            clause.client_id.as_deref(),
        );
        sql.push_str(" AND ");
        eq_or_null(
            &mut *sql,
            params,
            prefix,
            "project_id",
            clause.project_id.as_deref(),
        );
        if let Some(group) = &clause.group_id {
            sql.push_str(" AND ");
            eq_or_null(&mut *sql, params, prefix, "group_id", group.as_deref());
        }
        sql.push(')');
    }
    sql.push(')');
}

fn eq_or_null(sql: &mut String, params: &mut Vec<Value>, prefix: &str, col: &str, v: Option<&str>) {
    match v {
        None => sql.push_str(&format!("{prefix}{col} IS NULL")),
        Some(v) => {
            sql.push_str(&format!("{prefix}{col} = ?"));
            params.push(Value::Text(v.to_string()));
        }
    }
}

/// `(?, ?, …)` for `n` items (n ≥ 1).
pub fn placeholders(n: usize) -> String {
    let mut s = String::with_capacity(n * 3 + 2);
    s.push('(');
    for i in 0..n {
        if i > 0 {
            s.push_str(", ");
        }
        s.push('?');
    }
    s.push(')');
    s
}

pub fn texts<'a>(items: impl IntoIterator<Item = &'a str>) -> Vec<Value> {
    items
        .into_iter()
        .map(|s| Value::Text(s.to_string()))
        .collect()
}

/// Escapes `%`, `_` and `\` for a `LIKE … ESCAPE '\'` pattern.
pub fn like_escape(s: &str) -> String {
    let mut out = String::with_capacity(s.len() + 2);
    for c in s.chars() {
        if matches!(c, '%' | '_' | '\\') {
            out.push('\\');
        }
        out.push(c);
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use evident_core::Scope;

    #[test]
    fn visibility_fragment_has_one_param_per_value() {
        let vis = Visibility::of(Scope::client("c").with_project("p").with_group("g"));
        let (mut sql, mut params) = (String::new(), Vec::new());
        visibility(&vis, "c.", &mut sql, &mut params);
        assert_eq!(sql.matches('?').count(), params.len());
        assert!(
            sql.starts_with(
                "((c.client_id IS NULL AND c.project_id IS NULL AND c.group_id IS NULL)"
            )
        );
    }
}
