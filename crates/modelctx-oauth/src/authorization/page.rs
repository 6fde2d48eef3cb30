//! The consent page and the error page of `/authorize`: plain HTML, no script.

use axum::body::Body;
use axum::response::Response;
use http::{HeaderValue, StatusCode, header};

/// `text` safe inside HTML text and double-quoted attributes.
pub(crate) fn escape(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    for c in text.chars() {
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

/// What the consent page shows.
pub(crate) struct Consent<'a> {
    pub(crate) action: &'a str,
    pub(crate) txn: &'a str,
    pub(crate) client: &'a str,
    pub(crate) redirect_host: &'a str,
    pub(crate) scope: &'a str,
    pub(crate) error: Option<&'a str>,
}

pub(crate) fn consent(c: &Consent<'_>) -> Response {
    let scope = if c.scope.is_empty() {
        "<li>(no particular scope)</li>".to_owned()
    } else {
        c.scope
            .split(' ')
            .map(|s| format!("<li><code>{}</code></li>", escape(s)))
            .collect()
    };
    let error = c
        .error
        .map(|e| format!("<p role=\"alert\"><strong>{}</strong></p>", escape(e)))
        .unwrap_or_default();
    let html = format!(
        r#"<!doctype html>
<html lang="en"><head><meta charset="utf-8"><title>Authorize {client}</title>
<meta name="viewport" content="width=device-width, initial-scale=1"></head>
<body>
<h1>Authorize {client}</h1>
<p>The application <strong>{client}</strong> (returning to <code>{host}</code>) asks for access:</p>
<ul>{scope}</ul>
{error}
<form method="post" action="{action}">
<input type="hidden" name="txn" value="{txn}">
<p><label>User name <input name="username" autocomplete="username" required></label></p>
<p><label>Password <input name="password" type="password" autocomplete="current-password"></label></p>
<p><button type="submit" name="decision" value="approve" id="approve">Allow</button>
<button type="submit" name="decision" value="deny" id="deny" formnovalidate>Deny</button></p>
</form>
</body></html>
"#,
        client = escape(c.client),
        host = escape(c.redirect_host),
        action = escape(c.action),
        txn = escape(c.txn),
    );
    html_response(StatusCode::OK, html)
}

/// An error shown to the user instead of a redirect (unknown client, redirect URI not
/// registered, expired request).
pub(crate) fn error(status: StatusCode, message: &str) -> Response {
    let html = format!(
        "<!doctype html>\n<html lang=\"en\"><head><meta charset=\"utf-8\"><title>Authorization error</title></head>\n<body><h1>Authorization error</h1><p>{}</p></body></html>\n",
        escape(message)
    );
    html_response(status, html)
}

/// An answer of `status` with `body` of `content_type`, which nothing may store.
pub(crate) fn not_stored(status: StatusCode, body: Body, content_type: &'static str) -> Response {
    let mut response = Response::new(body);
    *response.status_mut() = status;
    let h = response.headers_mut();
    h.insert(header::CONTENT_TYPE, HeaderValue::from_static(content_type));
    h.insert(header::CACHE_CONTROL, HeaderValue::from_static("no-store"));
    response
}

fn html_response(status: StatusCode, html: String) -> Response {
    let mut response = not_stored(status, Body::from(html), "text/html; charset=utf-8");
    let h = response.headers_mut();
    h.insert(header::X_FRAME_OPTIONS, HeaderValue::from_static("DENY"));
    // No script, no framing (clickjacking of the consent button).
    h.insert(
        header::CONTENT_SECURITY_POLICY,
        HeaderValue::from_static("default-src 'none'; frame-ancestors 'none'"),
    );
    h.insert(
        header::REFERRER_POLICY,
        HeaderValue::from_static("no-referrer"),
    );
    response
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn markup_is_escaped() {
        assert_eq!(
            escape(r#"<a href="x">'&'</a>"#),
            "&lt;a href=&quot;x&quot;&gt;&#39;&amp;&#39;&lt;/a&gt;"
        );
    }
}
