//! File tasks: per-file column mapping (field ids, name mapping, renamed, missing, promoted
//! columns, nested fields), constants, row index and file path, deleted rows, byte-range and
//! row-group splits, hooks, lazy task iterators, and errors. The reference is parquet's own
//! reader on each whole file, with the task's mapping and deletes applied by brute force in
//! this file (arrow's cast kernel for promotions).

use rayquet::ScanBuilder;
use rayquet_testkit as common;

use std::collections::HashMap;
use std::fs::File;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::sync::Arc;

use arrow::array::{
    Array, ArrayRef, AsArray, BooleanArray, Float32Array, Float64Array, Int32Array, Int64Array,
    RecordBatch, RecordBatchReader, StringArray, StructArray,
};
use arrow::compute::kernels::cmp;
use arrow::compute::{cast, filter_record_batch};
use arrow::datatypes::{DataType, Field, FieldRef, Fields, Schema, SchemaRef};
use parquet::arrow::arrow_reader::ParquetRecordBatchReaderBuilder;
use parquet::arrow::ArrowWriter;
use parquet::file::properties::WriterProperties;
use rayquet::task::{
    ColumnSource, DeleteLoader, FileTask, LoadContext, NameMapping, RoaringTreemap, RowFilter,
};
use rayquet::{col, ErrorKind, Expr, Scan};

use common::suite::{self, Filter, Input};
use common::{concat, Rng};

fn id(f: Field, id: i32) -> Field {
    f.with_metadata(HashMap::from([(
        "PARQUET:field_id".to_string(),
        id.to_string(),
    )]))
}

/// How a generated file's columns look.
#[derive(Clone, Copy, Debug, PartialEq)]
enum Layout {
    /// a: i32 #1, b: utf8 #2, s: {x: i32 #4, y: f32 #5} #3, f: f32 #7
    V1,
    /// a_renamed: i32 #1, f: f64 #7, s: {x: i64 #4} #3, c: i64 #6, b: utf8 #2
    V2,
    /// V1's columns without field ids (read through the name mapping)
    NoIds,
}

fn file_schema(layout: Layout) -> SchemaRef {
    let with = |f: Field, i: i32| if layout == Layout::NoIds { f } else { id(f, i) };
    let fields = match layout {
        Layout::V1 | Layout::NoIds => vec![
            with(Field::new("a", DataType::Int32, true), 1),
            with(Field::new("b", DataType::Utf8, true), 2),
            with(
                Field::new_struct(
                    "s",
                    vec![
                        with(Field::new("x", DataType::Int32, true), 4),
                        with(Field::new("y", DataType::Float32, true), 5),
                    ],
                    true,
                ),
                3,
            ),
            with(Field::new("f", DataType::Float32, true), 7),
        ],
        Layout::V2 => vec![
            id(Field::new("a_renamed", DataType::Int32, true), 1),
            id(Field::new("f", DataType::Float64, true), 7),
            id(
                Field::new_struct(
                    "s",
                    vec![id(Field::new("x", DataType::Int64, true), 4)],
                    true,
                ),
                3,
            ),
            id(Field::new("c", DataType::Int64, true), 6),
            id(Field::new("b", DataType::Utf8, true), 2),
        ],
    };
    Arc::new(Schema::new(fields))
}

/// One generated batch of `rows` rows in `layout`, values derived from `base`.
fn gen_batch(layout: Layout, rng: &mut Rng, rows: usize, base: i64) -> RecordBatch {
    let schema = file_schema(layout);
    let a: Vec<Option<i32>> = (0..rows)
        .map(|i| (!rng.chance(5)).then_some((base + i as i64) as i32))
        .collect();
    let b: Vec<Option<String>> = (0..rows)
        .map(|_| (!rng.chance(10)).then(|| rng.word(6)))
        .collect();
    let x: Vec<Option<i64>> = (0..rows)
        .map(|_| (!rng.chance(10)).then(|| rng.below(100) as i64))
        .collect();
    let fv: Vec<Option<f64>> = (0..rows)
        .map(|_| (!rng.chance(10)).then(|| rng.below(1000) as f64 / 1000.0))
        .collect();
    let s_valid: Vec<bool> = (0..rows).map(|_| !rng.chance(5)).collect();
    let cols: Vec<ArrayRef> = match layout {
        Layout::V1 | Layout::NoIds => {
            let y: Vec<Option<f32>> = x.iter().map(|v| v.map(|v| v as f32 / 2.0)).collect();
            let DataType::Struct(sf) = schema.field(2).data_type().clone() else {
                unreachable!()
            };
            let s = StructArray::new(
                sf,
                vec![
                    Arc::new(Int32Array::from(
                        x.iter().map(|v| v.map(|v| v as i32)).collect::<Vec<_>>(),
                    )),
                    Arc::new(Float32Array::from(y)),
                ],
                Some(s_valid.into()),
            );
            vec![
                Arc::new(Int32Array::from(a)),
                Arc::new(StringArray::from(b)),
                Arc::new(s),
                Arc::new(Float32Array::from(
                    fv.iter().map(|v| v.map(|v| v as f32)).collect::<Vec<_>>(),
                )),
            ]
        }
        Layout::V2 => {
            let DataType::Struct(sf) = schema.field(2).data_type().clone() else {
                unreachable!()
            };
            let s = StructArray::new(
                sf,
                vec![Arc::new(Int64Array::from(x))],
                Some(s_valid.into()),
            );
            let c: Vec<Option<i64>> = (0..rows)
                .map(|i| (!rng.chance(10)).then_some(base * 10 + i as i64))
                .collect();
            vec![
                Arc::new(Int32Array::from(a)),
                Arc::new(Float64Array::from(fv)),
                Arc::new(s),
                Arc::new(Int64Array::from(c)),
                Arc::new(StringArray::from(b)),
            ]
        }
    };
    RecordBatch::try_new(schema, cols).unwrap()
}

