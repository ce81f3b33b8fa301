//! The page shell, navigation and the small helpers every page uses: HTML escaping (every
//! stored string goes through [`esc`]), URL encoding, times, tables.

use std::fmt::Write;

use axum::http::{StatusCode, header};
use axum::response::{IntoResponse, Response};

use super::session::Ctx;

pub const HTML: &str = "text/html; charset=utf-8";

/// Escapes text for HTML content and attribute values.
pub fn esc(s: &str) -> String {
    let mut out = String::with_capacity(s.len() + s.len() / 8);
    for c in s.chars() {
        match c {
            '&' => out.push_str("&amp;"),
            '<' => out.push_str("&lt;"),
            '>' => out.push_str("&gt;"),
            '"' => out.push_str("&quot;"),
            '\'' => out.push_str("&#39;"),
            c => out.push(c),
        }
    }
    out
}

/// Percent-encodes a query-parameter value or a path segment.
pub fn url_enc(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    for b in s.bytes() {
        if b.is_ascii_alphanumeric() || matches!(b, b'-' | b'_' | b'.' | b'~') {
            out.push(b as char);
        } else {
            let _ = write!(out, "%{b:02X}");
        }
    }
    out
}

/// A time in milliseconds since the epoch as `YYYY-MM-DD HH:MM:SS` UTC.
pub fn time(ms: i64) -> String {
    let secs = ms.div_euclid(1000);
    let (days, rem) = (secs.div_euclid(86_400), secs.rem_euclid(86_400));
    // Civil date from days since 1970-01-01 (H. Hinnant's algorithm).
    let z = days + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z.rem_euclid(146_097);
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let d = doy - (153 * mp + 2) / 5 + 1;
    let m = if mp < 10 { mp + 3 } else { mp - 9 };
    let y = yoe + era * 400 + i64::from(m <= 2);
    format!(
        "{y:04}-{m:02}-{d:02} {:02}:{:02}:{:02}",
        rem / 3600,
        rem % 3600 / 60,
        rem % 60
    )
}

pub fn opt_time(ms: Option<i64>) -> String {
    ms.map(time).unwrap_or_else(|| "—".into())
}

/// A table: header cells and rows of already-escaped HTML cells.
pub fn table(id: &str, head: &[&str], rows: &[Vec<String>]) -> String {
    let mut out = format!("<div class=\"scroll\"><table id=\"{id}\"><thead><tr>");
    for h in head {
        let _ = write!(out, "<th>{}</th>", esc(h));
    }
    out.push_str("</tr></thead><tbody>");
    if rows.is_empty() {
        let _ = write!(
            out,
            "<tr><td colspan=\"{}\" class=\"muted\">none</td></tr>",
            head.len().max(1)
        );
    }
    for r in rows {
        out.push_str("<tr>");
        for c in r {
            let _ = write!(out, "<td>{c}</td>");
        }
        out.push_str("</tr>");
    }
    out.push_str("</tbody></table></div>");
    out
}

/// `<a href>` with an escaped target and text.
pub fn link(href: &str, text: &str) -> String {
    format!("<a href=\"{}\">{}</a>", esc(href), esc(text))
}

/// Hidden form fields carrying the page's scope (`clientId`, `projectId`, `groupId`), so a
/// filter or search form submitted from it stays in that scope.
pub fn scope_inputs(scope: &crate::auth::scope::ScopeFields) -> String {
    [
        ("clientId", &scope.client_id),
        ("projectId", &scope.project_id),
        ("groupId", &scope.group_id),
    ]
    .iter()
    .filter_map(|(k, v)| {
        v.as_ref()
            .map(|v| format!("<input type=\"hidden\" name=\"{k}\" value=\"{}\">", esc(v)))
    })
    .collect()
}

/// A state badge (`ok`, `error`, `queued`, …).
pub fn badge(state: &str) -> String {
    format!(
        "<span class=\"badge s-{}\">{}</span>",
        esc(&state.replace('_', "-")),
        esc(state)
    )
}

