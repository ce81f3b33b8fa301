//! Documents: a folder of files (PDF, HTML, Markdown, text, DOCX) and a bounded web crawler.
//! Both queue `ingest-document` items that workers extract (text per page, readable HTML).
//!
//! The crawler starts from seed URLs and follows links breadth-first: same host as a seed
//! unless told otherwise, up to `maxDepth` links away and `maxPages` pages per poll, never
//! where robots.txt forbids, one request at a time per source (and `Crawl-delay` apart when
//! the site asks). Pages are fetched conditionally (ETag / Last-Modified), and a page whose
//! content is byte-identical to another already stored (mirrors, `index.html` and `/`) is
//! stored once: content-hash dedup.

use std::collections::{HashMap, HashSet, VecDeque};
use std::path::Path;
use std::time::Duration;

use async_trait::async_trait;
use evident_ai::Priority;
use evident_extract::document::Format;
use evident_store::indexers::IndexerSource;
use serde::{Deserialize, Serialize};
use serde_json::json;
use sha2::{Digest, Sha256};
use url::Url;

use crate::folder;
use crate::items::ItemTask;
use crate::poll::{LeasedPoller, PollContext, PollError, PollReport};
use crate::report::{DocumentsReport, Skips, WebReport, examples};
use crate::robots::Robots;
use crate::sources::config_of;
pub use evident_sources::kinds::documents::{DocumentsConfig, WebConfig};

fn is_document(path: &Path) -> bool {
    Format::from_name(&path.to_string_lossy()).is_some()
}

pub fn document_urn(source_id: &str, rel: &str) -> String {
    format!("doc:{source_id}:{rel}")
}

pub fn page_urn(source_id: &str, url: &str) -> String {
    format!("web:{source_id}:{url}")
}

/// Queues a fetched or read document; its title comes from its content at extraction.
async fn queue_document(
    ctx: &PollContext,
    source: &IndexerSource,
    source_urn: String,
    uri: String,
    content_type: Option<String>,
    kind: &str,
    data: Vec<u8>,
) -> Result<(), PollError> {
    let task = ItemTask::IngestDocument {
        v: 1,
        source_id: source.id.clone(),
        source_urn: source_urn.clone(),
        uri,
        title: None,
        content_type,
        kind: kind.to_string(),
        data,
        observed_at: None,
        node: None,
    };
    task.queue(ctx, source, &source_urn).await?;
    Ok(())
}

/// Polls `kind = "documents"` sources.
pub struct DocumentsPoller {
    pub ctx: PollContext,
}

#[async_trait]
impl LeasedPoller for DocumentsPoller {
    const KIND: &'static str = "documents";

    fn context(&self) -> &PollContext {
        &self.ctx
    }

    async fn poll_source(&self, source: &IndexerSource) -> Result<PollReport, PollError> {
        let cfg = self
            .ctx
            .rooted_config(source, |c: &mut DocumentsConfig| &mut c.path)?;
        let mut scan = folder::scan(
            &self.ctx,
            &source.key(),
            &cfg.path,
            cfg.max_document_bytes,
            is_document,
        )
        .await?;
        let mut queued = 0u64;
        for f in std::mem::take(&mut scan.changed) {
            queue_document(
                &self.ctx,
                source,
                document_urn(&source.id, &f.rel),
                f.path.display().to_string(),
                None,
                "doc",
                f.bytes,
            )
            .await?;
            folder::mark(&self.ctx, &source.key(), &f.rel, &f.state).await?;
            queued += 1;
        }
        let folder = folder::settle(&self.ctx, source, scan, queued, |rel| {
            document_urn(&source.id, rel)
        })
        .await?;
        Ok(DocumentsReport {
            documents: queued,
            folder,
        }
        .into())
    }
}

/// The crawler's product token, in robots.txt groups and the User-Agent header.
pub const CRAWLER_AGENT: &str = "EvidentBot";

/// What the last crawl saw of a page.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
struct PageState {
    sha256: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    etag: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    last_modified: Option<String>,
    /// Links of the page (HTML), followed again when it answers 304.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    links: Vec<String>,
    /// Set when the content is identical to this other page's (not stored twice).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    duplicate_of: Option<String>,
}