/// Write a file of `rgs` row groups of `rows` rows, with a page index and small pages.
fn write_file(path: &Path, layout: Layout, seed: u64, rgs: usize, rows: usize) {
    let mut rng = Rng(seed);
    let props = WriterProperties::builder()
        .set_max_row_group_row_count(Some(rows))
        .set_data_page_row_count_limit(64)
        .set_write_batch_size(64)
        .build();
    let mut w = ArrowWriter::try_new(
        File::create(path).unwrap(),
        file_schema(layout),
        Some(props),
    )
    .unwrap();
    for g in 0..rgs {
        w.write(&gen_batch(
            layout,
            &mut rng,
            rows,
            (seed as i64) * 100_000 + (g * rows) as i64,
        ))
        .unwrap();
    }
    w.close().unwrap();
}

/// The table's schema: what every task maps its file to.
fn table_schema() -> SchemaRef {
    Arc::new(Schema::new(vec![
        id(Field::new("a", DataType::Int64, true), 1),
        id(Field::new("b", DataType::Utf8, true), 2),
        id(
            Field::new_struct(
                "s",
                vec![
                    id(Field::new("x", DataType::Int64, true), 4),
                    id(Field::new("y", DataType::Float64, true), 5),
                    id(Field::new("z", DataType::Utf8, true), 8),
                ],
                true,
            ),
            3,
        ),
        id(Field::new("f", DataType::Float64, true), 7),
        id(Field::new("c", DataType::Int64, true), 6),
        Field::new("part", DataType::Utf8, false),
        Field::new("_pos", DataType::Int64, false),
        Field::new("_file", DataType::Utf8, false),
    ]))
}

fn name_mapping() -> Arc<NameMapping> {
    let mut m = NameMapping::default();
    for (i, n) in [(1, "a"), (2, "b"), (3, "s"), (4, "x"), (5, "y"), (7, "f")] {
        m.insert(i, [n]);
    }
    m.insert(6, ["c_legacy", "c"]);
    Arc::new(m)
}

/// One task of the test table, and what the reference needs to know about it.
#[derive(Clone)]
struct Spec {
    path: PathBuf,
    layout: Layout,
    part: &'static str,
    deleted: Vec<u64>,
    range: Option<std::ops::Range<u64>>,
    row_groups: Option<Vec<usize>>,
}

impl Spec {
    fn location(&self) -> String {
        self.path.to_str().unwrap().to_string()
    }

    fn sources(&self, fields: &[&str]) -> Vec<ColumnSource> {
        fields
            .iter()
            .map(|f| match *f {
                "c" => ColumnSource::file().or_default(42i64),
                "part" => ColumnSource::constant(self.part),
                "_pos" => ColumnSource::RowIndex,
                "_file" => ColumnSource::FilePath,
                _ => ColumnSource::file(),
            })
            .collect()
    }

    fn task(&self, fields: &[&str], i: usize) -> FileTask {
        let mut t = FileTask::new(self.location())
            .size(std::fs::metadata(&self.path).unwrap().len())
            .columns(self.sources(fields))
            .deleted_rows(self.deleted.iter().copied())
            .tag(format!("t{i}"));
        if self.layout == Layout::NoIds {
            t = t.name_mapping(name_mapping());
        }
        if let Some(r) = &self.range {
            t = t.byte_range(r.clone());
        }
        if let Some(g) = &self.row_groups {
            t = t.row_groups(g.iter().copied());
        }
        t
    }

    /// Parquet's reader on the whole file, mapped to `schema` and with this task's rows, by
    /// brute force.
    fn reference(&self, schema: &SchemaRef) -> RecordBatch {
        let builder =
            ParquetRecordBatchReaderBuilder::try_new(File::open(&self.path).unwrap()).unwrap();
        let md = builder.metadata().clone();
        let reader = builder.with_batch_size(100_000).build().unwrap();
        let file_schema = reader.schema();
        let batches: Vec<RecordBatch> = reader.map(|b| b.unwrap()).collect();
        let data = concat(&file_schema, &batches);
        let n = data.num_rows();
        // Rows of the row groups the task keeps.
        let mut keep = vec![true; n];
        let mut first = 0usize;
        for (g, rg) in md.row_groups().iter().enumerate() {
            let rows = rg.num_rows() as usize;
            let start = rg
                .columns()
                .iter()
                .map(|c| c.dictionary_page_offset().unwrap_or(c.data_page_offset()))
                .min()
                .unwrap() as u64;
            let mid = start + rg.compressed_size() as u64 / 2;
            let in_range = self.range.as_ref().is_none_or(|r| r.contains(&mid));
            let listed = self.row_groups.as_ref().is_none_or(|l| l.contains(&g));
            if !(in_range && listed) {
                keep[first..first + rows]
                    .iter_mut()
                    .for_each(|k| *k = false);
            }
            first += rows;
        }
        for &d in &self.deleted {
            if (d as usize) < n {
                keep[d as usize] = false;
            }
        }
        let by_id = |fields: &Fields, want: &Field| -> Option<usize> {
            let wid = want.metadata().get("PARQUET:field_id");
            if self.layout == Layout::NoIds {
                let names = name_mapping();
                let wid: i32 = wid?.parse().unwrap();
                let names = names.names.get(&wid)?;
                fields.iter().position(|f| names.contains(f.name()))
            } else {
                fields
                    .iter()
                    .position(|f| f.metadata().get("PARQUET:field_id") == wid)
            }
        };
        let columns: Vec<ArrayRef> = schema
            .fields()
            .iter()
            .map(|out| match out.name().as_str() {
                "part" => Arc::new(StringArray::from(vec![self.part; n])) as ArrayRef,
                "_pos" => Arc::new(Int64Array::from_iter_values(0..n as i64)),
                "_file" => Arc::new(StringArray::from(vec![self.location(); n])),
                _ => match by_id(file_schema.fields(), out) {
                    None if out.name() == "c" => Arc::new(Int64Array::from(vec![42; n])),
                    None => arrow::array::new_null_array(out.data_type(), n),
                    Some(i) => {
                        let col = data.column(i);
                        match out.data_type() {
                            DataType::Struct(of) => {
                                let s = col.as_struct();
                                let DataType::Struct(ff) = s.data_type() else {
                                    unreachable!()
                                };
                                let children = of
                                    .iter()
                                    .map(|o| match by_id(ff, o) {
                                        Some(j) => cast(s.column(j), o.data_type()).unwrap(),
                                        None => arrow::array::new_null_array(o.data_type(), n),
                                    })
                                    .collect();
                                Arc::new(StructArray::new(of.clone(), children, s.nulls().cloned()))
                            }
                            t => cast(col, t).unwrap(),
                        }
                    }
                },
            })
            .collect();
        let mapped = RecordBatch::try_new(Arc::clone(schema), columns).unwrap();
        filter_record_batch(&mapped, &BooleanArray::from(keep)).unwrap()
    }
}

