//! JSON helpers: a body parsed or described for the error, fields read leniently or required by path.

use super::*;

/// The body as JSON, or what came back instead.
pub(super) fn parse_body(body: &[u8]) -> Result<Value, TrackerError> {
    parse_json(body).map_err(TrackerError::NotJson)
}

/// A REST API's JSON body (a UTF-8 BOM allowed); when it is not JSON, what it is instead
/// (shared with the wiki extractor, whose APIs fail the same ways).
pub(crate) fn parse_json(body: &[u8]) -> Result<Value, String> {
    let body = body.strip_prefix(b"\xef\xbb\xbf").unwrap_or(body);
    serde_json::from_slice(body).map_err(|e| sniff(body, &e))
}

/// Says what a non-JSON body is (HTML page with its title, other markup, binary, text), with
/// its start, so an operator sees at a glance that a proxy answered instead of the tracker.
pub(super) fn sniff(body: &[u8], err: &serde_json::Error) -> String {
    let cut = &body[..body.len().min(SNIFF_BYTES)];
    if let Err(e) = std::str::from_utf8(cut)
        && e.error_len().is_some()
    {
        return format!("binary data ({} bytes)", body.len());
    }
    let head = String::from_utf8_lossy(cut);
    let text = head.trim_start();
    if text.is_empty() {
        return if body.is_empty() {
            "an empty body".into()
        } else {
            format!("only whitespace ({} bytes)", body.len())
        };
    }
    let lower = text.to_ascii_lowercase();
    if lower.starts_with("<!doctype html") || (lower.starts_with('<') && lower.contains("<html")) {
        let title = html_title(text, &lower)
            .map(|t| format!(" titled \"{t}\""))
            .unwrap_or_default();
        return format!(
            "an HTML page{title} ({} bytes): {}",
            body.len(),
            preview(text, PREVIEW_CHARS)
        );
    }
    if lower.starts_with('<') {
        return format!(
            "XML or other markup ({} bytes): {}",
            body.len(),
            preview(text, PREVIEW_CHARS)
        );
    }
    format!(
        "text ({} bytes; {err}): {}",
        body.len(),
        preview(text, PREVIEW_CHARS)
    )
}

/// The `<title>` of an HTML page. `lower` is `text` ASCII-lower-cased (same byte offsets).
pub(super) fn html_title(text: &str, lower: &str) -> Option<String> {
    let open = lower.find("<title")?;
    let start = open + lower[open..].find('>')? + 1;
    let end = start + lower[start..].find("</title")?;
    let title = preview(&text[start..end], PREVIEW_CHARS);
    (!title.is_empty()).then_some(title)
}

/// Whitespace collapsed, control characters dropped, at most `max` chars (`…` when cut).
pub(super) fn preview(text: &str, max: usize) -> String {
    let mut out = String::new();
    let mut count = 0;
    for word in text.split_whitespace() {
        let word: String = word.chars().filter(|c| !c.is_control()).collect();
        if word.is_empty() {
            continue;
        }
        let sep = (!out.is_empty()).then_some(' ');
        for c in sep.into_iter().chain(word.chars()) {
            if count == max {
                out.push('…');
                return out;
            }
            out.push(c);
            count += 1;
        }
    }
    out
}

/// A title as stored (source title, node label): exactly as written — spaces, runs of spaces
/// and trailing spaces kept — except that control characters, which the knowledge base
/// refuses in titles, become spaces; at most [`MAX_TITLE_CHARS`] chars (`…` when cut);
/// credentials redacted.
pub(super) fn exact_line(text: &str) -> String {
    let mut line: String = text
        .chars()
        .map(|c| if c.is_control() { ' ' } else { c })
        .take(MAX_TITLE_CHARS)
        .collect();
    if text.chars().nth(MAX_TITLE_CHARS).is_some() {
        line.push('…');
    }
    match redact(&line) {
        Some((clean, _)) => clean,
        None => line,
    }
}

/// Text as is, credentials redacted (props stored beside the chunks, where chunk redaction
/// does not reach).
pub(super) fn exact_text(text: &str) -> String {
    redact(text).map_or_else(|| text.to_string(), |(clean, _)| clean)
}

/// One line of text for headers, titles and history: [`preview`] under another name, where
/// the point is that no newline or control character gets through.
pub(super) fn one_line(text: &str, max: usize) -> String {
    preview(text, max)
}

/// What a JSON value is, for shape errors; an error object's message is quoted (GitHub and
/// GitLab `message`, GitLab `error`, Jira `errorMessages`), since that is the real answer.
pub(super) fn describe(v: &Value) -> String {
    match v {
        Value::Null => "null".into(),
        Value::Bool(_) => "a boolean".into(),
        Value::Number(n) => format!("the number {n}"),
        Value::String(s) => format!("the string \"{}\"", preview(s, PREVIEW_CHARS)),
        Value::Array(a) => format!("an array of {} items", a.len()),
        Value::Object(m) => match error_message(m) {
            Some(msg) => format!("an error object: \"{}\"", preview(&msg, 200)),
            None => {
                let keys: Vec<&str> = m.keys().take(8).map(String::as_str).collect();
                format!("an object with keys [{}]", keys.join(", "))
            }
        },
    }
}

