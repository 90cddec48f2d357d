//! Convex hulls with fewer vertices, within a stated error: a real robot's collision meshes
//! give hulls of hundreds to thousands of vertices (the SO-101's hold 25,831 in all), and a
//! hull's support function and bounding box cost one pass over them.
//!
//! The simplified hull is the hull of a subset of the full hull's vertices, grown by
//! farthest-point insertion (quickhull's rule: each face takes the vertex farthest above it)
//! until every vertex of the full hull lies within the tolerance of it. Being the hull of a
//! subset, it lies inside the full hull; and since the distance to a convex set is a convex
//! function, the farthest point of the full hull from it is one of the full hull's vertices.
//! The largest of those distances, computed exactly (the nearest point of a triangle of the
//! simplified hull that the vertex lies above), is therefore the Hausdorff distance between
//! the two, and is what [`simplify`] returns as its error.
//!
//! MJCF's `maxhullvert` caps the vertex count as MuJoCo does (qhull stopped after that many
//! vertices): the cap wins over the tolerance, and the error then says how far off it is.

use glam::Vec3;
use rapier3d::parry::transformation::try_convex_hull;

/// How far, in metres, a simplified hull may lie from the full one.
pub const HULL_TOLERANCE_M: f32 = 0.001;

/// Hulls of at most this many vertices are kept whole: simplifying them buys nothing.
pub const SMALL_HULL: usize = 32;

/// A hull as vertices and outward triangles, with how far it is from the full hull.
#[derive(Clone, Debug, PartialEq)]
pub struct Simplified {
    pub points: Vec<Vec3>,
    pub triangles: Vec<[u32; 3]>,
    /// The largest distance of a point of the full hull from this one, in the points' units.
    pub error: f32,
}

/// The hull of `full` (the full hull's vertices) with fewer vertices:
/// within `tolerance` of it (same units as the points) and at most `max_vertices` vertices
/// where a cap is given (at least 4). `None` when nothing can be left out (a small hull, a
/// cap the hull already meets with a hull within the tolerance) or the points are degenerate.
pub fn simplify(full: &[Vec3], tolerance: f32, max_vertices: Option<usize>) -> Option<Simplified> {
    let cap = max_vertices.map(|m| m.max(4));
    let over_cap = cap.is_some_and(|c| full.len() > c);
    if full.len() <= SMALL_HULL && !over_cap {
        return None;
    }
    let mut chosen = seed(full)?;
    let mut taken = vec![false; full.len()];
    for &i in &chosen {
        taken[i] = true;
    }
    // The vertices that may still be outside: one found inside the hull stays inside, since
    // the hull only grows (the full hull's vertices of a flat face drop out this way).
    let mut active: Vec<usize> = (0..full.len()).filter(|&i| !taken[i]).collect();
    loop {
        let pts: Vec<Vec3> = chosen.iter().map(|&i| full[i]).collect();
        let (points, triangles) = try_convex_hull(&pts).ok()?;
        let room = cap.map_or(usize::MAX, |c| c.saturating_sub(points.len()));
        // Outward by construction: the vertices' centroid is inside, so a face it lies above
        // is turned round (parry's faces of near-flat slivers can come either way), and a
        // face of no area has no plane.
        let centroid = points.iter().copied().sum::<Vec3>() / points.len() as f32;
        let faces: Vec<(Vec3, f32, [Vec3; 3])> = triangles
            .iter()
            .filter_map(|t| {
                let tri = t.map(|i| points[i as usize]);
                let [a, b, c] = tri;
                let n = (b - a).cross(c - a).try_normalize()?;
                let n = if n.dot(centroid - a) > 0.0 { -n } else { n };
                Some((n, n.dot(a), tri))
            })
            .collect();
        // Each vertex's exact distance from the hull: the nearest point of a convex polyhedron
        // to a point outside it lies on a face the point is above, so the nearest of those
        // faces' triangles gives it. Per face, the farthest vertex of those it is most above
        // (quickhull's conflict rule) is a candidate.
        let mut best: Vec<Option<(f32, usize)>> = vec![None; faces.len()];
        let mut error = 0.0f32;
        active.retain(|&i| {
            let v = full[i];
            let (mut dist, mut above) = (f32::INFINITY, None);
            let mut most = 0.0;
            for (f, (n, o, tri)) in faces.iter().enumerate() {
                let d = n.dot(v) - o;
                if d > 0.0 {
                    dist = dist.min((closest_on_triangle(v, tri) - v).length());
                    if d > most {
                        (most, above) = (d, Some(f));
                    }
                }
            }
            let Some(f) = above else {
                // Above no face: inside, and inside for good.
                return false;
            };
            error = error.max(dist);
            if dist > tolerance && best[f].is_none_or(|(bd, _)| dist > bd) {
                best[f] = Some((dist, i));
            }
            true
        });
        let mut adds: Vec<(f32, usize)> = best.into_iter().flatten().collect();
        if adds.is_empty() || room == 0 {
            return finish(full, points, triangles, error, over_cap);
        }
        adds.sort_by(|a, b| b.0.total_cmp(&a.0).then(a.1.cmp(&b.1)));
        adds.dedup_by_key(|a| a.1);
        // The farthest quarter at a time: a vertex added pulls its neighbours' faces out too,
        // so adding every face's farthest at once keeps vertices the hull no longer needs.
        let batch = room.min((chosen.len() / 4).max(4));
        for &(_, i) in adds.iter().take(batch) {
            taken[i] = true;
            chosen.push(i);
        }
        active.retain(|&i| !taken[i]);
    }
}

