//! The colliders of model shapes: a primitive for boxes, spheres, capsules and cylinders, and
//! for a mesh one convex hull per part, wrapped in [`BoundedHull`] so that bounding it each
//! step costs the same whatever its vertex count.
//!
//! Why the wrapper: parry's `ConvexPolyhedron::compute_aabb` transforms every hull vertex on
//! every step for every moving collider (Rapier's broad phase), and a real robot's hulls hold
//! hundreds to thousands of vertices each. [`BoundedHull`] transforms the hull's local AABB
//! instead (eight corners, a little looser than the tight box), and hands everything else
//! (support map, polygonal features, point and ray queries, mass) to the exact hull, so
//! contacts are the same convex–convex manifolds parry builds for a `ConvexPolyhedron`: its
//! `DefaultQueryDispatcher` sends a pair of shapes that are neither balls, cuboids, capsules,
//! half-spaces, height fields nor composites to `contact_manifold_pfm_pfm` through
//! `as_polygonal_feature_map`, which this shape answers with the hull's.

use glam::{Quat, Vec3};
use rapier3d::math::{Pose as RPose, Real, Vector};
use rapier3d::parry::bounding_volume::{Aabb, BoundingSphere};
use rapier3d::parry::mass_properties::MassProperties;
use rapier3d::parry::query::{PointProjection, PointQuery, Ray, RayCast, RayIntersection};
use rapier3d::parry::shape::{
    ConvexPolyhedron, FeatureId, PolygonalFeatureMap, Shape as ParryShape, ShapeType, SupportMap,
    TypedShape,
};
use rapier3d::prelude::{ColliderBuilder, SharedShape};

use crate::robot::{Pose, Shape};

use super::to_rapier;

/// A convex hull whose per-step bounding box is its local box moved with the body: O(1) in
/// its vertex count. Everything else is the hull's own.
#[derive(Clone, Debug)]
pub struct BoundedHull {
    hull: ConvexPolyhedron,
    local_aabb: Aabb,
    local_sphere: BoundingSphere,
}

impl BoundedHull {
    /// Wraps `hull`, computing its local bounds once.
    pub fn new(hull: ConvexPolyhedron) -> Self {
        let local_aabb = hull.local_aabb();
        let local_sphere = hull.local_bounding_sphere();
        Self {
            hull,
            local_aabb,
            local_sphere,
        }
    }

    /// The exact hull contacts are computed against.
    pub fn hull(&self) -> &ConvexPolyhedron {
        &self.hull
    }
}

impl RayCast for BoundedHull {
    fn cast_local_ray_and_get_normal(
        &self,
        ray: &Ray,
        max_time_of_impact: Real,
        solid: bool,
    ) -> Option<RayIntersection> {
        self.hull
            .cast_local_ray_and_get_normal(ray, max_time_of_impact, solid)
    }
}

impl PointQuery for BoundedHull {
    fn project_local_point(&self, pt: Vector, solid: bool) -> PointProjection {
        self.hull.project_local_point(pt, solid)
    }

    fn project_local_point_and_get_feature(&self, pt: Vector) -> (PointProjection, FeatureId) {
        self.hull.project_local_point_and_get_feature(pt)
    }
}

impl ParryShape for BoundedHull {
    fn compute_local_aabb(&self) -> Aabb {
        self.local_aabb
    }

    fn compute_local_bounding_sphere(&self) -> BoundingSphere {
        self.local_sphere
    }

    fn clone_dyn(&self) -> Box<dyn ParryShape> {
        Box::new(self.clone())
    }

    fn scale_dyn(&self, scale: Vector, _num_subdivisions: u32) -> Option<Box<dyn ParryShape>> {
        Some(Box::new(Self::new(self.hull.clone().scaled(scale)?)))
    }

    /// The point of the wrapper: eight corners moved, not every vertex.
    fn compute_aabb(&self, position: &RPose) -> Aabb {
        self.local_aabb.transform_by(position)
    }

    fn mass_properties(&self, density: Real) -> MassProperties {
        self.hull.mass_properties(density)
    }

    fn is_convex(&self) -> bool {
        true
    }

    fn shape_type(&self) -> ShapeType {
        ShapeType::Custom
    }

    fn as_typed_shape(&self) -> TypedShape<'_> {
        TypedShape::Custom(self)
    }

    fn ccd_thickness(&self) -> Real {
        self.hull.ccd_thickness()
    }

    fn ccd_angular_thickness(&self) -> Real {
        self.hull.ccd_angular_thickness()
    }

    fn as_support_map(&self) -> Option<&dyn SupportMap> {
        Some(&self.hull as &dyn SupportMap)
    }

    fn as_polygonal_feature_map(&self) -> Option<(&dyn PolygonalFeatureMap, Real)> {
        Some((&self.hull as &dyn PolygonalFeatureMap, 0.0))
    }

    fn feature_normal_at_point(&self, feature: FeatureId, point: Vector) -> Option<Vector> {
        self.hull.feature_normal_at_point(feature, point)
    }
}

