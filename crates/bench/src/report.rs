//! Medians, lower bounds, and the three outputs of the workload benchmark
//! (`cargo bench --bench workloads`): a text table, JSON and an SVG chart.
//!
//! The chart is a small hand-written SVG rather than `plotters`: plotters is not in the local
//! crate cache and would add a sizeable build on a 2-core machine for a few bars of output.

use std::fmt::Write as _;
use std::time::Duration;

use serde_json::{json, Value};

use super::readers::ReaderId;
use super::workloads::{Layout, Workload};

const MIB: f64 = 1024.0 * 1024.0;

/// How the benchmark was run.
#[derive(Debug)]
pub struct Config {
    pub cores: usize,
    pub first_byte: Duration,
    pub bandwidth: u64,
    pub max_connections: usize,
    pub runs: usize,
    pub scale: f64,
    /// Read from moto over loopback HTTP instead of simulated latency.
    pub s3: bool,
}

/// One reader's runs on one workload, summarised by the run with the median wall time.
#[derive(Debug)]
pub struct Summary {
    pub reader: ReaderId,
    pub runs: Vec<Value>,
    pub seconds: f64,
    pub rows: u64,
    /// Every run delivered the same number of rows.
    pub rows_consistent: bool,
    pub cpu_seconds: f64,
    pub peak_rss: u64,
    pub first_batch: Option<f64>,
    pub requests: u64,
    pub bytes_fetched: u64,
}

impl Summary {
    fn new(reader: ReaderId, runs: Vec<Value>) -> Summary {
        let f = |v: &Value, k: &str| v[k].as_f64().unwrap_or(0.0);
        let u = |v: &Value, k: &str| v[k].as_u64().unwrap_or(0);
        let mut order: Vec<usize> = (0..runs.len()).collect();
        order.sort_by(|&a, &b| f(&runs[a], "seconds").total_cmp(&f(&runs[b], "seconds")));
        let m = &runs[order[order.len() / 2]];
        Summary {
            reader,
            seconds: f(m, "seconds"),
            rows: u(m, "rows"),
            rows_consistent: runs.iter().all(|r| u(r, "rows") == u(m, "rows")),
            cpu_seconds: f(m, "user_seconds") + f(m, "sys_seconds"),
            peak_rss: runs
                .iter()
                .map(|r| u(r, "peak_rss_bytes"))
                .max()
                .unwrap_or(0),
            first_batch: m["first_batch_seconds"].as_f64(),
            requests: u(m, "requests"),
            bytes_fetched: u(m, "bytes_fetched"),
            runs: runs.clone(),
        }
    }
}

/// Everything measured on one workload.
#[derive(Debug)]
pub struct WorkloadResult {
    pub workload: &'static Workload,
    pub layout: Layout,
    /// The 1-minute load average when the workload started.
    pub load: Option<f64>,
    pub readers: Vec<Summary>,
}

impl WorkloadResult {
    pub fn new(
        workload: &'static Workload,
        layout: Layout,
        load: Option<f64>,
        runs: Vec<(ReaderId, Vec<Value>)>,
    ) -> WorkloadResult {
        WorkloadResult {
            workload,
            layout,
            load,
            readers: runs.into_iter().map(|(r, v)| Summary::new(r, v)).collect(),
        }
    }

    fn get(&self, reader: ReaderId) -> Option<&Summary> {
        self.readers.iter().find(|s| s.reader == reader)
    }

    /// The reader the others are compared with ("rq speed"): rayquet, or rayquet's Delta
    /// table scan on a Delta workload.
    fn reference(&self) -> Option<&Summary> {
        self.get(ReaderId::Rayquet)
            .or_else(|| self.get(ReaderId::DeltaTableScan))
    }

    /// B0's CPU time spread over every core: no reader decodes faster.
    fn decode_bound(&self, c: &Config) -> Option<f64> {
        self.get(ReaderId::Sync)
            .map(|b0| b0.cpu_seconds / c.cores as f64)
    }

    /// Unavoidable round trips (footer, then data for files over the footer hint; before them,
    /// listing and reading a Delta table's log) times the first-byte delay, plus the minimal
    /// bytes over the aggregate bandwidth at the cap.
    fn latency_bound(&self, c: &Config) -> f64 {
        if !self.workload.latency || c.s3 {
            return 0.0;
        }
        let rounds = if self.layout.files_over_hint > 0 {
            2.0
        } else {
            1.0
        } + super::delta::log_round_trips(&self.workload.data);
        let bytes = (self.layout.projected_bytes + self.layout.footer_bytes) as f64;
        let aggregate = c.bandwidth as f64 * c.max_connections as f64;
        let transfer = if aggregate > 0.0 {
            bytes / aggregate
        } else {
            0.0
        };
        rounds * c.first_byte.as_secs_f64() + transfer
    }

