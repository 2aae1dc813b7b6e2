//! rayquet-datafusion's tests, one binary (one link of DataFusion's stack rather than two):
//! SQL over rayquet tables in one process ([`local`]) and on loopback workers
//! ([`distributed`]), the order of rows files declare ([`order`]), the statistics of Iceberg
//! and Delta tables ([`table_stats`]), each against DataFusion over the batches of an independent reader
//! ([`common`]).

mod common;
mod distributed;
mod local;
mod order;
mod table_stats;
