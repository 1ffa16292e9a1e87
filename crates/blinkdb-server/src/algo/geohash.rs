//! The geohash Redis keeps in sorted-set scores: longitude and latitude
//! interleaved into 52 bits (26 steps each, latitude limited to the Web
//! Mercator range ±85.05112878), the boxes a search covers (a cell and its
//! eight neighbours), and the haversine distance on Redis's earth radius.
//!
//! Every formula is evaluated in the order Redis evaluates it, so scores,
//! decoded coordinates and distances are the same doubles, bit for bit: the
//! replies print them with 17 fractional digits.

pub const LONG_MIN: f64 = -180.0;
pub const LONG_MAX: f64 = 180.0;
pub const LAT_MIN: f64 = -85.05112878;
pub const LAT_MAX: f64 = 85.05112878;
pub const STEP_MAX: u8 = 26;

const EARTH_RADIUS_M: f64 = 6372797.560856;
const MERCATOR_MAX: f64 = 20037726.37;
const D_R: f64 = std::f64::consts::PI / 180.0;

fn deg_rad(a: f64) -> f64 {
    a * D_R
}

fn rad_deg(a: f64) -> f64 {
    a / D_R
}

/// An interval of one coordinate.
#[derive(Clone, Copy, Debug)]
pub struct Range {
    pub min: f64,
    pub max: f64,
}

/// The ranges the scores are encoded over.
pub const LONG_RANGE: Range = Range {
    min: LONG_MIN,
    max: LONG_MAX,
};
pub const LAT_RANGE: Range = Range {
    min: LAT_MIN,
    max: LAT_MAX,
};

/// A cell: `step` bits of each coordinate, latitude in the even bits and
/// longitude in the odd ones. Bits 0 at step 0 means "no cell".
#[derive(Clone, Copy, Debug, PartialEq, Eq, Default)]
pub struct Cell {
    pub bits: u64,
    pub step: u8,
}

impl Cell {
    pub fn is_none(&self) -> bool {
        self.bits == 0 && self.step == 0
    }

    /// The first score inside the cell and the first one past it, as 52-bit
    /// sorted-set scores.
    pub fn score_span(&self) -> (u64, u64) {
        let shift = 52 - u32::from(self.step) * 2;
        (self.bits << shift, (self.bits + 1) << shift)
    }
}

/// Spreads the low 32 bits of `v` to the even bit positions.
fn spread(v: u32) -> u64 {
    let mut x = u64::from(v);
    for (shift, mask) in [
        (16, 0x0000_FFFF_0000_FFFF),
        (8, 0x00FF_00FF_00FF_00FF),
        (4, 0x0F0F_0F0F_0F0F_0F0F),
        (2, 0x3333_3333_3333_3333),
        (1, 0x5555_5555_5555_5555u64),
    ] {
        x = (x | (x << shift)) & mask;
    }
    x
}

/// Gathers the even bit positions of `v` into 32 bits.
fn gather(v: u64) -> u32 {
    let mut x = v & 0x5555_5555_5555_5555;
    for (shift, mask) in [
        (1, 0x3333_3333_3333_3333u64),
        (2, 0x0F0F_0F0F_0F0F_0F0F),
        (4, 0x00FF_00FF_00FF_00FF),
        (8, 0x0000_FFFF_0000_FFFF),
        (16, 0x0000_0000_FFFF_FFFF),
    ] {
        x = (x | (x >> shift)) & mask;
    }
    x as u32
}

/// The cell of `step` bits holding (lon, lat) over the given ranges; None
/// outside them (or outside the Mercator limits Redis always applies).
pub fn encode(lon_r: Range, lat_r: Range, lon: f64, lat: f64, step: u8) -> Option<Cell> {
    if step == 0 || step > 32 {
        return None;
    }
    let out_of_limits =
        !(LONG_MIN..=LONG_MAX).contains(&lon) || !(LAT_MIN..=LAT_MAX).contains(&lat);
    if out_of_limits || lat < lat_r.min || lat > lat_r.max || lon < lon_r.min || lon > lon_r.max {
        return None;
    }
    let scale = (1u64 << step) as f64;
    let lat_off = (lat - lat_r.min) / (lat_r.max - lat_r.min) * scale;
    let lon_off = (lon - lon_r.min) / (lon_r.max - lon_r.min) * scale;
    // Converted as C converts a double to uint32_t (truncation); a
    // coordinate on the upper limit gives 2^step, which spills over.
    let bits = spread(lat_off as u32) | (spread(lon_off as u32) << 1);
    Some(Cell { bits, step })
}