/// The result, unless it kept every vertex (nothing gained).
fn finish(
    full: &[Vec3],
    points: Vec<Vec3>,
    triangles: Vec<[u32; 3]>,
    error: f32,
    over_cap: bool,
) -> Option<Simplified> {
    (points.len() < full.len() || over_cap).then_some(Simplified {
        points,
        triangles,
        error,
    })
}

/// The point of triangle `[a, b, c]` nearest to `p` (Ericson, Real-Time Collision Detection,
/// 5.1.5: by the Voronoi region of `p`).
fn closest_on_triangle(p: Vec3, &[a, b, c]: &[Vec3; 3]) -> Vec3 {
    let (ab, ac, ap) = (b - a, c - a, p - a);
    let (d1, d2) = (ab.dot(ap), ac.dot(ap));
    if d1 <= 0.0 && d2 <= 0.0 {
        return a;
    }
    let bp = p - b;
    let (d3, d4) = (ab.dot(bp), ac.dot(bp));
    if d3 >= 0.0 && d4 <= d3 {
        return b;
    }
    let vc = d1 * d4 - d3 * d2;
    if vc <= 0.0 && d1 >= 0.0 && d3 <= 0.0 {
        return a + ab * (d1 / (d1 - d3));
    }
    let cp = p - c;
    let (d5, d6) = (ab.dot(cp), ac.dot(cp));
    if d6 >= 0.0 && d5 <= d6 {
        return c;
    }
    let vb = d5 * d2 - d1 * d6;
    if vb <= 0.0 && d2 >= 0.0 && d6 <= 0.0 {
        return a + ac * (d2 / (d2 - d6));
    }
    let va = d3 * d6 - d5 * d4;
    if va <= 0.0 && d4 - d3 >= 0.0 && d5 - d6 >= 0.0 {
        return b + (c - b) * ((d4 - d3) / ((d4 - d3) + (d5 - d6)));
    }
    let denom = 1.0 / (va + vb + vc);
    a + ab * (vb * denom) + ac * (vc * denom)
}

