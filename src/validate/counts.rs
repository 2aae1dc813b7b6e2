//! The counts a footer claims, checked against each other once it is decoded ([`footer`]):
//! a row group's rows against each of its column chunks' values, so that no count that
//! disagrees with the others sizes any work later. Page headers' values are checked against
//! their chunk's as the pages are about to be decoded ([`crate::validate::pages`]).
//!
//! As DuckDB refuses such files ("Column has N values but row group has M rows"): a lie in
//! one count is an error naming the row group and column, never read as whatever the data
//! happens to hold.

use parquet::file::metadata::ParquetMetaData;

/// A count that disagrees: the row group (if one) and what is wrong.
pub(crate) type Disagreement = (Option<usize>, String);

/// Check `md`'s counts: no negative row count; in every row group, each column chunk of an
/// unrepeated column holds exactly one value (null or not) per row, and a repeated one at
/// least one per row.
pub(crate) fn footer(md: &ParquetMetaData) -> Result<(), Disagreement> {
    let file_rows = md.file_metadata().num_rows();
    if file_rows < 0 {
        return Err((None, format!("the footer claims {file_rows} rows")));
    }
    for (i, rg) in md.row_groups().iter().enumerate() {
        let rows = rg.num_rows();
        if rows < 0 {
            return Err((Some(i), format!("row group {i} claims {rows} rows")));
        }
        for col in rg.columns() {
            let values = col.num_values();
            let repeated = col.column_descr().max_rep_level() > 0;
            let agrees = if repeated {
                values >= rows
            } else {
                values == rows
            };
            if !agrees {
                return Err((
                    Some(i),
                    format!(
                        "column {} has {values} values but row group {i} has {rows} rows",
                        col.column_path()
                    ),
                ));
            }
        }
    }
    Ok(())
}