/// The files of the test table, written once per test binary.
struct Table {
    _dir: tempfile::TempDir,
    specs: Vec<Spec>,
}

fn table() -> &'static Table {
    static T: std::sync::OnceLock<Table> = std::sync::OnceLock::new();
    T.get_or_init(|| {
        let dir = tempfile::tempdir().unwrap();
        let mut rng = Rng(7);
        let mut specs = Vec::new();
        let files = [
            (Layout::V1, 6, 500),
            (Layout::V2, 4, 300),
            (Layout::NoIds, 3, 400),
            (Layout::V1, 8, 250),
            (Layout::V2, 1, 700),
        ];
        for (i, (layout, rgs, rows)) in files.into_iter().enumerate() {
            let path = dir.path().join(format!("f{i}.parquet"));
            write_file(&path, layout, i as u64 + 1, rgs, rows);
            let total = (rgs * rows) as u64;
            // About 10% deleted, plus a whole row group of the first file.
            let mut deleted: Vec<u64> = (0..total).filter(|_| rng.chance(10)).collect();
            if i == 0 {
                deleted.extend(500..1000);
            }
            let part = if i % 2 == 0 { "p0" } else { "p1" };
            let size = std::fs::metadata(&path).unwrap().len();
            let base = Spec {
                path,
                layout,
                part,
                deleted,
                range: None,
                row_groups: None,
            };
            if i == 3 {
                // The same file as three byte-range splits that partition it.
                let cuts = [0, size / 3, 2 * size / 3, size];
                for w in cuts.windows(2) {
                    specs.push(Spec {
                        range: Some(w[0]..w[1]),
                        ..base.clone()
                    });
                }
            } else if i == 1 {
                specs.push(Spec {
                    row_groups: Some(vec![0, 2, 3]),
                    ..base.clone()
                });
            } else {
                specs.push(base);
            }
        }
        Table { _dir: dir, specs }
    })
}

/// The test table as a suite input: one task per spec. `by_scan`: projections are asked of
/// the scan (`ScanBuilder::columns` on tasks of every column) rather than built into the tasks.
struct Tasks {
    specs: Vec<Spec>,
    by_scan: bool,
}

impl Tasks {
    fn fields(columns: Option<&[&str]>) -> Vec<&'static str> {
        let all = ["a", "b", "s", "f", "c", "part", "_pos", "_file"];
        match columns {
            None => all.to_vec(),
            Some(cs) => cs
                .iter()
                .map(|c| *all.iter().find(|a| *a == c).expect("known column"))
                .collect(),
        }
    }

    fn schema(fields: &[&str]) -> SchemaRef {
        let t = table_schema();
        let idx: Vec<usize> = fields.iter().map(|f| t.index_of(f).unwrap()).collect();
        Arc::new(t.project(&idx).unwrap())
    }
}

impl Input for Tasks {
    fn label(&self) -> String {
        match self.by_scan {
            true => "tasks projected by the scan".into(),
            false => "tasks".into(),
        }
    }

    fn expected(&self) -> (SchemaRef, Vec<RecordBatch>) {
        let schema = table_schema();
        let batches = self.specs.iter().map(|s| s.reference(&schema)).collect();
        (schema, batches)
    }

    fn scan(&self, columns: Option<&[&str]>) -> rayquet::Result<Scan> {
        let fields = Tasks::fields(if self.by_scan { None } else { columns });
        let tasks: Vec<FileTask> = self
            .specs
            .iter()
            .enumerate()
            .map(|(i, s)| s.task(&fields, i))
            .collect();
        let scan = Scan::from_tasks(Tasks::schema(&fields), tasks);
        Ok(match columns {
            Some(c) if self.by_scan => scan.columns(c.iter().copied()),
            _ => scan,
        })
    }

