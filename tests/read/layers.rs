//! The map is the code's: ARCHITECTURE.md's dependency order of the core's stages (the line
//! `input → io → … → scan` under "Dependency order"), read from the file itself, checked
//! against every `crate::<module>` path in `src/` outside comments. A stage imports only the
//! stages to its left (and the leaf files); `flow` imports no stage; `deliver` imports no stage
//! but `flow`; no stage but `scan` imports `deliver`. Unit tests (a file's `#[cfg(test)]` part)
//! may use the whole crate.

use std::path::Path;

/// The stages in ARCHITECTURE.md's order.
fn order() -> Vec<String> {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let map = std::fs::read_to_string(root.join("ARCHITECTURE.md")).unwrap();
    let at = map
        .find("**Dependency order**")
        .expect("ARCHITECTURE.md has its dependency order");
    let line = map[at..]
        .lines()
        .find(|l| l.contains(" → ") && l.trim_start().starts_with("input"))
        .expect("the order's first line: input → ...");
    line.split('→').map(|s| s.trim().to_string()).collect()
}

/// The imports of `text` (the file `rel` under `src/`) that break the order.
fn violations(order: &[String], rel: &str, text: &str) -> Vec<String> {
    let top = rel.split('/').next().unwrap_or(rel).trim_end_matches(".rs");
    let rank = |m: &str| order.iter().position(|s| s == m);
    let mut out = Vec::new();
    for (n, line) in text.lines().enumerate() {
        // A file's unit tests (last, by convention) drive the whole scan: not its imports.
        if line.trim() == "#[cfg(test)]" {
            break;
        }
        if line.trim_start().starts_with("//") {
            continue;
        }
        for (i, _) in line.match_indices("crate::") {
            let target: String = line[i + 7..]
                .chars()
                .take_while(|c| c.is_ascii_alphanumeric() || *c == '_')
                .collect();
            if target == top {
                continue;
            }
            let bad = match (rank(top), rank(&target)) {
                (Some(a), Some(b)) => b > a,
                (Some(_), None) => target == "deliver" && top != "scan",
                (None, Some(_)) => top == "flow" || top == "deliver",
                (None, None) => top == "flow" && target == "deliver",
            };
            if bad {
                out.push(format!("src/{rel}:{}: {top} imports {target}", n + 1));
            }
        }
    }
    out
}

fn walk(dir: &Path, base: &Path, out: &mut Vec<(String, String)>) {
    for entry in std::fs::read_dir(dir).unwrap() {
        let path = entry.unwrap().path();
        if path.is_dir() {
            walk(&path, base, out);
        } else if path.extension().is_some_and(|e| e == "rs") {
            let rel = path
                .strip_prefix(base)
                .unwrap()
                .to_string_lossy()
                .replace('\\', "/");
            out.push((rel, std::fs::read_to_string(&path).unwrap()));
        }
    }
}

#[test]
fn no_stage_imports_a_later_stage() {
    let order = order();
    assert_eq!(order.first().map(String::as_str), Some("input"));
    assert_eq!(order.last().map(String::as_str), Some("scan"));
    let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("src");
    let mut files = Vec::new();
    walk(&src, &src, &mut files);
    assert!(files.len() > 50, "src/ read: {} files", files.len());
    for stage in &order {
        let present = files
            .iter()
            .any(|(rel, _)| rel.split('/').next().unwrap().trim_end_matches(".rs") == stage);
        assert!(
            present,
            "ARCHITECTURE.md names stage {stage:?}, src/ has none"
        );
    }
    let found: Vec<String> = files
        .iter()
        .flat_map(|(rel, text)| violations(&order, rel, text))
        .collect();
    assert!(
        found.is_empty(),
        "imports against ARCHITECTURE.md's dependency order:\n{}",
        found.join("\n")
    );
}

#[test]
fn the_check_sees_a_backward_import() {
    let order = order();
    let v = violations(&order, "input/list.rs", "use crate::plan::prune;\n");
    assert_eq!(v, ["src/input/list.rs:1: input imports plan"]);
    assert!(violations(&order, "plan/file.rs", "use crate::footer::FileMeta;").is_empty());
    assert!(violations(&order, "io/x.rs", "/// see [`crate::decode`]").is_empty());
    assert_eq!(
        violations(&order, "flow/budget.rs", "crate::drive::x()").len(),
        1,
        "flow imports no stage"
    );
    assert_eq!(
        violations(&order, "decode/x.rs", "crate::deliver::y").len(),
        1
    );
    let tests = "use crate::error::Error;\n#[cfg(test)]\nmod tests { use crate::scan::Scan; }";
    assert!(violations(&order, "decode/x.rs", tests).is_empty());
}