/// A URL as the crawler keys it: no fragment.
fn normalise(mut url: Url) -> Url {
    url.set_fragment(None);
    url
}

fn host_key(url: &Url) -> String {
    format!(
        "{}://{}:{}",
        url.scheme(),
        url.host_str().unwrap_or(""),
        url.port_or_known_default().unwrap_or(0)
    )
}

/// Polls `kind = "web"` sources.
pub struct WebPoller {
    pub ctx: PollContext,
    pub http: reqwest::Client,
}

impl WebPoller {
    pub fn new(ctx: PollContext) -> Result<WebPoller, String> {
        // The egress policy's client: host names resolved, checked and pinned.
        let http = ctx
            .access
            .egress
            .client_builder()
            .user_agent(format!(
                "{CRAWLER_AGENT}/{} (+https://github.com/evident)",
                env!("CARGO_PKG_VERSION")
            ))
            .timeout(Duration::from_secs(30))
            .connect_timeout(Duration::from_secs(10))
            // Redirects are followed by the crawl itself, so host and depth rules apply.
            .redirect(reqwest::redirect::Policy::none())
            .build()
            .map_err(|e| e.to_string())?;
        Ok(WebPoller { ctx, http })
    }

    async fn robots(&self, url: &Url) -> Robots {
        let Ok(robots_url) = url.join("/robots.txt") else {
            return Robots::allow_all();
        };
        // The page itself is refused (and reported) by the fetch when its host is.
        if self.ctx.access.egress.check_literal(&robots_url).is_err() {
            return Robots::allow_all();
        }
        match self.http.get(robots_url).send().await {
            Ok(r) if r.status().is_success() => match r.text().await {
                Ok(t) => Robots::parse(&t, CRAWLER_AGENT),
                Err(_) => Robots::disallow_all(),
            },
            // No robots.txt (4xx): everything allowed.
            Ok(r) if r.status().is_client_error() => Robots::allow_all(),
            // Refused by the egress policy: the page's own fetch is refused too, and reports
            // why (rather than "disallowed by robots.txt").
            Err(e) if evident_egress::refusal_in(&e).is_some_and(|r| r.is_refusal()) => {
                Robots::allow_all()
            }
            // Unreachable or failing (5xx): assume complete disallow (RFC 9309 §2.3.1.4).
            _ => Robots::disallow_all(),
        }
    }

    async fn fetch_body(
        resp: reqwest::Response,
        max_bytes: u64,
    ) -> Result<Option<Vec<u8>>, PollError> {
        if resp.content_length().is_some_and(|n| n > max_bytes) {
            return Ok(None);
        }
        let mut resp = resp;
        let mut body = Vec::new();
        while let Some(chunk) = resp
            .chunk()
            .await
            .map_err(|e| PollError::unreachable("reading a page", e))?
        {
            body.extend_from_slice(&chunk);
            if body.len() as u64 > max_bytes {
                return Ok(None);
            }
        }
        Ok(Some(body))
    }

    /// One crawl, breadth-first from the seeds: each page through robots.txt, the politeness
    /// delay and the egress policy, fetched conditionally, then handled by its status.
    async fn crawl(&self, source: &IndexerSource) -> Result<WebReport, PollError> {
        let cfg: WebConfig = config_of(source).map_err(PollError::Config)?;
        let (seeds, refused_seeds) = self.check_seeds(&cfg).await?;
        let mut crawl = Crawl::new(&cfg, &seeds);
        while let Some((url, depth)) = crawl.queue.pop_front() {
            if crawl.fetched >= cfg.max_pages {
                break;
            }
            self.visit(source, &cfg, &mut crawl, url, depth).await?;
        }
        crawl.report(refused_seeds)
    }

    /// The seeds, parsed, and those the policy refuses ("url: why"). Seeds are checked in
    /// full (their hosts resolved): when the policy refuses every one, the poll fails saying
    /// why, which the source's status shows.
    async fn check_seeds(&self, cfg: &WebConfig) -> Result<(Vec<Url>, Vec<String>), PollError> {
        let seeds: Vec<Url> = cfg
            .urls
            .iter()
            .filter_map(|u| Url::parse(u).ok())
            .map(normalise)
            .collect();
        let mut refused = Vec::new();
        for s in &seeds {
            if let Err(e) = self.ctx.access.url(s.as_str()).await {
                refused.push(format!("{s}: {e}"));
            }
        }
        if !seeds.is_empty() && refused.len() == seeds.len() {
            return Err(PollError::Refused(refused.join("; ")));
        }
        Ok((seeds, refused))
    }