/// Four vertices spanning the hull: the two farthest apart along an axis, the one farthest
/// from their line, the one farthest from their plane. `None` for flat point sets.
fn seed(full: &[Vec3]) -> Option<Vec<usize>> {
    let argmax = |f: &dyn Fn(Vec3) -> f32| {
        (0..full.len()).fold(0, |b, i| if f(full[i]) > f(full[b]) { i } else { b })
    };
    let axis = {
        let (lo, hi) = full.iter().fold(
            (Vec3::splat(f32::MAX), Vec3::splat(f32::MIN)),
            |(l, h), p| (l.min(*p), h.max(*p)),
        );
        let e = hi - lo;
        if e.x >= e.y && e.x >= e.z {
            Vec3::X
        } else if e.y >= e.z {
            Vec3::Y
        } else {
            Vec3::Z
        }
    };
    let a = argmax(&|p| -p.dot(axis));
    let b = argmax(&|p| p.dot(axis));
    let ab = full[b] - full[a];
    let c = argmax(&|p| (p - full[a]).cross(ab).length_squared());
    let n = ab.cross(full[c] - full[a]).normalize_or_zero();
    let d = argmax(&|p| (p - full[a]).dot(n).abs());
    let mut s = vec![a, b, c, d];
    s.sort_unstable();
    s.dedup();
    (s.len() == 4 && (full[d] - full[a]).dot(n).abs() > 0.0).then_some(s)
}