    fn lower_bound(&self, c: &Config) -> Option<f64> {
        self.decode_bound(c).map(|d| d.max(self.latency_bound(c)))
    }
}

fn reader_json(s: &Summary, rq: Option<&Summary>, l: &Layout) -> Value {
    json!({
        "reader": s.reader.name(),
        "seconds": s.seconds,
        "rows": s.rows,
        "expected_rows": l.expected_rows(s.reader),
        "rows_consistent": s.rows_consistent,
        "rows_per_sec": s.rows as f64 / s.seconds,
        "file_mib_per_sec": l.file_bytes as f64 / MIB / s.seconds,
        "cpu_use": s.cpu_seconds / s.seconds,
        "cpu_seconds": s.cpu_seconds,
        "peak_rss_bytes": s.peak_rss,
        "first_batch_seconds": s.first_batch,
        "requests": s.requests,
        "bytes_fetched": s.bytes_fetched,
        "rayquet_speedup": rq.map(|r| s.seconds / r.seconds),
        "runs": s.runs,
    })
}

fn workloads_filter(r: &WorkloadResult) -> Option<String> {
    r.workload.filter.map(|f| match f {
        super::workloads::FilterSpec::Sql(s) => s.to_string(),
        super::workloads::FilterSpec::SortedFraction(x) => {
            format!("l_orderkey < (key at {:.1}% of the rows)", x * 100.0)
        }
    })
}

/// The whole report as JSON.
pub fn to_json(c: &Config, results: &[WorkloadResult]) -> Value {
    let workloads: Vec<Value> = results
        .iter()
        .map(|r| {
            let rq = r.reference();
            let lb = r.lower_bound(c);
            json!({
                "id": r.workload.id,
                "about": r.workload.about,
                "latency": r.workload.latency,
                "columns": r.workload.columns,
                "budget": r.workload.budget,
                "load_average_before": r.load,
                "files": r.layout.files,
                "row_groups": r.layout.row_groups,
                "rows": r.layout.rows,
                "file_bytes": r.layout.file_bytes,
                "projected_bytes": r.layout.projected_bytes,
                "footer_bytes": r.layout.footer_bytes,
                "filter": workloads_filter(r),
                "matching_rows": r.layout.matching_rows,
                "matching_page_bytes": r.layout.matching_page_bytes,
                "decode_bound_seconds": r.decode_bound(c),
                "latency_bound_seconds": r.latency_bound(c),
                "lower_bound_seconds": lb,
                "rayquet_over_lower_bound": rq.zip(lb).map(|(s, lb)| s.seconds / lb),
                "readers": r.readers.iter().map(|s| reader_json(s, rq, &r.layout)).collect::<Vec<_>>(),
            })
        })
        .collect();
    json!({
        "cores": c.cores,
        "first_byte_ms": c.first_byte.as_millis() as u64,
        "bandwidth_bytes_per_sec": c.bandwidth,
        "max_connections": c.max_connections,
        "runs": c.runs,
        "scale": c.scale,
        "s3": c.s3,
        "cpu_source": "getrusage(RUSAGE_SELF) user+sys deltas in the child process",
        "workloads": workloads,
    })
}