    /// Whether robots.txt lets the crawler read `url`; waits out the host's crawl delay
    /// when it does.
    async fn polite(&self, crawl: &mut Crawl, url: &Url) -> bool {
        let host = host_key(url);
        if !crawl.robots.contains_key(&host) {
            let r = self.robots(url).await;
            crawl.robots.insert(host.clone(), r);
        }
        let rules = &crawl.robots[&host];
        let path = match url.query() {
            Some(q) => format!("{}?{q}", url.path()),
            None => url.path().to_string(),
        };
        if !rules.allowed(&path) {
            return false;
        }
        if let (Some(delay), Some(at)) = (rules.crawl_delay_secs, crawl.last_request.get(&host)) {
            let wait = Duration::from_secs_f64(delay.min(30.0));
            tokio::time::sleep_until(*at + wait).await;
        }
        crawl.last_request.insert(host, tokio::time::Instant::now());
        true
    }

    /// One page: fetched (conditionally, when it was seen before) and handled by its status.
    async fn visit(
        &self,
        source: &IndexerSource,
        cfg: &WebConfig,
        crawl: &mut Crawl,
        url: Url,
        depth: u32,
    ) -> Result<(), PollError> {
        if !self.polite(crawl, &url).await {
            crawl
                .skipped
                .push(format!("{url}: disallowed by robots.txt"));
            return Ok(());
        }
        let key = format!("url:{url}");
        let before: Option<PageState> = self
            .ctx
            .cursor(&source.key(), &key)
            .await?
            .and_then(|v| serde_json::from_value(v).ok());
        // Every page (links, redirects): IP literals here, host names by the client's
        // resolver at connection.
        if let Err(e) = self.ctx.access.egress.check_literal(&url) {
            crawl.skipped.push(format!("{url}: {e}"));
            return Ok(());
        }
        let mut req = self.http.get(url.clone());
        if let Some(b) = &before {
            if let Some(etag) = &b.etag {
                req = req.header(reqwest::header::IF_NONE_MATCH, etag);
            }
            if let Some(lm) = &b.last_modified {
                req = req.header(reqwest::header::IF_MODIFIED_SINCE, lm);
            }
        }
        crawl.fetched += 1;
        let resp = match req.send().await {
            Ok(r) => r,
            Err(e) => {
                crawl
                    .skipped
                    .push(format!("{url}: {}", evident_egress::describe(&e)));
                return Ok(());
            }
        };
        let status = resp.status();
        if status == reqwest::StatusCode::NOT_MODIFIED {
            crawl.unchanged += 1;
            if let Some(b) = &before {
                crawl.follow(&url, depth, &b.links);
            }
        } else if status.is_redirection() {
            let location = resp
                .headers()
                .get(reqwest::header::LOCATION)
                .and_then(|l| l.to_str().ok());
            if let Some(loc) = location {
                crawl.redirect(&url, depth, loc);
            }
        } else if matches!(status.as_u16(), 404 | 410) {
            if before.is_some() {
                self.page_gone(source, &url, &key).await?;
                crawl.gone += 1;
            }
        } else if !status.is_success() {
            crawl.skipped.push(format!("{url}: HTTP {status}"));
        } else {
            let page = Visited {
                url,
                depth,
                key,
                before,
            };
            self.read_page(source, cfg, crawl, page, resp).await?;
        }
        Ok(())
    }

    /// A page seen before answers 404/410: its source's purge is queued, its state forgotten.
    async fn page_gone(
        &self,
        source: &IndexerSource,
        url: &Url,
        key: &str,
    ) -> Result<(), PollError> {
        self.ctx
            .tasks
            .enqueue_purge(
                source.scope.clone(),
                &page_urn(&source.id, url.as_str()),
                Priority::DEFAULT,
                self.ctx.clock.now_ms(),
            )
            .await?;
        self.ctx.forget_cursor(&source.key(), key).await
    }

