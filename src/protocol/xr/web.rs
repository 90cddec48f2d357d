//! The page's files, compiled into the binary from `web/` (so a release binary serves the page
//! from anywhere, and nothing is fetched at run time): the HTML, its ES modules, and the pinned
//! three.js build (0.187.0, MIT, see `web/vendor/`).

/// `(URL path, MIME type, contents)` of every file the page loads.
const FILES: &[(&str, &str, &[u8])] = &[
    ("/", HTML, include_bytes!("../../../web/index.html")),
    (
        "/index.html",
        HTML,
        include_bytes!("../../../web/index.html"),
    ),
    (
        "/app/main.js",
        JS,
        include_bytes!("../../../web/app/main.js"),
    ),
    (
        "/app/mapping.js",
        JS,
        include_bytes!("../../../web/app/mapping.js"),
    ),
    (
        "/app/protocol.js",
        JS,
        include_bytes!("../../../web/app/protocol.js"),
    ),
    (
        "/app/scene.js",
        JS,
        include_bytes!("../../../web/app/scene.js"),
    ),
    ("/app/hud.js", JS, include_bytes!("../../../web/app/hud.js")),
    (
        "/vendor/three.module.js",
        JS,
        include_bytes!("../../../web/vendor/three.module.js"),
    ),
    (
        "/vendor/three.core.js",
        JS,
        include_bytes!("../../../web/vendor/three.core.js"),
    ),
];

const HTML: &str = "text/html; charset=utf-8";
const JS: &str = "text/javascript; charset=utf-8";

/// The file served at `path`, with its MIME type.
pub fn file(path: &str) -> Option<(&'static str, &'static [u8])> {
    FILES
        .iter()
        .find(|(p, _, _)| *p == path)
        .map(|(_, mime, body)| (*mime, *body))
}

#[cfg(test)]
mod tests {
    #[test]
    fn the_page_and_its_modules_are_there() {
        let (mime, html) = super::file("/").unwrap();
        assert!(mime.starts_with("text/html"));
        assert!(std::str::from_utf8(html).unwrap().contains("app/main.js"));
        assert!(super::file("/vendor/three.module.js").is_some());
        assert!(super::file("/../Cargo.toml").is_none());
    }
}