/// The colliders of one model shape posed in its link's frame: one for a primitive, one convex
/// hull per part for a mesh (parts the file splits stay separate shapes; the hulls were built at
/// load, scaling them keeps them convex).
pub(super) fn colliders_for(
    shape: &Shape,
    pose: &Pose,
    meshes: &[std::sync::Arc<crate::robot::MeshAsset>],
) -> Vec<ColliderBuilder> {
    let Shape::Mesh { mesh, scale, .. } = *shape else {
        return vec![collider_for(shape, pose)];
    };
    let Some(asset) = meshes.get(mesh) else {
        return Vec::new();
    };
    asset
        .parts
        .iter()
        .filter_map(|part| {
            let hull = part.hull.as_ref()?;
            let points: Vec<Vec3> = hull
                .points
                .iter()
                .map(|p| Vec3::from_array(*p) * scale)
                .collect();
            let poly = ConvexPolyhedron::from_convex_mesh(points.clone(), &hull.triangles)
                .or_else(|| ConvexPolyhedron::from_convex_hull(&points))?;
            Some(ColliderBuilder::new(SharedShape::new(BoundedHull::new(
                poly,
            ))))
        })
        .map(|b| b.position(to_rapier(pose)))
        .collect()
}

/// A collider for one primitive shape posed in its link's frame (a mesh gets its bounding box:
/// use [`colliders_for`] for the hulls).
pub(super) fn collider_for(shape: &Shape, pose: &Pose) -> ColliderBuilder {
    // Parry's cylinders run along Y, the model's along Z: turn them a quarter about X.
    let pose = match shape {
        Shape::Cylinder { .. } => pose.mul(&Pose::new(
            Vec3::ZERO,
            Quat::from_rotation_x(std::f32::consts::FRAC_PI_2),
        )),
        _ => *pose,
    };
    let builder = match *shape {
        Shape::Box { half_extents: e }
        | Shape::Mesh {
            half_extents: e, ..
        } => ColliderBuilder::cuboid(e.x, e.y, e.z),
        Shape::Sphere { radius } => ColliderBuilder::ball(radius),
        Shape::Capsule {
            radius,
            half_length,
        } => ColliderBuilder::capsule_z(half_length, radius),
        Shape::Cylinder {
            radius,
            half_length,
        } => ColliderBuilder::cylinder(half_length, radius),
    };
    builder.position(to_rapier(&pose))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::robot::hull::sphere_points;
    use rapier3d::parry::bounding_volume::BoundingVolume;
    use rapier3d::parry::query::ContactManifold;
    use rapier3d::parry::query::{DefaultQueryDispatcher, PersistentQueryDispatcher};
    use rapier3d::parry::shape::Cuboid;

    /// A sphere-ish hull of many vertices.
    fn big_hull(n: usize) -> ConvexPolyhedron {
        ConvexPolyhedron::from_convex_hull(&sphere_points(n, 0.05)).unwrap()
    }

    #[test]
    fn the_bounds_contain_the_hull_and_contacts_are_the_hulls() {
        let hull = big_hull(2000);
        let wrapped = BoundedHull::new(hull.clone());
        let pose = RPose::from_parts(
            Vec3::new(0.3, -0.2, 0.5),
            Quat::from_euler(glam::EulerRot::XYZ, 0.4, -1.1, 0.7),
        );
        // The O(1) box contains the exact one.
        let exact = hull.aabb(&pose);
        let fast = ParryShape::compute_aabb(&wrapped, &pose);
        assert!(fast.contains(&exact), "{fast:?} ⊉ {exact:?}");
        // It is a custom shape, and parry still builds a polygonal manifold for it against a
        // box, the same as for the bare hull.
        assert_eq!(wrapped.shape_type(), ShapeType::Custom);
        let table = Cuboid::new(Vec3::new(0.5, 0.5, 0.05));
        let pos12 = RPose::from_parts(Vec3::new(0.0, 0.0, 0.099), Quat::IDENTITY);
        let manifold = |s: &dyn ParryShape| {
            let mut manifolds: Vec<ContactManifold<(), ()>> = Vec::new();
            let mut ws = None;
            DefaultQueryDispatcher
                .contact_manifolds(&pos12.inverse(), s, &table, 0.002, &mut manifolds, &mut ws)
                .expect("supported pair");
            manifolds
                .iter()
                .flat_map(|m| m.points.iter().map(|p| p.dist))
                .collect::<Vec<_>>()
        };
        let (a, b) = (manifold(&wrapped), manifold(&hull));
        assert!(!a.is_empty());
        assert_eq!(a, b);
    }

    #[test]
    fn mesh_colliders_are_bounded_hulls() {
        let b = collider_for(&Shape::Sphere { radius: 0.1 }, &Pose::IDENTITY).build();
        assert_eq!(b.shape().shape_type(), ShapeType::Ball);
        let obj = "v 0 0 0\nv 1 0 0\nv 0 1 0\nv 0 0 1\nf 1 2 3\nf 1 2 4\nf 1 3 4\nf 2 3 4\n";
        let mut asset =
            crate::robot::MeshAsset::from_bytes(std::path::Path::new("t.obj"), obj.as_bytes())
                .unwrap();
        asset.build_hulls();
        let mesh = Shape::Mesh {
            mesh: 0,
            scale: Vec3::splat(0.1),
            half_extents: Vec3::splat(0.05),
        };
        let built = colliders_for(&mesh, &Pose::IDENTITY, &[std::sync::Arc::new(asset)]);
        assert_eq!(built.len(), 1);
        let c = built[0].build();
        let hull = c.shape().as_shape::<BoundedHull>().expect("a bounded hull");
        assert_eq!(hull.hull().points().len(), 4);
        assert!((c.shape().compute_local_aabb().maxs.x - 0.1).abs() < 1e-6);
    }
}
