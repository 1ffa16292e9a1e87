//! GEO commands over sorted sets whose scores are 52-bit geohashes
//! (`geohash.rs`): GEOADD, GEOPOS, GEODIST, GEOHASH, GEOSEARCH[STORE] and
//! the GEORADIUS family, with Redis 7.0's parsing order, errors, number
//! formats, keyspace events and AOF records (GEOADD is logged as the ZADD
//! Redis propagates).

use super::args::{eq_ic, parse_i64, ERR_NOT_FLOAT, ERR_NOT_INT, ERR_SYNTAX, ERR_WRONGTYPE};
use super::collection;
use super::zrange::store_result;
use super::zset::{limits, parse_score};
use super::Ctx;
use crate::algo::geohash::{self, Shape, ShapeKind};
use crate::protocol::{Args, Out};
use blinkdb_engine::ZSetValue;
use std::borrow::Cow;
use std::cmp::Ordering::{Equal, Greater, Less};

type Error = Cow<'static, str>;

const ERR_MEMBER: &str = "ERR could not decode requested zset member";

/// A longitude and a latitude argument (extractLongLatOrReply).
fn lon_lat(args: &[&[u8]]) -> Result<[f64; 2], Error> {
    let lon = parse_score(args[0]).ok_or(ERR_NOT_FLOAT)?;
    let lat = parse_score(args[1]).ok_or(ERR_NOT_FLOAT)?;
    let lon_ok = (geohash::LONG_MIN..=geohash::LONG_MAX).contains(&lon);
    let lat_ok = (geohash::LAT_MIN..=geohash::LAT_MAX).contains(&lat);
    if !lon_ok || !lat_ok {
        return Err(format!("ERR invalid longitude,latitude pair {lon:.6},{lat:.6}").into());
    }
    Ok([lon, lat])
}

/// Meters per unit.
fn unit(arg: &[u8]) -> Result<f64, Error> {
    Ok(if eq_ic(arg, "m") {
        1.0
    } else if eq_ic(arg, "km") {
        1000.0
    } else if eq_ic(arg, "ft") {
        0.3048
    } else if eq_ic(arg, "mi") {
        1609.34
    } else {
        return Err("ERR unsupported unit provided. please use M, KM, FT, MI".into());
    })
}

/// `radius unit`: the radius and meters per unit.
fn radius(args: &[&[u8]]) -> Result<(f64, f64), Error> {
    let r = parse_score(args[0]).ok_or("ERR need numeric radius")?;
    if r < 0.0 {
        return Err("ERR radius cannot be negative".into());
    }
    Ok((r, unit(args[1])?))
}

/// `width height unit`.
fn box_size(args: &[&[u8]]) -> Result<(f64, f64, f64), Error> {
    let w = parse_score(args[0]).ok_or("ERR need numeric width")?;
    let h = parse_score(args[1]).ok_or("ERR need numeric height")?;
    if h < 0.0 || w < 0.0 {
        return Err("ERR height or width cannot be negative".into());
    }
    Ok((w, h, unit(args[2])?))
}

fn member_pos(z: &ZSetValue, member: &[u8]) -> Result<[f64; 2], Error> {
    z.score(member)
        .map(geohash::decode_score)
        .ok_or(ERR_MEMBER.into())
}

/// A distance with four decimals (fixedpoint_d2string after llrint).
fn distance_text(d: f64) -> String {
    let v = geohash::c_i64((d * 10000.0).round_ties_even());
    let sign = if v < 0 { "-" } else { "" };
    let a = v.unsigned_abs();
    format!("{sign}{}.{:04}", a / 10000, a % 10000)
}

/// A coordinate as addReplyHumanLongDouble sends it: 17 decimals without
/// trailing zeros, a bulk string in RESP2 and a double in RESP3.
fn reply_coord(out: &mut Out, x: f64) {
    let mut s = format!("{x:.17}");
    if s.contains('.') {
        let keep = s.trim_end_matches('0').trim_end_matches('.').len();
        s.truncate(keep);
    }
    if s == "-0" {
        s = "0".into();
    }
    if out.resp3() {
        out.buf.extend_from_slice(b",");
        out.buf.extend_from_slice(s.as_bytes());
        out.buf.extend_from_slice(b"\r\n");
    } else {
        out.bulk(s.as_bytes());
    }
}

