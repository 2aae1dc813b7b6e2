//! pyiceberg's configuration of catalogs: the `catalog:` section of a `.pyiceberg.yaml`, read
//! as pyiceberg's strictyaml reads it (every value a string, keys lowercased, nested maps
//! flattened to dotted keys).

use std::collections::BTreeMap;
use std::path::Path;

use rayquet::{Error, ErrorKind, Result};

/// The properties of catalog `name` in a `.pyiceberg.yaml` (`None`: it has no such catalog).
/// Keys are compared lowercased, as pyiceberg does; nested maps flatten to dotted keys.
pub(super) fn yaml_catalog(file: &Path, name: &str) -> Result<Option<BTreeMap<String, String>>> {
    use yaml_rust2::{Yaml, YamlLoader};
    let bad =
        |m: String| Error::new(ErrorKind::InvalidArgument, m).with_path(file.display().to_string());
    let text = std::fs::read_to_string(file).map_err(|e| bad(format!("cannot read it: {e}")))?;
    let docs = YamlLoader::load_from_str(&text).map_err(|e| bad(format!("not YAML: {e}")))?;
    let Some(Yaml::Hash(top)) = docs.into_iter().next() else {
        return Ok(None);
    };
    let find = |h: &yaml_rust2::yaml::Hash, key: &str| -> Option<Yaml> {
        h.iter()
            .find(|(k, _)| scalar(k).is_some_and(|k| k.eq_ignore_ascii_case(key)))
            .map(|(_, v)| v.clone())
    };
    let Some(Yaml::Hash(catalogs)) = find(&top, "catalog") else {
        return Ok(None);
    };
    let Some(section) = find(&catalogs, name) else {
        return Ok(None);
    };
    let Yaml::Hash(section) = section else {
        return Err(bad(format!("catalog.{name} must be a mapping")));
    };
    let mut out = BTreeMap::new();
    flatten(&section, "", &mut out).map_err(bad)?;
    Ok(Some(out))
}

/// A YAML scalar as pyiceberg's strictyaml reads it: a string.
fn scalar(y: &yaml_rust2::Yaml) -> Option<String> {
    use yaml_rust2::Yaml;
    match y {
        Yaml::String(s) | Yaml::Real(s) => Some(s.clone()),
        Yaml::Integer(i) => Some(i.to_string()),
        Yaml::Boolean(b) => Some(b.to_string()),
        _ => None,
    }
}

fn flatten(
    h: &yaml_rust2::yaml::Hash,
    prefix: &str,
    out: &mut BTreeMap<String, String>,
) -> std::result::Result<(), String> {
    use yaml_rust2::Yaml;
    for (k, v) in h {
        let k = scalar(k).ok_or("a catalog property's name must be a string")?;
        let key = format!("{prefix}{}", k.to_ascii_lowercase());
        match v {
            Yaml::Hash(inner) => flatten(inner, &format!("{key}."), out)?,
            Yaml::Null => {}
            v => {
                let v = scalar(v).ok_or(format!("catalog property {key}: not a plain value"))?;
                out.insert(key, v);
            }
        }
    }
    Ok(())
}
