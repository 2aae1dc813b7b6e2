//! Store option keys: what each key a caller may give means, so none is dropped unseen.
//!
//! A key is one of object_store's configuration keys (`aws_endpoint`, `google_service_account`,
//! `azure_storage_account_name`, `timeout`..., case-insensitive), or a FileIO property as
//! pyiceberg and Iceberg's catalogs name them (`s3.endpoint`, `s3.access-key-id`,
//! `client.region`, `gcs.oauth2.token`, `adls.account-name`...), which becomes the
//! object_store keys that mean the same. A few FileIO properties change nothing about reading
//! (`gcs.project-id`, `py-io-impl`...) and are accepted; one rayquet's stores cannot honour
//! (`s3.role-arn`, `s3.signer`, `hdfs.*`...) and any key no store knows are errors naming it
//! (with the closest known key).
//!
//! Invariant: [`normalize`] either maps every key or fails; [`store_key`] never fails, for
//! callers (an Iceberg table's FileIO properties, which mix catalog settings with storage
//! ones) that keep only what is storage.
//!
//! ```
//! use rayquet::layer::{store_key, StoreKey};
//! match store_key("s3.access-key-id", "AKIA") {
//!     StoreKey::Set(pairs) => assert_eq!(pairs, [("aws_access_key_id".into(), "AKIA".into())]),
//!     other => panic!("{other:?}"),
//! }
//! ```

use crate::error::{Error, ErrorKind, Result};