    fn projection(&self) -> Vec<&'static str> {
        vec!["_file", "s", "a"]
    }

    fn filters(&self) -> Vec<Filter> {
        vec![
            Filter {
                expr: col("a").gt(100_250i64),
                reference: suite::boxed(|b| {
                    cmp::gt(
                        b.column_by_name("a").unwrap(),
                        &Int64Array::new_scalar(100_250),
                    )
                    .unwrap()
                }),
            },
            Filter {
                expr: col("s.x").lt(30).and(col("b").is_not_null()),
                reference: suite::boxed(|b| {
                    let s = b.column_by_name("s").unwrap().as_struct();
                    let x = s.column_by_name("x").unwrap();
                    let nulls = arrow::buffer::NullBuffer::union(s.nulls(), x.nulls());
                    let x = arrow::array::make_array(
                        x.to_data().into_builder().nulls(nulls).build().unwrap(),
                    );
                    let lt = cmp::lt(&x, &Int64Array::new_scalar(30)).unwrap();
                    let nn = arrow::compute::is_not_null(b.column_by_name("b").unwrap()).unwrap();
                    arrow::compute::and_kleene(&lt, &nn).unwrap()
                }),
            },
            Filter {
                // A constant column: whole files are pruned, the others read unfiltered.
                expr: col("part").eq("p1").or(col("f").gt(0.9)),
                reference: suite::boxed(|b| {
                    let p = cmp::eq(
                        b.column_by_name("part").unwrap(),
                        &StringArray::new_scalar("p1"),
                    )
                    .unwrap();
                    let f = cmp::gt(
                        b.column_by_name("f").unwrap(),
                        &Float64Array::new_scalar(0.9),
                    )
                    .unwrap();
                    arrow::compute::or_kleene(&p, &f).unwrap()
                }),
            },
            Filter {
                // The default of a missing column.
                expr: col("c").eq(42i64),
                reference: suite::boxed(|b| {
                    cmp::eq(b.column_by_name("c").unwrap(), &Int64Array::new_scalar(42)).unwrap()
                }),
            },
            Filter {
                // A nested field no file has: null everywhere.
                expr: col("s.z").is_null().and(col("s.y").gt_eq(10)),
                reference: suite::boxed(|b| {
                    let s = b.column_by_name("s").unwrap().as_struct();
                    let y = s.column_by_name("y").unwrap();
                    let nulls = arrow::buffer::NullBuffer::union(s.nulls(), y.nulls());
                    let y = arrow::array::make_array(
                        y.to_data().into_builder().nulls(nulls).build().unwrap(),
                    );
                    cmp::gt_eq(&y, &Float64Array::new_scalar(10.0)).unwrap()
                }),
            },
        ]
    }
}

#[test]
fn tasks_conform() {
    suite::run(&Tasks {
        specs: table().specs.clone(),
        by_scan: false,
    });
}

/// `ScanBuilder::columns` on a task scan keeps those fields of the scan's schema and of every
/// task's columns: the same rows as tasks built with only those columns.
#[test]
fn task_scans_project_with_columns() {
    suite::run(&Tasks {
        specs: table().specs.clone(),
        by_scan: true,
    });
}

/// Plain files are the simplest input: the same suite over the V1 files.
struct Plain {
    files: Vec<PathBuf>,
}

impl Input for Plain {
    fn label(&self) -> String {
        "plain files".into()
    }

    fn expected(&self) -> (SchemaRef, Vec<RecordBatch>) {
        let mut schema = None;
        let batches = self
            .files
            .iter()
            .map(|p| {
                let (s, b) = common::reference(p, None, 100_000).unwrap();
                let b = concat(&s, &b);
                schema = Some(s);
                b
            })
            .collect();
        (schema.unwrap(), batches)
    }

    fn scan(&self, columns: Option<&[&str]>) -> rayquet::Result<Scan> {
        let s = Scan::from_urls(self.files.iter().map(|p| p.to_str().unwrap()))?;
        Ok(match columns {
            Some(c) => s.columns(c.iter().copied()),
            None => s,
        })
    }

    fn projection(&self) -> Vec<&'static str> {
        vec!["f", "a"]
    }

    fn filters(&self) -> Vec<Filter> {
        vec![Filter {
            expr: col("a").lt(100_700).and(col("s.x").gt_eq(50)),
            reference: suite::boxed(|b| {
                let a = cmp::lt(
                    b.column_by_name("a").unwrap(),
                    &Int32Array::new_scalar(100_700),
                )
                .unwrap();
                let s = b.column_by_name("s").unwrap().as_struct();
                let x = s.column_by_name("x").unwrap();
                let nulls = arrow::buffer::NullBuffer::union(s.nulls(), x.nulls());
                let x = arrow::array::make_array(
                    x.to_data().into_builder().nulls(nulls).build().unwrap(),
                );
                let x = cmp::gt_eq(&x, &Int32Array::new_scalar(50)).unwrap();
                arrow::compute::and_kleene(&a, &x).unwrap()
            }),
        }]
    }
}

#[test]
fn plain_files_conform() {
    let t = table();
    let mut files: Vec<PathBuf> = t
        .specs
        .iter()
        .filter(|s| s.layout == Layout::V1)
        .map(|s| s.path.clone())
        .collect();
    files.dedup();
    suite::run(&Plain { files });
}

fn read_tasks(schema: SchemaRef, tasks: Vec<FileTask>) -> rayquet::Result<Vec<RecordBatch>> {
    Ok(Scan::from_tasks(schema, tasks)
        .build()?
        .collect::<Result<_, _>>()?)
}

#[test]
fn splits_partition_a_file_exactly() {
    let t = table();
    let split: Vec<&Spec> = t.specs.iter().filter(|s| s.range.is_some()).collect();
    assert_eq!(split.len(), 3);
    let schema = Tasks::schema(&["_pos"]);
    let mut seen: Vec<i64> = Vec::new();
    for s in &split {
        let task = FileTask::new(s.location())
            .columns([ColumnSource::RowIndex])
            .byte_range(s.range.clone().unwrap());
        for b in read_tasks(Arc::clone(&schema), vec![task]).unwrap() {
            seen.extend(
                b.column(0)
                    .as_primitive::<arrow::datatypes::Int64Type>()
                    .values(),
            );
        }
    }
    let total: usize = File::open(&split[0].path)
        .map(|f| {
            ParquetRecordBatchReaderBuilder::try_new(f)
                .unwrap()
                .metadata()
                .file_metadata()
                .num_rows() as usize
        })
        .unwrap();
    let mut sorted = seen.clone();
    sorted.sort_unstable();
    sorted.dedup();
    assert_eq!(sorted.len(), seen.len(), "a row was read by two splits");
    assert_eq!(
        sorted,
        (0..total as i64).collect::<Vec<_>>(),
        "the splits lose rows"
    );
    // A split between two midpoints reads nothing; one covering the whole file reads all.
    let none = FileTask::new(split[0].location())
        .columns([ColumnSource::RowIndex])
        .byte_range(0..4);
    let rows: usize = read_tasks(Arc::clone(&schema), vec![none])
        .unwrap()
        .iter()
        .map(|b| b.num_rows())
        .sum();
    assert_eq!(rows, 0);
}