/// `n` points spread evenly over a sphere of radius `r` about the origin (a Fibonacci lattice):
/// a hull of many vertices, which the tests of simplification, of the MJCF loader's hulls and
/// of the colliders all build on.
#[cfg(test)]
pub(crate) fn sphere_points(n: usize, r: f32) -> Vec<Vec3> {
    let golden = std::f32::consts::PI * (3.0 - 5f32.sqrt());
    (0..n)
        .map(|i| {
            let y = 1.0 - 2.0 * (i as f32 + 0.5) / n as f32;
            let rr = (1.0 - y * y).sqrt();
            let t = golden * i as f32;
            Vec3::new(rr * t.cos(), y, rr * t.sin()) * r
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Each of `full`'s distances from the hull (`points`, `triangles`), exactly.
    fn distances(full: &[Vec3], points: &[Vec3], triangles: &[[u32; 3]]) -> Option<Vec<f32>> {
        // By brute force, independent of `simplify`'s own bookkeeping: a point outside the
        // hull (above some face plane) is as far from it as from the nearest of all its
        // triangles; one inside is at no distance. (parry's GJK point projection was tried
        // here and reports up to half a millimetre too much for points near the surface.)
        let centroid = points.iter().copied().sum::<Vec3>() / points.len() as f32;
        let tris: Vec<[Vec3; 3]> = triangles
            .iter()
            .map(|t| t.map(|i| points[i as usize]))
            .collect();
        let outside = |v: Vec3| {
            tris.iter().any(|&[a, b, c]| {
                let n = (b - a).cross(c - a);
                let n = if n.dot(centroid - a) > 0.0 { -n } else { n };
                n.dot(v - a) > 1e-9 * n.length()
            })
        };
        Some(
            full.iter()
                .map(|&v| {
                    if !outside(v) {
                        return 0.0;
                    }
                    tris.iter()
                        .map(|t| (closest_on_triangle(v, t) - v).length())
                        .fold(f32::INFINITY, f32::min)
                })
                .collect(),
        )
    }

    /// The vertices of the full hull of a sphere sampled at `n` points, radius `r`.
    fn sphere(n: usize, r: f32) -> Vec<Vec3> {
        try_convex_hull(&sphere_points(n, r)).unwrap().0
    }

    /// The largest distance of any of `full`'s vertices from `s`, by a brute check of its own:
    /// every vertex must be inside or within `tol` outside each face plane, and inside means
    /// no distance at all (the simplified hull is inside the full one).
    fn check(full: &[Vec3], s: &Simplified, tol: f32) {
        let exact = distances(full, &s.points, &s.triangles).unwrap();
        let worst = exact.iter().fold(0.0f32, |a, &d| a.max(d));
        assert!((worst - s.error).abs() < 1e-6, "{worst} vs {}", s.error);
        assert!(worst <= tol, "{worst} > {tol}");
        // Contained in the full hull: every simplified vertex is a full-hull vertex.
        for p in &s.points {
            assert!(
                full.iter().any(|q| q == p),
                "{p} is not a vertex of the full hull"
            );
        }
    }

    #[test]
    fn the_nearest_point_of_a_triangle_is_parrys() {
        use rapier3d::parry::query::PointQuery;
        use rapier3d::parry::shape::Triangle;
        let tri = [
            Vec3::new(0.0, 0.0, 0.0),
            Vec3::new(0.1, 0.0, 0.01),
            Vec3::new(0.02, 0.07, -0.01),
        ];
        let parry = Triangle::new(tri[0], tri[1], tri[2]);
        // Points all round it: every Voronoi region (vertices, edges, face, both sides).
        for i in 0..1000 {
            let t = i as f32 * 0.618;
            let p = Vec3::new(
                t.sin() * 0.2,
                (t * 1.7).cos() * 0.15,
                (t * 2.3).sin() * 0.05,
            );
            let ours = closest_on_triangle(p, &tri);
            let theirs = parry.project_local_point(p, false).point;
            assert!((ours - theirs).length() < 1e-6, "{p}: {ours} vs {theirs}");
        }
    }

    #[test]
    fn a_big_hull_shrinks_within_one_millimetre() {
        // A 10 cm ball sampled at 4000 points: the full hull keeps them all.
        let full = sphere(4000, 0.05);
        assert!(full.len() > 3000, "{}", full.len());
        let s = simplify(&full, HULL_TOLERANCE_M, None).expect("a big hull simplifies");
        check(&full, &s, HULL_TOLERANCE_M);
        // A sphere of 5 cm within 1 mm needs about a hundred vertices, not thousands.
        assert!(s.points.len() < 300, "{} vertices", s.points.len());
        assert!(s.error > 0.0);
    }

    #[test]
    fn a_vertex_cap_is_met_and_its_error_reported() {
        let full = sphere(2000, 0.05);
        let s = simplify(&full, HULL_TOLERANCE_M, Some(20)).expect("capped");
        assert!(s.points.len() <= 20, "{}", s.points.len());
        // Twenty vertices cannot hold a 5 cm sphere to 1 mm; the error says how far off.
        assert!(s.error > HULL_TOLERANCE_M, "{}", s.error);
        let exact = distances(&full, &s.points, &s.triangles).unwrap();
        assert!((exact.iter().fold(0.0f32, |a, &d| a.max(d)) - s.error).abs() < 1e-6);
        // A cap below four still gives a solid.
        let s = simplify(&full, HULL_TOLERANCE_M, Some(2)).unwrap();
        assert_eq!(s.points.len(), 4);
    }

    #[test]
    fn small_hulls_stay_whole() {
        let cube: Vec<Vec3> = (0..8)
            .map(|i| Vec3::new((i & 1) as f32, ((i >> 1) & 1) as f32, (i >> 2) as f32))
            .collect();
        assert_eq!(simplify(&cube, HULL_TOLERANCE_M, None), None);
        // A hull within the tolerance of its own subset keeps only what it needs: a box with
        // a thousand points scattered on its faces comes back as its eight corners.
        let mut boxy = cube.clone();
        for i in 0..1000 {
            let t = i as f32 / 1000.0;
            boxy.push(Vec3::new(t, (t * 7.0).fract(), 1.0));
            boxy.push(Vec3::new(0.0, t, (t * 13.0).fract()));
        }
        let full = try_convex_hull(&boxy).unwrap().0;
        if full.len() > SMALL_HULL {
            let s = simplify(&full, HULL_TOLERANCE_M, None).unwrap();
            check(&full, &s, HULL_TOLERANCE_M);
            assert_eq!(s.points.len(), 8);
        }
    }
}
