//! A local HTTP server that answers from recorded exchanges, for wire tests: the adapter under
//! test talks real HTTP to it, every request is recorded, and each recorded exchange answers
//! one request — the first unused one whose method, path, listed query parameters, listed
//! request headers and (when the fixture gives one) body match. A fixture body that is JSON must equal the request body
//! as JSON, so a wire test pins the exact query text and bind variables an adapter sends.
//!
//! Fixture files are JSON arrays of
//! `{"request": {"method", "path", "query"?, "headers"?, "body"?}, "response": {"status", "headers"?, "body"?}}`
//! (request header names in lower case; a conditional request pins its `if-none-match`);
//! `{BASE}` in response headers and bodies stands for the server's own `http://127.0.0.1:PORT`.

use std::net::SocketAddr;
use std::sync::Arc;

use parking_lot::Mutex;
use serde_json::Value;

/// One recorded request and its answer.
#[derive(Debug, Clone)]
pub struct Exchange {
    pub method: String,
    pub path: String,
    pub query: Vec<(String, String)>,
    /// Request headers the adapter must send (name in lower case, exact value).
    pub request_headers: Vec<(String, String)>,
    /// The request body the adapter must send, when the fixture pins it.
    pub body: Option<Value>,
    pub status: u16,
    pub headers: Vec<(String, String)>,
    pub response: Value,
    used: bool,
}

/// A request as the server received it.
#[derive(Debug, Clone, PartialEq)]
pub struct Received {
    pub method: String,
    pub path: String,
    pub query: Vec<(String, String)>,
    /// The body as JSON when it parses, else as a string.
    pub body: Value,
    pub headers: Vec<(String, String)>,
}

impl Received {
    /// The value of header `name` (any case), if the request had it.
    pub fn header(&self, name: &str) -> Option<&str> {
        self.headers
            .iter()
            .find(|(k, _)| k.eq_ignore_ascii_case(name))
            .map(|(_, v)| v.as_str())
    }
}

/// A JSON object of strings as pairs (absent: none).
fn string_map(v: &Value) -> Vec<(String, String)> {
    v.as_object()
        .map(|h| {
            h.iter()
                .map(|(k, v)| (k.clone(), v.as_str().unwrap_or("").to_string()))
                .collect()
        })
        .unwrap_or_default()
}

fn parse_exchanges(text: &str) -> Vec<Exchange> {
    let list: Vec<Value> = serde_json::from_str(text).expect("fixture is a JSON array");
    list.into_iter()
        .map(|e| {
            let req = &e["request"];
            let resp = &e["response"];
            Exchange {
                method: req["method"].as_str().unwrap_or("GET").to_string(),
                path: req["path"].as_str().unwrap_or("/").to_string(),
                query: req["query"]
                    .as_object()
                    .map(|q| {
                        q.iter()
                            .map(|(k, v)| {
                                let v = v.as_str().map_or_else(|| v.to_string(), str::to_string);
                                (k.clone(), v)
                            })
                            .collect()
                    })
                    .unwrap_or_default(),
                request_headers: string_map(&req["headers"]),
                body: req.get("body").cloned(),
                status: resp["status"].as_u64().unwrap_or(200) as u16,
                headers: string_map(&resp["headers"]),
                response: resp.get("body").cloned().unwrap_or(Value::Null),
                used: false,
            }
        })
        .collect()
}

/// Reads a fixture file (a path relative to the calling crate's manifest directory).
pub fn fixture(manifest_dir: &str, rel: &str) -> Vec<Exchange> {
    let path = std::path::Path::new(manifest_dir).join(rel);
    let text = std::fs::read_to_string(&path)
        .unwrap_or_else(|e| panic!("fixture {}: {e}", path.display()));
    parse_exchanges(&text)
}

/// The exchanges of `tests/fixtures/{name}.json` under `manifest_dir`, for each name in order.
pub fn fixtures(manifest_dir: &str, names: &[&str]) -> Vec<Exchange> {
    names
        .iter()
        .flat_map(|n| fixture(manifest_dir, &format!("tests/fixtures/{n}.json")))
        .collect()
}

/// Exchanges from a JSON value written in a test.
pub fn exchanges(v: Value) -> Vec<Exchange> {
    parse_exchanges(&v.to_string())
}

#[derive(Clone)]
pub struct WireServer {
    pub base: String,
    exchanges: Arc<Mutex<Vec<Exchange>>>,
    received: Arc<Mutex<Vec<Received>>>,
    unmatched: Arc<Mutex<Vec<Received>>>,
}