#[test]
fn deleted_row_groups_are_not_fetched_and_pages_are_skipped() {
    let t = table();
    let s = &t.specs[0];
    let total: u64 = 6 * 500;
    let schema = Tasks::schema(&["a", "_pos"]);
    // Everything but rows 0..10 of row group 0 and one row of row group 5 deleted.
    let deleted: Vec<u64> = (10..total).filter(|&p| p != 2600).collect();
    let task = FileTask::new(s.location())
        .columns([ColumnSource::file(), ColumnSource::RowIndex])
        .deleted_rows(deleted.iter().copied());
    let reader = Scan::from_tasks(Arc::clone(&schema), vec![task])
        .build()
        .unwrap();
    let metrics = reader.metrics();
    let batches: Vec<RecordBatch> = reader.map(|b| b.unwrap()).collect();
    let all = concat(&schema, &batches);
    let pos: Vec<i64> = all
        .column(1)
        .as_primitive::<arrow::datatypes::Int64Type>()
        .values()
        .to_vec();
    let mut want: Vec<i64> = (0..10).collect();
    want.push(2600);
    assert_eq!(pos, want);
    let m = metrics.snapshot();
    assert_eq!(
        m.row_groups, 2,
        "only the two row groups with rows left are read: {m:?}"
    );
    assert_eq!(m.row_groups_pruned, 4, "{m:?}");
    assert!(
        m.pages_pruned > 0,
        "pages holding only deleted rows are not fetched: {m:?}"
    );
    assert_eq!(m.rows_deleted, deleted.len() as u64);
    // Fewer bytes than the two row groups' column chunks: only pages holding kept rows.
    let full = FileTask::new(s.location())
        .columns([ColumnSource::file(), ColumnSource::RowIndex])
        .row_groups([0, 5]);
    let r = Scan::from_tasks(Arc::clone(&schema), vec![full])
        .build()
        .unwrap();
    let mf = r.metrics();
    r.for_each(|b| drop(b.unwrap()));
    let data = |m: rayquet::MetricsSnapshot| m.bytes_fetched - m.metadata_bytes;
    assert!(
        data(m) < data(mf.snapshot()),
        "{m:?} vs {:?}",
        mf.snapshot()
    );
}

#[test]
fn lazy_iterator_of_ten_thousand_tasks_runs_in_bounded_memory() {
    let dir = tempfile::tempdir().unwrap();
    let files: Vec<PathBuf> = (0..20)
        .map(|i| {
            let p = dir.path().join(format!("small{i}.parquet"));
            write_file(&p, Layout::V1, 100 + i, 1, 50);
            p
        })
        .collect();
    let pulled = Arc::new(AtomicUsize::new(0));
    let p = Arc::clone(&pulled);
    let schema = Tasks::schema(&["a", "_pos"]);
    const N: usize = 10_000;
    let tasks = (0..N).map(move |i| {
        p.fetch_add(1, Ordering::SeqCst);
        FileTask::new(files[i % 20].to_str().unwrap())
            .columns([ColumnSource::file(), ColumnSource::RowIndex])
            .deleted_rows([(i % 50) as u64])
    });
    let budget = 4 << 20;
    let reader = Scan::from_tasks(schema, tasks)
        .memory_budget(budget)
        .build()
        .unwrap();
    let metrics = reader.metrics();
    let mut reader = reader.tagged();
    let first = reader.next().unwrap().unwrap();
    assert_eq!(reader.task().unwrap().index, 0);
    let at_first = pulled.load(Ordering::SeqCst);
    assert!(
        at_first < 1_000,
        "the iterator is pulled lazily: {at_first} tasks pulled before the first batch"
    );
    let mut rows = first.num_rows();
    let mut last = 0;
    while let Some(batch) = reader.next() {
        let batch = batch.unwrap();
        let task = reader.task().unwrap().index;
        assert!(task >= last);
        last = task;
        rows += batch.num_rows();
    }
    assert_eq!(rows, N * 49);
    assert_eq!(pulled.load(Ordering::SeqCst), N);
    let m = metrics.snapshot();
    assert!(m.peak_buffered_bytes <= budget as u64 + (1 << 20), "{m:?}");
    assert_eq!(m.files, N as u64);
}

/// A row filter reading a column that is not in the output: keeps rows whose `a` is odd.
#[derive(Debug)]
struct OddA;

impl RowFilter for OddA {
    fn columns(&self) -> Vec<(FieldRef, ColumnSource)> {
        vec![(
            Arc::new(id(Field::new("a", DataType::Int64, true), 1)),
            ColumnSource::file(),
        )]
    }
    fn keep(&self, columns: &[ArrayRef]) -> rayquet::Result<BooleanArray> {
        let a = columns[0].as_primitive::<arrow::datatypes::Int64Type>();
        Ok(a.iter().map(|v| v.map(|v| v % 2 != 0)).collect())
    }
}

/// Deletes loaded while the footer is fetched.
#[derive(Debug)]
struct EveryTenth(u64, Arc<AtomicU64>);

impl DeleteLoader for EveryTenth {
    fn load(
        &self,
        ctx: LoadContext,
    ) -> futures::future::BoxFuture<'static, rayquet::Result<RoaringTreemap>> {
        let (n, calls) = (self.0, Arc::clone(&self.1));
        Box::pin(async move {
            calls.fetch_add(1, Ordering::SeqCst);
            ctx.spawn_cpu(move || Ok((0..n).step_by(10).collect()))
                .await
        })
    }
}