/// GEOADD key [NX|XX] [CH] lon lat member ...: runs as the ZADD it becomes
/// (and is logged as), scores being the 52-bit geohashes.
pub fn geoadd(ctx: &mut Ctx, args: &Args) {
    let mut at = 2;
    let (mut nx, mut xx) = (false, false);
    while at < args.len() {
        let opt = args[at];
        if eq_ic(opt, "nx") {
            nx = true;
        } else if eq_ic(opt, "xx") {
            xx = true;
        } else if !eq_ic(opt, "ch") {
            break;
        }
        at += 1;
    }
    if !(args.len() - at).is_multiple_of(3) || (nx && xx) {
        return ctx.out.error(ERR_SYNTAX);
    }
    let mut zadd: Vec<Vec<u8>> = Vec::with_capacity(at + (args.len() - at) / 3 * 2);
    zadd.push(b"zadd".to_vec());
    zadd.extend(args[1..at].iter().map(|a| a.to_vec()));
    for triple in args[at..].chunks(3) {
        let [lon, lat] = match lon_lat(triple) {
            Ok(p) => p,
            Err(e) => return ctx.out.error(&e),
        };
        let bits = geohash::score_of(lon, lat).expect("checked within the limits");
        zadd.push(bits.to_string().into_bytes());
        zadd.push(triple[2].to_vec());
    }
    let zadd: Args = zadd.iter().map(|a| &a[..]).collect();
    super::zset::zadd(ctx, &zadd);
}

pub fn geopos(ctx: &mut Ctx, args: &Args) {
    let members = &args[2..];
    collection::read_or_reply(ctx, args[1], |z: Option<&ZSetValue>, out| {
        out.array(members.len());
        for m in members {
            match z.and_then(|z| z.score(m)) {
                Some(score) => {
                    let [lon, lat] = geohash::decode_score(score);
                    out.array(2);
                    reply_coord(out, lon);
                    reply_coord(out, lat);
                }
                None => out.null_array(),
            }
        }
    });
}

pub fn geohash_cmd(ctx: &mut Ctx, args: &Args) {
    let members = &args[2..];
    collection::read_or_reply(ctx, args[1], |z: Option<&ZSetValue>, out| {
        out.array(members.len());
        for m in members {
            match z.and_then(|z| z.score(m)) {
                Some(score) => out.bulk(&geohash::geohash_text(score)),
                None => out.null(),
            }
        }
    });
}

pub fn geodist(ctx: &mut Ctx, args: &Args) {
    let to_meters = match args.len() {
        5 => match unit(args[4]) {
            Ok(u) => u,
            Err(e) => return ctx.out.error(&e),
        },
        4 => 1.0,
        _ => return ctx.out.error(ERR_SYNTAX),
    };
    let (a, b) = (args[2], args[3]);
    collection::read_or_reply(ctx, args[1], |z: Option<&ZSetValue>, out| {
        let scores = z.and_then(|z| Some((z.score(a)?, z.score(b)?)));
        match scores {
            Some((sa, sb)) => {
                let [x1, y1] = geohash::decode_score(sa);
                let [x2, y2] = geohash::decode_score(sb);
                let d = geohash::distance(x1, y1, x2, y2) / to_meters;
                out.bulk(distance_text(d).as_bytes());
            }
            None => out.null(),
        }
    });
}

/// Which command of the search family runs.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Variant {
    Radius,
    RadiusRo,
    ByMember,
    ByMemberRo,
    Search,
    SearchStore,
}

impl Variant {
    fn is_search(self) -> bool {
        matches!(self, Variant::Search | Variant::SearchStore)
    }

    fn takes_store(self) -> bool {
        matches!(self, Variant::Radius | Variant::ByMember)
    }

    /// Where the options start.
    fn base_args(self) -> usize {
        match self {
            Variant::Radius | Variant::RadiusRo => 6,
            Variant::ByMember | Variant::ByMemberRo => 5,
            Variant::Search => 2,
            Variant::SearchStore => 3,
        }
    }

    fn src_index(self) -> usize {
        if self == Variant::SearchStore {
            2
        } else {
            1
        }
    }
}

#[derive(Clone, Copy, PartialEq, Eq)]
enum Order {
    None,
    Asc,
    Desc,
}

