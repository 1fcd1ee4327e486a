//! The crate's module map in `src/lib.rs` says each module imports only modules listed before
//! it; this reads every module's `crate::` imports and holds the map to that.

use std::collections::BTreeSet;
use std::path::Path;

/// The modules in the order of the map: the `- [`name`]:` items of lib.rs's documentation.
fn map_order(lib: &str) -> Vec<String> {
    let item = regex::Regex::new(r"^//! - \[`([a-z_]+)`\]:").unwrap();
    lib.lines()
        .filter_map(|l| item.captures(l).map(|c| c[1].to_owned()))
        .collect()
}

/// The crate modules a module's files import (`crate::x`, `use crate::{x, y::z}`), outside
/// their tests.
fn imports(module: &Path) -> BTreeSet<String> {
    let files: Vec<std::path::PathBuf> = if module.is_dir() {
        walk(module)
    } else {
        vec![module.to_owned()]
    };
    let path = regex::Regex::new(r"\bcrate::([a-z_]+)").unwrap();
    let group = regex::Regex::new(r"use\s+crate::\{([^}]*)\}").unwrap();
    let first = regex::Regex::new(r"(?:^|,)\s*([a-z_]+)").unwrap();
    let mut found = BTreeSet::new();
    for file in files {
        let text = std::fs::read_to_string(&file).unwrap();
        let code = text.split("#[cfg(test)]").next().unwrap();
        let code: String = code
            .lines()
            .filter(|l| !l.trim_start().starts_with("//"))
            .collect::<Vec<_>>()
            .join("\n");
        found.extend(path.captures_iter(&code).map(|c| c[1].to_owned()));
        for g in group.captures_iter(&code) {
            found.extend(first.captures_iter(&g[1]).map(|c| c[1].to_owned()));
        }
    }
    found
}

fn walk(dir: &Path) -> Vec<std::path::PathBuf> {
    let mut files = Vec::new();
    for entry in std::fs::read_dir(dir).unwrap() {
        let path = entry.unwrap().path();
        if path.is_dir() {
            files.extend(walk(&path));
        } else if path.extension().is_some_and(|e| e == "rs") {
            files.push(path);
        }
    }
    files
}

#[test]
fn every_module_imports_only_modules_listed_before_it_in_the_map() {
    let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("src");
    let lib = std::fs::read_to_string(src.join("lib.rs")).unwrap();
    let order = map_order(&lib);
    let declared: BTreeSet<String> = regex::Regex::new(r"(?m)^pub mod ([a-z_]+);")
        .unwrap()
        .captures_iter(&lib)
        .map(|c| c[1].to_owned())
        .collect();
    assert_eq!(
        order.iter().cloned().collect::<BTreeSet<_>>(),
        declared,
        "the map names every module once"
    );
    assert_eq!(
        order.len(),
        declared.len(),
        "the map names every module once"
    );
    let mut wrong = Vec::new();
    for (i, module) in order.iter().enumerate() {
        let path = if src.join(module).is_dir() {
            src.join(module)
        } else {
            src.join(format!("{module}.rs"))
        };
        for import in imports(&path) {
            if import != *module && !order[..i].contains(&import) {
                wrong.push(format!("{module} imports {import}"));
            }
        }
    }
    assert!(
        wrong.is_empty(),
        "imports against the map's order: {wrong:?}"
    );
}

/// Longest a source file may be outside its tests: past it, a file holds more than one idea.
const MOST_LINES: usize = 450;

#[test]
fn no_source_file_is_longer_than_450_lines_outside_its_tests() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let mut files = walk(&root.join("src"));
    for entry in std::fs::read_dir(root.join("crates")).unwrap() {
        let src = entry.unwrap().path().join("src");
        if src.is_dir() {
            files.extend(walk(&src));
        }
    }
    // Unit tests kept in a `tests/` directory of their module are tests too.
    files.retain(|file| !file.components().any(|c| c.as_os_str() == "tests"));
    assert!(files.len() > 50, "the sources were found: {files:?}");
    let mut long: Vec<String> = files
        .iter()
        .filter_map(|file| {
            let text = std::fs::read_to_string(file).unwrap();
            let lines = text.split("#[cfg(test)]").next().unwrap().lines().count();
            (lines > MOST_LINES).then(|| format!("{}: {lines}", file.display()))
        })
        .collect();
    long.sort();
    assert!(long.is_empty(), "over {MOST_LINES} lines: {long:#?}");
}
