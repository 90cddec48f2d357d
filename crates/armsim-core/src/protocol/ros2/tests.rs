//! Byte vectors from rosbags 0.11.9 (`Typestore.serialize_cdr`, Jazzy store) for the types on
//! the wire, so a field in the wrong order or a missed alignment fails here and not in an
//! interop run; plus the bounds of `cdr::decode`, the type table, and `stamp`'s exactness.

use proptest::prelude::*;

use super::cdr::{self, CdrError};
use super::msgs::*;
use super::stamp::{STEPS_PER_SECOND, seconds, time_from_seconds, time_from_steps};
use super::{JOINT_STATE, RosMessage, TYPES};

fn unhex(s: &str) -> Vec<u8> {
    let s: String = s.split_whitespace().collect();
    (0..s.len())
        .step_by(2)
        .map(|i| u8::from_str_radix(&s[i..i + 2], 16).unwrap())
        .collect()
}

fn header(sec: i32, nanosec: u32, frame_id: &str) -> Header {
    Header {
        stamp: Time { sec, nanosec },
        frame_id: frame_id.into(),
    }
}

/// Encodes to rosbags' little-endian bytes exactly, decodes them and rosbags' big-endian bytes
/// back to the value, and refuses every truncation of them.
fn check<T>(value: &T, le: &str, be: &str)
where
    T: serde::Serialize + serde::de::DeserializeOwned + PartialEq + std::fmt::Debug,
{
    let le = unhex(le);
    let be = unhex(be);
    assert_eq!(cdr::encode(value), le, "encode differs from rosbags");
    assert_eq!(&cdr::decode::<T>(&le).unwrap(), value);
    assert_eq!(&cdr::decode::<T>(&be).unwrap(), value);
    for n in 0..le.len() {
        assert!(
            cdr::decode::<T>(&le[..n]).is_err(),
            "a {n}-byte prefix of {} bytes decoded",
            le.len()
        );
    }
}

fn joint_state() -> JointState {
    JointState {
        header: header(1, 500_000_000, ""),
        name: vec!["j1".into(), "j2".into()],
        position: vec![0.5, -1.0],
        velocity: vec![],
        effort: vec![],
    }
}

// 68 bytes: the position count ends at body offset 36, so the doubles start 8-aligned with no
// padding before them.
const JOINT_STATE_LE: &str = "\
    00010000 01000000 0065cd1d 01000000 00000000 02000000 03000000 6a310000 03000000 \
    6a320000 02000000 00000000 0000e03f 00000000 0000f0bf 00000000 00000000";
const JOINT_STATE_BE: &str = "\
    00000000 00000001 1dcd6500 00000001 00000000 00000002 00000003 6a310000 00000003 \
    6a320000 00000002 3fe00000 00000000 bff00000 00000000 00000000 00000000";

#[test]
fn joint_state_matches_rosbags() {
    check(&joint_state(), JOINT_STATE_LE, JOINT_STATE_BE);
}

#[test]
fn clock_matches_rosbags() {
    let clock = Clock {
        clock: Time {
            sec: 2,
            nanosec: 250,
        },
    };
    check(
        &clock,
        "00010000 02000000 fa000000",
        "00000000 00000002 000000fa",
    );
}

#[test]
fn tf_message_matches_rosbags() {
    let tf = TFMessage {
        transforms: vec![TransformStamped {
            header: header(3, 125, "base"),
            child_frame_id: "link1".into(),
            transform: Transform {
                translation: Vector3 {
                    x: 1.0,
                    y: 2.0,
                    z: -0.5,
                },
                rotation: Quaternion::default(),
            },
        }],
    };
    check(
        &tf,
        "00010000 01000000 03000000 7d000000 05000000 62617365 00000000 06000000 6c696e6b \
         31000000 00000000 00000000 0000f03f 00000000 00000040 00000000 0000e0bf 00000000 \
         00000000 00000000 00000000 00000000 00000000 00000000 0000f03f",
        "00000000 00000001 00000003 0000007d 00000005 62617365 00000000 00000006 6c696e6b \
         31000000 00000000 3ff00000 00000000 40000000 00000000 bfe00000 00000000 00000000 \
         00000000 00000000 00000000 00000000 00000000 3ff00000 00000000",
    );
}

