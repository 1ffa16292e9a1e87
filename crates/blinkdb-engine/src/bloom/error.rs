/// Errors of scalable Bloom filters. `Display` is the exact reply text RedisBloom 2.8
/// sends for the same condition (probed against redisbloom.so 2.8.2 with redis-cli);
/// variants without a RedisBloom counterpart are marked "BlinkDB only".
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum BloomError {
    /// BF.RESERVE error rate not a number.
    #[error("ERR bad error rate")]
    BadErrorRate,
    /// BF.RESERVE error rate outside (0, 1); RedisBloom's text ends in a space.
    #[error("ERR (0 < error rate range < 1) ")]
    ErrorRateRange,
    /// BF.RESERVE capacity not an integer.
    #[error("ERR bad capacity")]
    BadCapacity,
    /// BF.RESERVE capacity <= 0.
    #[error("ERR (capacity should be larger than 0)")]
    CapacityRange,
    /// BF.RESERVE EXPANSION not an integer.
    #[error("ERR bad expansion")]
    BadExpansion,
    /// BF.RESERVE EXPANSION < 1.
    #[error("ERR expansion should be greater or equal to 1")]
    ExpansionRange,
    /// BF.RESERVE EXPANSION as the last argument.
    #[error("ERR no expansion")]
    NoExpansion,
    /// BF.RESERVE with both EXPANSION and NONSCALING.
    #[error("Nonscaling filters cannot expand")]
    NonScalingExpansion,
    /// BF.INSERT CAPACITY not an integer.
    #[error("Bad capacity")]
    InsertBadCapacity,
    /// BF.INSERT ERROR not a number.
    #[error("Bad error rate")]
    InsertBadErrorRate,
    /// BF.INSERT EXPANSION not an integer.
    #[error("Bad expansion")]
    InsertBadExpansion,
    /// BF.INSERT CAPACITY/ERROR/EXPANSION out of range.
    #[error("Bad argument received")]
    InsertBadArgument,
    /// BF.INSERT unknown option.
    #[error("Unknown argument received")]
    InsertUnknownArgument,
    /// Wrong argument count; carries the lower-case command name.
    #[error("ERR wrong number of arguments for '{0}' command")]
    WrongArity(&'static str),
    /// BF.RESERVE (or a header chunk) on a key that already holds a filter.
    #[error("ERR item exists")]
    ItemExists,
    /// Key holds no filter (BF.INFO, BF.SCANDUMP, BF.INSERT NOCREATE, BF.LOADCHUNK data).
    #[error("ERR not found")]
    NotFound,
    /// Add to a NONSCALING filter whose items reached its capacity.
    #[error("ERR non scaling filter is full")]
    NonScalingFull,
    /// A new sub-filter RedisBloom could not make (its error rate halved to 0).
    #[error("ERR problem inserting into filter")]
    GrowFailed,
    /// BF.LOADCHUNK data that does not validate.
    #[error("ERR received bad data")]
    BadData,
    /// BF.LOADCHUNK cursor outside every sub-filter.
    #[error("ERR invalid offset - no link found")]
    InvalidOffset,
    /// BF.INFO field other than CAPACITY|SIZE|FILTERS|ITEMS|EXPANSION.
    #[error("Invalid information value")]
    InvalidInfoField,
    /// BlinkDB only: the filter (or its next sub-filter) would exceed bf-max-memory.
    #[error("ERR bloom filter needs {needed} bytes, over bf-max-memory {max}")]
    OverMaxMemory { needed: u64, max: u64 },
    /// BlinkDB only: capacity × expansion or the sizing left every representable size.
    #[error("ERR bloom filter capacity or error rate too large to represent")]
    TooLarge,
    /// BlinkDB only: a kernel-backend failure; the text comes from [`crate::kernel::KernelError`].
    #[error("ERR {0}")]
    Kernel(String),
    /// BlinkDB only: EXPANSION given with BACKEND kernel.
    #[error("ERR kernel-backed filters cannot expand: EXPANSION is not allowed with BACKEND kernel (they are always NONSCALING)")]
    KernelExpansion,
    /// BlinkDB only: BF.SCANDUMP / BF.LOADCHUNK on a kernel-backed filter.
    #[error("ERR kernel-backed filters cannot be dumped or loaded: the kernel does not expose their bits")]
    KernelNoDump,
    /// BlinkDB only: BACKEND / RAW arguments that make no sense.
    #[error("ERR {0}")]
    BadBackend(&'static str),
    /// BlinkDB only: the filter files could not be read or written.
    #[error("ERR bloom filter storage: {0}")]
    Storage(String),
}

impl From<crate::filter::FilterError> for BloomError {
    fn from(e: crate::filter::FilterError) -> Self {
        match e {
            crate::filter::FilterError::Unreachable { .. } => BloomError::TooLarge,
            other => BloomError::Storage(other.to_string()),
        }
    }
}

impl BloomError {
    pub(crate) fn io(
        op: &'static str,
        path: &std::path::Path,
    ) -> impl FnOnce(std::io::Error) -> Self {
        let path = path.display().to_string();
        move |e| BloomError::Storage(format!("{op} {path}: {e}"))
    }
}

impl From<crate::kernel::KernelError> for BloomError {
    fn from(e: crate::kernel::KernelError) -> Self {
        BloomError::Kernel(e.to_string())
    }
}
