//! The strict check of a Delta log JSON file (a commit, a log compaction, a staged commit, a
//! v2 checkpoint in JSON) before delta-kernel reads it.
//!
//! The kernel's JSON reader (arrow-json) is lenient: it reads a stream of values, not lines,
//! accepts raw control characters (NUL included) inside strings, and ignores keys it does not
//! know. So a run of zeroed bytes inside `"remove"` turns a remove into an unknown action that
//! is ignored, and the file it removed comes back: more rows than the table has, no error.
//! This check reads the file as the protocol writes it ("newline-delimited JSON, where every
//! action is stored as a single-line JSON document", PROTOCOL.md):
//!
//! - every non-blank line is one JSON object (RFC 8259, as serde_json parses it: control
//!   characters in strings and trailing bytes are refused) with exactly one key, the action;
//! - a known action's value is an object; an unknown action is allowed (the protocol says
//!   readers must ignore unrecognized actions and fields);
//! - `sidecar` and `checkpointMetadata` appear only in checkpoints (PROTOCOL.md: v2
//!   checkpoint actions are not allowed in commits); a checkpoint holds no `commitInfo` or
//!   `cdc`, and exactly one `checkpointMetadata`;
//! - a commit holds at most one `add` and one `remove` per path, one `metaData`, one
//!   `protocol`, one `txn` per application id (reconciliation rules).
//!
//! Invariant: every rule is one the protocol states for files writers produce, so no valid
//! table is refused (all golden tables of delta-kernel pass); what fails names the file and
//! the line.

use std::collections::HashSet;

use serde_json::Value;

/// Actions the protocol defines.
const KNOWN: &[&str] = &[
    "add",
    "remove",
    "metaData",
    "protocol",
    "commitInfo",
    "txn",
    "cdc",
    "domainMetadata",
    "checkpointMetadata",
    "sidecar",
];

/// What kind of log JSON file a path names, if any.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum LogFile {
    /// `<20 digits>.json`, or a staged commit `_staged_commits/<20 digits>.<uuid>.json`.
    Commit,
    /// `<20 digits>.<20 digits>.compacted.json`: the reconciled actions of several commits.
    Compaction,
    /// `<20 digits>.checkpoint.<uuid>.json`: a v2 checkpoint in JSON.
    Checkpoint,
}

fn version(s: &str) -> bool {
    s.len() == 20 && s.bytes().all(|b| b.is_ascii_digit())
}

impl LogFile {
    /// The kind of log file at `path` (an object path), if it is one this check reads.
    pub fn of(path: &str) -> Option<LogFile> {
        let (dir, name) = path.rsplit_once('/').unwrap_or(("", path));
        let in_log = |d: &str| d == "_delta_log" || d.ends_with("/_delta_log");
        let stem = name.strip_suffix(".json")?;
        let parts: Vec<&str> = stem.split('.').collect();
        match parts.as_slice() {
            [v] if in_log(dir) && version(v) => Some(LogFile::Commit),
            [a, b, "compacted"] if in_log(dir) && version(a) && version(b) => {
                Some(LogFile::Compaction)
            }
            [v, "checkpoint", uuid] if in_log(dir) && version(v) && !uuid.is_empty() => {
                Some(LogFile::Checkpoint)
            }
            [v, uuid] if !uuid.is_empty() && version(v) => {
                let staged = dir
                    .strip_suffix("/_staged_commits")
                    .or_else(|| (dir == "_staged_commits").then_some(""))?;
                (staged.is_empty() || in_log(staged)).then_some(LogFile::Commit)
            }
            _ => None,
        }
    }
}

/// JSON's whitespace, as arrow-json (the kernel's reader) skips it: not Unicode's (`str::trim`
/// would take a line of vertical tabs for a blank one, which the kernel refuses).
pub(crate) fn json_whitespace(b: u8) -> bool {
    matches!(b, b' ' | b'\n' | b'\r' | b'\t')
}

/// Check the bytes of a log file of `kind`; `Err` says which line breaks which rule.
pub(crate) fn check(bytes: &[u8], kind: LogFile) -> Result<(), String> {
    let text = std::str::from_utf8(bytes).map_err(|e| format!("not UTF-8: {e}"))?;
    let (mut adds, mut removes, mut txns) = (HashSet::new(), HashSet::new(), HashSet::new());
    let (mut metadata, mut protocol, mut checkpoint_metadata) = (0, 0, 0);
    for (i, line) in text.split('\n').enumerate() {
        let no = i + 1;
        let line = line.strip_suffix('\r').unwrap_or(line);
        if line.bytes().all(json_whitespace) {
            // arrow-json skips whitespace between values: a blank line holds no action.
            continue;
        }
        let value: Value = serde_json::from_str(line)
            .map_err(|e| format!("line {no}: not one JSON value: {e}"))?;
        let Value::Object(object) = value else {
            return Err(format!("line {no}: not a JSON object"));
        };
        let mut entries = object.iter();
        let (Some((action, body)), None) = (entries.next(), entries.next()) else {
            return Err(format!(
                "line {no}: {} keys (an action is an object with one key)",
                object.len()
            ));
        };
        if !KNOWN.contains(&action.as_str()) {
            // Readers must ignore actions they do not know (protocol evolution).
            continue;
        }
        let Some(body) = body.as_object() else {
            return Err(format!("line {no}: the {action:?} action is not an object"));
        };
        let v2_only = action == "sidecar" || action == "checkpointMetadata";
        match kind {
            LogFile::Commit | LogFile::Compaction if v2_only => {
                return Err(format!(
                    "line {no}: a {action:?} action, allowed only in checkpoints"
                ))
            }
            LogFile::Checkpoint if action == "commitInfo" || action == "cdc" => {
                return Err(format!(
                    "line {no}: a {action:?} action, which checkpoints must not hold"
                ))
            }
            _ => {}
        }
        let string = |key: &str| body.get(key).and_then(Value::as_str);
        match action.as_str() {
            "add" | "remove" => {
                let Some(path) = string("path") else {
                    return Err(format!("line {no}: an {action:?} action without a path"));
                };
                let seen = if action == "add" {
                    &mut adds
                } else {
                    &mut removes
                };
                if kind == LogFile::Commit && !seen.insert(path.to_string()) {
                    return Err(format!(
                        "line {no}: a second {action:?} of {path:?} in one commit"
                    ));
                }
            }
            "metaData" => metadata += 1,
            "protocol" => protocol += 1,
            "checkpointMetadata" => checkpoint_metadata += 1,
            "txn" if kind == LogFile::Commit => {
                let app = string("appId").unwrap_or_default();
                if !txns.insert(app.to_string()) {
                    return Err(format!(
                        "line {no}: a second \"txn\" of application {app:?} in one commit"
                    ));
                }
            }
            _ => {}
        }
        if kind == LogFile::Commit && (metadata > 1 || protocol > 1) {
            return Err(format!(
                "line {no}: a second {action:?} action in one commit"
            ));
        }
    }
    if kind == LogFile::Checkpoint && checkpoint_metadata != 1 {
        return Err(format!(
            "{checkpoint_metadata} \"checkpointMetadata\" actions (a v2 checkpoint has one)"
        ));
    }
    Ok(())
}

