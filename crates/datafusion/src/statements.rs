//! SQL text of several statements (`CREATE VIEW v AS ...; SELECT ... FROM v; DROP VIEW v`), run
//! in order, as TPC-H's Q15 is written: DataFusion's `SessionContext::sql` takes one.
//!
//! Invariants: statements run in the order written, each planned only after the ones before it
//! ran (a view created by one is seen by the next); the result is the rows of the last
//! statement that returns columns (a query, `EXPLAIN`, `SHOW`), and statements that return
//! none (`CREATE`, `DROP`, `SET`) only run; comments are the parser's (`--` and `/* */`).

use std::sync::Arc;

use datafusion::arrow::array::RecordBatch;
use datafusion::common::{plan_datafusion_err, plan_err, Result};
use datafusion::physical_plan::ExecutionPlan;
use datafusion::prelude::SessionContext;
use datafusion::sql::parser::{DFParserBuilder, Statement};
use datafusion::sql::sqlparser::dialect::dialect_from_str;

/// The statements of `sql`, in the session's dialect.
pub fn parse_statements(ctx: &SessionContext, sql: &str) -> Result<Vec<Statement>> {
    let state = ctx.state();
    let options = &state.config().options().sql_parser;
    let dialect = dialect_from_str(options.dialect)
        .ok_or_else(|| plan_datafusion_err!("unsupported SQL dialect {}", options.dialect))?;
    let statements = DFParserBuilder::new(sql)
        .with_dialect(dialect.as_ref())
        .with_recursion_limit(options.recursion_limit)
        .build()?
        .parse_statements()?;
    if statements.is_empty() {
        return plan_err!("no SQL statement given");
    }
    Ok(statements.into())
}

/// Run every statement of `sql` in order (see the module docs); `run` executes each
/// statement's physical plan that returns columns and gives back its result. Returns the last
/// such result.
pub(crate) async fn run_statements<T, F, Fut>(
    ctx: &SessionContext,
    sql: &str,
    mut run: F,
) -> Result<Option<T>>
where
    F: FnMut(Arc<dyn ExecutionPlan>) -> Fut,
    Fut: std::future::Future<Output = Result<T>>,
{
    let mut last = None;
    for statement in parse_statements(ctx, sql)? {
        let plan = ctx.state().statement_to_plan(statement).await?;
        // DDL and SET run here; a query is only planned.
        let frame = ctx.execute_logical_plan(plan).await?;
        if frame.schema().fields().is_empty() {
            frame.collect().await?;
            continue;
        }
        let physical = frame.create_physical_plan().await?;
        last = Some(run(physical).await?);
    }
    Ok(last)
}

/// Run `sql` — one statement, or several separated by `;` — in this process and collect the
/// rows of the last one that returns columns (see the module docs).
///
/// ```no_run
/// # async fn example(ctx: &datafusion::prelude::SessionContext) -> datafusion::error::Result<()> {
/// let rows = rayquet_datafusion::collect_sql(
///     ctx,
///     "-- Q15\nCREATE VIEW r AS SELECT 1 AS x; SELECT x FROM r; DROP VIEW r",
/// )
/// .await?;
/// # Ok(()) }
/// ```
pub async fn collect_sql(ctx: &SessionContext, sql: &str) -> Result<Vec<RecordBatch>> {
    let task = ctx.task_ctx();
    let out = run_statements(ctx, sql, |plan| {
        datafusion::physical_plan::collect(plan, Arc::clone(&task))
    })
    .await?;
    Ok(out.unwrap_or_default())
}