#[test]
fn hooks_row_filter_delete_loader_and_transform() {
    let t = table();
    let fields = ["b", "_pos"];
    let schema = Tasks::schema(&fields);
    let calls = Arc::new(AtomicU64::new(0));
    let out = Arc::new(Schema::new(vec![
        Field::new("b", DataType::Utf8, true),
        Field::new("_pos", DataType::Int64, false),
        Field::new("pos2", DataType::Int64, false),
    ]));
    let mut tasks = Vec::new();
    let mut expected = Vec::new();
    for (i, s) in t.specs.iter().enumerate() {
        let n: u64 = ParquetRecordBatchReaderBuilder::try_new(File::open(&s.path).unwrap())
            .unwrap()
            .metadata()
            .file_metadata()
            .num_rows() as u64;
        let mut task = s
            .task(&fields, i)
            .row_filter(Arc::new(OddA))
            .delete_loader(Arc::new(EveryTenth(n, Arc::clone(&calls))));
        task = task.transform(Arc::new({
            let out = Arc::clone(&out);
            move |b: RecordBatch| {
                let pos = b.column(1).as_primitive::<arrow::datatypes::Int64Type>();
                let doubled: Int64Array = pos.iter().map(|v| v.map(|v| v * 2)).collect();
                Ok(RecordBatch::try_new(
                    Arc::clone(&out),
                    vec![
                        Arc::clone(b.column(0)),
                        Arc::clone(b.column(1)),
                        Arc::new(doubled),
                    ],
                )?)
            }
        }));
        tasks.push(task);
        // Reference: the task's rows, minus every tenth position, minus rows whose `a` is not odd.
        let full = s.reference(&table_schema());
        let a = full
            .column_by_name("a")
            .unwrap()
            .as_primitive::<arrow::datatypes::Int64Type>();
        let pos = full
            .column_by_name("_pos")
            .unwrap()
            .as_primitive::<arrow::datatypes::Int64Type>();
        let keep: BooleanArray = (0..full.num_rows())
            .map(|r| Some(pos.value(r) % 10 != 0 && a.is_valid(r) && a.value(r) % 2 != 0))
            .collect();
        let kept = filter_record_batch(&full, &keep).unwrap();
        let b = Arc::clone(kept.column_by_name("b").unwrap());
        let p = kept
            .column_by_name("_pos")
            .unwrap()
            .as_primitive::<arrow::datatypes::Int64Type>();
        let p2: Int64Array = p.iter().map(|v| v.map(|v| v * 2)).collect();
        expected.push(
            RecordBatch::try_new(Arc::clone(&out), vec![b, Arc::new(p.clone()), Arc::new(p2)])
                .unwrap(),
        );
    }
    let got: Vec<RecordBatch> = Scan::from_tasks(schema, tasks)
        .transformed_schema(Arc::clone(&out))
        .build()
        .unwrap()
        .map(|b| b.unwrap())
        .collect();
    suite::assert_rows_eq(&concat(&out, &expected), &concat(&out, &got), "hooks");
    assert_eq!(calls.load(Ordering::SeqCst), t.specs.len() as u64);
}

#[test]
fn errors_name_the_task_file() {
    let t = table();
    let s = &t.specs[0];
    let err = |schema: SchemaRef, task: FileTask| -> rayquet::Error {
        match read_tasks(schema, vec![task]) {
            Ok(_) => panic!("expected an error"),
            Err(e) => e,
        }
    };
    // A missing file.
    let e = err(
        Tasks::schema(&["a"]),
        FileTask::new("/nonexistent/x.parquet"),
    );
    assert_eq!(e.kind(), ErrorKind::NotFound, "{e}");
    assert!(e.to_string().contains("/nonexistent/x.parquet"), "{e}");
    // A column the file has in a type that cannot be read as the output's.
    let bad = Arc::new(Schema::new(vec![id(
        Field::new("s", DataType::Int64, true),
        3,
    )]));
    let e = err(bad, FileTask::new(s.location()));
    assert_eq!(e.kind(), ErrorKind::SchemaMismatch, "{e}");
    assert!(
        e.to_string().contains(&s.location()) && e.to_string().contains("\"s\""),
        "{e}"
    );
    // A non-nullable column the file lacks.
    let req = Arc::new(Schema::new(vec![id(
        Field::new("q", DataType::Int64, false),
        99,
    )]));
    let e = err(req, FileTask::new(s.location()));
    assert!(
        e.to_string().contains("not nullable") && e.to_string().contains(&s.location()),
        "{e}"
    );
    // Wrong number of sources, a row group the file does not have.
    let e = err(
        Tasks::schema(&["a"]),
        FileTask::new(s.location()).columns([]),
    );
    assert_eq!(e.kind(), ErrorKind::InvalidArgument, "{e}");
    let e = err(
        Tasks::schema(&["a"]),
        FileTask::new(s.location()).row_groups([99]),
    );
    assert!(e.to_string().contains("row group 99"), "{e}");
    // A constant the type cannot hold.
    let e = err(
        Tasks::schema(&["a"]),
        FileTask::new(s.location()).columns([ColumnSource::constant("x")]),
    );
    assert!(e.to_string().contains(&s.location()), "{e}");
    // Options that belong to plain scans.
    let e = Scan::from_tasks(Tasks::schema(&["a"]), Vec::<FileTask>::new())
        .row_index("pos")
        .build()
        .unwrap_err();
    assert_eq!(e.kind(), ErrorKind::InvalidArgument);
    // A projection of a task scan names the scan's columns.
    let e = Scan::from_tasks(Tasks::schema(&["a"]), Vec::<FileTask>::new())
        .columns(["nope"])
        .build()
        .unwrap_err();
    assert_eq!(e.kind(), ErrorKind::InvalidArgument);
    assert!(e.to_string().contains("nope"), "{e}");
    // An error from the planner ends the scan at its position, after the tasks before it.
    let items: Vec<rayquet::Result<FileTask>> = vec![
        Ok(s.task(&["a"], 0)),
        Err(rayquet::Error::new(ErrorKind::Io, "planner failed")),
        Ok(s.task(&["a"], 2)),
    ];
    let mut reader = Scan::from_tasks(Tasks::schema(&["a"]), items)
        .build()
        .unwrap();
    let mut rows = 0;
    let e = loop {
        match reader.next() {
            Some(Ok(b)) => rows += b.num_rows(),
            Some(Err(e)) => break rayquet::Error::from(e),
            None => panic!("no error"),
        }
    };
    assert_eq!(rows, s.reference(&Tasks::schema(&["a"])).num_rows());
    assert!(e.to_string().contains("planner failed"), "{e}");
    assert!(reader.next().is_none(), "fused");
}