    /// A successful answer: its body read (within the size limit), its links followed (HTML),
    /// and the page queued unless its content is unchanged or another page's.
    async fn read_page(
        &self,
        source: &IndexerSource,
        cfg: &WebConfig,
        crawl: &mut Crawl,
        page: Visited,
        resp: reqwest::Response,
    ) -> Result<(), PollError> {
        let Visited {
            url,
            depth,
            key,
            before,
        } = page;
        let header = |name: reqwest::header::HeaderName| {
            resp.headers()
                .get(name)
                .and_then(|v| v.to_str().ok())
                .map(str::to_string)
        };
        let content_type = header(reqwest::header::CONTENT_TYPE);
        let etag = header(reqwest::header::ETAG);
        let last_modified = header(reqwest::header::LAST_MODIFIED);
        let Some(body) = Self::fetch_body(resp, cfg.max_document_bytes).await? else {
            crawl.skipped.push(format!(
                "{url}: over the {}-byte limit",
                cfg.max_document_bytes
            ));
            return Ok(());
        };
        let format = content_type
            .as_deref()
            .and_then(Format::from_mime)
            .or_else(|| Format::from_name(url.path()))
            .or_else(|| Format::sniff(&body));
        let Some(format) = format else {
            crawl.skipped.push(format!(
                "{url}: {} is not a document type Evident reads",
                content_type.as_deref().unwrap_or("unknown type")
            ));
            return Ok(());
        };
        let links = page_links(format, &body);
        crawl.follow(&url, depth, &links);
        let sha = hex::encode(Sha256::digest(&body));
        let mut state = PageState {
            sha256: sha.clone(),
            etag,
            last_modified,
            links,
            duplicate_of: None,
        };
        if before.as_ref().is_some_and(|b| b.sha256 == sha) {
            crawl.unchanged += 1;
        } else if let Some(owner) = self.content_owner(source, &sha, &url).await? {
            crawl.duplicates += 1;
            state.duplicate_of = Some(owner);
        } else {
            let urn = page_urn(&source.id, url.as_str());
            queue_document(
                &self.ctx,
                source,
                urn,
                url.to_string(),
                content_type,
                "web",
                body,
            )
            .await?;
            self.ctx
                .set_cursor(&source.key(), &format!("hash:{sha}"), &json!(url.as_str()))
                .await?;
            crawl.queued += 1;
        }
        self.ctx
            .set_cursor(&source.key(), &key, &json!(state))
            .await
    }

    /// The other page already stored with this content (content-hash dedup), if any.
    async fn content_owner(
        &self,
        source: &IndexerSource,
        sha: &str,
        url: &Url,
    ) -> Result<Option<String>, PollError> {
        Ok(self
            .ctx
            .cursor(&source.key(), &format!("hash:{sha}"))
            .await?
            .and_then(|v| v.as_str().map(str::to_string))
            .filter(|owner| owner != url.as_str()))
    }
}

/// A page being read: where it is, how deep, its cursor key and what the last crawl saw.
struct Visited {
    url: Url,
    depth: u32,
    key: String,
    before: Option<PageState>,
}

/// One crawl's state: the frontier, what was seen, robots.txt rules and last request time
/// per host, and the counts for the report.
struct Crawl {
    max_depth: u32,
    same_host: bool,
    hosts: HashSet<String>,
    robots: HashMap<String, Robots>,
    queue: VecDeque<(Url, u32)>,
    seen: HashSet<String>,
    last_request: HashMap<String, tokio::time::Instant>,
    fetched: u32,
    queued: u64,
    unchanged: u64,
    duplicates: u64,
    gone: u64,
    skipped: Vec<String>,
}

impl Crawl {
    fn new(cfg: &WebConfig, seeds: &[Url]) -> Crawl {
        Crawl {
            max_depth: cfg.max_depth,
            same_host: cfg.same_host,
            hosts: seeds.iter().map(host_key).collect(),
            robots: HashMap::new(),
            queue: seeds.iter().cloned().map(|u| (u, 0)).collect(),
            seen: seeds.iter().map(|u| u.to_string()).collect(),
            last_request: HashMap::new(),
            fetched: 0,
            queued: 0,
            unchanged: 0,
            duplicates: 0,
            gone: 0,
            skipped: Vec::new(),
        }
    }

