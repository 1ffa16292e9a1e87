//! Pure algorithms the commands use, with no server state: Redis's geohash,
//! the LCS table and its walk, and Redis's partial quicksort.

pub mod geohash;
pub mod lcs;
pub mod pqsort;