/// A parsed search.
struct Request<'a> {
    shape: Shape,
    withdist: bool,
    withhash: bool,
    withcoord: bool,
    order: Order,
    any: bool,
    /// 0: no limit.
    count: i64,
    store: Option<&'a [u8]>,
    storedist: bool,
}

/// Parses a search as georadiusGeneric does, in its order: the centre and
/// radius of the GEORADIUS forms, then the options; a member is looked up
/// in `z` while parsing (so its error comes before later syntax errors).
fn parse<'a>(v: Variant, args: &Args<'a>, z: Option<&ZSetValue>) -> Result<Request<'a>, Error> {
    let mut req = Request {
        shape: Shape {
            center: [0.0, 0.0],
            kind: ShapeKind::Radius(0.0),
            to_meters: 0.0,
        },
        withdist: false,
        withhash: false,
        withcoord: false,
        order: Order::None,
        any: false,
        count: 0,
        store: None,
        storedist: false,
    };
    match v {
        Variant::Radius | Variant::RadiusRo => {
            req.shape.center = lon_lat(&args[2..4])?;
            let (r, to_m) = radius(&args[4..6])?;
            req.shape.kind = ShapeKind::Radius(r);
            req.shape.to_meters = to_m;
        }
        Variant::ByMember | Variant::ByMemberRo => {
            if let Some(z) = z {
                req.shape.center = member_pos(z, args[2])?;
                let (r, to_m) = radius(&args[3..5])?;
                req.shape.kind = ShapeKind::Radius(r);
                req.shape.to_meters = to_m;
            }
        }
        Variant::SearchStore => req.store = Some(args[1]),
        Variant::Search => {}
    }
    let (mut from_member, mut from_lonlat, mut by_radius, mut by_box) =
        (false, false, false, false);
    let base = v.base_args();
    let rest = &args[base.min(args.len())..];
    let n = rest.len();
    let mut i = 0;
    while i < n {
        let a = rest[i];
        if eq_ic(a, "withdist") {
            req.withdist = true;
        } else if eq_ic(a, "withhash") {
            req.withhash = true;
        } else if eq_ic(a, "withcoord") {
            req.withcoord = true;
        } else if eq_ic(a, "any") {
            req.any = true;
        } else if eq_ic(a, "asc") {
            req.order = Order::Asc;
        } else if eq_ic(a, "desc") {
            req.order = Order::Desc;
        } else if eq_ic(a, "count") && i + 1 < n {
            req.count = parse_i64(rest[i + 1]).ok_or(ERR_NOT_INT)?;
            if req.count <= 0 {
                return Err("ERR COUNT must be > 0".into());
            }
            i += 1;
        } else if (eq_ic(a, "store") || eq_ic(a, "storedist")) && i + 1 < n && v.takes_store() {
            req.store = Some(rest[i + 1]);
            req.storedist = eq_ic(a, "storedist");
            i += 1;
        } else if eq_ic(a, "storedist") && v == Variant::SearchStore {
            req.storedist = true;
        } else if eq_ic(a, "frommember") && i + 1 < n && v.is_search() && !from_lonlat {
            if let Some(z) = z {
                req.shape.center = member_pos(z, rest[i + 1])?;
            }
            from_member = true;
            i += 1;
        } else if eq_ic(a, "fromlonlat") && i + 2 < n && v.is_search() && !from_member {
            req.shape.center = lon_lat(&rest[i + 1..i + 3])?;
            from_lonlat = true;
            i += 2;
        } else if eq_ic(a, "byradius") && i + 2 < n && v.is_search() && !by_box {
            let (r, to_m) = radius(&rest[i + 1..i + 3])?;
            req.shape.kind = ShapeKind::Radius(r);
            req.shape.to_meters = to_m;
            by_radius = true;
            i += 2;
        } else if eq_ic(a, "bybox") && i + 3 < n && v.is_search() && !by_radius {
            let (width, height, to_m) = box_size(&rest[i + 1..i + 4])?;
            req.shape.kind = ShapeKind::Box { width, height };
            req.shape.to_meters = to_m;
            by_box = true;
            i += 3;
        } else {
            return Err(ERR_SYNTAX.into());
        }
        i += 1;
    }
    if req.store.is_some() && (req.withdist || req.withhash || req.withcoord) {
        let who = if v == Variant::SearchStore {
            "GEOSEARCHSTORE"
        } else {
            "STORE option in GEORADIUS"
        };
        return Err(format!(
            "ERR {who} is not compatible with WITHDIST, WITHHASH and WITHCOORD options"
        )
        .into());
    }
    let name = String::from_utf8_lossy(args[0]);
    if v.is_search() && !(from_member || from_lonlat) {
        return Err(format!(
            "ERR exactly one of FROMMEMBER or FROMLONLAT can be specified for {name}"
        )
        .into());
    }
    if v.is_search() && !(by_radius || by_box) {
        return Err(
            format!("ERR exactly one of BYRADIUS and BYBOX can be specified for {name}").into(),
        );
    }
    if req.any && req.count == 0 {
        return Err("ERR the ANY argument requires COUNT argument".into());
    }
    if req.count != 0 && req.order == Order::None && !req.any {
        req.order = Order::Asc;
    }
    Ok(req)
}

