// A Fast DDS subscriber of sensor_msgs/JointState, built against Debian's Fast DDS (libfastrtps-dev
// 2.9, ROS 2's default middleware) with the types fastddsgen generates from JointState.idl. It
// stands in for a ROS 2 node on rmw_fastrtps_cpp: same DDS type name, same plain-CDR layout.
//
// Usage: sub DOMAIN TOPIC COUNT TIMEOUT_S (TOPIC as DDS names it: rt/joint_states). Prints one JSON
// line per sample (joint names, stamp, number of positions) and exits 0 once COUNT samples came,
// 1 when TIMEOUT_S passed first. test_ros2_interop.py builds and runs it inside a private network
// namespace, beside armsim --ros2.

#include "JointStatePubSubTypes.h"

#include <chrono>
#include <cstdlib>
#include <iostream>
#include <sstream>
#include <string>

#include <fastdds/dds/domain/DomainParticipant.hpp>
#include <fastdds/dds/domain/DomainParticipantFactory.hpp>
#include <fastdds/dds/subscriber/DataReader.hpp>
#include <fastdds/dds/subscriber/SampleInfo.hpp>
#include <fastdds/dds/subscriber/Subscriber.hpp>
#include <fastdds/dds/subscriber/qos/DataReaderQos.hpp>
#include <fastdds/dds/topic/TypeSupport.hpp>

using namespace eprosima::fastdds::dds;
using JointState = sensor_msgs::msg::dds_::JointState_;

// Joint names are plain identifiers, but a quote or backslash must not break the JSON line.
static std::string json_string(const std::string& s) {
    std::ostringstream out;
    out << '"';
    for (char c : s) {
        if (c == '"' || c == '\\') out << '\\';
        out << c;
    }
    out << '"';
    return out.str();
}

int main(int argc, char** argv) {
    if (argc != 5) {
        std::cerr << "usage: sub DOMAIN TOPIC COUNT TIMEOUT_S\n";
        return 2;
    }
    const int domain = std::atoi(argv[1]);
    const std::string topic_name = argv[2];
    const int wanted = std::atoi(argv[3]);
    const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(std::atoi(argv[4]));

    DomainParticipantQos pqos = PARTICIPANT_QOS_DEFAULT;
    pqos.name("armsim_interop_fastdds");
    DomainParticipant* participant = DomainParticipantFactory::get_instance()->create_participant(domain, pqos);
    if (participant == nullptr) {
        std::cerr << "cannot create a participant in domain " << domain << "\n";
        return 2;
    }
    TypeSupport type(new sensor_msgs::msg::dds_::JointState_PubSubType());
    type.register_type(participant);
    Topic* topic = participant->create_topic(topic_name, type.get_type_name(), TOPIC_QOS_DEFAULT);
    Subscriber* subscriber = participant->create_subscriber(SUBSCRIBER_QOS_DEFAULT);
    // What rclcpp's default subscription asks: reliable, volatile, keep last 10.
    DataReaderQos rqos = DATAREADER_QOS_DEFAULT;
    rqos.reliability().kind = RELIABLE_RELIABILITY_QOS;
    rqos.durability().kind = VOLATILE_DURABILITY_QOS;
    rqos.history().kind = KEEP_LAST_HISTORY_QOS;
    rqos.history().depth = 10;
    DataReader* reader = subscriber->create_datareader(topic, rqos);
    if (topic == nullptr || subscriber == nullptr || reader == nullptr) {
        std::cerr << "cannot create the topic, subscriber or reader for " << topic_name << "\n";
        return 2;
    }
    std::cerr << "fastdds sub: " << type.get_type_name() << " on " << topic_name << ", domain " << domain << "\n";

    int got = 0;
    while (got < wanted && std::chrono::steady_clock::now() < deadline) {
        if (!reader->wait_for_unread_message(eprosima::fastrtps::Duration_t(0, 200000000))) continue;
        JointState msg;
        SampleInfo info;
        while (got < wanted && reader->take_next_sample(&msg, &info) == ReturnCode_t::RETCODE_OK) {
            if (!info.valid_data) continue;
            std::ostringstream line;
            line << "{\"names\":[";
            for (size_t i = 0; i < msg.name().size(); ++i) line << (i ? "," : "") << json_string(msg.name()[i]);
            line << "],\"sec\":" << msg.header().stamp().sec() << ",\"nanosec\":" << msg.header().stamp().nanosec()
                 << ",\"positions\":" << msg.position().size() << "}";
            std::cout << line.str() << std::endl;
            ++got;
        }
    }
    participant->delete_contained_entities();
    DomainParticipantFactory::get_instance()->delete_participant(participant);
    if (got < wanted) {
        std::cerr << "fastdds sub: " << got << " of " << wanted << " samples before the deadline\n";
        return 1;
    }
    return 0;
}