fn nav(ctx: &Ctx, current: &str) -> String {
    let mut out = String::from("<nav><a class=\"brand\" href=\"/ui\">Evident</a><ul>");
    for (path, name) in [
        ("/ui", "Overview"),
        ("/ui/sources", "Sources"),
        ("/ui/queue", "Queue"),
        ("/ui/search", "Search"),
    ] {
        let cls = if path == current { " class=\"on\"" } else { "" };
        let _ = write!(
            out,
            "<li><a{cls} href=\"{}\">{name}</a></li>",
            esc(&ctx.link(path, ""))
        );
    }
    let who = format!(
        "{} · {}",
        ctx.principal.name,
        ctx.principal.grant.describe()
    );
    let _ = write!(
        out,
        "</ul><div class=\"who\"><span title=\"{0}\">{0}</span>{1}</div></nav>",
        esc(&who),
        ctx.form(
            "/ui/logout",
            "<button class=\"link\" type=\"submit\">Log out</button>"
        )
    );
    out
}

/// Which client (and project) the page is about, when the token could see several.
fn scope_bar(ctx: &Ctx, current: &str) -> String {
    let grant = &ctx.principal.grant;
    let many_projects =
        grant.client_id.is_none() || grant.is_narrowed() || ctx.scope.project_id.is_some();
    if grant.client_id.is_some() && !many_projects {
        return String::new();
    }
    let client = ctx.scope.client_id.as_deref().unwrap_or("");
    let project = ctx.scope.project_id.as_deref().unwrap_or("");
    let hint = if client.is_empty() {
        "<span class=\"muted\">This token sees several clients: name one.</span>"
    } else {
        ""
    };
    format!(
        "<form class=\"scope\" method=\"get\" action=\"{}\">\
         <label>client <input name=\"clientId\" value=\"{}\" size=\"12\"></label>\
         <label>project <input name=\"projectId\" value=\"{}\" size=\"10\"></label>\
         <button type=\"submit\">Show</button>{hint}</form>",
        esc(current),
        esc(client),
        esc(project)
    )
}

/// A full console page.
pub fn page(ctx: &Ctx, current: &str, title: &str, body: &str) -> Response {
    let html = format!(
        "<!doctype html><html lang=\"en\"><head><meta charset=\"utf-8\">\
         <meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">\
         <title>{} · Evident</title><link rel=\"stylesheet\" href=\"/ui/assets/ui.css\">\
         <script src=\"/ui/assets/ui.js\" defer></script></head><body>{}<main>{}<h1>{}</h1>{body}</main></body></html>",
        esc(title),
        nav(ctx, current),
        scope_bar(ctx, current),
        esc(title),
    );
    html_response(StatusCode::OK, html)
}

/// Only the live part of a page (`?fragment=1`).
pub fn fragment(body: String) -> Response {
    html_response(StatusCode::OK, body)
}

pub fn html_response(status: StatusCode, html: String) -> Response {
    (
        status,
        [
            (header::CONTENT_TYPE, HTML),
            (header::CACHE_CONTROL, "no-store"),
        ],
        html,
    )
        .into_response()
}

/// A page without navigation (login, errors).
pub fn bare_page(title: &str, body: &str) -> String {
    format!(
        "<!doctype html><html lang=\"en\"><head><meta charset=\"utf-8\">\
         <meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">\
         <title>{} · Evident</title><link rel=\"stylesheet\" href=\"/ui/assets/ui.css\"></head>\
         <body><main>{body}</main></body></html>",
        esc(title)
    )
}

/// An error as a page: its status, stable code and message.
pub fn error_page(status: StatusCode, code: &str, message: &str) -> Response {
    let body = format!(
        "<section class=\"error-page\"><h1>{} {}</h1><p><code id=\"error-code\">{}</code></p><p>{}</p>\
         <p><a href=\"/ui\">Back to the console</a></p></section>",
        status.as_u16(),
        esc(status.canonical_reason().unwrap_or("")),
        esc(code),
        esc(message)
    );
    html_response(status, bare_page("Error", &body))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn escaping_and_encoding() {
        assert_eq!(
            esc("<script>alert('x')</script> & \"q\""),
            "&lt;script&gt;alert(&#39;x&#39;)&lt;/script&gt; &amp; &quot;q&quot;"
        );
        assert_eq!(url_enc("a b/c?d=é"), "a%20b%2Fc%3Fd%3D%C3%A9");
    }

    #[test]
    fn times_are_utc_calendar_dates() {
        for (ms, s) in [
            (0, "1970-01-01 00:00:00"),
            (951_782_400_000, "2000-02-29 00:00:00"),
            (1_795_000_000_123, "2026-11-18 11:06:40"),
        ] {
            assert_eq!(time(ms), s);
        }
    }
}