/// A member found by a search.
struct Point<'z> {
    member: &'z [u8],
    lon: f64,
    lat: f64,
    /// From the centre, in meters.
    dist: f64,
    score: f64,
}

/// Appends the members of the score span [min, max) that lie within the
/// shape, stopping once `limit` (0: none) were found.
fn scan_span<'z>(
    z: &'z ZSetValue,
    min: f64,
    max: f64,
    shape: &Shape,
    found: &mut Vec<Point<'z>>,
    limit: usize,
) {
    let start = z.partition_by_score(|s| s < min);
    for (member, score) in z.range(start, false) {
        if score >= max {
            break;
        }
        let [lon, lat] = geohash::decode_score(score);
        if let Some(dist) = shape.distance_within(lon, lat) {
            found.push(Point {
                member,
                lon,
                lat,
                dist,
                score,
            });
        }
        if limit != 0 && found.len() >= limit {
            break;
        }
    }
}

/// The members within the shape, in Redis's order: cell by cell (the
/// centre's, then its neighbours), each in score order, then sorted by
/// distance when asked (all of them with a stable sort, as glibc's qsort
/// is; only the first COUNT with Redis's partial quicksort), and cut to
/// COUNT.
fn search<'z>(z: &'z ZSetValue, req: &Request) -> Vec<Point<'z>> {
    let limit = if req.any { req.count as usize } else { 0 };
    let cells = req.shape.cells();
    let mut found = Vec::new();
    let mut last = 0;
    for (i, cell) in cells.iter().enumerate() {
        if cell.is_none() {
            continue;
        }
        // Huge radii make neighbours repeat: a cell equal to the one
        // scanned last is skipped (the centre's cell is never compared).
        if last != 0 && *cell == cells[last] {
            continue;
        }
        if limit != 0 && found.len() >= limit {
            break;
        }
        let (min, max) = cell.score_span();
        scan_span(z, min as f64, max as f64, &req.shape, &mut found, limit);
        last = i;
    }
    let returned = match req.count {
        0 => found.len(),
        c => found.len().min(c as usize),
    };
    if req.order != Order::None {
        let desc = req.order == Order::Desc;
        // sort_gp_asc: NaN distances compare as smaller.
        let order = |a: &Point, b: &Point| {
            let c = if a.dist > b.dist {
                Greater
            } else if a.dist == b.dist {
                Equal
            } else {
                Less
            };
            if desc {
                c.reverse()
            } else {
                c
            }
        };
        if returned == found.len() {
            found.sort_by(order);
        } else {
            crate::algo::pqsort::partial_sort(&mut found, 0, returned as i64 - 1, order);
        }
    }
    found.truncate(returned);
    found
}

fn reply_points(out: &mut Out, points: &[Point], req: &Request) {
    let extra = [req.withdist, req.withhash, req.withcoord]
        .iter()
        .filter(|&&w| w)
        .count();
    out.array(points.len());
    for p in points {
        if extra > 0 {
            out.array(extra + 1);
        }
        out.bulk(p.member);
        if req.withdist {
            out.bulk(distance_text(p.dist / req.shape.to_meters).as_bytes());
        }
        if req.withhash {
            out.int(geohash::c_i64(p.score));
        }
        if req.withcoord {
            out.array(2);
            reply_coord(out, p.lon);
            reply_coord(out, p.lat);
        }
    }
}