#[test]
fn float64_multi_array_matches_rosbags() {
    let with_layout = Float64MultiArray {
        layout: MultiArrayLayout {
            dim: vec![MultiArrayDimension {
                label: "joints".into(),
                size: 3,
                stride: 3,
            }],
            data_offset: 0,
        },
        data: vec![0.1, -0.2, 0.3],
    };
    check(
        &with_layout,
        "00010000 01000000 07000000 6a6f696e 74730000 03000000 03000000 00000000 03000000 \
         9a999999 9999b93f 9a999999 9999c9bf 33333333 3333d33f",
        "00000000 00000001 00000007 6a6f696e 74730000 00000003 00000003 00000000 00000003 \
         3fb99999 9999999a bfc99999 9999999a 3fd33333 33333333",
    );
    // What `ros2 topic pub` sends when only `data` is given: an empty layout.
    let bare = Float64MultiArray {
        layout: MultiArrayLayout::default(),
        data: vec![1.0, 2.0],
    };
    check(
        &bare,
        "00010000 00000000 00000000 02000000 00000000 000000000000f03f 0000000000000040",
        "00000000 00000000 00000000 00000002 00000000 3ff0000000000000 4000000000000000",
    );
}

#[test]
fn joint_trajectory_matches_rosbags() {
    let jt = JointTrajectory {
        header: header(0, 0, ""),
        joint_names: vec!["a".into(), "bb".into()],
        points: vec![
            JointTrajectoryPoint {
                positions: vec![0.0, 1.0],
                time_from_start: Duration {
                    sec: 0,
                    nanosec: 500_000_000,
                },
                ..Default::default()
            },
            JointTrajectoryPoint {
                positions: vec![0.25, -1.0],
                velocities: vec![0.0, 0.0],
                time_from_start: Duration { sec: 1, nanosec: 0 },
                ..Default::default()
            },
        ],
    };
    check(
        &jt,
        "00010000 00000000 00000000 01000000 00000000 02000000 02000000 61000000 03000000 \
         62620000 02000000 02000000 00000000 00000000 00000000 00000000 0000f03f 00000000 \
         00000000 00000000 00000000 0065cd1d 02000000 00000000 0000d03f 00000000 0000f0bf \
         02000000 00000000 00000000 00000000 00000000 00000000 00000000 00000000 01000000 \
         00000000",
        "00000000 00000000 00000000 00000001 00000000 00000002 00000002 61000000 00000003 \
         62620000 00000002 00000002 00000000 00000000 00000000 3ff00000 00000000 00000000 \
         00000000 00000000 00000000 1dcd6500 00000002 3fd00000 00000000 bff00000 00000000 \
         00000002 00000000 00000000 00000000 00000000 00000000 00000000 00000000 00000001 \
         00000000",
    );
}

#[test]
fn string_image_and_camera_info_match_rosbags() {
    let s = StdString {
        data: "<robot/>".into(),
    };
    check(
        &s,
        "00010000 09000000 3c726f626f742f3e00",
        "00000000 00000009 3c726f626f742f3e00",
    );
    let image = Image {
        header: header(1, 2, "cam"),
        height: 1,
        width: 2,
        encoding: "rgb8".into(),
        is_bigendian: 0,
        step: 6,
        data: vec![1, 2, 3, 4, 5, 6],
    };
    let le = unhex(
        "00010000 01000000 02000000 04000000 63616d00 01000000 02000000 05000000 72676238 \
         00000000 06000000 06000000 01020304 0506",
    );
    assert_eq!(cdr::encode(&image), le);
    assert_eq!(cdr::decode::<Image>(&le).unwrap(), image);

    let info = CameraInfo {
        header: header(1, 2, "cam"),
        height: 480,
        width: 640,
        distortion_model: "plumb_bob".into(),
        d: vec![0.0; 5],
        k: [500.0, 0.0, 320.0, 0.0, 500.0, 240.0, 0.0, 0.0, 1.0],
        r: [1.0, 0.0, 0.0, 0.0, 1.0, 0.0, 0.0, 0.0, 1.0],
        p: [
            500.0, 0.0, 320.0, 0.0, 0.0, 500.0, 240.0, 0.0, 0.0, 0.0, 1.0, 0.0,
        ],
        binning_x: 0,
        binning_y: 0,
        roi: RegionOfInterest::default(),
    };
    let le = cdr::encode(&info);
    // rosbags' 357 bytes: padding after the distortion model (2) and before `d`'s doubles (4).
    let rosbags = unhex(
        "00010000 01000000 02000000 04000000 63616d00 e0010000 80020000 0a000000 706c756d \
         625f626f 62000000 05000000 00000000 00000000 00000000 00000000 00000000 00000000 \
         00000000 00000000 00000000 00000000 00000000 00000000 00407f40 00000000 00000000 \
         00000000 00007440 00000000 00000000 00000000 00407f40 00000000 00006e40 00000000 \
         00000000 00000000 00000000 00000000 0000f03f 00000000 0000f03f 00000000 00000000 \
         00000000 00000000 00000000 00000000 00000000 0000f03f 00000000 00000000 00000000 \
         00000000 00000000 00000000 00000000 0000f03f 00000000 00407f40 00000000 00000000 \
         00000000 00007440 00000000 00000000 00000000 00000000 00000000 00407f40 00000000 \
         00006e40 00000000 00000000 00000000 00000000 00000000 00000000 00000000 0000f03f \
         00000000 00000000 00000000 00000000 00000000 00000000 00000000 00000000 00",
    );
    assert_eq!(le, rosbags);
    assert_eq!(cdr::decode::<CameraInfo>(&le).unwrap(), info);
}