/// A deleted position the file does not have (its table's metadata and its data file
/// disagree) is a `CorruptTable` error naming the file, whether the task's deletes or its
/// loader's hold it; the last position a file has is fine.
#[test]
fn deleted_rows_past_the_file_are_corrupt_table() {
    let t = table();
    let s = &t.specs[1];
    let rows = ParquetRecordBatchReaderBuilder::try_new(File::open(&s.path).unwrap())
        .unwrap()
        .metadata()
        .file_metadata()
        .num_rows() as u64;
    for (past, fails) in [
        (rows - 1, false),
        (rows, true),
        (rows + 10, true),
        (1 << 40, true),
    ] {
        let task = s.task(&["a"], 0).deleted_rows([past]);
        let got = common::read_all(Ok(Scan::from_tasks(Tasks::schema(&["a"]), [task])));
        match (got, fails) {
            (Ok(_), false) => {}
            (Err(e), true) => {
                assert_eq!(e.kind(), ErrorKind::CorruptTable, "{e}");
                assert!(e.to_string().contains("f1.parquet"), "{e}");
                assert!(e.message().contains(&format!("position {past}")), "{e}");
            }
            (got, _) => panic!("position {past} of {rows}: {:?}", got.map(|r| r.1.len())),
        }
    }
}

#[test]
fn plain_scans_keep_the_schema_mismatch_error() {
    let t = table();
    let v1 = t.specs.iter().find(|s| s.layout == Layout::V1).unwrap();
    let v2 = t.specs.iter().find(|s| s.layout == Layout::V2).unwrap();
    let e = Scan::from_urls([v1.location(), v2.location()])
        .unwrap()
        .build()
        .unwrap()
        .find_map(|b| b.err().map(rayquet::Error::from))
        .expect("a mismatch error");
    assert_eq!(e.kind(), ErrorKind::SchemaMismatch);
    assert!(
        e.to_string().contains(&v2.location()) && e.to_string().contains(&v1.location()),
        "{e}"
    );
}

#[test]
fn filters_on_promoted_columns_prune_by_statistics() {
    // File values of `a` are i32, the table's i64: statistics are cast, row groups pruned.
    let t = table();
    let s = &t.specs[0];
    let schema = Tasks::schema(&["a"]);
    let task = FileTask::new(s.location()).columns([ColumnSource::file()]);
    let reader = Scan::from_tasks(schema, vec![task])
        .filter(col("a").lt(100_100i64))
        .build()
        .unwrap();
    let m = reader.metrics();
    let rows: usize = reader.map(|b| b.unwrap().num_rows()).sum();
    assert!(rows > 0 && rows <= 100);
    assert!(m.snapshot().row_groups_pruned >= 5, "{:?}", m.snapshot());
    // A literal beyond i32 compares fine against the i64 column.
    let task = FileTask::new(s.location()).columns([ColumnSource::file()]);
    let rows: usize = Scan::from_tasks(Tasks::schema(&["a"]), vec![task])
        .filter(col("a").gt(i64::from(i32::MAX) + 1))
        .build()
        .unwrap()
        .map(|b| b.unwrap().num_rows())
        .sum();
    assert_eq!(rows, 0);
}

#[cfg(feature = "serde")]
#[test]
fn tasks_serialize() {
    let t = table();
    let task = t.specs[1].task(&["a", "part", "_pos"], 3);
    let json = serde_json::to_string(&task).unwrap();
    let back: FileTask = serde_json::from_str(&json).unwrap();
    assert_eq!(format!("{task:?}"), format!("{back:?}"));
    let a = read_tasks(Tasks::schema(&["a", "part", "_pos"]), vec![task]).unwrap();
    let b = read_tasks(Tasks::schema(&["a", "part", "_pos"]), vec![back]).unwrap();
    let schema = Tasks::schema(&["a", "part", "_pos"]);
    suite::assert_rows_eq(&concat(&schema, &a), &concat(&schema, &b), "round trip");
}

/// Unused helpers of the expected-row machinery stay compiled.
#[allow(dead_code)]
fn _types(_: &Expr) {}

/// A variant column of these JSON values (`None`: SQL NULL), shredded as `shredding`
/// (parquet-variant-compute), as a field named `name`.
fn variant_column(
    name: &str,
    values: &[Option<&str>],
    shredding: Option<&DataType>,
) -> (Field, ArrayRef) {
    let json: ArrayRef = Arc::new(arrow::array::StringArray::from(values.to_vec()));
    let mut v = parquet::variant::json_to_variant(&json).unwrap();
    if let Some(ty) = shredding {
        v = parquet::variant::shred_variant(&v, ty).unwrap();
    }
    let field = v.field(name).with_nullable(true);
    (field, ArrayRef::from(v))
}

