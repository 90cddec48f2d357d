//! The `--ros2*` flags, validated into the bridge's options. They parse with or
//! without the `ros2` feature, so that `--ros2` on a build without it says why it cannot work
//! rather than "unexpected argument".

/// `--ros2-discovery`: how far DDS discovery reaches.
#[derive(Clone, Copy, Debug, PartialEq, Eq, clap::ValueEnum)]
pub enum Ros2DiscoveryArg {
    /// This host only (127.0.0.1).
    Local,
    /// Every interface: any host on the network can see and drive the simulation.
    Subnet,
}

#[derive(clap::Args, Debug)]
pub struct Ros2Args {
    /// Serve ROS 2 over DDS (no ROS install needed): /clock, joint_states, /tf, /tf_static and
    /// robot_description in sim time; commands on joint_command,
    /// forward_position_controller/commands and joint_trajectory; the simulation_interfaces
    /// services. DDS has no authentication.
    #[arg(long)]
    pub ros2: bool,

    /// The DDS domain, 0-232 (default: $ROS_DOMAIN_ID, else 0).
    #[arg(long, value_name = "N", requires = "ros2")]
    pub ros2_domain: Option<u32>,

    /// The node namespace of joint_states, the command topics and the services, e.g. /lab/arm
    /// (default: the root; /clock and /tf are always global).
    #[arg(long, value_name = "NS", requires = "ros2")]
    pub ros2_namespace: Option<String>,

    /// How far DDS discovery reaches: local (this host only, the default) or subnet (every
    /// interface: anyone on the network can see and drive the simulation; logged loudly).
    #[arg(long, value_enum, default_value_t = Ros2DiscoveryArg::Local, requires = "ros2")]
    pub ros2_discovery: Ros2DiscoveryArg,

    /// /clock, joint_states and /tf per second of sim time, 1-240 (also `bench ros2`'s rate).
    #[arg(long, default_value_t = 100, value_name = "HZ")]
    pub ros2_rate: u32,

    /// Publish these scene cameras as <camera>/image_raw (sensor_msgs/Image, rgb8) and
    /// <camera>/camera_info, comma-separated (opt-in; headless, it implies --cameras).
    #[arg(
        long,
        value_name = "NAME,...",
        value_delimiter = ',',
        requires = "ros2"
    )]
    pub ros2_cameras: Vec<String>,

    /// Images per second of sim time per camera for --ros2-cameras, 1-30 (default 10).
    #[arg(
        long,
        default_value_t = 10,
        value_name = "HZ",
        requires = "ros2_cameras"
    )]
    pub ros2_camera_hz: u32,
}

impl Ros2Args {
    /// The flags, validated; `None` without `--ros2`.
    #[cfg(feature = "ros2")]
    pub fn options(&self) -> anyhow::Result<Option<armsim::protocol::ros2::options::Ros2Options>> {
        use anyhow::Context;
        use armsim::protocol::ros2::options::{Discovery, Ros2Options};
        if !self.ros2 {
            return Ok(None);
        }
        let env = std::env::var("ROS_DOMAIN_ID").ok();
        let domain =
            Ros2Options::domain(self.ros2_domain, env.as_deref()).context("--ros2-domain")?;
        let namespace = Ros2Options::namespace(self.ros2_namespace.as_deref().unwrap_or(""))
            .context("--ros2-namespace")?;
        let rate_hz = Ros2Options::rate(self.ros2_rate).context("--ros2-rate")?;
        let discovery = match self.ros2_discovery {
            Ros2DiscoveryArg::Local => Discovery::Local,
            Ros2DiscoveryArg::Subnet => Discovery::Subnet,
        };
        let camera_hz =
            Ros2Options::camera_rate(self.ros2_camera_hz).context("--ros2-camera-hz")?;
        let cameras = self
            .ros2_cameras
            .iter()
            .map(|c| Ros2Options::camera_name(c.trim()))
            .collect::<Result<_, _>>()
            .context("--ros2-cameras")?;
        Ok(Some(Ros2Options {
            domain,
            namespace,
            discovery,
            rate_hz,
            cameras,
            camera_hz,
        }))
    }

    /// Without the `ros2` feature: `--ros2` is an error that says why.
    #[cfg(not(feature = "ros2"))]
    pub fn options(&self) -> anyhow::Result<Option<()>> {
        if self.ros2 {
            anyhow::bail!(
                "--ros2: this armsim was built without the ros2 feature (build it with the \
                 default features, or --features ros2)"
            );
        }
        Ok(None)
    }
}