#[test]
fn encode_writes_the_little_endian_header() {
    assert_eq!(&cdr::encode(&joint_state())[..4], &cdr::HEADER_LE);
    assert_eq!(cdr::HEADER_LE, [0, 1, 0, 0]);
}

#[test]
fn other_encapsulations_are_refused_by_name() {
    let mut bytes = unhex(JOINT_STATE_LE);
    bytes[1] = 0x07;
    let err = cdr::decode::<JointState>(&bytes).unwrap_err();
    assert!(matches!(err, CdrError::Encapsulation { kind: 7, .. }));
    assert!(err.to_string().contains("CDR2_LE"), "{err}");
    bytes[1] = 0x03;
    let err = cdr::decode::<JointState>(&bytes).unwrap_err();
    assert!(err.to_string().contains("PL_CDR_LE"), "{err}");
    bytes[0] = 0x12;
    let err = cdr::decode::<JointState>(&bytes).unwrap_err();
    assert!(err.to_string().contains("unknown"), "{err}");
    assert!(matches!(
        cdr::decode::<JointState>(&[0, 1]),
        Err(CdrError::NoHeader(2))
    ));
}

#[test]
fn padding_is_accepted_and_more_is_refused() {
    let mut bytes = unhex(JOINT_STATE_LE);
    bytes.extend_from_slice(&[0, 0, 0]);
    assert_eq!(cdr::decode::<JointState>(&bytes).unwrap(), joint_state());
    bytes.push(0);
    assert!(matches!(
        cdr::decode::<JointState>(&bytes),
        Err(CdrError::Trailing(4))
    ));
}

/// Offsets in `JOINT_STATE_LE`: the `name` count at 20, the first name's length at 24.
#[test]
fn oversized_lengths_are_errors_not_allocations() {
    let good = unhex(JOINT_STATE_LE);
    for (offset, len) in [(20, u32::MAX), (24, u32::MAX), (20, 1 << 28), (24, 1 << 30)] {
        let mut bytes = good.clone();
        bytes[offset..offset + 4].copy_from_slice(&len.to_le_bytes());
        let err = cdr::decode::<JointState>(&bytes).unwrap_err();
        assert!(matches!(err, CdrError::Body(_)), "{err}");
    }
    // The frame id's length (offset 12) claiming 4 GiB.
    let mut bytes = good.clone();
    bytes[12..16].copy_from_slice(&u32::MAX.to_le_bytes());
    assert!(cdr::decode::<JointState>(&bytes).is_err());
    // An image whose data claims 4 GiB: `byte_seq` must not reserve it.
    let mut image = cdr::encode(&Image::default());
    let n = image.len();
    image[n - 4..].copy_from_slice(&u32::MAX.to_le_bytes());
    assert!(cdr::decode::<Image>(&image).is_err());
    // A trajectory claiming 4 G points, each of which would need at least 24 bytes.
    let mut jt = cdr::encode(&JointTrajectory::default());
    let n = jt.len();
    jt[n - 4..].copy_from_slice(&u32::MAX.to_le_bytes());
    assert!(cdr::decode::<JointTrajectory>(&jt).is_err());
}

#[test]
fn the_type_table_is_complete_and_well_formed() {
    assert_eq!(TYPES.len(), 19);
    for (i, t) in TYPES.iter().enumerate() {
        assert_eq!(t.rihs01.len(), 64, "{}", t.ros_name);
        assert!(
            t.rihs01
                .bytes()
                .all(|b| b.is_ascii_digit() || (b'a'..=b'f').contains(&b)),
            "{}",
            t.ros_name
        );
        for u in &TYPES[i + 1..] {
            assert_ne!(t.ros_name, u.ros_name);
            assert_ne!(t.rihs01, u.rihs01);
        }
    }
    assert_eq!(JointState::TYPE, &JOINT_STATE);
    assert_eq!(JointState::TYPE.ros_name, "sensor_msgs/msg/JointState");
    assert_eq!(
        JointState::TYPE.dds_name,
        "sensor_msgs::msg::dds_::JointState_"
    );
    assert_eq!(
        Clock::TYPE.rihs01_string(),
        "RIHS01_692f7a66e93a3c83e71765d033b60349ba68023a8c689a79e48078bcb5c58564"
    );
    assert_eq!(TFMessage::TYPE.dds_name, "tf2_msgs::msg::dds_::TFMessage_");
    assert_eq!(
        Float64MultiArray::TYPE.dds_name,
        "std_msgs::msg::dds_::Float64MultiArray_"
    );
    assert_eq!(
        JointTrajectory::TYPE.dds_name,
        "trajectory_msgs::msg::dds_::JointTrajectory_"
    );
    assert_eq!(StdString::TYPE.dds_name, "std_msgs::msg::dds_::String_");
}

