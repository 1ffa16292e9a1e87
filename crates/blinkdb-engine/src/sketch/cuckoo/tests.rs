use super::*;
use crate::rdb::Reader;

const UNLIMITED: u64 = u64::MAX;

fn filter(capacity: u64, bs: u16, mi: u16, exp: u16) -> CuckooFilter {
    CuckooFilter::new(capacity, bs, mi, exp, UNLIMITED).unwrap()
}

fn add_numbers(cf: &mut CuckooFilter, n: u32) {
    for i in 0..n {
        assert_eq!(
            cf.insert(hash_item(i.to_string().as_bytes()), false, UNLIMITED),
            Insert::Inserted
        );
    }
}

#[test]
fn shapes_match_redisbloom_flow_tests() {
    // RedisBloom 2.8.2's test_bucket_size and test_expansion: 1000 adds.
    let cases = [
        (
            (64, 1, 20, 1),
            "bktsize:1 buckets:64 items:1000 deletes:0 filters:18 max_iterations:20 expansion:1",
        ),
        (
            (64, 2, 20, 1),
            "bktsize:2 buckets:32 items:1000 deletes:0 filters:17 max_iterations:20 expansion:1",
        ),
        (
            (256, 4, 500, 1),
            "bktsize:4 buckets:64 items:1000 deletes:0 filters:4 max_iterations:500 expansion:1",
        ),
        (
            (64, 2, 20, 2),
            "bktsize:2 buckets:32 items:1000 deletes:0 filters:5 max_iterations:20 expansion:2",
        ),
        (
            (64, 2, 500, 4),
            "bktsize:2 buckets:32 items:1000 deletes:0 filters:3 max_iterations:500 expansion:4",
        ),
    ];
    for ((cap, bs, mi, exp), want) in cases {
        let mut cf = filter(cap, bs, mi, exp);
        add_numbers(&mut cf, 1000);
        assert_eq!(cf.debug_line(), want);
        for i in 0..1000u32 {
            assert!(cf.check(hash_item(i.to_string().as_bytes())));
        }
    }
}

#[test]
fn info_size_and_rounding() {
    let cf = filter(1000, 2, 20, 1);
    assert_eq!((cf.num_buckets(), cf.size()), (512, 1080));
    let cf = filter(10, 2, 10, 1);
    assert_eq!(
        cf.debug_line(),
        "bktsize:2 buckets:8 items:0 deletes:0 filters:1 max_iterations:10 expansion:1"
    );
    // EXPANSION rounds up to a power of two; 0 stays 0.
    assert_eq!(filter(64, 2, 20, 3).expansion(), 4);
    assert_eq!(filter(64, 2, 20, 0).expansion(), 0);
    // Past the memory cap: no filter.
    assert!(CuckooFilter::new(1 << 20, 2, 20, 1, 1 << 19).is_none());
}

#[test]
fn count_delete_and_full() {
    let mut cf = filter(1000, 2, 20, 1);
    let h = hash_item(b"k1");
    assert_eq!(cf.insert(h, false, UNLIMITED), Insert::Inserted);
    assert_eq!(cf.insert(h, false, UNLIMITED), Insert::Inserted);
    assert_eq!(cf.insert(h, true, UNLIMITED), Insert::Exists);
    assert_eq!(cf.count(h), 2);
    assert!(cf.delete(h));
    assert_eq!(cf.count(h), 1);
    assert!(cf.delete(h));
    assert!(!cf.delete(h));
    assert_eq!((cf.num_items(), cf.num_deletes()), (0, 2));

    // EXPANSION 0: full after its 4 slots (test_expansion_0).
    let mut cf = filter(4, 2, 20, 0);
    for i in 1..=4u32 {
        assert_eq!(
            cf.insert(hash_item(i.to_string().as_bytes()), false, UNLIMITED),
            Insert::Inserted
        );
    }
    let before = cf.clone();
    assert_eq!(
        cf.insert(hash_item(b"5"), false, UNLIMITED),
        Insert::NoSpace
    );
    // The failed kick-out walk is undone.
    assert_eq!(cf, before);
    // A growth past the cap is refused, the filter unchanged.
    let mut cf = filter(4, 2, 20, 1);
    let cap = cf.data_bytes();
    let outcomes: Vec<_> = (0..20u32)
        .map(|i| cf.insert(hash_item(i.to_string().as_bytes()), false, cap))
        .collect();
    assert!(outcomes.contains(&Insert::TooBig));
    assert_eq!(cf.num_filters(), 1);
}

#[test]
fn compaction_frees_the_last_sub_filter() {
    let mut cf = filter(8, 2, 50, 1);
    add_numbers(&mut cf, 100);
    let filters = cf.num_filters();
    assert!(filters > 2);
    for i in 0..90u32 {
        assert!(cf.delete(hash_item(i.to_string().as_bytes())));
    }
    assert!(cf.num_filters() < filters);
    for i in 90..100u32 {
        assert!(cf.check(hash_item(i.to_string().as_bytes())));
    }
    cf.compact(true);
    assert_eq!(cf.num_deletes(), 0);
}