/// The message of an error body, if the object is one.
pub(super) fn error_message(m: &Map<String, Value>) -> Option<String> {
    let jira: Vec<&str> = m
        .get("errorMessages")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
        .filter_map(Value::as_str)
        .collect();
    if !jira.is_empty() {
        return Some(jira.join("; "));
    }
    match m.get("message").or_else(|| m.get("error"))? {
        Value::String(s) => Some(s.clone()),
        Value::Null => None,
        other => Some(other.to_string()),
    }
}

/// `v[key]`, or null so that lookups chain through missing or mistyped parents.
pub(super) fn at<'a>(v: &'a Value, key: &str) -> &'a Value {
    v.get(key).unwrap_or(&NULL)
}

/// A non-blank string field; numbers as their decimal text (ids are numbers on GitHub and
/// GitLab, strings on Jira).
pub(super) fn str_at(v: &Value, key: &str) -> Option<String> {
    match v.get(key)? {
        Value::String(s) if !s.trim().is_empty() => Some(s.clone()),
        Value::Number(n) => Some(n.to_string()),
        _ => None,
    }
}

/// A string field exactly as written (leading and trailing spaces kept), when it has any
/// non-blank text: titles are identities and stay exact.
pub(super) fn exact_str_at(v: &Value, key: &str) -> Option<String> {
    v.get(key)
        .and_then(Value::as_str)
        .filter(|s| !s.trim().is_empty())
        .map(str::to_string)
}

/// A non-negative integer field (also written as a string).
pub(super) fn u64_at(v: &Value, key: &str) -> Option<u64> {
    match v.get(key)? {
        Value::Number(n) => n.as_u64(),
        Value::String(s) => s.trim().parse().ok(),
        _ => None,
    }
}

/// A free-text field as is (`""` when absent or null).
pub(super) fn body_at(v: &Value, key: &str) -> String {
    v.get(key)
        .and_then(Value::as_str)
        .unwrap_or_default()
        .to_string()
}

/// The body's list of `what`, or a shape error saying what came instead.
pub(super) fn items<'a>(v: &'a Value, what: &str) -> Result<&'a [Value], TrackerError> {
    v.as_array().map(Vec::as_slice).ok_or_else(|| {
        TrackerError::Shape(format!("expected an array of {what}, got {}", describe(v)))
    })
}

/// `v` when it is an object; a shape error naming `path` otherwise.
pub(super) fn object<'a>(v: &'a Value, path: &str) -> Result<&'a Value, TrackerError> {
    if v.is_object() {
        Ok(v)
    } else {
        Err(TrackerError::Shape(format!(
            "{path}: expected an object, got {}",
            describe(v)
        )))
    }
}

/// The error for a required field: where, what was expected, what was there.
pub(super) fn missing(v: &Value, path: &str, key: &str, expected: &str) -> TrackerError {
    let got = v.get(key).map_or_else(|| "nothing".to_string(), describe);
    TrackerError::Shape(format!("{path}.{key}: expected {expected}, got {got}"))
}

/// A required integer (issue numbers, iids): without it there is no key.
pub(super) fn require_u64(v: &Value, path: &str, key: &str) -> Result<u64, TrackerError> {
    u64_at(v, key).ok_or_else(|| missing(v, path, key, "a non-negative integer"))
}

/// A required id or key: without it comments and Jira issues cannot be cited.
pub(super) fn require_str(v: &Value, path: &str, key: &str) -> Result<String, TrackerError> {
    str_at(v, key).ok_or_else(|| missing(v, path, key, "a string or number"))
}

/// Label names: GitHub's label objects, GitLab's and Jira's strings.
pub(super) fn labels(v: &Value) -> Vec<String> {
    v.as_array()
        .into_iter()
        .flatten()
        .filter_map(|l| match l {
            Value::String(s) => Some(s.clone()),
            other => str_at(other, "name"),
        })
        .filter(|s| !s.trim().is_empty())
        .collect()
}

/// The people of a list field (`assignees`), else of the single field (`assignee`), which
/// older APIs and some payloads fill alone.
pub(super) fn people(
    v: &Value,
    list: &str,
    single: &str,
    parse: fn(&Value) -> Option<TrackerPerson>,
) -> Vec<TrackerPerson> {
    let many: Vec<TrackerPerson> = at(v, list)
        .as_array()
        .into_iter()
        .flatten()
        .filter_map(parse)
        .collect();
    if many.is_empty() {
        parse(at(v, single)).into_iter().collect()
    } else {
        many
    }
}

/// A person when any of the three is known.
pub(super) fn person_of(
    login: Option<String>,
    name: Option<String>,
    email: Option<String>,
) -> Option<TrackerPerson> {
    let p = TrackerPerson { login, name, email };
    (p != TrackerPerson::default()).then_some(p)
}