/// The 52-bit score of (lon, lat), as GEOADD stores it (None outside the
/// limits).
pub fn score_of(lon: f64, lat: f64) -> Option<u64> {
    encode(LONG_RANGE, LAT_RANGE, lon, lat, STEP_MAX).map(|c| c.bits)
}

/// A cell's extent.
#[derive(Clone, Copy, Debug)]
pub struct Area {
    pub lon: Range,
    pub lat: Range,
}

pub fn decode(lon_r: Range, lat_r: Range, cell: Cell) -> Option<Area> {
    if cell.is_none() {
        return None;
    }
    let lat_i = gather(cell.bits);
    let lon_i = gather(cell.bits >> 1);
    let div = (1u64 << cell.step) as f64;
    let lat_scale = lat_r.max - lat_r.min;
    let lon_scale = lon_r.max - lon_r.min;
    // `+ 1` wraps in 32 bits, as C's unsigned arithmetic does.
    let at = |i: u32, r: Range, scale: f64| r.min + (f64::from(i) * 1.0 / div) * scale;
    Some(Area {
        lat: Range {
            min: at(lat_i, lat_r, lat_scale),
            max: at(lat_i.wrapping_add(1), lat_r, lat_scale),
        },
        lon: Range {
            min: at(lon_i, lon_r, lon_scale),
            max: at(lon_i.wrapping_add(1), lon_r, lon_scale),
        },
    })
}

const TWO_63: f64 = 9_223_372_036_854_775_808.0;

/// A double converted to uint64_t as x86-64 C code does it (scores are not
/// always geohashes: any ZADD can put one in the set).
fn c_u64(x: f64) -> u64 {
    fn cvtt(x: f64) -> u64 {
        if x.is_nan() || !(-TWO_63..TWO_63).contains(&x) {
            1 << 63
        } else {
            x as i64 as u64
        }
    }
    if x >= TWO_63 {
        cvtt(x - TWO_63) ^ (1 << 63)
    } else {
        cvtt(x)
    }
}

/// A double converted to long long as x86-64 C code does it (WITHHASH).
pub fn c_i64(x: f64) -> i64 {
    if x.is_nan() || !(-TWO_63..TWO_63).contains(&x) {
        i64::MIN
    } else {
        x as i64
    }
}

/// The (lon, lat) a score stands for: the centre of its 26-step cell,
/// clamped to the limits.
pub fn decode_score(score: f64) -> [f64; 2] {
    let cell = Cell {
        bits: c_u64(score),
        step: STEP_MAX,
    };
    let a = decode(LONG_RANGE, LAT_RANGE, cell).expect("a 26-step cell decodes");
    let lon = ((a.lon.min + a.lon.max) / 2.0).clamp(LONG_MIN, LONG_MAX);
    let lat = ((a.lat.min + a.lat.max) / 2.0).clamp(LAT_MIN, LAT_MAX);
    [lon, lat]
}

/// The standard 11-character geohash (latitude over -90..90) of a score.
pub fn geohash_text(score: f64) -> [u8; 11] {
    const ALPHABET: &[u8; 32] = b"0123456789bcdefghjkmnpqrstuvwxyz";
    let [lon, lat] = decode_score(score);
    let std_lat = Range {
        min: -90.0,
        max: 90.0,
    };
    let bits = encode(LONG_RANGE, std_lat, lon, lat, 26).map_or(0, |c| c.bits);
    let mut out = [b'0'; 11];
    // 52 bits make ten characters; the eleventh is 0, as Redis sends it.
    for (i, c) in out.iter_mut().enumerate().take(10) {
        *c = ALPHABET[((bits >> (52 - (i + 1) * 5)) & 0x1f) as usize];
    }
    out
}

fn move_x(cell: &mut Cell, d: i8) {
    if d == 0 {
        return;
    }
    let shift = 64 - u32::from(cell.step) * 2;
    let mut x = cell.bits & 0xaaaa_aaaa_aaaa_aaaa;
    let y = cell.bits & 0x5555_5555_5555_5555;
    let zz = 0x5555_5555_5555_5555u64 >> shift;
    if d > 0 {
        x = x.wrapping_add(zz + 1);
    } else {
        x = (x | zz).wrapping_sub(zz + 1);
    }
    x &= 0xaaaa_aaaa_aaaa_aaaau64 >> shift;
    cell.bits = x | y;
}

