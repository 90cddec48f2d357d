//! The QoS of every endpoint of the DDS thread, in one place: offer the strongest, request the
//! weakest, so that whatever a ROS node asks for matches what we offer, and whatever it sends
//! reaches us.
//!
//! Every reliable writer here uses [`WhenFull::Fail`]: a reader that does not acknowledge (a
//! stalled RViz) then costs a dropped sample, counted by the DDS thread, and never blocks the
//! thread (`Publisher::publish` would otherwise wait up to 100 ms per sample).

use ros2_client::QosProfile;
use ros2_client::qos::{Durability, History, WhenFull};

/// A reliable, never-blocking writer keeping the last `depth` samples.
const fn reliable(depth: usize, durability: Durability) -> QosProfile {
    QosProfile::publisher_default()
        .reliability_reliable(WhenFull::Fail)
        .durability(durability)
        .history(History::KeepLast { depth })
}

/// `/clock`: reliable, volatile, keep last 1. rclcpp's time source subscribes best effort
/// depth 1, which a reliable writer matches.
pub const CLOCK: QosProfile = reliable(1, Durability::Volatile);

/// `joint_states`: reliable, volatile, keep last 10 (robot_state_publisher's default).
pub const JOINT_STATES: QosProfile = reliable(10, Durability::Volatile);

/// `/tf`: reliable, volatile, keep last 100 (tf2_ros's broadcaster).
pub const TF: QosProfile = reliable(100, Durability::Volatile);

/// `/tf_static` and `robot_description`: reliable, transient local, keep last 1. Their
/// listeners subscribe transient local, which a volatile writer would not match; the one
/// sample published at start then reaches late joiners.
pub const LATCHED: QosProfile = reliable(1, Durability::TransientLocal);

/// Camera images and their `camera_info`: reliable, volatile, keep last 1. A reader that
/// falls behind gets the newest image, never a backlog.
pub const IMAGE: QosProfile = reliable(1, Durability::Volatile);

/// Command subscriptions: best effort, volatile, keep last 1. That matches any writer (best
/// effort or reliable, volatile or transient local); the bridge acts on the newest command
/// anyway.
pub const COMMAND: QosProfile = QosProfile::subscription_default();

/// Service request readers and reply writers: reliable, volatile, keep last 10, as rclcpp's
/// services use; the reply writer never blocks.
pub const SERVICE: QosProfile = reliable(10, Durability::Volatile);

#[cfg(test)]
mod tests {
    use super::*;
    use ros2_client::qos::Reliability;

    #[test]
    fn writers_never_block_and_latched_topics_are_transient_local() {
        for q in [&CLOCK, &JOINT_STATES, &TF, &LATCHED, &SERVICE, &IMAGE] {
            assert_eq!(
                q.reliability,
                Reliability::Reliable {
                    when_full: WhenFull::Fail
                }
            );
        }
        assert_eq!(LATCHED.durability, Durability::TransientLocal);
        assert_eq!(CLOCK.durability, Durability::Volatile);
        assert_eq!(CLOCK.history, History::KeepLast { depth: 1 });
        assert_eq!(TF.history, History::KeepLast { depth: 100 });
        assert_eq!(COMMAND.reliability, Reliability::BestEffort);
        assert_eq!(COMMAND.durability, Durability::Volatile);
        assert_eq!(COMMAND.history, History::KeepLast { depth: 1 });
    }
}