fn body_matches(want: &Value, got: &Value) -> bool {
    match (want, got) {
        // A fixture may pin only some fields of an object body: the rest are free.
        (Value::Object(w), Value::Object(g)) => w
            .iter()
            .all(|(k, v)| g.get(k).is_some_and(|gv| body_matches(v, gv))),
        _ => want == got,
    }
}

impl WireServer {
    /// Serves `exchanges` on a free loopback port.
    pub async fn start(exchanges: Vec<Exchange>) -> WireServer {
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0")
            .await
            .expect("bind");
        let addr: SocketAddr = listener.local_addr().expect("addr");
        let server = WireServer {
            base: format!("http://{addr}"),
            exchanges: Arc::new(Mutex::new(exchanges)),
            received: Arc::default(),
            unmatched: Arc::default(),
        };
        let state = server.clone();
        let app = axum::Router::new().fallback(
            move |method: axum::http::Method,
                  uri: axum::http::Uri,
                  headers: axum::http::HeaderMap,
                  body: bytes::Bytes| {
                let state = state.clone();
                async move { state.answer(method.as_str(), &uri, &headers, &body) }
            },
        );
        tokio::spawn(async move {
            let _ = axum::serve(listener, app).await;
        });
        server
    }

    fn answer(
        &self,
        method: &str,
        uri: &axum::http::Uri,
        headers: &axum::http::HeaderMap,
        body: &[u8],
    ) -> axum::response::Response {
        let path = url::form_urlencoded::parse(format!("p={}", uri.path()).as_bytes())
            .next()
            .map(|(_, v)| v.into_owned())
            .unwrap_or_default();
        let query: Vec<(String, String)> =
            url::form_urlencoded::parse(uri.query().unwrap_or("").as_bytes())
                .map(|(k, v)| (k.into_owned(), v.into_owned()))
                .collect();
        let text = String::from_utf8_lossy(body).into_owned();
        let received = Received {
            method: method.to_string(),
            path,
            query,
            body: serde_json::from_str(&text).unwrap_or(Value::String(text)),
            headers: headers
                .iter()
                .map(|(k, v)| (k.to_string(), v.to_str().unwrap_or("").to_string()))
                .collect(),
        };
        self.received.lock().push(received.clone());
        let mut all = self.exchanges.lock();
        let found = all.iter_mut().find(|e| {
            !e.used
                && e.method.eq_ignore_ascii_case(method)
                && e.path == received.path
                && e.query.iter().all(|q| received.query.contains(q))
                && e.request_headers.iter().all(|(k, v)| {
                    received
                        .headers
                        .iter()
                        .any(|(rk, rv)| rk.eq_ignore_ascii_case(k) && rv == v)
                })
                && e.body
                    .as_ref()
                    .is_none_or(|b| body_matches(b, &received.body))
        });
        let mut builder = axum::http::Response::builder();
        match found {
            Some(e) => {
                e.used = true;
                builder = builder.status(e.status);
                let mut has_type = false;
                for (k, v) in &e.headers {
                    has_type |= k.eq_ignore_ascii_case("content-type");
                    builder = builder.header(k, v.replace("{BASE}", &self.base));
                }
                let bytes = match &e.response {
                    Value::Null => Vec::new(),
                    Value::String(s) => s.replace("{BASE}", &self.base).into_bytes(),
                    other => {
                        if !has_type {
                            builder = builder.header("content-type", "application/json");
                        }
                        other.to_string().replace("{BASE}", &self.base).into_bytes()
                    }
                };
                builder
                    .body(axum::body::Body::from(bytes))
                    .expect("response")
            }
            None => {
                self.unmatched.lock().push(received);
                builder
                    .status(599)
                    .body(axum::body::Body::from("no recorded exchange matches"))
                    .expect("response")
            }
        }
    }

    /// Every request received, in order.
    pub fn received(&self) -> Vec<Received> {
        self.received.lock().clone()
    }

    /// Requests no recorded exchange matched.
    pub fn unmatched(&self) -> Vec<Received> {
        self.unmatched.lock().clone()
    }

    /// Recorded exchanges nobody asked for (`METHOD path`).
    pub fn unused(&self) -> Vec<String> {
        self.exchanges
            .lock()
            .iter()
            .filter(|e| !e.used)
            .map(|e| format!("{} {}", e.method, e.path))
            .collect()
    }

    /// Panics with the details unless every request matched and every exchange was used.
    pub fn assert_exhausted(&self) {
        let unmatched = self.unmatched();
        assert!(
            unmatched.is_empty(),
            "requests without a recorded exchange: {unmatched:#?}"
        );
        let unused = self.unused();
        assert!(
            unused.is_empty(),
            "recorded exchanges never asked for: {unused:?}"
        );
    }
}