fn move_y(cell: &mut Cell, d: i8) {
    if d == 0 {
        return;
    }
    let shift = 64 - u32::from(cell.step) * 2;
    let x = cell.bits & 0xaaaa_aaaa_aaaa_aaaa;
    let mut y = cell.bits & 0x5555_5555_5555_5555;
    let zz = 0xaaaa_aaaa_aaaa_aaaau64 >> shift;
    if d > 0 {
        y = y.wrapping_add(zz + 1);
    } else {
        y = (y | zz).wrapping_sub(zz + 1);
    }
    y &= 0x5555_5555_5555_5555u64 >> shift;
    cell.bits = x | y;
}

/// The eight neighbours, in the order the search visits them after the
/// cell itself: N, S, E, W, NE, NW, SE, SW.
fn neighbours(cell: Cell) -> [Cell; 8] {
    let moved = |dx: i8, dy: i8| {
        let mut c = cell;
        move_x(&mut c, dx);
        move_y(&mut c, dy);
        c
    };
    [
        moved(0, 1),
        moved(0, -1),
        moved(1, 0),
        moved(-1, 0),
        moved(1, 1),
        moved(-1, 1),
        moved(1, -1),
        moved(-1, -1),
    ]
}

/// What a search covers: a circle (radius) or a box (width, height), in
/// the request's unit, around `center`; `to_meters` converts the unit.
#[derive(Clone, Copy, Debug)]
pub struct Shape {
    pub center: [f64; 2],
    pub kind: ShapeKind,
    pub to_meters: f64,
}

#[derive(Clone, Copy, Debug)]
pub enum ShapeKind {
    Radius(f64),
    Box { width: f64, height: f64 },
}

fn estimate_steps(range_m: f64, lat: f64) -> u8 {
    if range_m == 0.0 {
        return 26;
    }
    let mut range = range_m;
    let mut step: i32 = 1;
    while range < MERCATOR_MAX {
        range *= 2.0;
        step += 1;
    }
    step -= 2;
    if !(-66.0..=66.0).contains(&lat) {
        step -= 1;
        if !(-80.0..=80.0).contains(&lat) {
            step -= 1;
        }
    }
    step.clamp(1, 26) as u8
}

impl Shape {
    /// min lon, min lat, max lon, max lat of the area searched.
    fn bounds(&self) -> [f64; 4] {
        let [lon, lat] = self.center;
        let (h, w) = match self.kind {
            ShapeKind::Radius(r) => (r, r),
            ShapeKind::Box { width, height } => (height / 2.0, width / 2.0),
        };
        let (height, width) = (self.to_meters * h, self.to_meters * w);
        let lat_delta = rad_deg(height / EARTH_RADIUS_M);
        let lon_delta_top = rad_deg(width / EARTH_RADIUS_M / deg_rad(lat + lat_delta).cos());
        let lon_delta_bottom = rad_deg(width / EARTH_RADIUS_M / deg_rad(lat - lat_delta).cos());
        let delta = if lat < 0.0 {
            lon_delta_bottom
        } else {
            lon_delta_top
        };
        [lon - delta, lat - lat_delta, lon + delta, lat + lat_delta]
    }

    /// The cells to scan, in Redis's order: the centre's cell, then its
    /// neighbours; `None` entries are left out of the search.
    pub fn cells(&self) -> [Cell; 9] {
        let [min_lon, min_lat, max_lon, max_lat] = self.bounds();
        let [lon, lat] = self.center;
        let radius_m = match self.kind {
            ShapeKind::Radius(r) => r,
            ShapeKind::Box { width, height } => {
                ((width / 2.0) * (width / 2.0) + (height / 2.0) * (height / 2.0)).sqrt()
            }
        } * self.to_meters;
        let mut steps = estimate_steps(radius_m, lat);
        let at = |steps| {
            let cell = encode(LONG_RANGE, LAT_RANGE, lon, lat, steps).unwrap_or_default();
            (cell, neighbours(cell), decode(LONG_RANGE, LAT_RANGE, cell))
        };
        let (mut cell, mut near, mut area) = at(steps);
        let area_of = |c: Cell| decode(LONG_RANGE, LAT_RANGE, c);
        // A step too fine at the edges of the area: one level coarser.
        let too_fine = {
            let [n, s, e, w] = [near[0], near[1], near[2], near[3]].map(area_of);
            n.is_some_and(|a| a.lat.max < max_lat)
                || s.is_some_and(|a| a.lat.min > min_lat)
                || e.is_some_and(|a| a.lon.max < max_lon)
                || w.is_some_and(|a| a.lon.min > min_lon)
        };
        if steps > 1 && too_fine {
            steps -= 1;
            (cell, near, area) = at(steps);
        }
        if steps >= 2 {
            if let Some(a) = area {
                let none = Cell::default();
                // near: N, S, E, W, NE, NW, SE, SW
                if a.lat.min < min_lat {
                    for i in [1, 7, 6] {
                        near[i] = none;
                    }
                }
                if a.lat.max > max_lat {
                    for i in [0, 4, 5] {
                        near[i] = none;
                    }
                }
                if a.lon.min < min_lon {
                    for i in [3, 7, 5] {
                        near[i] = none;
                    }
                }
                if a.lon.max > max_lon {
                    for i in [2, 6, 4] {
                        near[i] = none;
                    }
                }
            }
        }
        let mut all = [cell; 9];
        all[1..].copy_from_slice(&near);
        all
    }

