//! The README and `docs/`: every relative link (and image) points at a file that exists, every
//! `#anchor` at a heading of its page, every page of `docs/` is linked from the README, and the
//! README stays a front door (at most 150 lines).

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};

const README_MAX_LINES: usize = 150;

fn root() -> &'static Path {
    Path::new(env!("CARGO_MANIFEST_DIR"))
}

/// README.md and every Markdown file under docs/, as paths relative to the crate root.
fn pages() -> Vec<PathBuf> {
    let mut out = vec![PathBuf::from("README.md")];
    let dir = std::fs::read_dir(root().join("docs")).unwrap_or_else(|e| panic!("docs/: {e}"));
    let mut docs: Vec<PathBuf> = dir
        .map(|e| e.unwrap_or_else(|e| panic!("docs/: {e}")).path())
        .filter(|p| p.extension().is_some_and(|x| x == "md"))
        .map(|p| p.strip_prefix(root()).unwrap_or(&p).to_path_buf())
        .collect();
    docs.sort();
    out.extend(docs);
    out
}

/// The text outside fenced code blocks and inline code spans.
fn prose(text: &str) -> String {
    let mut out = String::new();
    let mut fenced = false;
    for line in text.lines() {
        if line.trim_start().starts_with("```") {
            fenced = !fenced;
            continue;
        }
        if fenced {
            continue;
        }
        // drop `code spans` (a link inside one is not a link)
        for (i, part) in line.split('`').enumerate() {
            if i % 2 == 0 {
                out += part;
            }
        }
        out.push('\n');
    }
    out
}

/// The targets of `[text](target)` and `![alt](target)` links.
fn links(text: &str) -> Vec<String> {
    let prose = prose(text);
    let mut out = Vec::new();
    let mut rest = prose.as_str();
    while let Some(i) = rest.find("](") {
        rest = &rest[i + 2..];
        if let Some(end) = rest.find(')') {
            let target = rest[..end].split_whitespace().next().unwrap_or("");
            out.push(target.trim_matches(['<', '>']).to_owned());
        }
    }
    out
}

/// GitHub's anchors for a page's headings: lower case, letters, digits, `-` and `_` kept,
/// spaces to `-`, everything else dropped; a repeated heading gets `-1`, `-2`, ...
fn anchors(text: &str) -> BTreeSet<String> {
    let mut seen = BTreeSet::new();
    let mut fenced = false;
    for line in text.lines() {
        if line.trim_start().starts_with("```") {
            fenced = !fenced;
        }
        if fenced || !line.starts_with('#') {
            continue;
        }
        let heading = line.trim_start_matches('#').trim();
        let slug: String = heading
            .to_lowercase()
            .chars()
            .filter_map(|c| match c {
                ' ' => Some('-'),
                c if c.is_alphanumeric() || c == '-' || c == '_' => Some(c),
                _ => None,
            })
            .collect();
        let mut unique = slug.clone();
        let mut n = 0;
        while seen.contains(&unique) {
            n += 1;
            unique = format!("{slug}-{n}");
        }
        seen.insert(unique);
    }
    seen
}

#[test]
fn every_relative_link_in_the_readme_and_docs_resolves() {
    let mut broken = Vec::new();
    for page in pages() {
        let text = std::fs::read_to_string(root().join(&page)).unwrap_or_else(|e| panic!("{page:?}: {e}"));
        let dir = page.parent().unwrap_or(Path::new(""));
        for link in links(&text) {
            if link.is_empty() || link.contains("://") || link.starts_with("mailto:") {
                continue;
            }
            let (file, anchor) = link.split_once('#').unwrap_or((&link, ""));
            let target = if file.is_empty() { page.clone() } else { dir.join(file) };
            let path = root().join(&target);
            if !path.exists() {
                broken.push(format!("{}: {link} (no {})", page.display(), target.display()));
                continue;
            }
            if !anchor.is_empty() && target.extension().is_some_and(|x| x == "md") {
                let heads = anchors(&std::fs::read_to_string(&path).unwrap_or_default());
                if !heads.contains(anchor) {
                    broken.push(format!("{}: {link} (no heading #{anchor} in it)", page.display()));
                }
            }
        }
    }
    assert!(broken.is_empty(), "broken links:\n{}", broken.join("\n"));
}

#[test]
fn every_page_of_the_docs_is_linked_from_the_readme() {
    let readme =
        std::fs::read_to_string(root().join("README.md")).unwrap_or_else(|e| panic!("README.md: {e}"));
    let linked: BTreeSet<String> =
        links(&readme).iter().map(|l| l.split('#').next().unwrap_or("").to_owned()).collect();
    let missing: Vec<String> = pages()
        .iter()
        .skip(1)
        .map(|p| p.to_string_lossy().into_owned())
        .filter(|p| !linked.contains(p))
        .collect();
    assert!(missing.is_empty(), "README.md links no page {missing:?}");
}

#[test]
fn the_readme_is_at_most_150_lines() {
    let readme =
        std::fs::read_to_string(root().join("README.md")).unwrap_or_else(|e| panic!("README.md: {e}"));
    let n = readme.lines().count();
    assert!(
        n <= README_MAX_LINES,
        "README.md has {n} lines; the details belong in docs/ (at most {README_MAX_LINES})"
    );
}

#[test]
fn the_link_reader_finds_links_and_anchors() {
    // the checks above pass trivially if the reader finds nothing: it must see these
    let text = "# A title: `x`\n\nsee [the guide](docs/guide.md#a-title-x) and ![pic](assets/a.png)\n\
                `[not](a-link.md)`\n```\n[nor](this.md)\n```\n## A title: x\n";
    assert_eq!(links(text), ["docs/guide.md#a-title-x", "assets/a.png"]);
    assert_eq!(anchors(text), BTreeSet::from(["a-title-x".to_owned(), "a-title-x-1".to_owned()]));
}
