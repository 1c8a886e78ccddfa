//! The layers point down: every module of `src/` belongs to one layer of ARCHITECTURE.md's
//! "Layers" table (the declaration), and every path it names (`use crate::…`, `crate::…` in code,
//! `super::…`) reaches a module of its own layer or of one below it. The core (all but the
//! sources and the fronts) names no GUI, driver or HTTP crate. Test code (files and modules under
//! `#[cfg(test)]`) may reach up: a unit test can build its case through the estimator.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

/// One declared layer: its rank (row) and name, the module paths it holds.
struct Layer {
    rank: usize,
    name: String,
    modules: Vec<String>,
}

/// The "Layers" table of ARCHITECTURE.md: `| rank | layer | modules | … |`, modules as
/// backticked paths (`estimate`, `engine::ops`); the binary's modules are `cli`, the crate root
/// `crate`.
fn declared() -> Vec<Layer> {
    let text = std::fs::read_to_string("ARCHITECTURE.md").unwrap_or_else(|e| panic!("ARCHITECTURE.md: {e}"));
    let section =
        text.split("\n## Layers").nth(1).unwrap_or_else(|| panic!("ARCHITECTURE.md has no '## Layers'"));
    let mut layers = Vec::new();
    for line in section.lines().skip_while(|l| !l.starts_with('|')).take_while(|l| l.starts_with('|')) {
        let cells: Vec<&str> = line.split('|').map(str::trim).collect();
        let Ok(rank) = cells.get(1).copied().unwrap_or("").parse::<usize>() else { continue };
        let modules = cells[3].split('`').skip(1).step_by(2).map(str::to_owned).collect::<Vec<_>>();
        assert!(!modules.is_empty(), "layer {rank} lists no module: {line}");
        layers.push(Layer { rank, name: cells[2].to_owned(), modules });
    }
    assert!(layers.len() >= 8, "the Layers table has {} rows", layers.len());
    for (i, l) in layers.iter().enumerate() {
        assert_eq!(l.rank, i, "the Layers table's ranks count up from 0: {}", l.name);
    }
    layers
}

/// The module path of a source file: `src/estimate/step.rs` → `estimate::step`,
/// `src/engine/ops/mod.rs` → `engine::ops`, `src/lib.rs` → `crate`, the binary → `cli`.
fn module_of(file: &Path) -> String {
    let rel = file.strip_prefix("src").unwrap_or(file).with_extension("");
    let parts: Vec<String> = rel.iter().map(|p| p.to_string_lossy().into_owned()).collect();
    match parts.first().map(String::as_str) {
        Some("main") | Some("cli") => return "cli".into(),
        Some("lib") => return "crate".into(),
        _ => {}
    }
    let mut parts = parts;
    if parts.last().is_some_and(|p| p == "mod") {
        parts.pop();
    }
    parts.join("::")
}

/// The layer of a module path: the longest declared prefix.
fn layer_of<'a>(layers: &'a [Layer], module: &str) -> Option<&'a Layer> {
    let mut best: Option<(&Layer, usize)> = None;
    for l in layers {
        for m in &l.modules {
            let hit = module == m || module.starts_with(&format!("{m}::"));
            if hit && best.is_none_or(|(_, n)| m.len() > n) {
                best = Some((l, m.len()));
            }
        }
    }
    best.map(|(l, _)| l)
}

fn rust_files(dir: &Path, out: &mut Vec<PathBuf>) {
    let entries = std::fs::read_dir(dir).unwrap_or_else(|e| panic!("{}: {e}", dir.display()));
    for e in entries.flatten() {
        let p = e.path();
        if p.is_dir() {
            rust_files(&p, out);
        } else if p.extension().is_some_and(|x| x == "rs") {
            out.push(p);
        }
    }
}