/// The key a GEORADIUS[BYMEMBER] stores into, found the way the parser
/// walks the options (the last STORE or STOREDIST wins).
fn store_target<'a>(v: Variant, args: &Args<'a>) -> Option<&'a [u8]> {
    if v == Variant::SearchStore {
        return Some(args[1]);
    }
    if !v.takes_store() {
        return None;
    }
    let rest = &args[v.base_args().min(args.len())..];
    let mut target = None;
    let mut i = 0;
    while i < rest.len() {
        let a = rest[i];
        let has_next = i + 1 < rest.len();
        if eq_ic(a, "count") && has_next {
            i += 1;
        } else if (eq_ic(a, "store") || eq_ic(a, "storedist")) && has_next {
            target = Some(rest[i + 1]);
            i += 1;
        }
        i += 1;
    }
    target
}

fn search_generic(ctx: &mut Ctx, args: &Args, v: Variant) {
    let src = args[v.src_index()];
    let Some(dst) = store_target(v, args) else {
        let read = collection::read(ctx, src, |z: Option<&ZSetValue>, out| {
            let req = match parse(v, args, z) {
                Ok(r) => r,
                Err(e) => return out.error(&e),
            };
            match z {
                Some(z) => reply_points(out, &search(z, &req), &req),
                None => out.array(0),
            }
        });
        if read.is_err() {
            ctx.wrongtype();
        }
        return;
    };
    let limits = limits(ctx);
    let db = ctx.db();
    let event = if v.is_search() {
        "geosearchstore"
    } else {
        "georadiusstore"
    };
    ctx.write(&[(db, dst), (db, src)], |tx, out| {
        let z = match collection::get::<ZSetValue>(tx, db, src) {
            Err(_) => return out.error(ERR_WRONGTYPE),
            Ok(z) => z,
        };
        let req = match parse(v, args, z) {
            Ok(r) => r,
            Err(e) => return out.error(&e),
        };
        let value = match z {
            None => ZSetValue::default(),
            Some(z) => {
                let points = search(z, &req);
                let to_m = req.shape.to_meters;
                let items = points
                    .iter()
                    .map(|p| {
                        let score = if req.storedist {
                            p.dist / to_m
                        } else {
                            p.score
                        };
                        (p.member, score)
                    })
                    .collect();
                ZSetValue::build(items, &limits)
            }
        };
        store_result(tx, db, dst, value, event, args, out);
    });
}

pub fn georadius(ctx: &mut Ctx, args: &Args) {
    search_generic(ctx, args, Variant::Radius);
}

pub fn georadius_ro(ctx: &mut Ctx, args: &Args) {
    search_generic(ctx, args, Variant::RadiusRo);
}

pub fn georadiusbymember(ctx: &mut Ctx, args: &Args) {
    search_generic(ctx, args, Variant::ByMember);
}

pub fn georadiusbymember_ro(ctx: &mut Ctx, args: &Args) {
    search_generic(ctx, args, Variant::ByMemberRo);
}

pub fn geosearch(ctx: &mut Ctx, args: &Args) {
    search_generic(ctx, args, Variant::Search);
}

pub fn geosearchstore(ctx: &mut Ctx, args: &Args) {
    search_generic(ctx, args, Variant::SearchStore);
}

use super::table::cmd;