    /// The distance in meters from the centre to (lon, lat) if the point
    /// lies within the shape.
    pub fn distance_within(&self, lon: f64, lat: f64) -> Option<f64> {
        let [x1, y1] = self.center;
        match self.kind {
            ShapeKind::Radius(r) => {
                let d = distance(x1, y1, lon, lat);
                (d <= r * self.to_meters).then_some(d)
            }
            ShapeKind::Box { width, height } => {
                let (w, h) = (width * self.to_meters, height * self.to_meters);
                if lat_distance(lat, y1) > h / 2.0 {
                    return None;
                }
                if distance(lon, lat, x1, lat) > w / 2.0 {
                    return None;
                }
                Some(distance(x1, y1, lon, lat))
            }
        }
    }
}

fn lat_distance(lat1: f64, lat2: f64) -> f64 {
    EARTH_RADIUS_M * (deg_rad(lat2) - deg_rad(lat1)).abs()
}

/// The haversine distance in meters between two (lon, lat) points.
pub fn distance(lon1: f64, lat1: f64, lon2: f64, lat2: f64) -> f64 {
    let lon1r = deg_rad(lon1);
    let lon2r = deg_rad(lon2);
    let v = ((lon2r - lon1r) / 2.0).sin();
    if v == 0.0 {
        return lat_distance(lat1, lat2);
    }
    let lat1r = deg_rad(lat1);
    let lat2r = deg_rad(lat2);
    let u = ((lat2r - lat1r) / 2.0).sin();
    let a = u * u + lat1r.cos() * lat2r.cos() * v * v;
    2.0 * EARTH_RADIUS_M * a.sqrt().asin()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn interleaving_round_trips() {
        for v in [0u32, 1, 0x3ff_ffff, 0xdead_beef, u32::MAX] {
            assert_eq!(gather(spread(v)), v);
            assert_eq!(gather(spread(v) << 1 >> 1), v);
        }
        assert_eq!(spread(0b11), 0b101);
    }

    #[test]
    fn scores_match_redis() {
        // GEOADD Sicily 13.361389 38.115556 "Palermo": Redis stores this score.
        assert_eq!(score_of(13.361389, 38.115556), Some(3479099956230698));
        assert_eq!(score_of(15.087269, 37.502669), Some(3479447370796909));
        assert_eq!(score_of(181.0, 0.0), None);
        let [lon, lat] = decode_score(3479099956230698.0);
        assert_eq!(format!("{lon:.17}"), "13.36138933897018433");
        assert_eq!(format!("{lat:.17}"), "38.11555639549629859");
        assert_eq!(&geohash_text(3479099956230698.0), b"sqc8b49rny0");
    }

    #[test]
    fn distances_match_redis() {
        let [a, b] = decode_score(3479099956230698.0);
        let [c, d] = decode_score(3479447370796909.0);
        // GEODIST Sicily Palermo Catania: "166274.1516"
        assert_eq!(format!("{:.4}", distance(a, b, c, d)), "166274.1516");
    }

    #[test]
    fn c_conversions() {
        assert_eq!(c_u64(-5.0), (-5i64) as u64);
        assert_eq!(c_u64(f64::NAN), 1 << 63);
        assert_eq!(c_u64(f64::INFINITY), 0);
        assert_eq!(c_u64(1.8e19), 18_000_000_000_000_000_000);
        assert_eq!(c_i64(1e30), i64::MIN);
    }
}