/// The file's code without comments and without its `#[cfg(test)]` modules, and the names of
/// the child modules it declares under `#[cfg(test)]` (test-only files).
fn code_of(text: &str) -> (String, Vec<String>) {
    let mut out = String::new();
    let mut test_children = Vec::new();
    let mut lines = text.lines().peekable();
    while let Some(line) = lines.next() {
        let t = line.trim();
        if t == "#[cfg(test)]" {
            let next = lines.peek().map(|l| l.trim().to_owned()).unwrap_or_default();
            if let Some(name) = next.strip_prefix("mod ").or_else(|| next.strip_prefix("pub mod ")) {
                lines.next();
                if let Some(child) = name.strip_suffix(';') {
                    test_children.push(child.to_owned());
                } else {
                    // skip the module's body: count braces from its opening line
                    let mut depth = next.matches('{').count() as i64 - next.matches('}').count() as i64;
                    while depth > 0 {
                        let Some(l) = lines.next() else { break };
                        depth += l.matches('{').count() as i64 - l.matches('}').count() as i64;
                    }
                }
            }
            continue;
        }
        let code = match line.find("//") {
            Some(i) if !line[..i].contains('"') => &line[..i],
            _ => line,
        };
        out.push_str(code);
        out.push('\n');
    }
    (out, test_children)
}

/// The module paths a piece of code names: `crate::a::b`, `crate::{a, b}`, `super::x`,
/// `super::super::{x, y}` (resolved against `module`: `a/b.rs` is `a::b`, `a/mod.rs` is `a`, and
/// `super` drops the last name either way).
fn named_paths(code: &str, module: &str) -> Vec<String> {
    let mut out = Vec::new();
    let bytes = code.as_bytes();
    let mut i = 0;
    while i < code.len() {
        let rest = &code[i..];
        let ident_before =
            i > 0 && (bytes[i - 1].is_ascii_alphanumeric() || bytes[i - 1] == b'_' || bytes[i - 1] == b':');
        let (base, skip) = if rest.starts_with("crate::") && !ident_before {
            (Vec::new(), "crate::".len())
        } else if rest.starts_with("super::") && !ident_before {
            let mut base: Vec<&str> =
                if module == "crate" { Vec::new() } else { module.split("::").collect() };
            let mut j = 0;
            while rest[j..].starts_with("super::") {
                base.pop();
                j += "super::".len();
            }
            (base.into_iter().map(str::to_owned).collect(), j)
        } else {
            i += rest.chars().next().map_or(1, char::len_utf8);
            continue;
        };
        let tail = &rest[skip..];
        let heads: Vec<String> = if let Some(inner) = tail.strip_prefix('{') {
            // first-level names of a brace list
            let mut depth = 0;
            let mut cur = String::new();
            let mut names = Vec::new();
            for ch in inner.chars() {
                match ch {
                    '{' => depth += 1,
                    '}' if depth == 0 => break,
                    '}' => depth -= 1,
                    ',' if depth == 0 => names.push(std::mem::take(&mut cur)),
                    _ => cur.push(ch),
                }
            }
            names.push(cur);
            names.iter().map(|n| path_head(n.trim())).filter(|n| !n.is_empty()).collect()
        } else {
            vec![path_head(tail)]
        };
        for h in heads {
            let mut p = base.clone();
            p.extend(h.split("::").filter(|s| !s.is_empty()).map(str::to_owned));
            out.push(if p.is_empty() { "crate".into() } else { p.join("::") });
        }
        i += skip;
    }
    out
}

/// The leading `a::b::c` of a path (identifiers joined by `::`).
fn path_head(s: &str) -> String {
    let mut end = 0;
    let b = s.as_bytes();
    while end < s.len() {
        if b[end].is_ascii_alphanumeric() || b[end] == b'_' {
            end += 1;
        } else if s[end..].starts_with("::")
            && s[end + 2..].starts_with(|c: char| c.is_ascii_alphanumeric() || c == '_')
        {
            end += 2;
        } else {
            break;
        }
    }
    s[..end].to_owned()
}

