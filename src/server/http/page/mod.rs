//! The explorer: one page, its script and its style, compiled into the program (no CDN,
//! no build step, works offline). The page talks to the JSON API only.
//!
//! Invariants:
//! - The page runs only its own script (`Content-Security-Policy: default-src 'self'`,
//!   no inline script or style), and may not be framed by another page.

use bytes::Bytes;
use http_body_util::{BodyExt, Full};
use hyper::Response;
use hyper::header::{self, HeaderValue};

use super::Body;

/// One of the page's files, with its type and the page's policy.
pub(super) fn asset(name: &str) -> Response<Body> {
    let (text, ty): (&'static str, &'static str) = match name {
        "explorer.js" => (include_str!("explorer.js"), "text/javascript; charset=utf-8"),
        "explorer.css" => (include_str!("explorer.css"), "text/css; charset=utf-8"),
        "explorer-worker.js" => (
            include_str!("explorer-worker.js"),
            "text/javascript; charset=utf-8",
        ),
        _ => (include_str!("index.html"), "text/html; charset=utf-8"),
    };
    let mut response = Response::new(Full::new(Bytes::from_static(text.as_bytes())).boxed());
    let headers = response.headers_mut();
    headers.insert(header::CONTENT_TYPE, HeaderValue::from_static(ty));
    headers.insert(header::CACHE_CONTROL, HeaderValue::from_static("no-cache"));
    headers.insert(
        "content-security-policy",
        HeaderValue::from_static("default-src 'self'; img-src 'self' data:; frame-ancestors 'none'"),
    );
    headers.insert("x-content-type-options", HeaderValue::from_static("nosniff"));
    headers.insert("x-frame-options", HeaderValue::from_static("DENY"));
    response
}
