//! Rigid transforms shared by robots, cameras, scenes and the simulation: [`Pose`].

use glam::{Quat, Vec3};

/// A rigid transform (translation then rotation), the pose of one frame in another.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Pose {
    pub translation: Vec3,
    pub rotation: Quat,
}

impl Pose {
    pub const IDENTITY: Pose = Pose {
        translation: Vec3::ZERO,
        rotation: Quat::IDENTITY,
    };

    pub fn new(translation: Vec3, rotation: Quat) -> Self {
        Self {
            translation,
            rotation,
        }
    }

    /// `self * other`: the pose of `other`'s frame expressed in the frame `self` is expressed in.
    pub fn mul(&self, other: &Pose) -> Pose {
        Pose {
            translation: self.translation + self.rotation * other.translation,
            rotation: (self.rotation * other.rotation).normalize(),
        }
    }

    pub fn transform_point(&self, p: Vec3) -> Vec3 {
        self.translation + self.rotation * p
    }

    pub fn inverse(&self) -> Pose {
        let inv = self.rotation.inverse();
        Pose {
            translation: -(inv * self.translation),
            rotation: inv,
        }
    }
}

impl Default for Pose {
    fn default() -> Self {
        Self::IDENTITY
    }
}