    /// Whether the crawl may go to `next` (http(s), and the seeds' hosts when asked).
    fn in_bounds(&self, next: &Url) -> bool {
        matches!(next.scheme(), "http" | "https")
            && (!self.same_host || self.hosts.contains(&host_key(next)))
    }

    /// Queues the links of the page at `url` (one level deeper), each URL once.
    fn follow(&mut self, url: &Url, depth: u32, links: &[String]) {
        if depth >= self.max_depth {
            return;
        }
        for l in links {
            let Ok(next) = url.join(l).map(normalise) else {
                continue;
            };
            if self.in_bounds(&next) && self.seen.insert(next.to_string()) {
                self.queue.push_back((next, depth + 1));
            }
        }
    }

    /// A redirect is a link at the same depth, read next.
    fn redirect(&mut self, url: &Url, depth: u32, location: &str) {
        if let Ok(next) = url.join(location).map(normalise)
            && (!self.same_host || self.hosts.contains(&host_key(&next)))
            && self.seen.insert(next.to_string())
        {
            self.queue.push_front((next, depth));
        }
    }

    /// The report, or — when nothing could be read and every page was refused by the
    /// policy — the refusal, so the source's status says why rather than show an empty
    /// success.
    fn report(self, refused_seeds: Vec<String>) -> Result<WebReport, PollError> {
        let nothing_read =
            self.queued == 0 && self.unchanged == 0 && self.duplicates == 0 && self.gone == 0;
        if nothing_read && !self.skipped.is_empty() {
            let refused: Vec<&String> = self
                .skipped
                .iter()
                .filter(|s| s.contains("refused: "))
                .collect();
            if refused.len() == self.skipped.len() {
                return Err(PollError::Refused(
                    refused
                        .into_iter()
                        .take(5)
                        .cloned()
                        .collect::<Vec<_>>()
                        .join("; "),
                ));
            }
        }
        Ok(WebReport {
            refused: refused_seeds.len(),
            refused_examples: examples(refused_seeds),
            fetched: self.fetched,
            pages: self.queued,
            queued: self.queued,
            unchanged: self.unchanged,
            duplicates: self.duplicates,
            gone: self.gone,
            skipped: Skips::of(self.skipped),
        })
    }
}

#[async_trait]
impl LeasedPoller for WebPoller {
    const KIND: &'static str = "web";

    fn context(&self) -> &PollContext {
        &self.ctx
    }

    async fn poll_source(&self, source: &IndexerSource) -> Result<PollReport, PollError> {
        self.crawl(source).await.map(Into::into)
    }
}

/// The links of an HTML page (at most 1,000), to follow; other formats have none.
fn page_links(format: Format, body: &[u8]) -> Vec<String> {
    if format != Format::Html {
        return Vec::new();
    }
    let text = String::from_utf8_lossy(body);
    let mut links = evident_extract::html::html_to_text(&text).links;
    links.truncate(1000);
    links
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::sources::SourceConfig;

    #[test]
    fn web_settings_are_checked() {
        let ok: WebConfig =
            serde_json::from_value(json!({"urls": ["https://docs.example.com/start"]}))
                .expect("config");
        assert!(ok.validate().is_ok());
        assert_eq!(ok.name(), "docs.example.com");
        assert!(ok.same_host);
        for bad in [
            json!({"urls": []}),
            json!({"urls": ["ftp://x/"]}),
            json!({"urls": ["https://u:p@x/"]}),
            json!({"urls": ["https://x/"], "maxDepth": 99}),
        ] {
            let c: WebConfig = serde_json::from_value(bad.clone()).expect("parses");
            assert!(c.validate().is_err(), "{bad}");
        }
    }

    #[test]
    fn urls_lose_fragments_and_hosts_include_ports() {
        let u = normalise(Url::parse("http://a.example:8080/x#top").expect("url"));
        assert_eq!(u.as_str(), "http://a.example:8080/x");
        assert_eq!(host_key(&u), "http://a.example:8080");
        let d = Url::parse("https://a.example/").expect("url");
        assert_eq!(host_key(&d), "https://a.example:443");
    }
}