/// This family's entries of the command table (`commands/table.rs` gathers
/// the families' lists into COMMANDS).
#[rustfmt::skip]
pub(super) const COMMANDS: &[super::table::CommandSpec] = &[
    // geo (sorted sets of geohash scores)
    cmd!("geoadd", -5, WRITE | DENYOOM, KEY1, "geo", "3.2.0", "Add one or more geospatial items in the geospatial index represented using a sorted set", geoadd;
        acl: acl::GEO,
        complexity: "O(log(N)) for each item added, where N is the number of elements in the sorted set.",
        keys: "RW,update index:1 range:0:1:0",
        args: "key:key condition:oneof?^6.2.0(nx:NX xx:XX) change:CH?^6.2.0 longitude_latitude_member:block*(longitude:double latitude:double member:string)",
        history: &[("6.2.0", "Added the `CH`, `NX` and `XX` options.")]),
    cmd!("geopos", -2, READONLY, KEY1, "geo", "3.2.0", "Returns longitude and latitude of members of a geospatial index", geopos;
        acl: acl::GEO,
        complexity: "O(N) where N is the number of members requested.",
        keys: "RO,access index:1 range:0:1:0",
        args: "key:key member:string*"),
    cmd!("geodist", -4, READONLY, KEY1, "geo", "3.2.0", "Returns the distance between two members of a geospatial index", geodist;
        acl: acl::GEO,
        complexity: "O(log(N))",
        keys: "RO,access index:1 range:0:1:0",
        args: "key:key member1:string member2:string unit:oneof?(m:M km:KM ft:FT mi:MI)"),
    cmd!("geohash", -2, READONLY, KEY1, "geo", "3.2.0", "Returns members of a geospatial index as standard geohash strings", geohash_cmd;
        acl: acl::GEO,
        complexity: "O(log(N)) for each member requested, where N is the number of elements in the sorted set.",
        keys: "RO,access index:1 range:0:1:0",
        args: "key:key member:string*"),
    cmd!("georadius", -6, WRITE | DENYOOM, KEY1, "geo", "3.2.0", "Query a sorted set representing a geospatial index to fetch members matching a given maximum distance from a point", georadius;
        acl: acl::GEO,
        complexity: "O(N+log(M)) where N is the number of elements inside the bounding box of the circular area delimited by center and radius and M is the number of items inside the index.",
        keys: "RO,access index:1 range:0:1:0; OW,update keyword:STORE:6 range:0:1:0; OW,update keyword:STOREDIST:6 range:0:1:0",
        args: "key:key longitude:double latitude:double radius:double unit:oneof(m:M km:KM ft:FT mi:MI) withcoord:WITHCOORD? withdist:WITHDIST? withhash:WITHHASH? count:block?(count:integer=COUNT any:ANY?^6.2.0) order:oneof?(asc:ASC desc:DESC) key:key=STORE#1? key:key=STOREDIST#2?",
        history: &[("6.2.0", "Added the `ANY` option for `COUNT`."), ("7.0.0", "Added support for uppercase unit names.")],
        doc_flags: doc::DEPRECATED,
        deprecated_since: "6.2.0",
        replaced_by: "`GEOSEARCH` and `GEOSEARCHSTORE` with the `BYRADIUS` argument"),
    cmd!("georadius_ro", -6, READONLY, KEY1, "geo", "3.2.10", "A read-only variant for GEORADIUS", georadius_ro;
        acl: acl::GEO,
        complexity: "O(N+log(M)) where N is the number of elements inside the bounding box of the circular area delimited by center and radius and M is the number of items inside the index.",
        keys: "RO,access index:1 range:0:1:0",
        args: "key:key longitude:double latitude:double radius:double unit:oneof(m:M km:KM ft:FT mi:MI) withcoord:WITHCOORD? withdist:WITHDIST? withhash:WITHHASH? count:block?(count:integer=COUNT any:ANY?^6.2.0) order:oneof?(asc:ASC desc:DESC)",
        history: &[("6.2.0", "Added the `ANY` option for `COUNT`.")],
        doc_flags: doc::DEPRECATED,
        deprecated_since: "6.2.0",
        replaced_by: "`GEOSEARCH` with the `BYRADIUS` argument"),
    cmd!("georadiusbymember", -5, WRITE | DENYOOM, KEY1, "geo", "3.2.0", "Query a sorted set representing a geospatial index to fetch members matching a given maximum distance from a member", georadiusbymember;
        acl: acl::GEO,
        complexity: "O(N+log(M)) where N is the number of elements inside the bounding box of the circular area delimited by center and radius and M is the number of items inside the index.",
        keys: "RO,access index:1 range:0:1:0; OW,update keyword:STORE:5 range:0:1:0; OW,update keyword:STOREDIST:5 range:0:1:0",
        args: "key:key member:string radius:double unit:oneof(m:M km:KM ft:FT mi:MI) withcoord:WITHCOORD? withdist:WITHDIST? withhash:WITHHASH? count:block?(count:integer=COUNT any:ANY?) order:oneof?(asc:ASC desc:DESC) key:key=STORE#1? key:key=STOREDIST#2?",
        history: &[("7.0.0", "Added support for uppercase unit names.")],
        doc_flags: doc::DEPRECATED,
        deprecated_since: "6.2.0",
        replaced_by: "`GEOSEARCH` and `GEOSEARCHSTORE` with the `BYRADIUS` and `FROMMEMBER` arguments"),
    cmd!("georadiusbymember_ro", -5, READONLY, KEY1, "geo", "3.2.10", "A read-only variant for GEORADIUSBYMEMBER", georadiusbymember_ro;
        acl: acl::GEO,
        complexity: "O(N+log(M)) where N is the number of elements inside the bounding box of the circular area delimited by center and radius and M is the number of items inside the index.",
        keys: "RO,access index:1 range:0:1:0",
        args: "key:key member:string radius:double unit:oneof(m:M km:KM ft:FT mi:MI) withcoord:WITHCOORD? withdist:WITHDIST? withhash:WITHHASH? count:block?(count:integer=COUNT any:ANY?) order:oneof?(asc:ASC desc:DESC)",
        doc_flags: doc::DEPRECATED,
        deprecated_since: "6.2.0",
        replaced_by: "`GEOSEARCH` with the `BYRADIUS` and `FROMMEMBER` arguments"),
    cmd!("geosearch", -7, READONLY, KEY1, "geo", "6.2.0", "Query a sorted set representing a geospatial index to fetch members inside an area of a box or a circle.", geosearch;
        acl: acl::GEO,
        complexity: "O(N+log(M)) where N is the number of elements in the grid-aligned bounding box area around the shape provided as the filter and M is the number of items inside the shape",
        keys: "RO,access index:1 range:0:1:0",
        args: "key:key from:oneof(member:string=FROMMEMBER longitude_latitude:block=FROMLONLAT(longitude:double latitude:double)) by:oneof(circle:block(radius:double=BYRADIUS unit:oneof(m:M km:KM ft:FT mi:MI)) box:block(width:double=BYBOX height:double unit:oneof(m:M km:KM ft:FT mi:MI))) order:oneof?(asc:ASC desc:DESC) count:block?(count:integer=COUNT any:ANY?) withcoord:WITHCOORD? withdist:WITHDIST? withhash:WITHHASH?",
        history: &[("7.0.0", "Added support for uppercase unit names.")]),
    cmd!("geosearchstore", -8, WRITE | DENYOOM, (1, 2, 1), "geo", "6.2.0", "Query a sorted set representing a geospatial index to fetch members inside an area of a box or a circle, and store the result in another key.", geosearchstore;
        acl: acl::GEO,
        complexity: "O(N+log(M)) where N is the number of elements in the grid-aligned bounding box area around the shape provided as the filter and M is the number of items inside the shape",
        keys: "OW,update index:1 range:0:1:0; RO,access index:2 range:0:1:0",
        args: "destination:key source:key#1 from:oneof(member:string=FROMMEMBER longitude_latitude:block=FROMLONLAT(longitude:double latitude:double)) by:oneof(circle:block(radius:double=BYRADIUS unit:oneof(m:M km:KM ft:FT mi:MI)) box:block(width:double=BYBOX height:double unit:oneof(m:M km:KM ft:FT mi:MI))) order:oneof?(asc:ASC desc:DESC) count:block?(count:integer=COUNT any:ANY?) storedist:STOREDIST?",
        history: &[("7.0.0", "Added support for uppercase unit names.")]),
];

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn distances_print_with_four_decimals() {
        assert_eq!(distance_text(0.0), "0.0000");
        assert_eq!(distance_text(166274.15156960033), "166274.1516");
        assert_eq!(distance_text(0.5), "0.5000");
        assert_eq!(distance_text(0.00005), "0.0000");
    }

    #[test]
    fn store_target_follows_the_parser() {
        let args: Args = [
            &b"georadius"[..],
            b"k",
            b"0",
            b"0",
            b"1",
            b"km",
            b"count",
            b"store",
            b"store",
            b"d",
        ]
        .into_iter()
        .collect();
        assert_eq!(store_target(Variant::Radius, &args), Some(&b"d"[..]));
        assert_eq!(store_target(Variant::RadiusRo, &args), None);
    }
}
