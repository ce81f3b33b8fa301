//! The built-in acquirer's page fetcher (`[gaps] fetch_urls = true`): the URLs a knowledge
//! gap names are fetched with the egress policy's client (host names resolved, every address
//! checked and pinned, redirects re-checked) and read as text — HTML through the document
//! extractor's readable-text conversion, `text/*` as it is; anything else is refused.

use std::time::Duration;

use evident_kb::gaps::acquire::{FetchedPage, PageFetcher};

/// Largest page read.
const MAX_PAGE_BYTES: usize = 2 * 1024 * 1024;

pub struct WebFetcher {
    http: reqwest::Client,
    access: evident_sources::access::Access,
}

impl WebFetcher {
    pub fn new(access: evident_sources::access::Access) -> Result<WebFetcher, String> {
        let http = access
            .egress
            .client_builder()
            .user_agent(format!(
                "EvidentGapAcquirer/{} (+https://github.com/evident)",
                env!("CARGO_PKG_VERSION")
            ))
            .timeout(Duration::from_secs(30))
            .connect_timeout(Duration::from_secs(10))
            .build()
            .map_err(|e| e.to_string())?;
        Ok(WebFetcher { http, access })
    }
}

/// Readable text of a body by its content type.
pub fn readable(content_type: &str, body: &[u8]) -> Result<FetchedPage, String> {
    let text = String::from_utf8_lossy(body);
    let ct = content_type.to_ascii_lowercase();
    if ct.contains("html") {
        let page = evident_extract::html::html_to_text(&text);
        Ok(FetchedPage {
            title: page.title,
            text: page.text,
        })
    } else if ct.starts_with("text/") || ct.is_empty() {
        Ok(FetchedPage {
            title: None,
            text: text.into_owned(),
        })
    } else {
        Err(format!("content type `{content_type}` is not text"))
    }
}

#[async_trait::async_trait]
impl PageFetcher for WebFetcher {
    async fn fetch(&self, url: &str) -> Result<FetchedPage, String> {
        self.access.url(url).await.map_err(|e| e.to_string())?;
        let mut resp = self.http.get(url).send().await.map_err(|e| e.to_string())?;
        if !resp.status().is_success() {
            return Err(format!("HTTP {}", resp.status()));
        }
        let ct = resp
            .headers()
            .get(reqwest::header::CONTENT_TYPE)
            .and_then(|v| v.to_str().ok())
            .unwrap_or("")
            .to_string();
        let mut body = Vec::new();
        while let Some(chunk) = resp.chunk().await.map_err(|e| e.to_string())? {
            body.extend_from_slice(&chunk);
            if body.len() > MAX_PAGE_BYTES {
                return Err(format!("larger than {MAX_PAGE_BYTES} bytes"));
            }
        }
        readable(&ct, &body)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn html_is_read_as_text_and_binaries_are_refused() {
        let page = readable(
            "text/html; charset=utf-8",
            b"<html><head><title>Broker</title></head><body><p>Kafka eu-1.</p><script>x()</script></body></html>",
        )
        .expect("html");
        assert_eq!(page.title.as_deref(), Some("Broker"));
        assert!(
            page.text.contains("Kafka eu-1.") && !page.text.contains("x()"),
            "{page:?}"
        );
        assert_eq!(
            readable("text/plain", b"plain").expect("text").text,
            "plain"
        );
        assert!(readable("application/pdf", b"%PDF").is_err());
    }
}