/// What a store option key means (see the module doc).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum StoreKey {
    /// The object_store configuration pairs the option sets.
    Set(Vec<(String, String)>),
    /// A FileIO property that changes nothing about reading (a project id, a Python FileIO
    /// class, a cache setting).
    NoEffect,
    /// A FileIO property rayquet's stores cannot honour, and why.
    Unsupported(&'static str),
    /// No store knows the key; the closest known key, if one is near.
    Unknown(Option<&'static str>),
}

/// pyiceberg's FileIO properties and the object_store keys they become.
const FILE_IO: &[(&str, &str)] = &[
    ("s3.endpoint", "aws_endpoint"),
    ("s3.access-key-id", "aws_access_key_id"),
    ("client.access-key-id", "aws_access_key_id"),
    ("s3.secret-access-key", "aws_secret_access_key"),
    ("client.secret-access-key", "aws_secret_access_key"),
    ("s3.session-token", "aws_session_token"),
    ("client.session-token", "aws_session_token"),
    ("s3.region", "aws_region"),
    ("client.region", "aws_region"),
    ("s3.anonymous", "aws_skip_signature"),
    ("s3.allow-anonymous", "aws_skip_signature"),
    (
        "s3.force-virtual-addressing",
        "aws_virtual_hosted_style_request",
    ),
    ("s3.server-side-encryption", "aws_server_side_encryption"),
    ("s3.sse.type", "aws_server_side_encryption"),
    ("s3.sse-kms-key-id", "aws_sse_kms_key_id"),
    ("s3.sse.key", "aws_sse_kms_key_id"),
    ("s3.proxy-uri", "proxy_url"),
    ("s3.connect-timeout", "connect_timeout"),
    ("s3.request-timeout", "timeout"),
    ("gcs.credentials-json", "google_service_account_key"),
    ("gcs.service.path", "google_service_account"),
    ("gcs.service.host", "google_base_url"),
    ("gcs.allow-anonymous", "google_skip_signature"),
    ("gcs.no-auth", "google_skip_signature"),
    ("adls.account-name", "azure_storage_account_name"),
    ("adls.account-key", "azure_storage_account_key"),
    ("adls.sas-token", "azure_storage_sas_key"),
    ("adls.tenant-id", "azure_storage_tenant_id"),
    ("adls.client-id", "azure_storage_client_id"),
    ("adls.client-secret", "azure_storage_client_secret"),
    ("adls.authority-host", "azure_storage_authority_host"),
    ("adls.token", "azure_storage_token"),
    ("adls.anon", "azure_skip_signature"),
];

/// FileIO properties that do not change what or how rayquet reads.
const NO_EFFECT: &[&str] = &[
    "gcs.project-id",
    "gcs.access",
    "gcs.consistency",
    "gcs.cache-timeout",
    "gcs.default-bucket-location",
    "gcs.version-aware",
    "gcs.requester-pays",
    "s3.retry-strategy-impl",
    "s3.resolve-region",
    "py-io-impl",
    // deltalake's writer settings (locking, renames), which a reader does not use.
    "aws_s3_allow_unsafe_rename",
    "aws_s3_locking_provider",
    "delta_dynamo_table_name",
];

/// FileIO properties with no equivalent in object_store's stores.
const UNSUPPORTED: &[(&str, &str)] = &[
    (
        "s3.profile-name",
        "AWS profiles: set AWS_PROFILE's keys in the environment",
    ),
    (
        "client.profile-name",
        "AWS profiles: set AWS_PROFILE's keys in the environment",
    ),
    (
        "s3.role-arn",
        "assuming a role: pass the role's session credentials",
    ),
    (
        "client.role-arn",
        "assuming a role: pass the role's session credentials",
    ),
    (
        "s3.role-session-name",
        "assuming a role: pass the role's session credentials",
    ),
    (
        "client.role-session-name",
        "assuming a role: pass the role's session credentials",
    ),
    ("s3.signer", "remote request signing"),
    ("s3.signer.uri", "remote request signing"),
    ("s3.signer.endpoint", "remote request signing"),
    (
        "gcs.oauth2.token",
        "a GCS OAuth2 token: pass a service account (gcs.credentials-json)",
    ),
    ("gcs.oauth2.token-expires-at", "a GCS OAuth2 token"),
    ("gcs.session-kwargs", "Python session arguments"),
    (
        "adls.connection-string",
        "connection strings: pass adls.account-name and a key",
    ),
    ("adls.credential", "Python credential objects"),
    (
        "adls.account-host",
        "a custom account host: set azure_storage_endpoint",
    ),
    (
        "adls.blob-storage-authority",
        "a custom authority: set azure_storage_endpoint",
    ),
    (
        "adls.dfs-storage-authority",
        "a custom authority: set azure_storage_endpoint",
    ),
    (
        "adls.blob-storage-scheme",
        "a custom scheme: set azure_storage_endpoint",
    ),
    (
        "adls.dfs-storage-scheme",
        "a custom scheme: set azure_storage_endpoint",
    ),
    ("hdfs.host", "HDFS"),
    ("hdfs.port", "HDFS"),
    ("hdfs.user", "HDFS"),
    ("hdfs.kerberos_ticket", "HDFS"),
];

/// object_store keys suggested for a misspelled one (its canonical names, not every alias).
const STORE_KEYS: &[&str] = &[
    "aws_access_key_id",
    "aws_secret_access_key",
    "aws_session_token",
    "aws_region",
    "aws_endpoint",
    "aws_bucket",
    "aws_allow_http",
    "aws_skip_signature",
    "aws_virtual_hosted_style_request",
    "aws_s3_express",
    "aws_imdsv1_fallback",
    "aws_metadata_endpoint",
    "aws_unsigned_payload",
    "aws_checksum_algorithm",
    "aws_container_credentials_relative_uri",
    "aws_request_payer",
    "aws_server_side_encryption",
    "aws_sse_kms_key_id",
    "google_service_account",
    "google_service_account_key",
    "google_application_credentials",
    "google_bucket",
    "google_base_url",
    "google_skip_signature",
    "azure_storage_account_name",
    "azure_storage_account_key",
    "azure_storage_client_id",
    "azure_storage_client_secret",
    "azure_storage_tenant_id",
    "azure_storage_authority_host",
    "azure_storage_sas_key",
    "azure_storage_token",
    "azure_storage_use_emulator",
    "azure_storage_endpoint",
    "azure_skip_signature",
    "azure_use_azure_cli",
    "azure_container_name",
    "allow_http",
    "allow_invalid_certificates",
    "connect_timeout",
    "timeout",
    "proxy_url",
    "user_agent",
];

/// What `key` (with `value`) means to the stores.
pub fn store_key(key: &str, value: &str) -> StoreKey {
    if let Some((_, to)) = FILE_IO.iter().find(|(k, _)| *k == key) {
        let mut out = vec![(to.to_string(), file_io_value(key, value))];
        if *to == "aws_endpoint" && value.starts_with("http://") {
            out.push(("aws_allow_http".into(), "true".into()));
        }
        return StoreKey::Set(out);
    }
    if key == "s3.path-style-access" {
        let virtual_hosted = !value.trim().eq_ignore_ascii_case("true");
        return StoreKey::Set(vec![(
            "aws_virtual_hosted_style_request".into(),
            virtual_hosted.to_string(),
        )]);
    }
    if NO_EFFECT.contains(&key.to_ascii_lowercase().as_str()) {
        return StoreKey::NoEffect;
    }
    if let Some((_, why)) = UNSUPPORTED.iter().find(|(k, _)| *k == key) {
        return StoreKey::Unsupported(why);
    }
    if is_store_key(key) {
        return StoreKey::Set(vec![(key.to_string(), value.to_string())]);
    }
    StoreKey::Unknown(closest(key))
}

/// pyiceberg gives timeouts in seconds (`5`, `1.5`); object_store wants a duration.
fn file_io_value(key: &str, value: &str) -> String {
    let timeout = matches!(key, "s3.connect-timeout" | "s3.request-timeout");
    match value.trim().parse::<f64>() {
        Ok(secs) if timeout && secs.is_finite() && secs >= 0.0 => {
            format!("{}ms", (secs * 1000.0).round() as u64)
        }
        _ => value.to_string(),
    }
}

/// One of object_store's keys, for any of its cloud stores.
#[cfg(feature = "cloud")]
fn is_store_key(key: &str) -> bool {
    use std::str::FromStr;
    let k = key.to_ascii_lowercase();
    object_store::aws::AmazonS3ConfigKey::from_str(&k).is_ok()
        || object_store::gcp::GoogleConfigKey::from_str(&k).is_ok()
        || object_store::azure::AzureConfigKey::from_str(&k).is_ok()
}

/// Without the cloud stores, object_store's keys cannot be checked: the names rayquet knows.
#[cfg(not(feature = "cloud"))]
fn is_store_key(key: &str) -> bool {
    STORE_KEYS.contains(&key.to_ascii_lowercase().as_str())
}

/// The known key nearest `key` (at most a third of its letters edited), if any.
fn closest(key: &str) -> Option<&'static str> {
    let key = key.to_ascii_lowercase();
    let known = FILE_IO
        .iter()
        .map(|(k, _)| *k)
        .chain(NO_EFFECT.iter().copied())
        .chain(UNSUPPORTED.iter().map(|(k, _)| *k))
        .chain(["s3.path-style-access"])
        .chain(STORE_KEYS.iter().copied());
    known
        .map(|k| (edit_distance(&key, k), k))
        .filter(|(d, _)| *d <= key.len().div_ceil(3).max(2))
        .min()
        .map(|(_, k)| k)
}

