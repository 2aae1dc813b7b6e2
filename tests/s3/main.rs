//! Scans of objects in S3 (moto's server, started per test: see `rayquet_testkit::s3`), and
//! the faults a flaky store throws at them, through a fault-injecting proxy.

mod faults;
mod s3;
