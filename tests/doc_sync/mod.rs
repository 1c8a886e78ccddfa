//! Generated parts of `docs/` kept in step with the tests that compute them (each integration-test
//! crate that writes docs includes this as `mod doc_sync`). A test renders its Markdown and calls
//! [`sync`]: without `UPDATE_DOCS=1` a difference from the file fails the test and names the
//! command that rewrites it; with `UPDATE_DOCS=1` the file (or its marked section) is rewritten.

use std::path::Path;
use std::sync::Mutex;

/// Tests of one crate run on several threads and may rewrite sections of the same file.
static WRITE: Mutex<()> = Mutex::new(());

/// Compares `generated` with the file `path` (relative to the crate root): the whole file when
/// `section` is `None`, else the lines between `<!-- section:begin -->` and `<!-- section:end -->`.
/// `test` names the test crate for the hint (`cargo test --test <test>`).
pub fn sync(path: &str, section: Option<&str>, generated: &str, test: &str) {
    let _guard = WRITE.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
    let file = Path::new(env!("CARGO_MANIFEST_DIR")).join(path);
    let text = std::fs::read_to_string(&file).unwrap_or_default();
    let generated = if generated.ends_with('\n') { generated.to_owned() } else { format!("{generated}\n") };
    let (current, updated) = match section {
        None => (text.clone(), generated.clone()),
        Some(name) => {
            let (begin, end) = (format!("<!-- {name}:begin -->\n"), format!("<!-- {name}:end -->"));
            let start = text.find(&begin).map(|i| i + begin.len());
            let stop = start.and_then(|s| text[s..].find(&end).map(|i| s + i));
            let (Some(start), Some(stop)) = (start, stop) else {
                panic!("{path}: the markers `{}` and `{end}` are missing", begin.trim_end());
            };
            (text[start..stop].to_owned(), format!("{}{generated}{}", &text[..start], &text[stop..]))
        }
    };
    if current == generated {
        return;
    }
    if std::env::var_os("UPDATE_DOCS").is_some_and(|v| v == "1") {
        std::fs::write(&file, updated).unwrap_or_else(|e| panic!("{path}: {e}"));
        eprintln!("{path}: rewritten{}", section.map(|s| format!(" (section {s})")).unwrap_or_default());
        return;
    }
    let first = current.lines().zip(generated.lines()).position(|(a, b)| a != b);
    let line = first.unwrap_or_else(|| current.lines().count().min(generated.lines().count()));
    let (was, now) =
        (current.lines().nth(line).unwrap_or("(end)"), generated.lines().nth(line).unwrap_or("(end)"));
    let place = match section {
        Some(s) => format!("section {s}, its line {}", line + 1),
        None => format!("line {}", line + 1),
    };
    panic!(
        "{path} is out of date ({place}):\n  file:      {was}\n  generated: {now}\n\
         run `UPDATE_DOCS=1 cargo test --locked --test {test}` to rewrite it, and review the diff"
    );
}