/// Levenshtein distance (a dozen lines; not worth a crate in the core's dependencies).
fn edit_distance(a: &str, b: &str) -> usize {
    let b: Vec<char> = b.chars().collect();
    let mut row: Vec<usize> = (0..=b.len()).collect();
    for (i, ca) in a.chars().enumerate() {
        let mut diag = row[0];
        row[0] = i + 1;
        for (j, cb) in b.iter().enumerate() {
            let next = (diag + usize::from(ca != *cb))
                .min(row[j] + 1)
                .min(row[j + 1] + 1);
            diag = row[j + 1];
            row[j + 1] = next;
        }
    }
    row[b.len()]
}

/// The object_store pairs of a caller's store options, in order (later keys win); an unknown
/// or unsupported key is an `InvalidArgument` error naming it.
pub(crate) fn normalize(options: &[(String, String)]) -> Result<Vec<(String, String)>> {
    let mut out = Vec::with_capacity(options.len());
    for (k, v) in options {
        match store_key(k, v) {
            StoreKey::Set(pairs) => out.extend(pairs),
            StoreKey::NoEffect => {}
            StoreKey::Unsupported(why) => {
                return Err(Error::new(
                    ErrorKind::InvalidArgument,
                    format!("store option {k:?} is not supported ({why})"),
                ))
            }
            StoreKey::Unknown(near) => {
                let hint = near
                    .map(|n| format!("; did you mean {n:?}?"))
                    .unwrap_or_default();
                return Err(Error::new(
                    ErrorKind::InvalidArgument,
                    format!(
                        "unknown store option {k:?}: not an object_store key (aws_*, google_*, \
                         azure_*, client options) nor an Iceberg FileIO property (s3.*, gcs.*, \
                         adls.*, client.*){hint}"
                    ),
                ));
            }
        }
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn file_io_properties_become_object_store_keys() {
        let pairs = normalize(&[
            ("s3.endpoint".into(), "http://127.0.0.1:9000".into()),
            ("s3.path-style-access".into(), "true".into()),
            ("s3.request-timeout".into(), "1.5".into()),
            ("gcs.project-id".into(), "p".into()),
            ("AWS_REGION".into(), "eu-west-1".into()),
        ])
        .unwrap();
        let want: Vec<(String, String)> = [
            ("aws_endpoint", "http://127.0.0.1:9000"),
            ("aws_allow_http", "true"),
            ("aws_virtual_hosted_style_request", "false"),
            ("timeout", "1500ms"),
            ("AWS_REGION", "eu-west-1"),
        ]
        .iter()
        .map(|(k, v)| (k.to_string(), v.to_string()))
        .collect();
        assert_eq!(pairs, want);
    }

    #[test]
    fn unknown_and_unsupported_keys_are_errors_naming_them() {
        let e = normalize(&[("s3.acess-key-id".into(), "x".into())]).unwrap_err();
        let msg = e.to_string();
        assert!(msg.contains("\"s3.acess-key-id\""), "{msg}");
        assert!(msg.contains("did you mean \"s3.access-key-id\""), "{msg}");
        let e = normalize(&[("aws_acess_key_id".into(), "x".into())]).unwrap_err();
        assert!(e.to_string().contains("\"aws_access_key_id\""), "{e}");
        let e = normalize(&[("s3.role-arn".into(), "arn".into())]).unwrap_err();
        assert!(e.to_string().contains("not supported"), "{e}");
        let e = normalize(&[("zzzzzz".into(), "x".into())]).unwrap_err();
        assert!(!e.to_string().contains("did you mean"), "{e}");
    }
}