/// The error a log file that fails [`check`] gives its reader: inside the object-store error
/// that the kernel reports, and recognised by `from_kernel_error`, which makes it a
/// `CorruptTable` error naming the file.
#[derive(Debug)]
pub(crate) struct CorruptLog {
    /// The file's URL.
    pub path: String,
    pub reason: String,
}

impl std::fmt::Display for CorruptLog {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "damaged Delta log file {}: {}", self.path, self.reason)
    }
}

impl std::error::Error for CorruptLog {}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn kinds_of_log_files() {
        let k = |s: &str| LogFile::of(s);
        assert_eq!(
            k("t/_delta_log/00000000000000000012.json"),
            Some(LogFile::Commit)
        );
        assert_eq!(
            k("_delta_log/00000000000000000000.json"),
            Some(LogFile::Commit)
        );
        assert_eq!(
            k("t/_delta_log/_staged_commits/00000000000000000012.3a0d65cd.json"),
            Some(LogFile::Commit)
        );
        assert_eq!(
            k("t/_delta_log/00000000000000000004.00000000000000000006.compacted.json"),
            Some(LogFile::Compaction)
        );
        assert_eq!(
            k("t/_delta_log/00000000000000000002.checkpoint.80a083e8.json"),
            Some(LogFile::Checkpoint)
        );
        assert_eq!(k("t/_delta_log/_last_checkpoint"), None);
        assert_eq!(
            k("t/_delta_log/00000000000000000012.checkpoint.parquet"),
            None
        );
        assert_eq!(k("t/_delta_log/00000000000000000012.crc"), None);
        assert_eq!(k("t/x_delta_log/00000000000000000012.json"), None);
        assert_eq!(k("t/part-00000.json"), None);
    }

    const ADD: &str =
        r#"{"add":{"path":"a.parquet","size":1,"modificationTime":0,"dataChange":true}}"#;
    const REMOVE: &str = r#"{"remove":{"path":"a.parquet","dataChange":true}}"#;

    #[test]
    fn valid_commits_pass() {
        let commit = format!("{ADD}\n{REMOVE}\n\n{{\"futureAction\":{{\"x\":1}}}}\r\n");
        assert_eq!(check(commit.as_bytes(), LogFile::Commit), Ok(()));
        assert_eq!(check(b"", LogFile::Commit), Ok(()));
    }

    #[test]
    fn damaged_commits_fail() {
        let bad = |s: String, why: &str| {
            let e = check(s.as_bytes(), LogFile::Commit).unwrap_err();
            assert!(e.contains(why), "{e}");
        };
        bad(
            ADD.replace("remove", "rem\0ve") + "\n" + &REMOVE.replace("remove", "rem\0ve"),
            "line 2",
        );
        bad(
            format!("{ADD}\n{}", REMOVE.replace("a.parquet", "a.par\0quet")),
            "line 2",
        );
        bad(format!("{ADD}\n\0\0\0\0"), "line 2");
        bad(format!("{ADD}\nthis is not json"), "line 2");
        bad(format!("{ADD}{REMOVE}"), "line 1");
        bad(format!("{ADD}\n{ADD}"), "second \"add\"");
        bad(
            format!("{ADD}\n{{\"sidecar\":{{\"path\":\"s\"}}}}"),
            "checkpoints",
        );
        bad(r#"{"add":1}"#.to_string(), "not an object");
        bad(r#"{"add":{},"remove":{}}"#.to_string(), "2 keys");
    }

    #[test]
    fn checkpoint_rules() {
        let cm = r#"{"checkpointMetadata":{"version":2}}"#;
        let ok = format!("{cm}\n{ADD}\n{ADD}\n{{\"sidecar\":{{\"path\":\"s\"}}}}");
        assert_eq!(check(ok.as_bytes(), LogFile::Checkpoint), Ok(()));
        assert!(check(ADD.as_bytes(), LogFile::Checkpoint).is_err());
        let ci = format!("{cm}\n{{\"commitInfo\":{{}}}}");
        assert!(check(ci.as_bytes(), LogFile::Checkpoint).is_err());
    }
}