/// Unshredded variants as JSON text, nulls kept (`metadata` and `value` read as `Binary`,
/// which `variant_to_json` wants).
fn variant_text(c: &ArrayRef) -> Vec<Option<String>> {
    let s = c.as_struct();
    let binary = |name: &str| cast(s.column_by_name(name).unwrap(), &DataType::Binary).unwrap();
    let plain: ArrayRef = Arc::new(
        StructArray::try_new(
            vec![
                Field::new("metadata", DataType::Binary, false),
                Field::new("value", DataType::Binary, true),
            ]
            .into(),
            vec![binary("metadata"), binary("value")],
            s.nulls().cloned(),
        )
        .unwrap(),
    );
    let t = parquet::variant::variant_to_json(&plain).unwrap();
    t.iter().map(|s| s.map(str::to_string)).collect()
}

#[test]
fn shredded_variants_read_unshredded_for_an_unshredded_variant_field() {
    use parquet::variant::VariantType;
    let values = [
        Some(r#"{"a": 1, "b": "x"}"#),
        None,
        Some("7"),
        Some(r#"{"a": "no", "c": [1, 2]}"#),
        Some("null"),
        Some(r#""text""#),
        Some(r#"{"a": 3}"#),
    ];
    let obj = DataType::Struct(
        vec![
            Field::new("a", DataType::Int64, true),
            Field::new("b", DataType::Utf8, true),
        ]
        .into(),
    );
    let (vf, va) = variant_column("v", &values, Some(&obj));
    let (wf, wa) = variant_column("w", &values, Some(&DataType::Int64));
    let s = StructArray::try_new(
        vec![Arc::new(wf)].into(),
        vec![wa],
        Some(vec![true, true, false, true, true, true, true].into()),
    )
    .unwrap();
    let file_schema = Arc::new(Schema::new(vec![
        vf,
        Field::new("s", s.data_type().clone(), true),
    ]));
    let batch = RecordBatch::try_new(Arc::clone(&file_schema), vec![va, Arc::new(s)]).unwrap();
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("shredded.parquet");
    let mut w = ArrowWriter::try_new(File::create(&path).unwrap(), file_schema, None).unwrap();
    w.write(&batch).unwrap();
    w.close().unwrap();

    // The reference: parquet's reader (shredded, typed_value kept), unshredded.
    let reference = ParquetRecordBatchReaderBuilder::try_new(File::open(&path).unwrap())
        .unwrap()
        .build()
        .unwrap()
        .next()
        .unwrap()
        .unwrap();
    let unshred = |c: &ArrayRef| -> ArrayRef {
        let v = parquet::variant::VariantArray::try_new(c.as_ref()).unwrap();
        Arc::new(parquet::variant::unshred_variant(&v).unwrap().into_inner())
    };
    let want_v = variant_text(&unshred(reference.column(0)));
    let want_w = variant_text(&unshred(reference.column(1).as_struct().column(0)));
    assert_eq!(want_v[0].as_deref(), Some(r#"{"a":1,"b":"x"}"#));

    // A plain scan keeps the file's (shredded) type.
    let plain: Vec<RecordBatch> = Scan::from_urls([path.to_str().unwrap()])
        .unwrap()
        .build()
        .unwrap()
        .collect::<Result<_, _>>()
        .unwrap();
    assert_eq!(
        plain[0].schema().field(0).data_type(),
        reference.schema().field(0).data_type()
    );

    // A task whose output fields are unshredded variants (top-level and in a struct): every
    // value whole in `value`, with a row deleted.
    let unshredded = DataType::Struct(
        vec![
            Field::new("metadata", DataType::Binary, false),
            Field::new("value", DataType::Binary, true),
        ]
        .into(),
    );
    let variant =
        |name: &str| Field::new(name, unshredded.clone(), true).with_extension_type(VariantType);
    let out = Arc::new(Schema::new(vec![
        variant("v"),
        Field::new("s", DataType::Struct(vec![variant("w")].into()), true),
    ]));
    let task = FileTask::new(path.to_str().unwrap()).deleted_rows([3]);
    let got = concat(&out, &read_tasks(Arc::clone(&out), vec![task]).unwrap());
    assert_eq!(got.schema(), out);
    let keep = |t: Vec<Option<String>>| -> Vec<Option<String>> {
        t.into_iter()
            .enumerate()
            .filter(|(i, _)| *i != 3)
            .map(|(_, t)| t)
            .collect()
    };
    assert_eq!(variant_text(got.column(0)), keep(want_v));
    let s = got.column(1).as_struct();
    let w: Vec<Option<String>> = variant_text(s.column(0))
        .into_iter()
        .enumerate()
        .map(|(i, t)| t.filter(|_| s.is_valid(i)))
        .collect();
    let want_w: Vec<Option<String>> = keep(want_w)
        .into_iter()
        .enumerate()
        .map(|(i, t)| t.filter(|_| i != 2))
        .collect();
    assert_eq!(w, want_w);

    // A file whose `v` is not a variant group (plain bytes): an error naming the column and
    // the file.
    let bytes = dir.path().join("bytes.parquet");
    let b = RecordBatch::try_from_iter([(
        "v",
        Arc::new(arrow::array::BinaryArray::from(vec![&b"x"[..]])) as ArrayRef,
    )])
    .unwrap();
    let mut w = ArrowWriter::try_new(File::create(&bytes).unwrap(), b.schema(), None).unwrap();
    w.write(&b).unwrap();
    w.close().unwrap();
    let only_v = Arc::new(Schema::new(vec![variant("v")]));
    let e = read_tasks(only_v, vec![FileTask::new(bytes.to_str().unwrap())]).unwrap_err();
    assert_eq!(e.kind(), ErrorKind::SchemaMismatch, "{e}");
    assert!(
        e.to_string().contains("\"v\"") && e.to_string().contains("bytes.parquet"),
        "{e}"
    );
}