#[test]
fn scandump_chunks_rebuild_the_filter() {
    let mut cf = filter(62, 2, 20, 2);
    add_numbers(&mut cf, 500);
    let header = Header::of(&cf).to_bytes();
    let mut copy = CuckooFilter::from_header(&header, UNLIMITED).unwrap();
    let mut pos = 1;
    while let Some((next, chunk)) = cf.chunk_at(pos) {
        assert!(copy.load_chunk(next, chunk));
        pos = next;
    }
    assert_eq!(copy, cf);
    // Chunks that do not fit are refused.
    assert!(!copy.load_chunk(0, b"x"));
    assert!(!copy.load_chunk(4, b"abcd"));
    assert!(!copy.load_chunk(i64::MAX, b"abcd"));
}

#[test]
fn hostile_headers_are_refused() {
    let cf = filter(100, 2, 20, 1);
    let good = Header::of(&cf).to_bytes();
    assert!(CuckooFilter::from_header(&good, UNLIMITED).is_some());
    assert!(CuckooFilter::from_header(&good[..37], UNLIMITED).is_none());
    let with = |f: &dyn Fn(&mut Header)| {
        let mut h = Header::of(&cf);
        f(&mut h);
        CuckooFilter::from_header(&h.to_bytes(), 1 << 30)
    };
    assert!(with(&|h| h.num_buckets = 0).is_none());
    assert!(with(&|h| h.num_buckets = 48).is_none());
    assert!(with(&|h| h.bucket_size = 256).is_none());
    assert!(with(&|h| h.max_iterations = 0).is_none());
    assert!(with(&|h| h.num_filters = 65536).is_none());
    // 65537 sub-filters are one in RedisBloom's 16-bit count.
    assert_eq!(with(&|h| h.num_filters = 65537).unwrap().num_filters(), 1);
    // Too large for the cap, or sub-filters of no buckets.
    assert!(with(&|h| h.num_buckets = 1 << 40).is_none());
    assert!(with(&|h| {
        h.num_filters = 2;
        h.expansion = 0
    })
    .is_none());
    assert!(with(&|h| {
        h.num_filters = 40;
        h.expansion = 32768
    })
    .is_none());
}

#[test]
fn rdb_value_round_trips_and_truncations_fail() {
    let mut cf = filter(64, 2, 20, 2);
    add_numbers(&mut cf, 300);
    for compress in [false, true] {
        let mut out = Vec::new();
        cf.write_rdb(&mut out, compress);
        let mut r = Reader::new(&out);
        assert_eq!(CuckooFilter::read_rdb(&mut r, 4).unwrap(), cf);
        assert_eq!(r.remaining(), 0);
        for cut in 0..out.len() {
            assert!(CuckooFilter::read_rdb(&mut Reader::new(&out[..cut]), 4).is_err());
        }
    }
    assert!(CuckooFilter::read_rdb(&mut Reader::new(&[]), 5).is_err());
}

#[test]
fn batches_answer_as_items_one_by_one() {
    // Repeats and growth inside a batch (capacity 64, 3,000 items with
    // repeats): the prefetching batch calls give the same answers and
    // the same bytes as one call per item.
    let hashes: Vec<u64> = (0..3000u32)
        .map(|i| hash_item((i % 700).to_string().as_bytes()))
        .collect();
    let (mut one, mut many) = (filter(64, 2, 20, 2), filter(64, 2, 20, 2));
    let singly: Vec<Insert> = hashes
        .iter()
        .map(|&h| one.insert(h, true, UNLIMITED))
        .collect();
    let batched: Vec<Insert> = hashes
        .chunks(100)
        .flat_map(|c| many.insert_many(c, true, UNLIMITED).collect::<Vec<_>>())
        .collect();
    assert_eq!(singly, batched);
    assert_eq!(one, many);
    assert!(many.num_filters() > 1);
    let probes: Vec<u64> = (0..2000u32)
        .map(|i| hash_item(i.to_string().as_bytes()))
        .collect();
    let found: Vec<bool> = many.check_many(&probes).collect();
    let want: Vec<bool> = probes.iter().map(|&h| many.check(h)).collect();
    assert_eq!(found, want);
    assert!(found[..700].iter().all(|&f| f));
}

#[test]
fn a_bucket_count_not_a_power_of_two_divides() {
    // A foreign header may give any bucket count: index() must not mask it.
    let sub = SubFilter {
        num_buckets: 6,
        data: FileArray::from_vec(vec![0; 12]),
        at: 0,
    };
    assert_eq!(sub.index(13, 2), 2, "bucket 13 % 6 = 1");
    let pow = SubFilter::zeroed(8, 2);
    assert_eq!(pow.index(13, 2), 10, "bucket 13 % 8 = 5");
}
