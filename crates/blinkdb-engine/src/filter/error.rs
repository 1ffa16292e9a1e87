use std::path::PathBuf;

/// Errors of the memory-mapped Bloom file.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum FilterError {
    #[error("bloom file {path}: {op} failed: {source}")]
    Io {
        path: PathBuf,
        op: &'static str,
        source: std::io::Error,
    },
    #[error("no Bloom geometry of at most {max_lines} lines reaches false-positive rate {fp} for {items} items")]
    Unreachable { items: u64, fp: f64, max_lines: u64 },
    #[error("invalid Bloom geometry: {0}")]
    InvalidGeometry(&'static str),
}

impl FilterError {
    pub(crate) fn io(
        path: &std::path::Path,
        op: &'static str,
    ) -> impl FnOnce(std::io::Error) -> Self {
        let path = path.to_path_buf();
        move |source| FilterError::Io { path, op, source }
    }
}