#[test]
fn stamps_are_exact_at_240_hz() {
    assert_eq!(STEPS_PER_SECOND, 240);
    let t = |sec, nanosec| Time { sec, nanosec };
    assert_eq!(time_from_steps(0), t(0, 0));
    assert_eq!(time_from_steps(1), t(0, 4_166_666));
    assert_eq!(time_from_steps(3), t(0, 12_500_000));
    assert_eq!(time_from_steps(239), t(0, 995_833_333));
    assert_eq!(time_from_steps(240), t(1, 0));
    assert_eq!(time_from_steps(241), t(1, 4_166_666));
    assert_eq!(time_from_steps(1_000_000_000), t(4_166_666, 666_666_666));
    assert_eq!(time_from_steps(u64::MAX), t(i32::MAX, 999_999_999));
    assert_eq!(time_from_seconds(1.5), t(1, 500_000_000));
    assert_eq!(time_from_seconds(-1.0), t(0, 0));
    assert_eq!(time_from_seconds(f64::NAN), t(0, 0));
    assert_eq!(time_from_seconds(1e30), t(i32::MAX, 999_999_999));
    assert_eq!(seconds(t(2, 250_000_000)), 2.25);
}

fn names() -> impl Strategy<Value = Vec<String>> {
    prop::collection::vec("[a-z_0-9éß]{0,12}", 0..6)
}

fn floats() -> impl Strategy<Value = Vec<f64>> {
    prop::collection::vec(any::<f64>(), 0..6)
}

fn time() -> impl Strategy<Value = Time> {
    (any::<i32>(), 0u32..1_000_000_000).prop_map(|(sec, nanosec)| Time { sec, nanosec })
}

fn header_strategy() -> impl Strategy<Value = Header> {
    (time(), "[a-z/_]{0,10}").prop_map(|(stamp, frame_id)| Header { stamp, frame_id })
}

fn point() -> impl Strategy<Value = JointTrajectoryPoint> {
    (floats(), floats(), floats(), floats(), time()).prop_map(|(p, v, a, e, t)| {
        JointTrajectoryPoint {
            positions: p,
            velocities: v,
            accelerations: a,
            effort: e,
            time_from_start: Duration {
                sec: t.sec,
                nanosec: t.nanosec,
            },
        }
    })
}

/// Round trips compare bytes, not values, so NaN (which is not equal to itself) is covered.
fn round_trips<T>(value: &T)
where
    T: serde::Serialize + serde::de::DeserializeOwned,
{
    let bytes = cdr::encode(value);
    let back: T = cdr::decode(&bytes).unwrap();
    assert_eq!(cdr::encode(&back), bytes);
}

proptest! {
    #[test]
    fn joint_state_round_trips(
        header in header_strategy(),
        name in names(),
        position in floats(),
        velocity in floats(),
        effort in floats(),
    ) {
        round_trips(&JointState { header, name, position, velocity, effort });
    }

    #[test]
    fn joint_trajectory_round_trips(
        header in header_strategy(),
        joint_names in names(),
        points in prop::collection::vec(point(), 0..5),
    ) {
        round_trips(&JointTrajectory { header, joint_names, points });
    }

    /// Arbitrary bytes after a valid header, in either order, never panic a decoder of what we
    /// subscribe to.
    #[test]
    fn arbitrary_bytes_never_panic(
        be in any::<bool>(),
        body in prop::collection::vec(any::<u8>(), 0..256),
    ) {
        let mut bytes = vec![0, u8::from(!be), 0, 0];
        bytes.extend_from_slice(&body);
        let _ = cdr::decode::<JointState>(&bytes);
        let _ = cdr::decode::<Float64MultiArray>(&bytes);
        let _ = cdr::decode::<JointTrajectory>(&bytes);
        let _ = cdr::decode::<StdString>(&bytes);
    }

    #[test]
    fn stamps_increase_with_steps(k in 0u64..1u64 << 38) {
        let (a, b) = (time_from_steps(k), time_from_steps(k + 1));
        prop_assert!(a < b);
        // Within a nanosecond of the exact k/240 s.
        let exact = k as f64 / STEPS_PER_SECOND as f64;
        prop_assert!((seconds(a) - exact).abs() < 1e-9 + exact * 1e-15);
    }
}