/// The human-readable report.
pub fn table(c: &Config, results: &[WorkloadResult]) -> String {
    let mut s = String::new();
    if c.s3 {
        let _ = writeln!(
            s,
            "--s3: every workload read from moto_server over loopback HTTP (no simulated latency)"
        );
    }
    let _ = writeln!(
        s,
        "{} cores; latency workloads: {} ms first byte, {} MiB/s per request, {} connections; \
         median of {} runs; CPU = (user+sys)/wall from getrusage",
        c.cores,
        c.first_byte.as_millis(),
        c.bandwidth >> 20,
        c.max_connections,
        c.runs
    );
    for r in results {
        let l = &r.layout;
        let _ = writeln!(
            s,
            "\n{} {}\n   {} files, {} row groups, {} rows, {:.1} MiB on disk, projected chunks {:.1} MiB; \
             load average before {}",
            r.workload.id,
            r.workload.about,
            l.files,
            l.row_groups,
            l.rows,
            l.file_bytes as f64 / MIB,
            l.projected_bytes as f64 / MIB,
            r.load.map_or("?".into(), |x| format!("{x:.2}"))
        );
        let _ = writeln!(
            s,
            "   {:<20} {:>8} {:>9} {:>9} {:>5} {:>8} {:>8} {:>6} {:>9} {:>9}",
            "reader",
            "wall s",
            "Mrows/s",
            "MiB/s",
            "CPU",
            "RSS MiB",
            "1st ms",
            "reqs",
            "MiB got",
            "rq speed"
        );
        let rq = r.reference();
        for x in &r.readers {
            let _ = writeln!(
                s,
                "   {:<20} {:>8.3} {:>9.2} {:>9.1} {:>5.2} {:>8.0} {:>8} {:>6} {:>9.1} {:>9}{}",
                x.reader.name(),
                x.seconds,
                x.rows as f64 / x.seconds / 1e6,
                l.file_bytes as f64 / MIB / x.seconds,
                x.cpu_seconds / x.seconds,
                x.peak_rss as f64 / MIB,
                x.first_batch
                    .map_or("-".into(), |t| format!("{:.0}", t * 1e3)),
                x.requests,
                x.bytes_fetched as f64 / MIB,
                rq.map_or("-".into(), |q| format!("{:.2}x", x.seconds / q.seconds)),
                if x.rows_consistent && x.rows == l.expected_rows(x.reader) {
                    ""
                } else {
                    "  (ROWS DIFFER)"
                },
            );
        }
        if let Some(lb) = r.lower_bound(c) {
            let _ = writeln!(
                s,
                "   lower bound {:.3} s (decode {:.3} s = B0 CPU / {} cores, latency {:.3} s){}",
                lb,
                r.decode_bound(c).unwrap_or(0.0),
                c.cores,
                r.latency_bound(c),
                rq.map_or(String::new(), |q| format!(
                    "; rayquet at {:.2}x the bound",
                    q.seconds / lb
                ))
            );
        }
    }
    s
}

const COLORS: [&str; 7] = [
    "#8c8c8c", "#c9a227", "#d9822b", "#b5443a", "#2f6fb0", "#5aa0d8", "#7a5ab8",
];

fn color(r: ReaderId) -> &'static str {
    COLORS[r as usize % COLORS.len()]
}

/// Throughput (million rows/s) per reader per workload: one panel per workload, each with its
/// own scale (latency workloads are orders of magnitude slower than local ones).
pub fn svg(results: &[WorkloadResult]) -> String {
    let (panel_w, bar_h, left) = (760.0, 18.0, 170.0);
    let mut y = 40.0;
    let mut body = String::new();
    for r in results {
        let max = r
            .readers
            .iter()
            .map(|x| x.rows as f64 / x.seconds / 1e6)
            .fold(0.0f64, f64::max)
            .max(1e-9);
        let _ = writeln!(
            body,
            r#"<text x="10" y="{y}" font-weight="bold">{} — {}</text>"#,
            r.workload.id,
            xml(r.workload.about)
        );
        y += 8.0;
        for x in &r.readers {
            let v = x.rows as f64 / x.seconds / 1e6;
            let w = (panel_w - left - 90.0) * v / max;
            let _ = writeln!(
                body,
                r#"<text x="{tx}" y="{ty}" text-anchor="end">{name}</text><rect x="{left}" y="{y}" width="{w:.1}" height="{h}" fill="{c}"/><text x="{vx:.1}" y="{ty}">{v:.2} Mrows/s</text>"#,
                tx = left - 6.0,
                ty = y + bar_h - 5.0,
                name = x.reader.name(),
                h = bar_h - 3.0,
                c = color(x.reader),
                vx = left + w + 4.0,
            );
            y += bar_h;
        }
        y += 22.0;
    }
    format!(
        r#"<svg xmlns="http://www.w3.org/2000/svg" width="{panel_w}" height="{y}" font-family="sans-serif" font-size="12">
<rect width="100%" height="100%" fill="white"/>
<text x="10" y="20" font-size="14" font-weight="bold">rayquet bench: throughput (million rows/s, median), each workload on its own scale</text>
{body}</svg>
"#
    )
}

fn xml(s: &str) -> String {
    s.replace('&', "&amp;")
        .replace('<', "&lt;")
        .replace('>', "&gt;")
}