/// Every source file with its module path, its code, whether it is test-only.
fn sources() -> Vec<(PathBuf, String, String, bool)> {
    let mut files = Vec::new();
    rust_files(Path::new("src"), &mut files);
    files.sort();
    let mut test_only: Vec<String> = Vec::new();
    let mut parsed = Vec::new();
    for f in files {
        let text = std::fs::read_to_string(&f).unwrap_or_else(|e| panic!("{}: {e}", f.display()));
        let module = module_of(&f);
        let (code, children) = code_of(&text);
        let parent = if f.file_name().is_some_and(|n| n == "mod.rs" || n == "lib.rs") {
            module.clone()
        } else {
            module.rsplit_once("::").map_or(String::new(), |(p, _)| p.to_owned())
        };
        for c in children {
            let c = if parent.is_empty() || parent == "crate" { c } else { format!("{parent}::{c}") };
            test_only.push(c);
        }
        parsed.push((f, module, code));
    }
    parsed
        .into_iter()
        .map(|(f, m, c)| {
            let test = f.file_name().is_some_and(|n| n == "tests.rs")
                || test_only.iter().any(|t| m == *t || m.starts_with(&format!("{t}::")));
            (f, m, c, test)
        })
        .collect()
}

#[test]
fn every_import_points_down_the_declared_layers() {
    let layers = declared();
    let mut problems = Vec::new();
    let mut used: BTreeMap<String, usize> = BTreeMap::new();
    for (file, module, code, test) in sources() {
        let Some(own) = layer_of(&layers, &module) else {
            problems.push(format!("{}: module {module} is in no layer of ARCHITECTURE.md", file.display()));
            continue;
        };
        for m in layers.iter().flat_map(|l| &l.modules) {
            if module == *m || module.starts_with(&format!("{m}::")) {
                *used.entry(m.clone()).or_default() += 1;
            }
        }
        if test || module == "cli" {
            continue;
        }
        for target in named_paths(&code, &module) {
            // `crate::text!` is i18n's macro, exported at the root
            let target =
                if target == "text" || target.starts_with("text::") { "i18n".to_owned() } else { target };
            if target == "crate" {
                continue;
            }
            let Some(to) = layer_of(&layers, &target) else { continue };
            if to.rank > own.rank {
                problems.push(format!(
                    "{}: {module} ({}, layer {}) names {target} ({}, layer {})",
                    file.display(),
                    own.name,
                    own.rank,
                    to.name,
                    to.rank
                ));
            }
        }
    }
    for m in layers.iter().flat_map(|l| &l.modules) {
        if !used.contains_key(m) {
            problems.push(format!("ARCHITECTURE.md declares `{m}`, which no file of src/ is"));
        }
    }
    assert!(problems.is_empty(), "{} imports against the layers:\n{}", problems.len(), problems.join("\n"));
}

#[test]
fn the_core_names_no_gui_driver_or_http_crate() {
    let layers = declared();
    let fronts = ["gui", "monitor", "hub", "cli"];
    let crates = ["eframe", "egui", "egui_plot", "egui_kittest", "nvml_wrapper", "ureq", "rfd", "image"];
    let mut problems = Vec::new();
    for (file, module, code, _) in sources() {
        if fronts.iter().any(|f| module == *f || module.starts_with(&format!("{f}::"))) {
            continue;
        }
        assert!(layer_of(&layers, &module).is_some() || module == "crate", "{module} undeclared");
        for c in crates {
            let named = code.match_indices(&format!("{c}::")).any(|(i, _)| {
                let b = code.as_bytes();
                i == 0 || !(b[i - 1].is_ascii_alphanumeric() || b[i - 1] == b'_' || b[i - 1] == b':')
            });
            if named {
                problems.push(format!("{}: the core module {module} names the crate {c}", file.display()));
            }
        }
    }
    assert!(problems.is_empty(), "{}", problems.join("\n"));
}

#[test]
fn the_path_reader_resolves_crate_and_super_paths() {
    let code = "use crate::{engine::ops::Graph, model};\nuse super::super::families::x;\nlet a = crate::estimate::step::walk();\nuse super::{saved::Cat, Ctx};";
    let got = named_paths(code, "engine::walk::output");
    let want = [
        "engine::ops::Graph",
        "model",
        "engine::families::x",
        "estimate::step::walk",
        "engine::walk::saved::Cat",
        "engine::walk::Ctx",
    ];
    assert_eq!(got, want);
    let (code, children) = code_of(
        "use a;\n#[cfg(test)]\nmod tests {\n    use crate::gui;\n}\n#[cfg(test)]\nmod toy;\nuse b; // crate::c\n",
    );
    assert_eq!(code, "use a;\nuse b; \n");
    assert_eq!(children, ["toy"]);
}
